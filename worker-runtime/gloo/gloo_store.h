// Adapts our rendezvous Store to gloo::rendezvous::Store so Gloo contexts
// rendezvous through the job's authenticated, generation-scoped store.
//
// Gloo's interface reports failure by exception: every method throws
// gloo::IoException when the underlying Store returns an error. Only the Gloo
// backend calls it, and it catches everything at its boundary.
//
// Waits are the Store's own (the store server wakes a waiter when a key is set; nothing here polls).
//
// Ownership: keeps a shared reference to the Store. Thread-safety: as Store.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "worker-runtime/store/store.h"

namespace ringmaster::gloo {

class GlooStore : public ::gloo::rendezvous::Store {
 public:
  // Every key is prefixed with `prefix` + "/". `timeout` bounds waits that
  // Gloo issues without one.
  GlooStore(std::shared_ptr<store::Store> store, std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // Constant after construction.
  const std::shared_ptr<store::Store> store_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace ringmaster::gloo

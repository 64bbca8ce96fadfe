// The key-value store that ranks rendezvous through (NCCL unique ids, Gloo
// addresses, process-set agreements). Keys are scoped to one membership
// generation by the implementation; callers use plain names.
//
// Thread-safety: implementations are safe to call from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::store {

class Store {
 public:
  virtual ~Store() = default;

  // Sets key to value (overwrites). Errors: Aborted (this client's generation
  // is stale: rebuild), Unavailable (server gone), InvalidArgument (too large).
  virtual Status Set(const std::string& key, const std::string& value) = 0;

  // Returns the value of key, waiting up to `timeout` for it to be set.
  // Errors: DeadlineExceeded when the key did not appear in time; as Set.
  virtual StatusOr<std::string> Get(const std::string& key, std::chrono::milliseconds timeout) = 0;

  // Waits until every key is set. Errors: as Get.
  virtual Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;

  // Atomically adds delta to the integer stored at key (absent = 0) and
  // returns the new value. Errors: as Set.
  virtual StatusOr<int64_t> Add(const std::string& key, int64_t delta) = 0;
};

}  // namespace ringmaster::store

// WrittenObjects: the job objects this operator last wrote (the apiserver's answer to a status write),
// kept until its informer cache has caught up with them. A reconcile that runs before its own write has
// come back through the watch (a pod event right after the status write, say) would otherwise plan from
// the version that write replaced and its status write would only conflict and be requeued with backoff;
// with this it plans from the object as written. Level-based still: it reads the freshest known state
// of the job, never an intention. The cache has caught up once it holds any version but the replaced one
// (a watch delivers versions in order, and a write by anyone else after ours comes after it).
// Records are kept packed (kube::PackedObject, with this keeper's own KeyTable): under a backlog every job can
// hold one, and a parsed job with its membership costs several times its packed bytes.
// Thread-safety: thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kube/store.h"

namespace ringmaster::controller {

class WrittenObjects {
 public:
  // `written` (the server's answer, with whatever the informer's transform strips already stripped)
  // replaced the version `replaced_resource_version` of `key`.
  void Wrote(const std::string& key, const std::string& replaced_resource_version, const nlohmann::json& written);
  // The freshest known version of `key`: the written object while `cached` is still the version it
  // replaced, else `cached` (and the record is dropped). A null `cached` (deleted) drops the record.
  kube::ObjectPtr Freshest(const std::string& key, kube::ObjectPtr cached);
  size_t size() const;

 private:
  struct Write {
    // Every version the written object supersedes: a second write planned from the first written
    // object, while the cache still lagged, adds the first's version here.
    std::vector<std::string> replaced;
    std::string resource_version;  // the written object's
    kube::PackedObject written;
  };
  kube::KeyTable table_;  // the records' encoding (thread-safe itself)
  mutable std::mutex mu_;
  std::unordered_map<std::string, Write> writes_;  // guarded by mu_
};

}  // namespace ringmaster::controller

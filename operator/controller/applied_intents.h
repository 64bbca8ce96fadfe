// AppliedIntents: what this operator process has already made sure exists for each live job, so a reconcile
// does not repeat the requests: that its owned objects were created (EnsureOwnedObjects) and the PodGroup it
// last applied. A record belongs to one job uid (a job deleted and created again under the same name is a new
// job that needs its own objects) and is forgotten when the job is gone, so the operator's memory follows the
// live jobs, not every job it has ever run (records keyed by uid alone could never be dropped: a deleted job's
// reconcile knows only its key).
// Thread-safety: thread-safe.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace ringmaster::controller {

class AppliedIntents {
 public:
  // Whether the owned objects of job `key` with uid `uid` were created by this process.
  bool OwnedObjectsEnsured(const std::string& key, const std::string& uid) const;
  void MarkOwnedObjectsEnsured(const std::string& key, const std::string& uid);
  // Whether `group` is the PodGroup this process last applied for job `key` with uid `uid`.
  bool PodGroupApplied(const std::string& key, const std::string& uid, const nlohmann::json& group) const;
  void MarkPodGroupApplied(const std::string& key, const std::string& uid, nlohmann::json group);
  // Drops the records of a job that is gone.
  void Forget(const std::string& key);
  size_t size() const;  // jobs with a record

 private:
  struct Record {
    std::string uid;
    bool owned_objects = false;
    std::optional<nlohmann::json> pod_group;
  };
  // The record of `key` for `uid`, replacing one of an earlier uid. Requires mu_.
  Record& RecordFor(const std::string& key, const std::string& uid);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Record> records_;  // job key -> record. Guarded by mu_.
};

}  // namespace ringmaster::controller

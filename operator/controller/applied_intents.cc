#include "operator/controller/applied_intents.h"

namespace ringmaster::controller {

AppliedIntents::Record& AppliedIntents::RecordFor(const std::string& key, const std::string& uid) {
  Record& r = records_[key];
  if (r.uid != uid) {
    r = Record();
    r.uid = uid;
  }
  return r;
}

bool AppliedIntents::OwnedObjectsEnsured(const std::string& key, const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  return it != records_.end() && it->second.uid == uid && it->second.owned_objects;
}

void AppliedIntents::MarkOwnedObjectsEnsured(const std::string& key, const std::string& uid) {
  std::lock_guard lock(mu_);
  RecordFor(key, uid).owned_objects = true;
}

bool AppliedIntents::PodGroupApplied(const std::string& key, const std::string& uid,
                                     const nlohmann::json& group) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(key);
  return it != records_.end() && it->second.uid == uid && it->second.pod_group == group;
}

void AppliedIntents::MarkPodGroupApplied(const std::string& key, const std::string& uid, nlohmann::json group) {
  std::lock_guard lock(mu_);
  RecordFor(key, uid).pod_group = std::move(group);
}

void AppliedIntents::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  records_.erase(key);
}

size_t AppliedIntents::size() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

}  // namespace ringmaster::controller

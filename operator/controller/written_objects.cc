#include "operator/controller/written_objects.h"

#include "kube/client.h"

namespace ringmaster::controller {

void WrittenObjects::Wrote(const std::string& key, const std::string& replaced_resource_version,
                           const nlohmann::json& written) {
  kube::PackedObject packed = kube::PackedObject::Pack(written, table_);  // encoded outside the lock
  std::string resource_version = kube::ResourceVersionOf(written);
  std::lock_guard<std::mutex> lock(mu_);
  Write& w = writes_[key];
  if (w.written.empty() || w.resource_version != replaced_resource_version) w.replaced.clear();
  w.replaced.push_back(replaced_resource_version);
  w.resource_version = std::move(resource_version);
  w.written = std::move(packed);
}

kube::ObjectPtr WrittenObjects::Freshest(const std::string& key, kube::ObjectPtr cached) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = writes_.find(key);
  if (it == writes_.end()) return cached;
  if (cached) {
    const std::string rv = kube::ResourceVersionOf(*cached);
    for (const auto& replaced : it->second.replaced)
      if (rv == replaced) return it->second.written.Unpack(table_);
  }
  writes_.erase(it);
  return cached;
}

size_t WrittenObjects::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_.size();
}

}  // namespace ringmaster::controller

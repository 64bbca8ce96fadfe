#include "worker-runtime/gloo/gloo_store.h"

#include <gloo/common/error.h>

namespace ringmaster::gloo {

GlooStore::GlooStore(std::shared_ptr<store::Store> store, std::string prefix, std::chrono::milliseconds timeout)
    : store_(std::move(store)), prefix_(std::move(prefix)), timeout_(timeout) {}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  Status s = store_->Set(prefix_ + "/" + key, std::string(data.begin(), data.end()));
  if (!s.ok()) throw ::gloo::IoException("rendezvous store set: " + s.ToString());
}

std::vector<char> GlooStore::get(const std::string& key) {
  StatusOr<std::string> v = store_->Get(prefix_ + "/" + key, timeout_);
  if (!v.ok()) throw ::gloo::IoException("rendezvous store get: " + v.status().ToString());
  return std::vector<char>(v->begin(), v->end());
}

void GlooStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(prefix_ + "/" + k);
  auto t = timeout.count() > 0 ? timeout : timeout_;
  Status s = store_->Wait(full, t);
  if (!s.ok()) throw ::gloo::IoException("rendezvous store wait: " + s.ToString());
}

}  // namespace ringmaster::gloo

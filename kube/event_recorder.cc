#include "kube/event_recorder.h"

#include <cstdio>

#include "base/time_format.h"
#include "kube/api_error.h"

namespace ringmaster::kube {

namespace {

// An Event lost to the client's cancellation (a process shutting down, RestClient::Cancel) is expected there, and
// the shutdown says so itself; any other loss is a warning.
LogLevel Severity(const Status& lost) {
  return lost.code() == StatusCode::kCancelled ? LogLevel::kInfo : LogLevel::kWarning;
}

// FNV-1a, 64 bits: the aggregation cache's second hash, independent of std::hash.
uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

EventRecorder::EventRecorder(std::shared_ptr<Client> client, EventRecorderOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  thread_ = std::thread([this] { Loop(); });
}

EventRecorder::~EventRecorder() {
  Flush(std::chrono::seconds(2));
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

void EventRecorder::Event(const json& object, const std::string& type, const std::string& reason,
                          const std::string& message) {
  Pending p;
  const json meta = object.value("metadata", json::object());
  p.involved = {{"apiVersion", object.value("apiVersion", "")},
                {"kind", object.value("kind", "")},
                {"name", meta.value("name", "")}};
  if (meta.contains("namespace")) p.involved["namespace"] = meta.value("namespace", "");
  if (meta.contains("uid")) p.involved["uid"] = meta.value("uid", "");
  if (meta.contains("resourceVersion")) p.involved["resourceVersion"] = meta.value("resourceVersion", "");
  p.ns = meta.value("namespace", "");
  if (p.ns.empty()) p.ns = "default";
  p.type = type;
  p.reason = reason;
  p.message = message.substr(0, 1024);
  const std::string object_key = p.involved.value("kind", "") + "/" + p.ns + "/" + p.involved.value("name", "") + "/" +
                                 p.involved.value("uid", "");
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  if (limiters_.size() >= options_.cache_size && !limiters_.count(object_key)) limiters_.erase(limiters_.begin());
  auto& bucket = limiters_[object_key];
  if (!bucket) bucket = std::make_unique<TokenBucket>(options_.qps_per_object, options_.burst_per_object);
  if (!bucket->TryAccept() || queue_.size() >= options_.queue_size) {
    dropped_++;
    return;
  }
  queue_.push_back(std::move(p));
  cv_.notify_one();
}

bool EventRecorder::Flush(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return drained_cv_.wait_for(lock, timeout, [this] { return queue_.empty() && !writing_; });
}

void EventRecorder::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    Write(p);
    lock.lock();
    writing_ = false;
    if (queue_.empty()) drained_cv_.notify_all();
  }
}

template <typename Fn>
auto EventRecorder::WithRetries(Fn write) -> decltype(write()) {
  Duration wait = options_.retry_initial;
  for (int attempt = 1;; ++attempt) {
    auto result = write();
    if (result.ok() || !IsRetryable(result.status().code()) || attempt >= options_.max_tries) return result;
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, wait, [this] { return stopping_; })) return result;
    wait = std::min(wait * 2, options_.retry_max);
  }
}

void EventRecorder::Write(const Pending& e) {
  const std::string text = e.involved.dump() + "\x1f" + e.type + "\x1f" + e.reason + "\x1f" + e.message;
  const uint64_t key = std::hash<std::string>{}(text), check = Fnv1a64(text);
  const std::string now = FormatRfc3339(std::chrono::system_clock::now());  // metav1.Time: seconds
  auto events = resources::Events();
  auto it = aggregates_.find(key);
  if (it != aggregates_.end() && it->second.check != check) {  // another event with the same first hash
    lru_.erase(it->second.lru);
    aggregates_.erase(it);
    it = aggregates_.end();
  }
  if (it != aggregates_.end()) {
    Aggregate& agg = it->second;
    json patch = {{"count", agg.count + 1}, {"lastTimestamp", now}};
    auto patched = WithRetries([&] { return client_->Patch(events, e.ns, agg.name, PatchType::kMerge, patch); });
    if (patched.ok()) {
      agg.count = (*patched).value("count", agg.count + 1);
      lru_.splice(lru_.begin(), lru_, agg.lru);
      written_++;
      return;
    }
    if (!IsNotFound(patched.status())) {
      options_.log(Severity(patched.status()),
                   "event recorder: updating event " + agg.name + ": " + patched.status().ToString());
      return;
    }
    lru_.erase(agg.lru);
    aggregates_.erase(it);  // the Event expired (TTL): create a fresh one
  }
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx",
                static_cast<unsigned long long>(std::chrono::system_clock::now().time_since_epoch().count()));
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", e.involved.value("name", "object") + suffix}, {"namespace", e.ns}}},
             {"involvedObject", e.involved},
             {"type", e.type},
             {"reason", e.reason},
             {"message", e.message},
             {"count", 1},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"source", {{"component", options_.component}, {"host", options_.host}}},
             {"reportingComponent", options_.component},
             {"reportingInstance", options_.host}};
  // A retry of a create that reached the apiserver before its answer was lost finds the Event there.
  auto created = WithRetries([&]() -> StatusOr<json> {
    auto c = client_->Create(events, e.ns, ev);
    if (IsAlreadyExists(c.status())) return ev;
    return c;
  });
  if (!created.ok()) {
    options_.log(Severity(created.status()), "event recorder: creating event: " + created.status().ToString());
    return;
  }
  written_++;
  lru_.push_front(key);
  aggregates_[key] = Aggregate{NameOf(*created), 1, check, lru_.begin()};
  while (aggregates_.size() > options_.cache_size) {
    aggregates_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace ringmaster::kube

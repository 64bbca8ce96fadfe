#include "kube/informer.h"

#include <algorithm>
#include <unordered_map>

#include "base/json_path.h"
#include "kube/client_metrics.h"
#include "kube/workqueue.h"

namespace ringmaster::kube {

EventHandler EnqueueHandler(WorkQueue* queue) {
  EventHandler h;
  h.on_add = [queue](const json& obj) { queue->Add(KeyOf(obj)); };
  h.on_update = [queue](const json&, const json& obj) { queue->Add(KeyOf(obj)); };
  h.on_delete = [queue](const json& obj) { queue->Add(KeyOf(obj)); };
  return h;
}

void StripManagedFields(json* object) {
  auto m = object->find("metadata");
  if (m != object->end() && m->is_object()) m->erase("managedFields");
}

Informer::Informer(std::shared_ptr<Client> client, GroupVersionResource gvr, InformerOptions options)
    : client_(std::move(client)),
      gvr_(std::move(gvr)),
      options_(std::move(options)),
      store_(options_.indexers, StoreOptions{options_.packed_store, options_.namespace_index}) {
  if (options_.metrics) options_.metrics->DeclareWatch(gvr_.ToString());
}

Informer::~Informer() { Stop(); }

void Informer::AddEventHandler(EventHandler handler) { handlers_.push_back(std::move(handler)); }

void Informer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopping_) return;  // a Stop() first: nothing to start (nor to join later)
  started_ = true;
  run_thread_ = std::thread([this] { Run(); });
  if (options_.resync_period > Duration::zero()) resync_thread_ = std::thread([this] { ResyncLoop(); });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (current_watch_ != nullptr) current_watch_->Stop();
    cv_.notify_all();
  }
  if (run_thread_.joinable()) run_thread_.join();
  if (resync_thread_.joinable()) resync_thread_.join();
}

bool Informer::WaitForSync(Duration timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!synced_.load()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string Informer::LastSyncResourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_rv_;
}

bool Informer::Sleep(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stopping_; });
}

void Informer::Dispatch(const std::function<void(const EventHandler&)>& fn) {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  for (const auto& h : handlers_) fn(h);
}

StatusOr<std::string> Informer::ListAndReplace() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size;
  // Page by page into a staged store, each object transformed (and packed, for a packed store) as its page
  // arrives: a relist of 80,000 pods never holds them all as parsed objects, let alone untransformed ones.
  Store staged(options_.indexers, StoreOptions{options_.packed_store, options_.namespace_index});
  std::string rv;
  bool first = true;
  while (true) {
    RINGMASTER_ASSIGN_OR_RETURN(json page, client_->List(gvr_, options_.ns, lo));
    if (first) rv = StringAt(page, {"metadata", "resourceVersion"});  // the snapshot's, for every page
    first = false;
    if (auto items = page.find("items"); items != page.end() && items->is_array()) {
      for (auto& item : *items) {
        if (options_.transform) options_.transform(&item);
        std::string key = KeyOf(item);
        staged.Upsert(key, std::make_shared<const json>(std::move(item)));
      }
    }
    const std::string next = StringAt(page, {"metadata", "continue"});
    if (next.empty()) break;
    lo.continue_token = next;  // carries the snapshot (kGone when it expired: the caller relists)
  }
  lists_++;
  store_.Swap(staged);  // staged now holds what the handlers have seen so far
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_rv_ = rv;
  }
  synced_ = true;
  // The differences against what the handlers have seen, one object decoded at a time.
  Dispatch([&](const EventHandler& h) {
    for (const auto& key : staged.Keys()) {
      if (store_.Get(key)) continue;
      if (ObjectPtr old = staged.Get(key); old && h.on_delete) h.on_delete(*old);
    }
    for (const auto& key : store_.Keys()) {
      ObjectPtr cur = store_.Get(key);
      if (!cur) continue;
      ObjectPtr old = staged.Get(key);
      if (!old) {
        if (h.on_add) h.on_add(*cur);
      } else if (ResourceVersionOf(*old) != ResourceVersionOf(*cur) && h.on_update) {
        h.on_update(*old, *cur);
      }
    }
  });
  return rv;
}

Status Informer::WatchFrom(std::string* rv) {
  WatchOptions wo;
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.resource_version = *rv;
  wo.allow_bookmarks = true;
  wo.timeout_seconds = options_.watch_timeout_seconds;
  wo.client_idle_timeout = options_.watch_idle_timeout;
  RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<WatchStream> watch, client_->Watch(gvr_, options_.ns, wo));
  watches_++;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return CancelledError("informer stopped");
    current_watch_ = watch.get();
  }
  Status result;
  while (true) {
    auto next = watch->Next();
    if (!next.ok()) {
      result = next.status();
      break;
    }
    if (!next->has_value()) break;  // the server ended the watch: resume
    WatchEvent& ev = **next;
    std::string new_rv = ResourceVersionOf(ev.object);
    if (ev.type != WatchEventType::kBookmark) {
      events_++;
      if (options_.transform) options_.transform(&ev.object);
      auto obj = std::make_shared<const json>(std::move(ev.object));
      std::string key = KeyOf(*obj);
      if (ev.type == WatchEventType::kDeleted) {
        ObjectPtr old = store_.Erase(key);
        Dispatch([&](const EventHandler& h) {
          if (h.on_delete) h.on_delete(*obj);
        });
      } else {
        ObjectPtr old = store_.Upsert(key, obj);
        Dispatch([&](const EventHandler& h) {
          if (!old) {
            if (h.on_add) h.on_add(*obj);
          } else if (h.on_update) {
            h.on_update(*old, *obj);
          }
        });
      }
      synced_ = true;
    }
    if (!new_rv.empty()) {
      *rv = new_rv;
      std::lock_guard<std::mutex> lock(mu_);
      last_rv_ = new_rv;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  current_watch_ = nullptr;
  return result;
}

void Informer::Run() {
  std::string rv = options_.start_resource_version;
  bool need_list = rv.empty();
  Duration backoff = options_.min_backoff;
  const std::string resource = gvr_.ToString();
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    if (need_list) {
      auto listed = ListAndReplace();
      if (!listed.ok()) {
        options_.log(LogLevel::kWarning, "informer " + resource + ": list failed: " + listed.status().ToString());
        if (!Sleep(backoff)) return;
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      rv = *listed;
      need_list = false;
    }
    Status ended = WatchFrom(&rv);
    if (ended.code() == StatusCode::kCancelled) {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    if (ended.ok()) {  // timeoutSeconds passed: resume from rv at once
      backoff = options_.min_backoff;
      if (options_.metrics) options_.metrics->ObserveWatchRestart(resource, "timeout");
      continue;
    }
    if (ended.code() == StatusCode::kGone) {
      options_.log(LogLevel::kInfo, "informer " + resource + ": resourceVersion " + rv + " expired; relisting");
      if (options_.metrics) options_.metrics->ObserveWatchRestart(resource, "gone");
      need_list = true;
      continue;
    }
    options_.log(LogLevel::kWarning,
                 "informer " + resource + ": watch ended: " + ended.ToString() + "; resuming from " + rv);
    if (options_.metrics) options_.metrics->ObserveWatchRestart(resource, "error");
    if (!Sleep(backoff)) return;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void Informer::ResyncLoop() {
  while (Sleep(options_.resync_period)) {
    if (!synced_.load()) continue;
    // One object at a time: a packed store decodes at each read, and 10,000 jobs decoded at once would be
    // a peak of a hundred megabytes every period. An object deleted meanwhile is skipped.
    for (const auto& key : store_.Keys()) {
      ObjectPtr obj = store_.Get(key);
      if (!obj) continue;
      Dispatch([&](const EventHandler& h) {
        if (h.on_update) h.on_update(*obj, *obj);
      });
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
  }
}

}  // namespace ringmaster::kube

// Informer: a reflector (list, then watch from the list's resourceVersion; resume the watch after a
// dropped or expired connection; relist on 410 Gone) feeding an indexed Store, with event handlers
// and periodic resync — client-go's SharedIndexInformer, for one resource.
//
// Handlers are called on the informer's threads, serialized (never two at once), and must only
// enqueue keys (see EnqueueHandler). On a relist, objects that vanished get OnDelete, new ones OnAdd
// and changed ones OnUpdate; a resync calls OnUpdate(obj, obj) for every cached object.
// Errors are not returned: the informer retries with backoff forever and logs through options.log.
// Thread-safety: thread-safe; AddEventHandler before Start(). Ownership: shares the Client.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/store.h"

namespace ringmaster::kube {

class WorkQueue;

struct EventHandler {
  std::function<void(const json& obj)> on_add;
  std::function<void(const json& old_obj, const json& new_obj)> on_update;
  std::function<void(const json& obj)> on_delete;
};

// A handler that only enqueues the object's key ("ns/name") into `queue` (which must outlive it).
EventHandler EnqueueHandler(WorkQueue* queue);

struct InformerOptions {
  std::string ns;  // "" : all namespaces
  std::string label_selector;
  std::string field_selector;
  Duration resync_period = Duration::zero();  // zero: no resync
  int64_t page_size = 500;
  int watch_timeout_seconds = 300;                  // the server ends each watch after about this long
  std::chrono::milliseconds watch_idle_timeout{0};  // see WatchOptions::client_idle_timeout
  std::map<std::string, IndexFunc> indexers;
  // Start by watching from this resourceVersion instead of listing (e.g. one persisted earlier); the
  // store then holds only objects changed since, until a relist (which an expired version forces).
  // "" (the normal case): list first.
  std::string start_resource_version;
  Duration min_backoff = std::chrono::milliseconds(100);
  Duration max_backoff = std::chrono::seconds(30);
  // Applied to every object before it is cached and handed to handlers (client-go's TransformFunc),
  // e.g. StripManagedFields to save memory. Must be thread-safe. Empty: objects are kept as received.
  std::function<void(json* object)> transform;
  // Cache objects packed (StoreOptions::packed, store.h): far less memory for many objects, a decode per read.
  bool packed_store = false;
  // The store's "namespace" index (StoreOptions::namespace_index).
  bool namespace_index = true;
  LogSink log = StderrLogSink("ringmaster-kube");
  std::shared_ptr<ClientMetrics> metrics;  // optional: watch restarts
};

// A transform that drops metadata.managedFields (large, and rarely needed by controllers).
void StripManagedFields(json* object);

class Informer {
 public:
  Informer(std::shared_ptr<Client> client, GroupVersionResource gvr, InformerOptions options);
  ~Informer();  // Stop()s
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void AddEventHandler(EventHandler handler);
  // Starts listing and watching. Idempotent; a no-op after Stop() (a Stop on another thread may come first).
  void Start();
  // Cancels the watch and joins the threads. Idempotent; handlers are not called after it returns.
  void Stop();

  // True once the first list was stored (or the start watch delivered its first event).
  bool HasSynced() const { return synced_.load(); }
  // Waits up to `timeout` for HasSynced(); false on timeout or Stop().
  bool WaitForSync(Duration timeout);

  const Store& store() const { return store_; }
  std::string LastSyncResourceVersion() const;
  // Counters for tests and benchmarks.
  int64_t lists() const { return lists_.load(); }
  int64_t watches() const { return watches_.load(); }
  int64_t events() const { return events_.load(); }

 private:
  void Run();
  void ResyncLoop();
  // Lists everything; replaces the store and dispatches the differences. Returns the list's RV.
  StatusOr<std::string> ListAndReplace();
  // Watches from `*rv` until the stream ends or fails; updates `*rv`. Returns the reason it ended.
  Status WatchFrom(std::string* rv);
  void Dispatch(const std::function<void(const EventHandler&)>& fn);
  // Sleeps up to `d`; false when stopping.
  bool Sleep(Duration d);

  // Constant after construction.
  const std::shared_ptr<Client> client_;
  const GroupVersionResource gvr_;
  const InformerOptions options_;
  Store store_;                         // thread-safe
  std::vector<EventHandler> handlers_;  // fixed after Start()

  std::atomic<bool> synced_{false};
  std::atomic<int64_t> lists_{0}, watches_{0}, events_{0};
  std::mutex dispatch_mu_;  // serializes handler calls

  // Guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  WatchStream* current_watch_ = nullptr;
  std::string last_rv_;
  std::thread run_thread_, resync_thread_;
};

}  // namespace ringmaster::kube

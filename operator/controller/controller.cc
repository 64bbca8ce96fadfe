#include "operator/controller/controller.h"

#include "api/job_status.h"
#include "base/json_path.h"
#include "kube/api_error.h"
#include "kube/resource.h"
#include "operator/controller/cache_transforms.h"
#include "operator/controller/event_urgency.h"
#include "operator/controller/queue_admission.h"
#include "operator/controller/worker_objects.h"

namespace ringmaster::controller {

using json = nlohmann::json;

namespace {

// A node's taints (null when it has none): the slim node keeps them (SlimNode).
const json& Taints(const json& node) { return At(node, {"spec", "taints"}); }

// The Ready condition's status of a node ("" when it has none).
std::string NodeReady(const json& node) { return kube::ConditionStatusOf(node, api::kReadyCondition); }

}  // namespace

TrainingJobController::TrainingJobController(std::shared_ptr<kube::Client> client, kube::EventRecorder* recorder,
                                             OperatorMetrics* metrics, ControllerOptions options)
    : options_(std::move(options)), client_(std::move(client)), recorder_(recorder), metrics_(metrics) {
  kube::WorkQueueOptions qo;
  qo.name = "trainingjob";
  qo.metrics = options_.client_metrics;
  queue_ = std::make_unique<kube::WorkQueue>(std::move(qo));

  kube::InformerOptions jo;
  jo.ns = options_.watch_namespace;
  jo.resync_period = options_.resync_period;
  jo.log = options_.log;
  jo.metrics = options_.client_metrics;
  // Caches that grow with the jobs are packed (kube/store.h): a reconcile reads one job and its few pods,
  // so a decode per read costs little, while a parsed object costs 6-9 times its packed bytes. Nothing
  // reads managedFields, which the apiserver keeps when an update leaves them out.
  jo.transform = [](json* job) { SlimJob(job); };  // cache_transforms.h
  jo.packed_store = true;
  jobs_ = std::make_unique<kube::Informer>(client_, TrainingJobs(), jo);

  kube::InformerOptions po = jo;
  po.resync_period = std::chrono::seconds(0);
  po.label_selector = std::string(api::kJobNameLabel);  // only worker pods: the label exists
  po.indexers = {{kPodsByJobIndex, IndexPodsByJob()}, {kPodsByNodeIndex, IndexPodsByNode()}};
  po.transform = [](json* pod) { SlimPod(pod); };  // only what reconcile reads (cache_transforms.h)
  po.packed_store = true;
  po.namespace_index = false;  // pods are found by job and by node only
  pods_ = std::make_unique<kube::Informer>(client_, kube::resources::Pods(), po);

  kube::InformerOptions no;
  no.log = options_.log;
  no.metrics = options_.client_metrics;
  no.transform = [](json* node) { SlimNode(node); };
  nodes_ = std::make_unique<kube::Informer>(client_, kube::resources::Nodes(), no);

  // The jobs' peer-reports ConfigMaps only (by their label): a worker's report enqueues its job.
  kube::InformerOptions ro = jo;
  ro.resync_period = std::chrono::seconds(0);
  ro.label_selector = std::string(api::kPeerReportsLabel);
  peer_reports_ = std::make_unique<kube::Informer>(client_, kube::resources::ConfigMaps(), ro);

  // Kueue's: only the Workloads this operator made (its job-name label), and every ResourceFlavor (a handful).
  kube::InformerOptions wo = ro;
  wo.label_selector = std::string(api::kJobNameLabel);
  workloads_ = std::make_unique<kube::Informer>(client_, Workloads(), wo);
  kube::InformerOptions fo = no;
  fo.transform = kube::StripManagedFields;
  flavors_ = std::make_unique<kube::Informer>(client_, ResourceFlavors(), fo);
  state_metrics_ = std::make_shared<JobStateMetrics>(&jobs_->store(), [this] { return synced_.load(); });
  metrics_->SetMaxConcurrentReconciles(options_.workers);

  auto job_key = [](const json& obj) { return kube::KeyOf(obj); };
  // A resync (the same version again) is a routine look: it waits behind every real change (EnqueueRoutine).
  jobs_->AddEventHandler({[this, job_key](const json& o) { Enqueue(job_key(o)); },
                          [this, job_key](const json& old_job, const json& o) {
                            if (kube::ResourceVersionOf(old_job) == kube::ResourceVersionOf(o))
                              EnqueueRoutine(job_key(o));
                            else
                              Enqueue(job_key(o));
                          },
                          [this, job_key](const json& o) { Enqueue(job_key(o)); }});
  // Bad news about a pod jumps the queue (PodInTrouble); a deleted pod always is. So does the last worker of a job
  // becoming Ready once the cache holds all the pods the job was given (PodCompletesJob): the job can start.
  auto pod_job = [this](const json* old_pod, const json& pod, bool deleted) {
    for (const auto& key : IndexPodsByJob()(pod)) {
      reconciler_->PodSeen(key, kube::UidOf(pod));  // a create of ours has reached the cache (Start made it first)
      bool urgent = deleted || PodInTrouble(old_pod, pod);
      if (!urgent && synced_.load() && PodTurnedReady(old_pod, pod) && !reconciler_->CreatesPending(key)) {
        urgent = PodCompletesJob(old_pod, pod, pods_->store().ByIndex(kPodsByJobIndex, key));
      }
      urgent ? EnqueueUrgent(key) : Enqueue(key);
    }
  };
  pods_->AddEventHandler({[pod_job](const json& o) { pod_job(nullptr, o, false); },
                          [pod_job](const json& old_pod, const json& o) { pod_job(&old_pod, o, false); },
                          [pod_job](const json& o) { pod_job(nullptr, o, true); }});
  // A peer-reports ConfigMap and a Workload carry their job's name in the same label as the pods.
  auto labelled_job = [](const json& o) {
    const std::string job = StringAt(o, {"metadata", "labels", std::string(api::kJobNameLabel)});
    return job.empty() ? job : kube::NamespaceOf(o) + "/" + job;
  };
  // A report written into it is news (a peer cannot reach another); its creation is the job's own first
  // reconcile coming back, and hurrying that would re-plan before the cache has the pods that reconcile created.
  auto reports_job = [this, labelled_job](const json& cm, bool news) {
    if (std::string key = labelled_job(cm); !key.empty()) news ? EnqueueUrgent(key) : Enqueue(key);
  };
  peer_reports_->AddEventHandler({[reports_job](const json& o) { reports_job(o, false); },
                                  [reports_job](const json& old_cm, const json& o) {
                                    reports_job(o, kube::ResourceVersionOf(old_cm) != kube::ResourceVersionOf(o));
                                  },
                                  [reports_job](const json& o) { reports_job(o, false); }});
  // A Workload's admission, eviction or deletion: a change to its job.
  auto workload_job = [this, labelled_job](const json& w) {
    if (std::string key = labelled_job(w); !key.empty()) Enqueue(key);
  };
  workloads_->AddEventHandler(
      {workload_job, [workload_job](const json&, const json& o) { workload_job(o); }, workload_job});
  // Nodes matter only when their readiness or taints change (a disruption taint announces the node's loss), or
  // they vanish: then the jobs with pods there.
  auto node_name = [](const json& n) { return StringAt(n, {"metadata", "name"}); };
  nodes_->AddEventHandler({[this, node_name](const json& n) { EnqueueJobsOnNode(node_name(n)); },
                           [this, node_name](const json& old_node, const json& n) {
                             if (NodeReady(old_node) != NodeReady(n) || Taints(old_node) != Taints(n)) {
                               EnqueueJobsOnNode(node_name(n));
                             }
                           },
                           [this, node_name](const json& n) { EnqueueJobsOnNode(node_name(n)); }});
}

TrainingJobController::~TrainingJobController() { Stop(); }

void TrainingJobController::Enqueue(const std::string& key) { EnqueueChange(key, /*urgent=*/false); }

void TrainingJobController::EnqueueUrgent(const std::string& key) { EnqueueChange(key, /*urgent=*/true); }

void TrainingJobController::EnqueueChange(const std::string& key, bool urgent) {
  // What the caches held when they synced (the initial lists) is routine too: an operator starting with
  // 10,000 jobs serves a failure that happens meanwhile first.
  if (!synced_.load()) {
    EnqueueRoutine(key);
    return;
  }
  reconciler_->NoteDirty(key);
  urgent ? queue_->AddHighPriority(key) : queue_->Add(key);
}

void TrainingJobController::EnqueueRoutine(const std::string& key) { queue_->AddLowPriority(key); }

void TrainingJobController::EnqueueJobsOnNode(const std::string& node) {
  for (const auto& pod : pods_->store().ByIndex(kPodsByNodeIndex, node)) {
    for (const auto& key : IndexPodsByJob()(*pod)) EnqueueUrgent(key);
  }
}

Status TrainingJobController::Start(std::chrono::seconds sync_timeout) {
  kube::ListOptions probe;
  probe.limit = 1;
  auto listed = client_->List(Workloads(), "", probe);
  kueue_served_ = listed.ok();
  if (!listed.ok()) {
    options_.log(kube::IsNotFound(listed.status()) ? LogLevel::kInfo : LogLevel::kWarning,
                 "Kueue's Workload API (kueue.x-k8s.io/v1beta2) is not usable (" + listed.status().ToString() +
                     "): jobs labelled kueue.x-k8s.io/queue-name stay suspended until Kueue is installed, this "
                     "operator may list workloads, and it is restarted");
  }
  QueueStores queue;
  if (kueue_served_) queue = {&workloads_->store(), &flavors_->store()};
  reconciler_ = std::make_unique<TrainingJobReconciler>(client_, &jobs_->store(), &pods_->store(), &nodes_->store(),
                                                        &peer_reports_->store(), recorder_, metrics_, options_.log,
                                                        options_.reconciler, std::chrono::system_clock::now, queue);
  std::vector<kube::Informer*> informers = {nodes_.get(), pods_.get(), peer_reports_.get()};
  if (kueue_served_) informers.insert(informers.end(), {workloads_.get(), flavors_.get()});
  informers.push_back(jobs_.get());  // last: a job's first reconcile finds the rest cached
  for (kube::Informer* informer : informers) informer->Start();
  for (kube::Informer* informer : informers) {
    if (!informer->WaitForSync(sync_timeout)) {
      if (stopped_.load()) return CancelledError("the controller was stopped while its caches synced");
      return DeadlineExceededError(
          "informer caches did not sync within " + std::to_string(sync_timeout.count()) +
          " s; is the TrainingJob CRD installed (kubectl apply --server-side -f crds/) and may this "
          "identity list trainingjobs, pods, nodes and configmaps (and Kueue's workloads "
          "and resourceflavors)?");
    }
  }
  synced_ = true;
  options_.log(LogLevel::kInfo, "caches synced: " + std::to_string(jobs_->store().Size()) + " jobs, " +
                                    std::to_string(pods_->store().Size()) + " worker pods, " +
                                    std::to_string(nodes_->store().Size()) + " nodes; starting " +
                                    std::to_string(options_.workers) + " workers");
  // Under the lifecycle lock: a Stop() on another thread (SIGTERM while a leader-elected Start waits for the caches)
  // either comes first, and no worker starts, or after, and joins them all.
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (stopped_.load()) return CancelledError("the controller was stopped while it started");
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Work(); });
  return Status::Ok();
}

void TrainingJobController::Work() {
  while (auto key = queue_->Get()) {
    metrics_->WorkerBusy();
    ReconcileResult r = reconciler_->Reconcile(*key);
    if (r.status.code() == StatusCode::kCancelled && stopped_.load()) {
      // Abandoned by Stop() (its deadline passed): nothing to retry in a process that is going.
    } else if (!r.status.ok()) {
      // The one retry rule: an error requeues with per-key exponential backoff under a global bucket.
      options_.log(LogLevel::kWarning, "reconcile " + *key + " failed (will retry): " + r.status.ToString());
      queue_->AddRateLimited(*key);
    } else {
      queue_->Forget(*key);
      if (r.requeue_after) queue_->AddAfter(*key, *r.requeue_after);
    }
    queue_->Done(*key);
    metrics_->WorkerIdle();
  }
}

void TrainingJobController::Stop(std::chrono::milliseconds drain_timeout) {
  {
    std::lock_guard<std::mutex> lock(lifecycle_mu_);
    if (stopped_.exchange(true)) return;
  }
  const size_t abandoned = queue_->ShutDownWithDrain(drain_timeout);
  // From here nothing of this controller needs the API: whatever still waits on it -- an abandoned reconcile's
  // request retrying against an apiserver that is gone, an informer's relist -- returns kCancelled at once, so the
  // workers and informers below are joined promptly (client-go: the manager's context, cancelled).
  client_->rest().Cancel();
  if (abandoned > 0) {
    const auto ms = drain_timeout.count();
    const std::string waited = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
    options_.log(LogLevel::kWarning, "shutdown: " + std::to_string(abandoned) +
                                         (abandoned == 1 ? " reconcile" : " reconciles") + " still in flight after " +
                                         waited + "; cancelled");
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  jobs_->Stop();
  workloads_->Stop();
  flavors_->Stop();
  peer_reports_->Stop();
  pods_->Stop();
  nodes_->Stop();
}

}  // namespace ringmaster::controller

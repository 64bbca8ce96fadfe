// PodHistory: every pod of a TrainingJob as the kubelets reported it, kept after the operator deletes the pod, so
// that an e2e test on real nodes can ask what the pod runner's process list answered on KWOK's nodes: did this
// worker exit, with what code and reason, was it started once. Recorded by a watch of the test's own (an informer
// on the job's pods).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/names.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"

namespace ringmaster::testing {

// One pod (one uid) of the job, as its last status showed it.
struct WorkerPod {
  std::string pod, uid, node;
  bool running = false;  // its first container is running (false before it starts and after it ends)
  bool ended = false;    // its first container terminated (the kubelet reported it)
  int exit_code = -1;    // once ended: the container's exit code (128+signal when killed)
  std::string reason;    // once ended: the kubelet's reason (Completed, Error, OOMKilled, ...)
  // Once ended: its termination message (the operator's worker pods fall back to the log's tail on an error:
  // terminationMessagePolicy FallbackToLogsOnError).
  std::string message;
  bool deleted = false;  // the pod is gone from the apiserver
};

// The pods of TrainingJob `job` in `ns`, in creation order, each uid once. Thread-safe.
class PodHistory {
 public:
  using json = nlohmann::json;

  // Starts watching the job's pods (label ringmaster.io/job=<job>) as the admin of `kubeconfig`. Errors: those
  // of loading the kubeconfig.
  static StatusOr<std::unique_ptr<PodHistory>> Watch(const std::string& kubeconfig, const std::string& ns,
                                                     const std::string& job) {
    RINGMASTER_ASSIGN_OR_RETURN(auto config, kube::LoadConfig(kubeconfig, "", kube::ProcessEnvironment()));
    RINGMASTER_ASSIGN_OR_RETURN(auto client, kube::NewClient(config));
    return std::make_unique<PodHistory>(std::move(client), ns, job);
  }

  PodHistory(std::shared_ptr<kube::Client> client, const std::string& ns, const std::string& job)
      : informer_(std::move(client), {"", "v1", "pods", true}, Options(ns, job)) {
    kube::EventHandler handler;
    handler.on_add = [this](const json& obj) { Record(obj, false); };
    handler.on_update = [this](const json&, const json& obj) { Record(obj, false); };
    handler.on_delete = [this](const json& obj) { Record(obj, true); };
    informer_.AddEventHandler(handler);
    informer_.Start();
  }

  // Every pod seen so far, in the order first seen.
  std::vector<WorkerPod> Pods() const {
    std::lock_guard lock(mu_);
    return pods_;
  }
  // The pods named `pod` (a replacement keeps its predecessor's name), in the order first seen.
  std::vector<WorkerPod> Named(const std::string& pod) const {
    std::lock_guard lock(mu_);
    std::vector<WorkerPod> out;
    for (const auto& p : pods_)
      if (p.pod == pod) out.push_back(p);
    return out;
  }

 private:
  static kube::InformerOptions Options(const std::string& ns, const std::string& job) {
    kube::InformerOptions o;
    o.ns = ns;
    o.label_selector = std::string(api::kJobNameLabel) + "=" + job;
    o.max_backoff = std::chrono::seconds(1);
    return o;
  }

  void Record(const json& obj, bool deleted) {
    const json meta = obj.value("metadata", json::object());
    const json status = obj.value("status", json::object());
    const json containers = status.value("containerStatuses", json::array());
    const json state = containers.empty() ? json::object() : containers[0].value("state", json::object());
    std::lock_guard lock(mu_);
    WorkerPod* p = nullptr;
    for (auto& known : pods_)
      if (known.uid == meta.value("uid", "")) p = &known;
    if (p == nullptr) {
      WorkerPod added;
      added.pod = meta.value("name", "");
      added.uid = meta.value("uid", "");
      pods_.push_back(added);
      p = &pods_.back();
    }
    p->node = obj.value("spec", json::object()).value("nodeName", p->node);
    p->deleted = p->deleted || deleted;
    if (state.contains("running")) p->running = true;
    if (state.contains("terminated")) {  // a terminated container stays so (restartPolicy Never)
      p->running = false;
      p->ended = true;
      p->exit_code = state["terminated"].value("exitCode", -1);
      p->reason = state["terminated"].value("reason", "");
      p->message = state["terminated"].value("message", "");
    }
  }

  mutable std::mutex mu_;
  std::vector<WorkerPod> pods_;  // guarded by mu_
  kube::Informer informer_;      // last: stopped (its handlers done) before the members above go
};

}  // namespace ringmaster::testing

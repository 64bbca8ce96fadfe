// KubernetesMembershipSource: a worker learns its membership by watching its own TrainingJob's
// status.membership, as the operator publishes it. In a pod it authenticates with the pod's
// service-account token (in-cluster config), which the operator's per-job Role lets read this one
// job and nothing else; the watch is by name (fieldSelector metadata.name=<job>) for that reason.
//
// Peer reports (ReportUnreachable) go to the job's peer-reports ConfigMap (api/peer_report.h) as a merge
// patch of this worker's own entry (options.reporter), which the per-job Role allows on that one object.
// Progress reports (ReportProgress) go to the same ConfigMap under api::kProgressReportKey, the same way, and hang
// reports (ReportHang) under api::HangReportKey(reporter).
//
// Errors: Start fails with InvalidArgument for an empty job name. The informer underneath retries
// failures (apiserver restarts, dropped watches, 410 Gone) forever, logging each; a record that does
// not parse is logged and skipped, keeping the last good one.
// Thread-safety: thread-safe. Ownership: shares the client.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "kube/client.h"
#include "kube/informer.h"
#include "worker-runtime/membership/membership_source.h"

namespace ringmaster::membership {

struct KubernetesSourceOptions {
  std::string job_namespace;
  std::string job_name;
  std::string reporter;  // this worker's pod name: its key in the peer reports ("" refuses to report)
  LogSink log = StderrLogSink("ringmaster-kube");
};

class KubernetesMembershipSource : public MembershipSource {
 public:
  static StatusOr<std::unique_ptr<KubernetesMembershipSource>> Start(std::shared_ptr<kube::Client> client,
                                                                     KubernetesSourceOptions options);
  ~KubernetesMembershipSource() override;  // Stop()s

  StatusOr<api::Membership> WaitNewer(int64_t after, std::chrono::milliseconds timeout) override;
  api::Membership Latest() const override;
  void Stop() override;
  Status ReportUnreachable(int64_t generation, const std::vector<std::string>& pods) override;
  Status ReportProgress(const api::ProgressReport& report) override;
  Status ReportHang(const api::HangReport& report) override;

 private:
  explicit KubernetesMembershipSource(KubernetesSourceOptions options) : options_(std::move(options)) {}
  void Observe(const nlohmann::json& job);

  // Constant after construction.
  const KubernetesSourceOptions options_;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<kube::Informer> informer_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  api::Membership latest_;
  bool stopped_ = false;
};

}  // namespace ringmaster::membership

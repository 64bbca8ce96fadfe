#include "worker-runtime/membership/kubernetes_source.h"

#include "api/names.h"
#include "api/peer_report.h"
#include "base/time_format.h"
#include "kube/resource.h"

namespace ringmaster::membership {

using json = nlohmann::json;

StatusOr<std::unique_ptr<KubernetesMembershipSource>> KubernetesMembershipSource::Start(
    std::shared_ptr<kube::Client> client, KubernetesSourceOptions options) {
  if (options.job_name.empty()) return InvalidArgumentError("KubernetesMembershipSource needs the job's name");
  if (options.job_namespace.empty()) options.job_namespace = client->default_namespace();
  std::unique_ptr<KubernetesMembershipSource> source(new KubernetesMembershipSource(options));
  source->client_ = client;
  kube::InformerOptions io;
  io.ns = source->options_.job_namespace;
  io.field_selector = "metadata.name=" + source->options_.job_name;
  io.log = source->options_.log;
  io.max_backoff = std::chrono::seconds(5);
  source->informer_ =
      std::make_unique<kube::Informer>(std::move(client),
                                       kube::GroupVersionResource{std::string(api::kGroup), std::string(api::kVersion),
                                                                  std::string(api::kResource), true},
                                       io);
  KubernetesMembershipSource* self = source.get();
  source->informer_->AddEventHandler({[self](const json& job) { self->Observe(job); },
                                      [self](const json&, const json& job) { self->Observe(job); }, nullptr});
  source->informer_->Start();
  return source;
}

KubernetesMembershipSource::~KubernetesMembershipSource() { Stop(); }

void KubernetesMembershipSource::Observe(const json& job) {
  StatusOr<std::optional<api::Membership>> record = api::MembershipOfJob(job);
  if (!record.ok()) {
    options_.log(LogLevel::kWarning, "ignoring an unreadable membership of " + options_.job_namespace + "/" +
                                         options_.job_name + ": " + record.status().ToString());
    return;
  }
  if (!record->has_value()) return;  // not published yet
  std::lock_guard<std::mutex> lock(mu_);
  if ((*record)->generation <= latest_.generation) return;  // generations only move forward
  latest_ = std::move(**record);
  cv_.notify_all();
}

StatusOr<api::Membership> KubernetesMembershipSource::WaitNewer(int64_t after, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  bool ready = cv_.wait_for(lock, timeout, [&] { return stopped_ || latest_.generation > after; });
  if (stopped_) return CancelledError("membership source stopped");
  if (!ready) {
    return DeadlineExceededError("no membership generation newer than " + std::to_string(after) + " for " +
                                 options_.job_namespace + "/" + options_.job_name + " within " +
                                 std::to_string(timeout.count()) + " ms");
  }
  return latest_;
}

api::Membership KubernetesMembershipSource::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

Status KubernetesMembershipSource::ReportUnreachable(int64_t generation, const std::vector<std::string>& pods) {
  if (options_.reporter.empty()) return FailedPreconditionError("no reporter name: this worker's pod name is unknown");
  const api::PeerReport report{options_.reporter, generation, pods, FormatRfc3339(std::chrono::system_clock::now())};
  const json patch = {{"data", {{options_.reporter, api::EncodePeerReport(report)}}}};
  return client_
      ->Patch(kube::resources::ConfigMaps(), options_.job_namespace, api::PeerReportsName(options_.job_name),
              kube::PatchType::kMerge, patch)
      .status()
      .WithContext("reporting unreachable peers to ConfigMap " + options_.job_namespace + "/" +
                   api::PeerReportsName(options_.job_name));
}

Status KubernetesMembershipSource::ReportProgress(const api::ProgressReport& report) {
  const std::string name = api::PeerReportsName(options_.job_name);
  const json patch = {{"data", {{std::string(api::kProgressReportKey), api::EncodeProgressReport(report)}}}};
  return client_->Patch(kube::resources::ConfigMaps(), options_.job_namespace, name, kube::PatchType::kMerge, patch)
      .status()
      .WithContext("reporting the progress of generation " + std::to_string(report.generation) + " to ConfigMap " +
                   options_.job_namespace + "/" + name);
}

Status KubernetesMembershipSource::ReportHang(const api::HangReport& report) {
  const std::string reporter = report.reporter.empty() ? options_.reporter : report.reporter;
  if (reporter.empty()) return FailedPreconditionError("no reporter name: this worker's pod name is unknown");
  const std::string name = api::PeerReportsName(options_.job_name);
  const json patch = {{"data", {{api::HangReportKey(reporter), api::EncodeHangReport(report)}}}};
  return client_->Patch(kube::resources::ConfigMaps(), options_.job_namespace, name, kube::PatchType::kMerge, patch)
      .status()
      .WithContext("reporting the hang of generation " + std::to_string(report.generation) + " to ConfigMap " +
                   options_.job_namespace + "/" + name);
}

void KubernetesMembershipSource::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    cv_.notify_all();
  }
  if (informer_) informer_->Stop();
}

}  // namespace ringmaster::membership

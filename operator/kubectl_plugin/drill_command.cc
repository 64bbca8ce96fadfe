// RunDrill (commands.h): the fire drill's loop; what it concludes from what it sees is drill_tracker.h's.
#include <random>
#include <thread>

#include "api/job_status.h"
#include "api/peer_report.h"
#include "api/training_job.h"
#include "base/json_path.h"
#include "base/time_format.h"
#include "kube/api_error.h"
#include "kube/resource.h"
#include "operator/kubectl_plugin/commands.h"
#include "operator/kubectl_plugin/drill_tracker.h"
#include "operator/kubectl_plugin/durations.h"

namespace ringmaster::kubectl_plugin {

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// How often the drill reads the job and the progress record, and the job's Events (for generations that came
// and went between two reads, while detection is not seen yet).
constexpr auto kPollEvery = std::chrono::milliseconds(250);
constexpr int kEventsEveryPolls = 8;

int32_t PickRank(const api::Membership& members, int32_t rank) {
  if (rank >= 0) return rank;
  std::mt19937 random(std::random_device{}());
  return std::uniform_int_distribution<int32_t>(0, members.world_size() - 1)(random);
}

// Reads the progress record into the tracker (or notes why there is none).
void ReadProgress(const Cluster& c, const std::string& config_map, DrillTracker& tracker) {
  auto cm = c.client->Get(kube::resources::ConfigMaps(), c.ns, config_map);
  if (!cm.ok()) {
    tracker.NoteNoProgress(kube::IsNotFound(cm.status()) ? "the ConfigMap does not exist"
                                                         : "reading it failed: " + cm.status().message());
    return;
  }
  auto progress = ProgressOfConfigMap(*cm);
  if (!progress.ok()) {
    tracker.NoteNoProgress(progress.status().message());
  } else if (!progress->has_value()) {
    tracker.NoteNoProgress("it has no " + std::string(api::kProgressReportKey) +
                           " key (do the workers run a runtime that writes it?)");
  } else {
    tracker.SeeProgress(**progress);
  }
}

}  // namespace

Status RunDrill(const Cluster& c, const std::string& job, int32_t rank, std::chrono::seconds timeout,
                std::ostream& out) {
  RINGMASTER_ASSIGN_OR_RETURN(json object, GetJob(c, job));
  RINGMASTER_ASSIGN_OR_RETURN(api::Membership members, CurrentMembers(c, object));
  const int32_t picked = PickRank(members, rank);
  const auto deadline = SteadyClock::now() + timeout;
  const Clock::time_point t0 = Clock::now();
  RINGMASTER_ASSIGN_OR_RETURN(Killed k, KillRank(c, job, members, picked));
  out << "drill on trainingjob " << c.ns << "/" << job << ": killed pod " << k.pod << " (uid " << k.uid << "), "
      << RanksText(k.ranks) << " of generation " << k.generation << ", at " << FormatRfc3339(t0, TimePrecision::kMillis)
      << "; waiting up to " << HumanDuration(timeout) << " for detection and recovery" << std::endl;

  DrillTracker tracker({k.generation, k.world_size, picked, k.pod, k.uid}, t0);
  const std::string config_map = api::PeerReportsName(job);
  const std::string progress_source =
      "ConfigMap " + c.ns + "/" + config_map + " key " + std::string(api::kProgressReportKey);
  std::string last_error;
  bool announced = false;
  for (int poll = 0;; ++poll) {
    auto now_job = GetJob(c, job);
    if (kube::IsNotFound(now_job.status())) {
      return FailedPreconditionError("trainingjob " + c.ns + "/" + job + " was deleted during the drill");
    }
    if (now_job.ok()) {
      object = *now_job;
      auto m = api::MembershipOfJob(object);
      if (m.ok() && m->has_value()) tracker.SeeMembership(**m, Clock::now());
      if (!tracker.detection() && poll % kEventsEveryPolls == kEventsEveryPolls - 1) {
        if (auto events = JobEvents(c, job); events.ok()) tracker.SeeEvents(*events);
      }
      ReadProgress(c, config_map, tracker);
    } else {
      last_error = now_job.status().message();  // the apiserver may come back before the deadline
    }
    if (tracker.detection() && !announced) {
      announced = true;
      auto s = tracker.detection_seconds();
      const Detection& d = *tracker.detection();
      out << "detected: generation " << d.generation << " (" << (d.reason.empty() ? "no reason" : d.reason)
          << ", world size " << d.world_size << ") published " << (s ? FormatSeconds(*s) : std::string("?"))
          << " after the kill (changedAt has whole seconds); waiting for the first step of a new generation"
          << std::endl;
    }
    if (tracker.recovery()) break;
    const std::string phase = StringAt(object, {"status", "phase"});
    if (phase == api::phase::kSucceeded || phase == api::phase::kFailed) {
      return FailedPreconditionError("trainingjob " + c.ns + "/" + job + " finished (" + phase +
                                     ") before the drill saw it recover; it was waiting for " +
                                     tracker.WaitingFor(progress_source));
    }
    if (SteadyClock::now() >= deadline) {
      return DeadlineExceededError("timed out after " + HumanDuration(timeout) + " waiting for " +
                                   tracker.WaitingFor(progress_source) +
                                   (last_error.empty() ? "" : " (last error: " + last_error + ")"));
    }
    std::this_thread::sleep_for(kPollEvery);
  }
  if (!tracker.detection()) {
    if (auto events = JobEvents(c, job); events.ok()) tracker.SeeEvents(*events);
  }
  // The operator accounts the recovery in status.goodput as it reads the same record: its figures for comparison.
  if (auto again = GetJob(c, job); again.ok()) object = *again;
  auto status = api::DecodeTrainingJobStatus(At(object, {"status"}));
  out << FormatDrillResult(tracker, status.ok() ? status->goodput : std::nullopt);
  return Status::Ok();
}

}  // namespace ringmaster::kubectl_plugin

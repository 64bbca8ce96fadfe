#include "operator/kubectl_plugin/commands.h"

#include <algorithm>

#include "api/training_job.h"
#include "base/time_format.h"
#include "operator/kubectl_plugin/event_list.h"
#include "operator/kubectl_plugin/job_summary.h"

namespace ringmaster::kubectl_plugin {

Status RunStatus(const Cluster& c, const std::string& job, std::ostream& out) {
  RINGMASTER_ASSIGN_OR_RETURN(nlohmann::json object, GetJob(c, job));
  auto decoded = api::DecodeTrainingJob(object);
  if (!decoded.ok()) {
    return FailedPreconditionError("trainingjob " + c.ns + "/" + job +
                                   " cannot be read: " + decoded.status().message() + " (kubectl get trainingjob " +
                                   job + " -n " + c.ns + " -o yaml shows it)");
  }
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<EventRecord> events, JobEvents(c, job));
  out << FormatJobStatus(*decoded, events, Clock::now());
  return Status::Ok();
}

Status RunEvents(const Cluster& c, const std::string& job, std::ostream& out) {
  RINGMASTER_RETURN_IF_ERROR(GetJob(c, job).status());
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<EventRecord> events, JobEvents(c, job));
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<EventRecord> pods, WorkerPodEvents(c, job));
  events.insert(events.end(), pods.begin(), pods.end());
  SortByTime(events);
  out << FormatEventTable(events, Clock::now());
  return Status::Ok();
}

Status RunKill(const Cluster& c, const std::string& job, int32_t rank, std::ostream& out) {
  RINGMASTER_ASSIGN_OR_RETURN(nlohmann::json object, GetJob(c, job));
  RINGMASTER_ASSIGN_OR_RETURN(api::Membership members, CurrentMembers(c, object));
  RINGMASTER_ASSIGN_OR_RETURN(Killed k, KillRank(c, job, members, rank));
  out << "killed pod " << c.ns << "/" << k.pod << " (uid " << k.uid << "), " << RanksText(k.ranks) << " of generation "
      << k.generation << " (world size " << k.world_size << "), at "
      << FormatRfc3339(Clock::now(), TimePrecision::kMillis) << "\n";
  return Status::Ok();
}

}  // namespace ringmaster::kubectl_plugin

// What `kubectl ringmaster status JOB` prints: the job's phase, workers (world size, desired, ready, spares),
// restarts and maxRestarts, start time and age, goodput (status.goodput), and its generations as a timeline
// (timeline.h).
//
// Errors: none. Thread-safety: pure function.
#pragma once

#include <vector>

#include "api/training_job.h"
#include "operator/kubectl_plugin/event_list.h"

namespace ringmaster::kubectl_plugin {

// `job_events`: the job's Events; `now`: the time ages count to.
std::string FormatJobStatus(const api::TrainingJob& job, const std::vector<EventRecord>& job_events,
                            Clock::time_point now);

}  // namespace ringmaster::kubectl_plugin

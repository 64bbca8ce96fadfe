// A job's membership generations as a timeline: one entry per published generation with the time it was
// published, its world size, its reason and message, and how long it lasted (until the next generation, or
// until now or the job's end for the one in force).
//
// Where it comes from: the operator records an Event on the job for every generation it publishes (its reason
// is the change's, operator/controller/membership.h ChangeReason; its message starts "generation G, world size
// W", operator/controller/membership.cc DescribeChange), and status.membership holds the current generation.
// The empty generation of a suspension has no Event of its own (only the status). Events expire (an hour by
// default) and the operator's recorder rate-limits them per job, so older generations may be missing: the
// timeline keeps the gap and says so, and a generation whose successor is missing lasted an unknown time.
//
// Errors: none. Thread-safety: values and pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/membership.h"
#include "operator/kubectl_plugin/event_list.h"

namespace ringmaster::kubectl_plugin {

// "generation G, world size W ..." (an Event's or status.membership's message): G and W.
struct GenerationHeadline {
  int64_t generation = 0;
  int32_t world_size = 0;
};
std::optional<GenerationHeadline> ParseGenerationMessage(std::string_view message);

// What the message says beyond its headline: the part in parentheses ("WorkerFailed: train-worker-1"), or the
// whole message when it has none.
std::string ChangeDetail(const std::string& message);

struct GenerationSpan {
  int64_t generation = 0;
  int32_t world_size = 0;
  std::string reason, message;
  std::optional<Clock::time_point> published;
  // Until the next generation's publication (or `end`/`now` for the last one); nullopt when unknown (the next
  // generation's Event is missing, or a time is).
  std::optional<std::chrono::milliseconds> lasted;
  bool current = false;  // the generation in force now (status.membership), the job not finished
};

// The generations of a job from its Events (any Events of the job: those that are not a generation's are
// skipped) and its status.membership (nullopt: none published), oldest first. `end`: when the job finished
// (status.completionTime), nullopt while it runs; `now` ends the current generation otherwise.
std::vector<GenerationSpan> BuildTimeline(const std::vector<EventRecord>& job_events,
                                          const std::optional<api::Membership>& current,
                                          std::optional<Clock::time_point> end, Clock::time_point now);

// The table: GEN, PUBLISHED (RFC 3339), WORLD, LASTED (human, "so far" for the current one, "?" when
// unknown), REASON, CHANGE (ChangeDetail of the message); a line for every run of missing generations.
// "No generation published yet." when empty.
std::string FormatTimeline(const std::vector<GenerationSpan>& spans);

}  // namespace ringmaster::kubectl_plugin

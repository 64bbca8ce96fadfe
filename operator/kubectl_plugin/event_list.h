// The Events of a job and of its worker pods as kubectl-ringmaster shows them: parsed from core/v1 Event
// objects (those the operator's recorder writes, and the kubelet's and scheduler's, which may come through
// events.k8s.io with eventTime and series instead of the timestamps and count), sorted by time and printed
// as a table like `kubectl describe`'s.
//
// Errors: none; a field that is missing or of another type reads as absent. Thread-safety: values and pure
// functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringmaster::kubectl_plugin {

using Clock = std::chrono::system_clock;

struct EventRecord {
  std::string name;                   // metadata.name
  std::string type, reason, message;  // Normal|Warning
  std::string kind, object;           // involvedObject.kind and .name
  std::string uid;                    // involvedObject.uid
  std::optional<Clock::time_point> first, last;
  int64_t count = 1;
};

EventRecord ParseEvent(const nlohmann::json& event);
// The items of an EventList.
std::vector<EventRecord> ParseEventList(const nlohmann::json& list);

// Oldest first, by the time each was last seen (then first seen, then name); those without a time first.
void SortByTime(std::vector<EventRecord>& events);

// Whether `pod` is a worker pod of job `job` by its name (operator/controller/worker_objects.h's
// WorkerPodName), whether or not the pod still exists.
bool IsWorkerPodName(const std::string& job, const std::string& pod);

// The table: AGE (as of `now`; "2m (x3 over 5m)" for a repeated event), TYPE, REASON, OBJECT
// ("trainingjob/train", "pod/train-worker-1") and MESSAGE, one line each, columns aligned; "No events." when
// there are none.
std::string FormatEventTable(const std::vector<EventRecord>& events, Clock::time_point now);

}  // namespace ringmaster::kubectl_plugin

#include "operator/kubectl_plugin/event_list.h"

#include <algorithm>
#include <cctype>

#include "base/json_path.h"
#include "base/time_format.h"
#include "operator/controller/worker_objects.h"
#include "operator/kubectl_plugin/durations.h"

namespace ringmaster::kubectl_plugin {

namespace {

using nlohmann::json;

std::optional<Clock::time_point> TimeAt(const json& j, std::initializer_list<std::string_view> path) {
  const std::string text = StringAt(j, path);
  if (text.empty()) return std::nullopt;
  return ParseRfc3339(text);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string OneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::string Age(const EventRecord& e, Clock::time_point now) {
  auto since = [now](const std::optional<Clock::time_point>& t) {
    return t ? HumanDuration(std::chrono::duration_cast<std::chrono::milliseconds>(now - *t))
             : std::string("<unknown>");
  };
  std::string age = since(e.last ? e.last : e.first);
  if (e.count > 1) age += " (x" + std::to_string(e.count) + " over " + since(e.first ? e.first : e.last) + ")";
  return age;
}

}  // namespace

EventRecord ParseEvent(const json& event) {
  EventRecord e;
  e.name = StringAt(event, {"metadata", "name"});
  e.type = StringAt(event, {"type"});
  e.reason = StringAt(event, {"reason"});
  e.message = StringAt(event, {"message"});
  e.kind = StringAt(event, {"involvedObject", "kind"});
  e.object = StringAt(event, {"involvedObject", "name"});
  e.uid = StringAt(event, {"involvedObject", "uid"});
  e.first = TimeAt(event, {"firstTimestamp"});
  if (!e.first) e.first = TimeAt(event, {"eventTime"});
  if (!e.first) e.first = TimeAt(event, {"metadata", "creationTimestamp"});
  e.last = TimeAt(event, {"series", "lastObservedTime"});
  if (!e.last) e.last = TimeAt(event, {"lastTimestamp"});
  if (!e.last) e.last = e.first;
  const int64_t count = IntAt(event, {"series", "count"}, IntAt(event, {"count"}, 1));
  e.count = std::max<int64_t>(count, 1);
  return e;
}

std::vector<EventRecord> ParseEventList(const json& list) {
  std::vector<EventRecord> out;
  for (const auto& item : ArrayAt(list, {"items"})) out.push_back(ParseEvent(item));
  return out;
}

void SortByTime(std::vector<EventRecord>& events) {
  std::stable_sort(events.begin(), events.end(), [](const EventRecord& a, const EventRecord& b) {
    return std::tie(a.last, a.first, a.name) < std::tie(b.last, b.first, b.name);
  });
}

bool IsWorkerPodName(const std::string& job, const std::string& pod) {
  const std::string prefix = controller::WorkerPodName(job, 0);  // "<job>-worker-0"
  const std::string stem = prefix.substr(0, prefix.size() - 1);
  if (pod.size() <= stem.size() || pod.compare(0, stem.size(), stem) != 0) return false;
  const std::string index = pod.substr(stem.size());
  if (index.size() > 9 || !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return controller::WorkerPodName(job, std::stoi(index)) == pod;
}

std::string FormatEventTable(const std::vector<EventRecord>& events, Clock::time_point now) {
  if (events.empty()) return "No events.\n";
  struct Row {
    std::string age, type, reason, object, message;
  };
  std::vector<Row> rows = {{"AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"}};
  for (const auto& e : events) {
    rows.push_back({Age(e, now), e.type, e.reason, Lower(e.kind) + "/" + e.object, OneLine(e.message)});
  }
  size_t w_age = 0, w_type = 0, w_reason = 0, w_object = 0;
  for (const auto& r : rows) {
    w_age = std::max(w_age, r.age.size());
    w_type = std::max(w_type, r.type.size());
    w_reason = std::max(w_reason, r.reason.size());
    w_object = std::max(w_object, r.object.size());
  }
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  std::string out;
  for (const auto& r : rows) {
    out +=
        pad(r.age, w_age) + pad(r.type, w_type) + pad(r.reason, w_reason) + pad(r.object, w_object) + r.message + "\n";
  }
  return out;
}

}  // namespace ringmaster::kubectl_plugin

#include "operator/kubectl_plugin/timeline.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "base/time_format.h"
#include "operator/kubectl_plugin/durations.h"

namespace ringmaster::kubectl_plugin {

namespace {

// Reads the decimal number at text[*i], advancing *i; false when there is none or it overflows.
bool ReadNumber(std::string_view text, size_t* i, int64_t* out) {
  size_t start = *i;
  int64_t n = 0;
  while (*i < text.size() && std::isdigit(static_cast<unsigned char>(text[*i]))) {
    if (n > (INT64_MAX - 9) / 10) return false;
    n = n * 10 + (text[*i] - '0');
    ++*i;
  }
  *out = n;
  return *i > start;
}

bool Expect(std::string_view text, size_t* i, std::string_view word) {
  if (text.substr(*i, word.size()) != word) return false;
  *i += word.size();
  return true;
}

std::chrono::milliseconds Between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from);
}

}  // namespace

std::optional<GenerationHeadline> ParseGenerationMessage(std::string_view message) {
  size_t i = 0;
  int64_t generation = 0, world = 0;
  if (!Expect(message, &i, "generation ") || !ReadNumber(message, &i, &generation)) return std::nullopt;
  if (!Expect(message, &i, ", world size ") || !ReadNumber(message, &i, &world)) return std::nullopt;
  if (i < message.size() && message[i] != ' ' && message[i] != ',') return std::nullopt;
  if (world > INT32_MAX) return std::nullopt;
  return GenerationHeadline{generation, static_cast<int32_t>(world)};
}

std::string ChangeDetail(const std::string& message) {
  const size_t open = message.find(" (");
  if (open == std::string::npos || message.empty() || message.back() != ')') return message;
  return message.substr(open + 2, message.size() - open - 3);
}

std::vector<GenerationSpan> BuildTimeline(const std::vector<EventRecord>& job_events,
                                          const std::optional<api::Membership>& current,
                                          std::optional<Clock::time_point> end, Clock::time_point now) {
  std::map<int64_t, GenerationSpan> by_generation;
  for (const auto& e : job_events) {
    auto headline = ParseGenerationMessage(e.message);
    if (!headline) continue;
    GenerationSpan span;
    span.generation = headline->generation;
    span.world_size = headline->world_size;
    span.reason = e.reason;
    span.message = e.message;
    span.published = e.first;
    auto [it, inserted] = by_generation.emplace(span.generation, span);
    // Two Events for one generation (a second operator replica's, say): the earlier is the publication.
    if (!inserted && span.published && (!it->second.published || *span.published < *it->second.published))
      it->second = span;
  }
  if (current && current->generation > 0) {
    GenerationSpan span;
    span.generation = current->generation;
    span.world_size = current->world_size();
    span.reason = current->reason;
    span.message = current->message;
    span.published = ParseRfc3339(current->changed_at);
    auto [it, inserted] = by_generation.emplace(span.generation, span);
    if (!inserted && !it->second.published) it->second.published = span.published;
  }
  std::vector<GenerationSpan> spans;
  for (auto& [generation, span] : by_generation) spans.push_back(std::move(span));
  for (size_t i = 0; i < spans.size(); ++i) {
    GenerationSpan& s = spans[i];
    if (!s.published) continue;
    if (i + 1 < spans.size()) {
      const GenerationSpan& next = spans[i + 1];
      if (next.generation == s.generation + 1 && next.published)
        s.lasted = std::max(Between(*s.published, *next.published), std::chrono::milliseconds(0));
      continue;
    }
    // The last one known: in force until now (or the job's end) when it is the status's generation.
    if (current && current->generation == s.generation) {
      s.current = !end.has_value();
      s.lasted = std::max(Between(*s.published, end.value_or(now)), std::chrono::milliseconds(0));
    }
  }
  return spans;
}

std::string FormatTimeline(const std::vector<GenerationSpan>& spans) {
  if (spans.empty()) return "No generation published yet.\n";
  struct Row {
    std::string gen, published, world, lasted, reason, change;
    bool gap = false;  // a run of missing generations: `change` says which
  };
  std::vector<Row> rows = {{"GEN", "PUBLISHED", "WORLD", "LASTED", "REASON", "CHANGE"}};
  int64_t expected = 1;
  for (const auto& s : spans) {
    if (s.generation > expected) {
      const std::string missing = s.generation == expected + 1 ? "generation " + std::to_string(expected)
                                                               : "generations " + std::to_string(expected) + "-" +
                                                                     std::to_string(s.generation - 1);
      rows.push_back({"...", "", "", "", "",
                      missing + ": no Event left (Events expire after an hour; the operator rate-limits them per job)",
                      true});
    }
    expected = s.generation + 1;
    std::string lasted = s.lasted ? HumanDuration(*s.lasted) : "?";
    if (s.current && s.lasted) lasted += " so far";
    rows.push_back({std::to_string(s.generation), s.published ? FormatRfc3339(*s.published) : "?",
                    std::to_string(s.world_size), lasted, s.reason.empty() ? "-" : s.reason, ChangeDetail(s.message)});
  }
  size_t w[5] = {0, 0, 0, 0, 0};
  for (const auto& r : rows) {
    if (r.gap) continue;
    w[0] = std::max(w[0], r.gen.size());
    w[1] = std::max(w[1], r.published.size());
    w[2] = std::max(w[2], r.world.size());
    w[3] = std::max(w[3], r.lasted.size());
    w[4] = std::max(w[4], r.reason.size());
  }
  auto pad = [](const std::string& s, size_t width) { return s + std::string(width - s.size() + 2, ' '); };
  std::string out;
  for (const auto& r : rows) {
    std::string line = r.gap ? pad(r.gen, w[0]) + r.change
                             : pad(r.gen, w[0]) + pad(r.published, w[1]) + pad(r.world, w[2]) + pad(r.lasted, w[3]) +
                                   pad(r.reason, w[4]) + r.change;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace ringmaster::kubectl_plugin

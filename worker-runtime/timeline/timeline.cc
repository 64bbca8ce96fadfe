#include "worker-runtime/timeline/timeline.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace ringmaster::timeline {

StatusOr<std::unique_ptr<Timeline>> Timeline::Open(const std::string& path, int rank) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return UnavailableError("cannot open timeline '" + path + "': " + std::strerror(errno));
  std::fputs("[\n", f);
  return std::unique_ptr<Timeline>(new Timeline(f, rank));
}

StatusOr<std::unique_ptr<Timeline>> OpenTimelineForRank(const std::string& path, int rank) {
  if (path.empty()) return std::unique_ptr<Timeline>();
  std::string resolved = path;
  const size_t pos = resolved.find("{rank}");
  if (pos != std::string::npos) resolved.replace(pos, 6, std::to_string(rank));
  if (pos == std::string::npos && rank != 0) return std::unique_ptr<Timeline>();
  // A folder that does not exist yet is made (as a run's output folder usually is); Open reports the rest.
  const std::filesystem::path parent = std::filesystem::path(resolved).parent_path();
  std::error_code ignored;
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  return Timeline::Open(resolved, rank);
}

Timeline::Timeline(std::FILE* file, int rank) : rank_(rank), origin_(Clock::now()), file_(file) {}

Timeline::~Timeline() {
  std::lock_guard<std::mutex> lock(mu_);
  std::fputs("\n]\n", file_);
  std::fclose(file_);
}

void Timeline::Record(std::string_view tensor, std::string_view phase, int process_set, Clock::time_point start,
                      Clock::time_point end, std::string_view detail) {
  auto us = [&](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
  };
  nlohmann::json event = {{"name", phase},
                          {"cat", "collective"},
                          {"ph", "X"},
                          {"pid", rank_},
                          {"tid", process_set},
                          {"ts", us(start)},
                          {"dur", std::max<long long>(0, us(end) - us(start))},
                          {"args", {{"tensor", tensor}}}};
  if (!detail.empty()) event["args"]["detail"] = detail;
  std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu_);
  if (!first_) std::fputs(",\n", file_);
  first_ = false;
  std::fputs(line.c_str(), file_);
  std::fflush(file_);
}

}  // namespace ringmaster::timeline

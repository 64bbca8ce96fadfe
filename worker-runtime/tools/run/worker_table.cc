#include "worker-runtime/tools/run/worker_table.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

namespace ringmaster::run {

Worker* WorkerTable::Add(std::unique_ptr<Worker> worker) {
  members_.push_back(worker->id);
  workers_.push_back(std::move(worker));
  return workers_.back().get();
}

bool WorkerTable::Remove(const std::string& id) {
  auto it = std::find(members_.begin(), members_.end(), id);
  if (it == members_.end()) return false;
  members_.erase(it);
  return true;
}

Worker* WorkerTable::ById(const std::string& id) const {
  for (auto& w : workers_)
    if (w->id == id) return w.get();
  return nullptr;
}

Worker* WorkerTable::AtRank(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(members_.size())) return nullptr;
  return ById(members_[rank]);
}

bool WorkerTable::AnyRunning() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const auto& w) { return w->running; });
}

int WorkerTable::FreeDevice(const std::string& node) const {
  std::vector<bool> held;
  for (const auto& w : workers_) {
    if (!w->running || w->node != node) continue;
    if (static_cast<size_t>(w->device) >= held.size()) held.resize(w->device + 1);
    held[w->device] = true;
  }
  return static_cast<int>(std::find(held.begin(), held.end(), false) - held.begin());
}

bool WorkerTable::AnyFinished() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const auto& w) { return w->finished; });
}

void WorkerTable::KillAll() {
  for (auto& w : workers_) {
    if (!w->running) continue;
    w->process.Kill();
    w->running = false;
  }
}

std::string HeartbeatPath(const std::string& out, const std::string& id) { return out + "/hb." + id; }

std::optional<Clock::time_point> LastBeat(const std::string& out, const Worker& w) {
  struct stat st{};
  if (::stat(HeartbeatPath(out, w.id).c_str(), &st) != 0) return std::nullopt;
  // Compare the file's age on the system clock, mapped onto the steady clock.
  auto age = std::chrono::system_clock::now() -
             std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
                 std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  auto beat = Clock::now() - std::chrono::duration_cast<Clock::duration>(age);
  return std::max(beat, w.started);
}

int64_t Progress(const std::string& out, const WorkerTable& table) {
  int64_t best = 0;
  for (const auto& w : table.all()) {
    std::ifstream in(HeartbeatPath(out, w->id));
    int64_t step = 0;
    if (in >> step) best = std::max(best, step);
  }
  return best;
}

}  // namespace ringmaster::run

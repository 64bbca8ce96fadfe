// ringmaster-run's process table: every worker it started (running or not) and the current members in
// rank order, plus what their heartbeat files say.
//
// Membership rule (the operator's): survivors keep their relative order (rank 0 stays rank 0 unless it
// is lost), newcomers are appended -- Add appends, Remove erases in place.
// Thread-safety: none (the launcher is single-threaded). Ownership: the table owns its Workers and their
// processes (a Subprocess kills a process still running when destroyed).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace ringmaster::run {

using Clock = std::chrono::steady_clock;

struct Worker {
  std::string id;     // w<slot>
  std::string node;   // the simulated node it runs on
  int device = 0;     // its GPU index on that node (RINGMASTER_DEVICE): the lowest no running worker there holds
  uint16_t port = 0;  // its store port on 127.0.0.1
  Subprocess process;
  Clock::time_point started;
  bool running = true;    // its exit not handled yet
  bool finished = false;  // exited 0
  Clock::time_point exited;
  pid_t pid() const { return process.pid(); }
};

class WorkerTable {
 public:
  // Takes the worker and makes it the last member.
  Worker* Add(std::unique_ptr<Worker> worker);
  // Drops `id` from the members (it stays in the table). False when it was no member.
  bool Remove(const std::string& id);

  Worker* ById(const std::string& id) const;
  Worker* AtRank(int rank) const;                                       // nullptr when out of range
  const std::vector<std::string>& members() const { return members_; }  // ids in rank order
  const std::vector<std::unique_ptr<Worker>>& all() const { return workers_; }
  bool AnyRunning() const;
  // The lowest device index on `node` that no running worker holds (a replacement takes a dead one's GPU).
  int FreeDevice(const std::string& node) const;
  bool AnyFinished() const;
  // SIGKILLs and reaps every worker still running.
  void KillAll();

 private:
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::string> members_;
};

// The heartbeat file of worker `id` in the launcher's --out directory.
std::string HeartbeatPath(const std::string& out, const std::string& id);
// When `w` last beat (its heartbeat file's mtime on the steady clock; never before it started); nullopt
// before its first heartbeat.
std::optional<Clock::time_point> LastBeat(const std::string& out, const Worker& w);
// The highest committed step any worker's heartbeat reports (0 when none).
int64_t Progress(const std::string& out, const WorkerTable& table);

}  // namespace ringmaster::run

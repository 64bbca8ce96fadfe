#include "worker-runtime/tools/run/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "api/hang_report.h"
#include "api/job_status.h"
#include "api/membership.h"
#include "api/names.h"
#include "api/worker_env.h"
#include "worker-runtime/data/splitmix64.h"
#include "worker-runtime/elastic/sample_journal.h"
#include "worker-runtime/membership/file_source.h"
#include "worker-runtime/tools/run/collective_killer.h"
#include "worker-runtime/tools/run/exit_waiter.h"
#include "worker-runtime/tools/run/launcher_membership.h"
#include "worker-runtime/tools/run/phase_file.h"
#include "worker-runtime/tools/run/save_killer.h"
#include "worker-runtime/tools/run/worker_table.h"

namespace ringmaster::run {

using namespace std::chrono_literals;

namespace {

StatusOr<uint16_t> FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return UnavailableError(std::string("bind: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

void AddReason(std::string& why, const std::string& reason) { why += (why.empty() ? "" : ", ") + reason; }

// Removes what an earlier run left in `out` (journals, weights, heartbeats, results, the membership).
void CleanOutputDirectory(const std::string& out) {
  std::filesystem::create_directories(out);
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    auto name = e.path().filename().string();
    if (name.rfind("journal.", 0) == 0 || name.rfind("weights", 0) == 0 || name.rfind("hb.", 0) == 0 ||
        name == "samples.log" || name == "membership.json" || api::HangReporterOfFileName(name) ||
        name.rfind("termination.", 0) == 0 || name.rfind("commits.", 0) == 0 || name.rfind("phase.", 0) == 0) {
      std::filesystem::remove(e.path());
    }
  }
}

class Launcher {
 public:
  explicit Launcher(const LauncherOptions& o) : o_(o), membership_path_(o.out + "/membership.json") {}

  int Run() {
    CleanOutputDirectory(o_.out);
    for (int i = 0; i < o_.np; ++i) {
      if (!Spawn()) return Finish(1);
    }
    if (!Publish("initial workers")) return Finish(1);
    const auto deadline = Clock::now() + o_.deadline;
    while (true) {
      if (std::optional<int> code = Tick(deadline)) return *code;
      if (!table_.AnyRunning()) break;
      exits_.Wait(20ms);  // a worker's death wakes the loop at once (its survivors wait for the membership)
    }
    if (table_.AnyFinished() && !rank0_finished_) Print("workers exited 0, but rank 0 never finished: no result");
    return Finish(rank0_finished_ ? 0 : 1);
  }

 private:
  // One pass of the supervision loop: notice exits and silent workers, publish the change, resume paused
  // workers, fire the next chaos event, give up below --min or past the deadline. An exit code when the
  // run is over.
  std::optional<int> Tick(Clock::time_point deadline) {
    std::string why;
    ReapExited(why);
    if (!cannot_go_on_.empty()) {
      // A worker ended by what no rebuild repairs (a sticky CUDA error, a refused configuration): a replacement
      // here would fail the same way, so the run ends, saying what it said.
      Print(cannot_go_on_ + "; stopping the run");
      table_.KillAll();
      return Finish(1);
    }
    RemoveFinishedLaggards(why);
    RemoveUnresponsive(why);
    if (!why.empty() && !table_.members().empty() && !Publish(why)) return Finish(1);
    if (!PublishHang()) return Finish(1);
    ResumePaused();
    if (!FireDueChaos()) return Finish(1);
    if (std::optional<int> code = CheckBelowMin()) return code;
    if (o_.deadline.count() > 0 && table_.AnyRunning() && Clock::now() > deadline) {
      Print("deadline of " + std::to_string(o_.deadline.count() / 1000) + " s passed: killing the workers");
      table_.KillAll();
      return Finish(1);
    }
    return std::nullopt;
  }

  // Reaps workers that exited; one that failed or was killed leaves the membership at once.
  void ReapExited(std::string& why) {
    for (const auto& w : table_.all()) {
      if (!w->running) continue;
      std::optional<ExitStatus> exit = w->process.Poll();
      if (!exit) continue;
      exits_.Forget(w->pid());
      w->running = false;
      if (exit->exited() && exit->code == 0) {
        w->finished = true;
        w->exited = Clock::now();
        // The run's result is rank 0's: it writes the final weights and, as in a TrainingJob, its exit 0 is
        // what ends the training.
        const bool rank0 = !published_.members.empty() && published_.members.front().id() == w->id;
        rank0_finished_ |= rank0;
        Print(w->id + " exited 0" + (rank0 ? " (rank 0)" : ""));
        continue;  // its peers are likely finishing too: removed after a grace period
      }
      Print(w->id + (exit->exited() ? " exited with status " + std::to_string(exit->code)
                                    : " killed by signal " + std::to_string(exit->signal)));
      if (table_.Remove(w->id)) AddReason(why, w->id + " gone");
      // Its termination message (elastic/termination_report.h) says it cannot go on.
      std::ifstream said(TerminationPath(w->id));
      std::stringstream text;
      text << said.rdbuf();
      if (exit->exited() && !text.str().empty() && cannot_go_on_.empty())
        cannot_go_on_ = w->id + " cannot go on: " + text.str();
    }
  }

  // A finished worker whose peers are still running after a grace period: they need a new generation.
  void RemoveFinishedLaggards(std::string& why) {
    for (const std::string& id : std::vector<std::string>(table_.members())) {
      Worker* w = table_.ById(id);
      if (w->finished && Clock::now() - w->exited > 1s && table_.Remove(id)) AddReason(why, id + " finished");
    }
  }

  // A stopped (or frozen) worker is removed, then killed (reaped on a later pass). Until its first heartbeat
  // a worker is starting: its heartbeat thread only runs once the program has started the ringmaster
  // runtime, after imports (torch: 5-10 s, more on a loaded machine) and whatever it does first, so only
  // --startup-timeout-s applies then; from its first heartbeat on, --heartbeat-timeout-ms.
  void RemoveUnresponsive(std::string& why) {
    for (const std::string& id : std::vector<std::string>(table_.members())) {
      Worker* w = table_.ById(id);
      if (!w->running) continue;
      const std::optional<Clock::time_point> beat = LastBeat(o_.out, *w);
      const auto now = Clock::now();
      if (!beat) {
        if (now - w->started <= o_.startup_timeout) continue;
        Print(w->id + " sent no heartbeat within " + std::to_string(o_.startup_timeout.count() / 1000) +
              " s of its start; removing and killing it (its first heartbeat comes once it starts the ringmaster "
              "runtime: raise --startup-timeout-s if its start takes longer)");
      } else {
        if (now - *beat <= o_.heartbeat_timeout) continue;
        Print(w->id + " sent no heartbeat for " + std::to_string(o_.heartbeat_timeout.count()) +
              " ms; removing and killing it (the process is stopped or frozen: its heartbeat thread runs "
              "beside the training; raise --heartbeat-timeout-ms if it pauses that long)");
      }
      table_.Remove(w->id);
      (void)w->process.Signal(SIGKILL);
      AddReason(why, w->id + " unresponsive");
    }
  }

  // A member's hang report about the published generation (api/hang_report.h, a file its membership source writes
  // beside the membership file): the next generation, reason Hung, with the same members, so that every member
  // aborts its stuck step and rebuilds. A report about an older generation is stale (its generation was replaced,
  // maybe by this very one): the same report counts once. False when the record cannot be written.
  bool PublishHang() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(o_.out, ec)) {
      const std::optional<std::string> reporter = api::HangReporterOfFileName(e.path().filename().string());
      if (!reporter || published_.Find(*reporter) == nullptr) continue;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      auto report = api::DecodeHangReport(*reporter, text.str());
      if (!report.ok() || report->generation != published_.generation) continue;
      char why[160];
      std::snprintf(why, sizeof why, "%s committed no step for %.1f s (median step %.3f s)", reporter->c_str(),
                    report->stalled_seconds, report->median_step_seconds);
      ++hangs_;
      return Publish(std::string(api::reason::kHung), why);
    }
    return true;
  }

  // Below --min: done when a worker finished (the rest cannot finish below --min), failed when no
  // chaos event will add workers; otherwise the training pauses until one does.
  std::optional<int> CheckBelowMin() {
    if (table_.members().empty() || static_cast<int>(table_.members().size()) >= o_.min) return std::nullopt;
    bool will_add = false;
    for (size_t i = next_event_; i < o_.chaos.size(); ++i) {
      const std::string& a = o_.chaos[i].action;
      will_add |= a == "add" || a == "killadd" || a == "killcoll" || a == "random";
    }
    if (table_.AnyFinished()) {
      // Rank 0 still running is finishing too (its heartbeat check removes it if it hangs): wait for it.
      const Worker* rank0 = table_.ById(table_.members().front());
      if (!rank0_finished_ && rank0 != nullptr && rank0->running) return std::nullopt;
      Print(rank0_finished_ ? "rank 0 finished and the rest is below --min: stopping them"
                            : "workers finished but rank 0 did not, and the rest is below --min: giving up");
      table_.KillAll();
      return Finish(rank0_finished_ ? 0 : 1);
    }
    if (!will_add) {
      Print("membership is below --min " + std::to_string(o_.min) + " and nothing will add workers: giving up");
      table_.KillAll();
      return Finish(1);
    }
    return std::nullopt;
  }

  void Print(const std::string& line) {
    double t = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "[ringmaster-run %7.3fs] %s\n", t, line.c_str());
  }

  // What a worker is told through its environment (on top of the launcher's own).
  EnvironmentList WorkerEnvironment(const Worker& w) const {
    api::WorkerEnv env;
    env.membership_file = membership_path_;
    env.worker_id = w.id;
    env.secret = o_.secret;
    env.store_port = w.port;
    env.heartbeat_file = HeartbeatPath(o_.out, w.id);
    env.min_workers = o_.min;
    env.out = o_.out;
    env.health_port = 0;  // many workers on one host: any free port
    env.checkpoint_dir = o_.checkpoint_dir;
    env.device = std::to_string(w.device);
    env.node_name = w.node;  // named in its termination message
    std::map<std::string, std::string> vars = env.ToEnvironment();
    vars[std::string(api::env::kTerminationLog)] = TerminationPath(w.id);
    vars[kPhaseFileEnv] = PhasePath(w.id);  // killcoll reads it
    return EnvironmentList(vars.begin(), vars.end());
  }

  // Starts a worker in a new slot and appends it to the members (not published yet).
  bool Spawn() {
    auto port = FreePort();
    if (!port.ok()) {
      Print("no free port: " + port.status().ToString());
      return false;
    }
    auto w = std::make_unique<Worker>();
    const int slot = next_slot_++;
    w->id = "w" + std::to_string(slot);
    w->node = o_.workers_per_node > 0 ? "node" + std::to_string(slot / o_.workers_per_node) : "localhost";
    w->device = table_.FreeDevice(w->node);
    w->port = *port;
    w->started = Clock::now();
    SpawnOptions so;
    so.argv = o_.command;
    so.env = WorkerEnvironment(*w);
    so.in = Redirect::Inherit();
    so.own_process_group = false;  // a Ctrl-C at the terminal reaches the workers too
    std::fflush(nullptr);
    auto process = Subprocess::Start(so);
    if (!process.ok()) {
      Print("cannot start " + w->id + ": " + process.status().ToString());
      return false;
    }
    w->process = std::move(process).value();
    Print("started " + w->id + " on " + w->node + " (pid " + std::to_string(w->pid()) + ", store port " +
          std::to_string(w->port) + ")");
    exits_.Watch(w->pid());
    table_.Add(std::move(w));
    return true;
  }

  // Where worker `id` writes its termination message (RINGMASTER_TERMINATION_LOG).
  std::string TerminationPath(const std::string& id) const { return o_.out + "/termination." + id; }
  // Where worker `id` says whether it is inside a collective (RINGMASTER_PHASE_FILE, phase_file.h).
  std::string PhasePath(const std::string& id) const { return o_.out + "/phase." + id; }

  // Writes the next generation of the membership file.
  // `reason` is the record's (a name the runtime may act on, e.g. WorkerJoined); `why` is printed, and kept as the
  // record's message.
  bool Publish(const std::string& reason, const std::string& why = "") {
    api::Membership r = BuildMembershipRecord(published_, reason, table_);
    if (!why.empty()) r.message = why;
    Status s = membership::WriteMembershipFile(membership_path_, r);
    if (!s.ok()) {
      Print("cannot write the membership: " + s.ToString());
      return false;
    }
    published_ = r;
    std::string names;
    for (const auto& m : r.members) names += (names.empty() ? "" : " ") + m.pod;
    const int size = static_cast<int>(r.members.size());
    Print("generation " + std::to_string(r.generation) + ": " + std::to_string(size) + " workers [" + names + "] (" +
          (why.empty() ? reason : reason + ": " + why) + ")" +
          (size < o_.min ? " -- below --min, training pauses" : ""));
    return true;
  }

  void ResumePaused() {
    for (auto it = resume_.begin(); it != resume_.end();) {
      if (Clock::now() < it->first) {
        ++it;
        continue;
      }
      Worker* w = table_.ById(it->second);
      Print("chaos: SIGCONT pid " + std::to_string(w->pid()));
      (void)w->process.Signal(SIGCONT);
      it = resume_.erase(it);
    }
  }

  // Fires the next chaos event once the workers reached its step, the gap since the last passed, and every
  // worker an earlier event SIGKILLed has left the published membership: until then the ranks still count it,
  // so "kill rank 0" twice would hit the dead worker again instead of the next rank 0.
  bool FireDueChaos() {
    if (next_event_ >= o_.chaos.size() || Clock::now() - last_event_ < o_.chaos_gap) return true;
    if (KilledWorkerStillMember()) return true;
    const ChaosEvent& e = o_.chaos[next_event_];
    if (Progress(o_.out, table_) < e.step || table_.members().empty()) return true;
    last_event_ = Clock::now();
    ++next_event_;
    return Inject(e);
  }

  bool KilledWorkerStillMember() {
    for (auto it = killed_.begin(); it != killed_.end();) {
      const auto& members = table_.members();
      if (std::find(members.begin(), members.end(), *it) != members.end()) return true;
      it = killed_.erase(it);
    }
    return false;
  }

  // A random event drawn now: an add at --min, else a kill, stop, killadd (or add below --max).
  ChaosEvent DrawRandom() {
    static const char* kActions[] = {"kill", "stop", "killadd", "add"};
    int live = 0;  // members not stopped by earlier chaos (those are about to be removed)
    for (const auto& id : table_.members()) live += stopped_.count(id) ? 0 : 1;
    const bool at_min = live <= o_.min;
    const bool at_max = static_cast<int>(table_.members().size()) >= o_.max;
    ChaosEvent e;
    e.action = at_min ? "add" : kActions[rng_.Below(at_max ? 3 : 4)];
    e.arg = e.action == "add" ? 1 : static_cast<int>(rng_.Below(table_.members().size()));
    Print("chaos: random event -> " + e.action + (e.action == "add" ? "" : " rank " + std::to_string(e.arg)));
    return e;
  }

  bool InjectAdd(int count) {
    int n = std::min<int>(count, o_.max - static_cast<int>(table_.members().size()));
    if (n <= 0) {
      Print("chaos: add skipped (at --max)");
      return true;
    }
    for (int i = 0; i < n; ++i)
      if (!Spawn()) return false;
    // The operator's reason for workers that join (operator/controller/membership.h's WorkerJoined), so the
    // runtime takes it as an orderly change: the members switch at a step boundary, as under the operator.
    return Publish("WorkerJoined", "chaos: added " + std::to_string(n));
  }

  bool Inject(const ChaosEvent& planned) {
    ChaosEvent e = planned.action == "random" ? DrawRandom() : planned;
    if (e.any_rank) e.arg = static_cast<int>(rng_.Below(table_.members().size()));
    if (e.action == "add") return InjectAdd(e.arg);
    Worker* w = table_.AtRank(e.arg);
    if (w == nullptr) {
      Print("chaos: no worker at rank " + std::to_string(e.arg));
      return true;
    }
    const std::string who = w->id + " (rank " + std::to_string(e.arg) + ")";
    if (e.action == "pause") {
      Print("chaos: SIGSTOP " + who + " for " + std::to_string(o_.pause.count()) + " ms");
      (void)w->process.Signal(SIGSTOP);
      resume_.push_back({Clock::now() + o_.pause, w->id});
      return true;
    }
    if (e.action == "stop") {
      Print("chaos: SIGSTOP " + who);
      (void)w->process.Signal(SIGSTOP);
      stopped_.insert(w->id);
      return true;
    }
    if (e.action == "killsave") {
      auto save = KillDuringSave(w->process, o_.checkpoint_dir, 10s);
      if (!save.ok()) {
        Print("chaos: killsave: " + save.status().ToString());
        return false;
      }
      Print("chaos: SIGKILL " + who + " while " + *save + " was being written");
      killed_.insert(w->id);
      return true;  // reaped on the next pass
    }
    if (e.action == "killcoll") {
      // The worker is frozen and read many times a second until it is caught inside a collective: up to 10 s.
      auto step = KillInsideCollective(w->process, PhasePath(w->id), 10s);
      if (!step.ok()) {
        ++collective_kills_missed_;
        Print("chaos: killcoll " + who + " skipped: " + step.status().ToString());
        return true;
      }
      ++collective_kills_;
      Print("chaos: SIGKILL " + who + " inside the collective of step " + std::to_string(*step));
    } else {
      Print("chaos: SIGKILL " + who);
      (void)w->process.Signal(SIGKILL);
    }
    if (e.action == "kill") {
      killed_.insert(w->id);
      return true;  // reaped on the next pass
    }
    // killadd, killcoll: two changes back to back, the removal, then at once an add. The killed worker is reaped
    // first: until then it counts as holding its GPU, and its replacement must take that GPU (FreeDevice).
    table_.Remove(w->id);
    (void)w->process.Wait(2s);
    std::string reaped;  // it is no member any more: no reason to publish
    ReapExited(reaped);
    if (!Publish("chaos: " + w->id + " killed")) return false;
    if (!Spawn()) return false;
    return Publish("chaos: replacement added");
  }

  // Resolves the workers' sample journals into OUT/samples.log. False when they do not resolve.
  bool WriteSamplesLog() {
    std::vector<std::string> journals;
    for (const auto& w : table_.all()) {
      std::string j = o_.out + "/journal." + w->id + ".log";
      if (std::filesystem::exists(j)) journals.push_back(j);
    }
    auto resolved = elastic::ResolveJournals(journals, std::numeric_limits<int64_t>::max());
    if (!resolved.ok()) {
      Print("cannot resolve the journals: " + resolved.status().ToString());
      return false;
    }
    std::ofstream out(o_.out + "/samples.log");
    for (const auto& s : *resolved) out << s.epoch << " " << s.sample << "\n";
    Print("samples.log: " + std::to_string(resolved->size()) + " committed samples");
    return true;
  }

  // Copies a finisher's weights to OUT/weights.txt (all finishers' are equal; a difference is reported).
  void WriteWeights() {
    std::string weights;
    for (const auto& w : table_.all()) {
      std::ifstream in(o_.out + "/weights." + w->id + ".txt");
      if (!in) continue;
      std::stringstream text;
      text << in.rdbuf();
      if (weights.empty()) {
        weights = text.str();
      } else if (weights != text.str()) {
        Print("warning: " + w->id + "'s final weights differ from another finisher's");
      }
    }
    if (!weights.empty()) std::ofstream(o_.out + "/weights.txt") << weights;
  }

  int Finish(int code) {
    if (!WriteSamplesLog()) code = 1;
    WriteWeights();
    if (hangs_ > 0) Print("generations rebuilt for a hang: " + std::to_string(hangs_));
    if (collective_kills_ + collective_kills_missed_ > 0) {
      Print("chaos: workers killed inside a collective: " + std::to_string(collective_kills_) + " (" +
            std::to_string(collective_kills_missed_) + " killcoll skipped)");
    }
    Print(code == 0 ? "training finished" : "training FAILED");
    return code;
  }

  // Constant after construction.
  const LauncherOptions& o_;
  const Clock::time_point start_ = Clock::now();
  const std::string membership_path_;

  WorkerTable table_;
  ExitWaiter exits_;                 // the running workers, to wake the supervision loop when one exits
  api::Membership published_;        // the last record written
  bool rank0_finished_ = false;      // a worker exited 0 while it was rank 0 of the published record
  int hangs_ = 0;                    // generations published for a member's hang report
  int collective_kills_ = 0;         // killcoll events that killed their worker inside a collective
  int collective_kills_missed_ = 0;  // killcoll events that caught no collective (their worker lives on)
  std::string cannot_go_on_;         // the first worker that exited with a termination message, and what it said
  int next_slot_ = 0;
  size_t next_event_ = 0;
  Clock::time_point last_event_ = Clock::now() - o_.chaos_gap;     // the first event fires on its step
  std::vector<std::pair<Clock::time_point, std::string>> resume_;  // paused workers and when to SIGCONT them
  data::SplitMix64 rng_{o_.chaos_seed};
  std::set<std::string> stopped_;  // SIGSTOPped for good (removed by the heartbeat check)
  std::set<std::string> killed_;   // SIGKILLed by chaos and maybe still members (the next event waits for them)
};

}  // namespace

int RunLauncher(const LauncherOptions& options) { return Launcher(options).Run(); }

}  // namespace ringmaster::run

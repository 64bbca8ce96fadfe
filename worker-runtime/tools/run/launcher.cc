#include "tools/run/launcher.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <thread>

#include "data/splitmix64.h"
#include "elastic/sample_journal.h"
#include "api/membership.h"
#include "api/worker_env.h"
#include "membership/file_source.h"

namespace ringmaster::elastic {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

StatusOr<std::vector<ChaosEvent>> ParseChaos(const std::string& spec) {
  std::vector<ChaosEvent> events;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    ChaosEvent e;
    auto at = item.find('@');
    if (at == std::string::npos) return InvalidArgumentError("--chaos: '" + item + "' is not ACTION@STEP[:ARG]");
    e.action = item.substr(0, at);
    if (e.action != "kill" && e.action != "stop" && e.action != "add" && e.action != "killadd" && e.action != "pause" &&
        e.action != "random" && e.action != "killsave") {
      return InvalidArgumentError("--chaos: unknown action '" + e.action +
                                  "' (kill, killsave, stop, pause, add, killadd, random)");
    }
    std::string rest = item.substr(at + 1);
    auto colon = rest.find(':');
    try {
      e.step = std::stoll(rest.substr(0, colon));
      e.arg = colon == std::string::npos ? (e.action == "add" ? 1 : 0) : std::stoi(rest.substr(colon + 1));
    } catch (const std::exception&) {
      return InvalidArgumentError("--chaos: '" + item + "' has a bad number");
    }
    if (e.action == "random") {
      const int n = colon == std::string::npos ? 1 : e.arg;
      for (int k = 0; k < n; ++k) events.push_back({"random", e.step + 4 * k, 0});
      continue;
    }
    events.push_back(e);
  }
  return events;
}

StatusOr<LauncherOptions> ParseLauncherOptions(int argc, char** argv) {
  LauncherOptions o;
  int i = 1;
  auto number = [&](const std::string& flag, const char* value) -> StatusOr<int64_t> {
    try {
      return std::stoll(value);
    } catch (const std::exception&) {
      return InvalidArgumentError(flag + " needs a number, got '" + value + "'");
    }
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--help") {
      return InvalidArgumentError(
          "usage: ringmaster-run --np N [--min N] [--max N] [--chaos SPEC] [--chaos-gap-ms T] "
          "[--heartbeat-timeout-ms T] [--pause-ms T] [--chaos-seed N] [--deadline-s T] [--workers-per-node K] "
          "[--checkpoint-dir DIR] [--out DIR] [--secret S] -- COMMAND...\n"
          "chaos SPEC: comma-separated ACTION@STEP[:ARG], ACTION one of kill, killsave, stop, pause, add, killadd, "
          "random (see launcher.h)");
    }
    if (i + 1 >= argc) return InvalidArgumentError("flag '" + a + "' needs a value");
    const char* v = argv[++i];
    if (a == "--np" || a == "--min" || a == "--max" || a == "--chaos-gap-ms" || a == "--heartbeat-timeout-ms" ||
        a == "--deadline-s" || a == "--pause-ms" || a == "--chaos-seed" || a == "--workers-per-node") {
      RINGMASTER_ASSIGN_OR_RETURN(int64_t n, number(a, v));
      if (a == "--np") o.np = static_cast<int>(n);
      if (a == "--min") o.min = static_cast<int>(n);
      if (a == "--max") o.max = static_cast<int>(n);
      if (a == "--chaos-gap-ms") o.chaos_gap = std::chrono::milliseconds(n);
      if (a == "--heartbeat-timeout-ms") o.heartbeat_timeout = std::chrono::milliseconds(n);
      if (a == "--deadline-s") o.deadline = std::chrono::seconds(n);
      if (a == "--pause-ms") o.pause = std::chrono::milliseconds(n);
      if (a == "--chaos-seed") o.chaos_seed = static_cast<uint64_t>(n);
      if (a == "--workers-per-node") o.workers_per_node = static_cast<int>(n);
    } else if (a == "--chaos") {
      RINGMASTER_ASSIGN_OR_RETURN(o.chaos, ParseChaos(v));
    } else if (a == "--out") {
      o.out = v;
    } else if (a == "--checkpoint-dir") {
      o.checkpoint_dir = v;
    } else if (a == "--secret") {
      o.secret = v;
    } else {
      return InvalidArgumentError("unknown flag '" + a + "' (see --help)");
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.command.empty()) return InvalidArgumentError("no worker command after --");
  if (o.np < 1 || o.min < 1 || o.max < o.np || o.min > o.np) {
    return InvalidArgumentError("need 1 <= --min <= --np <= --max");
  }
  if (o.workers_per_node < 0) return InvalidArgumentError("--workers-per-node must be >= 0");
  for (const auto& e : o.chaos) {
    if (e.action == "killsave" && o.checkpoint_dir.empty()) {
      return InvalidArgumentError("--chaos killsave needs --checkpoint-dir (the directory the workers save into)");
    }
  }
  return o;
}

namespace {

struct Worker {
  std::string id;
  std::string node;  // the simulated node it runs on
  pid_t pid = -1;
  uint16_t port = 0;
  Clock::time_point started;
  bool running = true;
  bool finished = false;
  Clock::time_point exited;
};

constexpr char kWorkerHost[] = "127.0.0.1";  // every worker listens on loopback

StatusOr<uint16_t> FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
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

class Launcher {
 public:
  explicit Launcher(const LauncherOptions& o) : o_(o) {}

  int Run() {
    std::filesystem::create_directories(o_.out);
    for (const auto& e : std::filesystem::directory_iterator(o_.out)) {
      auto name = e.path().filename().string();
      if (name.rfind("journal.", 0) == 0 || name.rfind("weights", 0) == 0 || name.rfind("hb.", 0) == 0 ||
          name == "samples.log" || name == "membership.json") {
        std::filesystem::remove(e.path());
      }
    }
    membership_path_ = o_.out + "/membership.json";
    for (int i = 0; i < o_.np; ++i) {
      if (!Spawn()) return Finish(1);
    }
    if (!Publish("initial workers")) return Finish(1);
    const auto deadline = Clock::now() + o_.deadline;
    auto last_event = Clock::now() - o_.chaos_gap;  // the gap separates events; the first fires on its step
    size_t next_event = 0;
    while (true) {
      bool changed = false;
      std::string why;
      // Reap.
      int status = 0;
      pid_t pid;
      while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
        Worker* w = ByPid(pid);
        if (w == nullptr) continue;
        w->running = false;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
          w->finished = true;
          w->exited = Clock::now();
          Print(w->id + " exited 0");
          continue;  // its peers are likely finishing too: removed after a grace period (below)
        } else if (WIFEXITED(status)) {
          Print(w->id + " exited with status " + std::to_string(WEXITSTATUS(status)));
        } else {
          Print(w->id + " killed by signal " + std::to_string(WTERMSIG(status)));
        }
        if (Remove(w->id)) {
          changed = true;
          why += (why.empty() ? "" : ", ") + w->id + " gone";
        }
      }
      // A finished worker whose peers are still running after a grace period: they need a new generation.
      for (const std::string& id : std::vector<std::string>(members_)) {
        Worker* w = ById(id);
        if (w->finished && Clock::now() - w->exited > 1s && Remove(id)) {
          changed = true;
          why += (why.empty() ? "" : ", ") + id + " finished";
        }
      }
      // Heartbeats: a stopped (or hung) worker is removed, then killed.
      for (const std::string& id : std::vector<std::string>(members_)) {
        Worker* w = ById(id);
        if (!w->running) continue;
        auto beat = LastBeat(*w);
        if (Clock::now() - beat > o_.heartbeat_timeout) {
          Print(w->id + " missed its heartbeat for " + std::to_string(o_.heartbeat_timeout.count()) +
                " ms: removing and killing it");
          Remove(w->id);
          ::kill(w->pid, SIGKILL);
          changed = true;
          why += (why.empty() ? "" : ", ") + w->id + " unresponsive";
        }
      }
      if (changed && !members_.empty() && !Publish(why)) return Finish(1);
      // Chaos.
      for (auto it = resume_.begin(); it != resume_.end();) {
        if (Clock::now() < it->first) {
          ++it;
          continue;
        }
        Print("chaos: SIGCONT pid " + std::to_string(it->second));
        ::kill(it->second, SIGCONT);
        it = resume_.erase(it);
      }
      if (next_event < o_.chaos.size() && Clock::now() - last_event >= o_.chaos_gap) {
        const ChaosEvent& e = o_.chaos[next_event];
        if (Progress() >= e.step && !members_.empty()) {
          last_event = Clock::now();
          ++next_event;
          if (!Inject(e)) return Finish(1);
        }
      }
      if (!members_.empty() && static_cast<int>(members_.size()) < o_.min) {
        bool will_add = false, any_finished = false;
        for (size_t i = next_event; i < o_.chaos.size(); ++i) will_add |= o_.chaos[i].action == "add" || o_.chaos[i].action == "killadd" || o_.chaos[i].action == "random";
        for (const auto& w : workers_) any_finished |= w->finished;
        if (any_finished) {
          // The training is done (a worker committed the last step); the rest cannot finish below --min.
          Print("a worker finished and the rest is below --min: stopping them");
          for (auto& w : workers_) {
            if (w->running) ::kill(w->pid, SIGKILL);
          }
          while (::waitpid(-1, nullptr, 0) > 0) {
          }
          return Finish(0);
        }
        if (!will_add) {
          Print("membership is below --min " + std::to_string(o_.min) + " and nothing will add workers: giving up");
          for (auto& w : workers_) {
            if (w->running) ::kill(w->pid, SIGKILL);
          }
          while (::waitpid(-1, nullptr, 0) > 0) {
          }
          return Finish(1);
        }
      }
      bool any_running = false;
      for (const auto& w : workers_) any_running |= w->running;
      if (!any_running) break;
      if (Clock::now() > deadline) {
        Print("deadline of " + std::to_string(o_.deadline.count() / 1000) + " s passed: killing the workers");
        for (auto& w : workers_) {
          if (w->running) ::kill(w->pid, SIGKILL);
        }
        while (::waitpid(-1, nullptr, 0) > 0) {
        }
        return Finish(1);
      }
      std::this_thread::sleep_for(20ms);
    }
    bool finished = false;
    for (const auto& w : workers_) finished |= w->finished;
    return Finish(finished ? 0 : 1);
  }

 private:
  void Print(const std::string& line) {
    double t = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "[ringmaster-run %7.3fs] %s\n", t, line.c_str());
  }

  Worker* ByPid(pid_t pid) {
    for (auto& w : workers_)
      if (w->pid == pid) return w.get();
    return nullptr;
  }
  Worker* ById(const std::string& id) {
    for (auto& w : workers_)
      if (w->id == id) return w.get();
    return nullptr;
  }
  bool Remove(const std::string& id) {
    auto it = std::find(members_.begin(), members_.end(), id);
    if (it == members_.end()) return false;
    members_.erase(it);
    return true;
  }

  Clock::time_point LastBeat(const Worker& w) {
    struct stat st {};
    auto path = o_.out + "/hb." + w.id;
    if (::stat(path.c_str(), &st) != 0) return w.started;
    // Compare the file's age on the system clock, mapped onto the steady clock.
    auto age = std::chrono::system_clock::now() -
               std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
                   std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    auto beat = Clock::now() - std::chrono::duration_cast<Clock::duration>(age);
    return std::max(beat, w.started);
  }

  int64_t Progress() {
    int64_t best = 0;
    for (const auto& w : workers_) {
      std::ifstream in(o_.out + "/hb." + w->id);
      int64_t step = 0;
      if (in >> step) best = std::max(best, step);
    }
    return best;
  }

  bool Spawn() {
    auto port = FreePort();
    if (!port.ok()) {
      Print("no free port: " + port.status().ToString());
      return false;
    }
    auto w = std::make_unique<Worker>();
    const int slot = next_id_++;
    w->id = "w" + std::to_string(slot);
    w->node = o_.workers_per_node > 0 ? "node" + std::to_string(slot / o_.workers_per_node) : "localhost";
    w->port = *port;
    w->started = Clock::now();
    api::WorkerEnv worker;
    worker.membership_file = membership_path_;
    worker.worker_id = w->id;
    worker.secret = o_.secret;
    worker.store_port = w->port;
    worker.heartbeat_file = o_.out + "/hb." + w->id;
    worker.min_workers = o_.min;
    worker.out = o_.out;
    worker.health_port = 0;  // many workers on one host: any free port
    worker.checkpoint_dir = o_.checkpoint_dir;
    std::vector<std::string> env;
    for (const auto& [name, value] : worker.ToEnvironment()) env.push_back(name + "=" + value);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      Print(std::string("fork: ") + std::strerror(errno));
      return false;
    }
    if (pid == 0) {
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const auto& a : o_.command) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "ringmaster-run: exec %s: %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    w->pid = pid;
    Print("started " + w->id + " on " + w->node + " (pid " + std::to_string(pid) + ", store port " +
          std::to_string(w->port) + ")");
    members_.push_back(w->id);
    workers_.push_back(std::move(w));
    return true;
  }

  // Publishes the next generation of members_ (api::NextMembership: survivors keep their order, the
  // workers spawned since the last record are appended). A member's address is the host it listens on;
  // the coordinator is rank 0's store port there.
  bool Publish(const std::string& reason) {
    auto in_members = [&](const std::string& id) { return std::find(members_.begin(), members_.end(), id) != members_.end(); };
    std::vector<api::Member> joiners;
    for (const auto& id : members_) {
      if (published_.Find(id) != nullptr) continue;
      const Worker* w = ById(id);
      joiners.push_back({w->id, std::to_string(w->pid), 0, kWorkerHost, w->node});
    }
    api::Membership r = api::NextMembership(
        published_, [&](const api::Member& m) { return in_members(m.pod) ? std::optional<api::Member>(m) : std::nullopt; },
        std::move(joiners), [&](const api::Member& rank0) { return api::CoordinatorAddress(rank0, ById(rank0.pod)->port); });
    r.reason = reason;
    std::string names;
    for (const auto& m : r.members) names += (m.rank ? " " : "") + m.pod;
    Status s = membership::WriteMembershipFile(membership_path_, r);
    if (!s.ok()) {
      Print("cannot write the membership: " + s.ToString());
      return false;
    }
    published_ = r;
    Print("generation " + std::to_string(r.generation) + ": " + std::to_string(members_.size()) + " workers [" +
          names + "] (" + reason + ")" +
          (static_cast<int>(members_.size()) < o_.min ? " -- below --min, training pauses" : ""));
    return true;
  }

  Worker* AtRank(int rank) {
    if (rank < 0 || rank >= static_cast<int>(members_.size())) return nullptr;
    return ById(members_[rank]);
  }

  bool Inject(const ChaosEvent& planned) {
    ChaosEvent e = planned;
    if (e.action == "random") {
      static const char* kActions[] = {"kill", "stop", "killadd", "add"};
      int live = 0;  // members not stopped by earlier chaos (those are about to be removed)
      for (const auto& id : members_) live += stopped_.count(ById(id)->pid) ? 0 : 1;
      const bool at_min = live <= o_.min;
      const bool at_max = static_cast<int>(members_.size()) >= o_.max;
      e.action = at_min ? "add" : kActions[rng_.Below(at_max ? 3 : 4)];
      e.arg = e.action == "add" ? 1 : static_cast<int>(rng_.Below(members_.size()));
      Print("chaos: random event -> " + e.action + (e.action == "add" ? "" : " rank " + std::to_string(e.arg)));
    }
    if (e.action == "add") {
      int n = std::min<int>(e.arg, o_.max - static_cast<int>(members_.size()));
      if (n <= 0) {
        Print("chaos: add skipped (at --max)");
        return true;
      }
      for (int i = 0; i < n; ++i)
        if (!Spawn()) return false;
      return Publish("chaos: added " + std::to_string(n));
    }
    Worker* w = AtRank(e.arg);
    if (w == nullptr) {
      Print("chaos: no worker at rank " + std::to_string(e.arg));
      return true;
    }
    if (e.action == "pause") {
      Print("chaos: SIGSTOP " + w->id + " (rank " + std::to_string(e.arg) + ") for " + std::to_string(o_.pause.count()) +
            " ms");
      ::kill(w->pid, SIGSTOP);
      resume_.push_back({Clock::now() + o_.pause, w->pid});
      return true;
    }
    if (e.action == "stop") {
      Print("chaos: SIGSTOP " + w->id + " (rank " + std::to_string(e.arg) + ")");
      ::kill(w->pid, SIGSTOP);
      stopped_.insert(w->pid);
      return true;
    }
    if (e.action == "killsave") {
      auto save = KillDuringSave(w->pid, 10s);
      if (!save.ok()) {
        Print("chaos: killsave: " + save.status().ToString());
        return false;
      }
      Print("chaos: SIGKILL " + w->id + " (rank " + std::to_string(e.arg) + ") while " + *save + " was being written");
      return true;  // waitpid notices the death
    }
    Print("chaos: SIGKILL " + w->id + " (rank " + std::to_string(e.arg) + ")");
    ::kill(w->pid, SIGKILL);
    if (e.action == "killadd") {
      // Two changes back to back: the removal, then at once an add.
      Remove(w->id);
      if (!Publish("chaos: " + w->id + " killed")) return false;
      if (!Spawn()) return false;
      return Publish("chaos: replacement added");
    }
    return true;  // waitpid notices the death
  }

  // The save `pid` is writing now: the name of its ".tmp-step-<step>-<pid>-*" directory in
  // --checkpoint-dir (CheckpointStore's; leftovers of killed workers carry other pids), or "".
  std::string SaveInProgress(pid_t pid) {
    std::string found;
    if (DIR* dir = ::opendir(o_.checkpoint_dir.c_str())) {
      while (dirent* e = ::readdir(dir)) {
        long long step = 0, owner = 0;
        if (std::sscanf(e->d_name, ".tmp-step-%lld-%lld-", &step, &owner) == 2 && owner == pid) found = e->d_name;
      }
      ::closedir(dir);
    }
    return found;
  }

  // Whether `pid` is stopped (state T in /proc/PID/stat).
  static bool Stopped(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && (stat[paren + 2] == 'T' || stat[paren + 2] == 't');
  }

  // SIGKILLs `pid` while it is writing a save and returns the save's name. Between seeing the
  // directory and the kill the save could finish, so the worker is frozen (SIGSTOP) first and the
  // directory checked again; when the save got done meanwhile, it resumes and we wait for the next.
  // DeadlineExceeded when no save is caught within `limit`.
  StatusOr<std::string> KillDuringSave(pid_t pid, std::chrono::milliseconds limit) {
    const auto until = Clock::now() + limit;
    while (Clock::now() < until) {
      if (SaveInProgress(pid).empty()) {
        std::this_thread::sleep_for(100us);
        continue;
      }
      ::kill(pid, SIGSTOP);
      for (int i = 0; i < 10000 && !Stopped(pid); ++i) std::this_thread::sleep_for(100us);
      std::string save = SaveInProgress(pid);
      if (!save.empty()) {
        ::kill(pid, SIGKILL);
        return save;
      }
      ::kill(pid, SIGCONT);
    }
    return DeadlineExceededError("no checkpoint save of pid " + std::to_string(pid) + " caught in " +
                                 o_.checkpoint_dir + " within " + std::to_string(limit.count()) +
                                 " ms (do the workers save there, often enough?)");
  }

  int Finish(int code) {
    std::vector<std::string> journals;
    for (const auto& w : workers_) {
      std::string j = o_.out + "/journal." + w->id + ".log";
      if (std::filesystem::exists(j)) journals.push_back(j);
    }
    auto resolved = ResolveJournals(journals, std::numeric_limits<int64_t>::max());
    if (resolved.ok()) {
      std::ofstream out(o_.out + "/samples.log");
      for (const auto& s : *resolved) out << s.epoch << " " << s.sample << "\n";
      Print("samples.log: " + std::to_string(resolved->size()) + " committed samples");
    } else {
      Print("cannot resolve the journals: " + resolved.status().ToString());
      code = 1;
    }
    std::string weights;
    for (const auto& w : workers_) {
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
    Print(code == 0 ? "training finished" : "training FAILED");
    return code;
  }

  const LauncherOptions& o_;
  const Clock::time_point start_ = Clock::now();
  std::string membership_path_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::string> members_;  // ids in rank order
  api::Membership published_;  // the last record written
  int next_id_ = 0;
  std::vector<std::pair<Clock::time_point, pid_t>> resume_;  // paused workers and when to SIGCONT them
  runtime::data::SplitMix64 rng_{o_.chaos_seed};
  std::set<pid_t> stopped_;  // SIGSTOPped for good (removed by the heartbeat check)
};

}  // namespace

int RunLauncher(const LauncherOptions& options) { return Launcher(options).Run(); }

}  // namespace ringmaster::elastic

// ringmaster-launch end to end: the real binary starting real processes (shell commands), signalled as a
// kubelet would. Every wait is generous and the assertions are on outcomes (exit codes, files, which
// processes are gone), never on how long something took: the machine may be loaded.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/membership.h"
#include "api/names.h"
#include "base/status_test_macros.h"
#include "base/subprocess.h"
#include "worker-runtime/tools/launch/pod_processes.h"

namespace ringmaster::launch {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kPod[] = "testpod";
constexpr int32_t kStoreBase = 41000;
constexpr int32_t kHealthBase = 42000;
// How long a test waits for what should take well under a second (a loaded machine may be slow).
constexpr seconds kPatience{40};

std::string Var(std::string_view name) { return std::string(name); }
// "$NAME" in a shell script.
std::string Ref(std::string_view name) { return "$" + std::string(name); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WaitFor(const std::function<bool()>& done, seconds patience = kPatience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// No such process any more (reaped by its parent).
bool Gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// Gone, or a zombie waiting for a parent (not the launcher) to reap it: dead either way.
bool Dead(pid_t pid) {
  if (Gone(pid)) return true;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return stat.empty() || (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

// The parent of `pid` (/proc/PID/stat's 4th field); 0 when it is gone.
pid_t ParentOf(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::stringstream rest(stat.substr(paren + 1));
  std::string state;
  pid_t parent = 0;
  rest >> state >> parent;
  return parent;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Finished {
  ExitStatus exit;
  std::string out, err;
};

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "launch_test." + std::to_string(::getpid()) + "." +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    launcher_ = Subprocess();  // kills the launcher's group if a test left it running
    fs::remove_all(dir_);
  }

  // What a pod's container gets from the operator (and an inherited variable of the test's own).
  static EnvironmentList PodEnv() {
    return {{Var(api::env::kPodName), kPod},
            {Var(api::env::kStorePort), std::to_string(kStoreBase)},
            {Var(api::env::kHealthPort), std::to_string(kHealthBase)},
            {"LAUNCH_TEST_INHERITED", "kept as is"}};
  }

  // Starts ringmaster-launch ARGS... -- /bin/sh -c SCRIPT DIR (the script's $0 is the test's directory), its
  // output into files. `inherit`: the test's environment under `env`; else `env` and PATH only.
  void Start(std::vector<std::string> args, const std::string& script, EnvironmentList env = PodEnv(),
             bool inherit = true) {
    SpawnOptions o;
    o.argv = {RINGMASTER_LAUNCH_BIN};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    if (!script.empty()) {
      for (const char* a : {"--", "/bin/sh", "-c"}) o.argv.push_back(a);
      o.argv.push_back(script);
      o.argv.push_back(dir_);
    }
    o.inherit_environment = inherit;
    if (!inherit) env.emplace_back("PATH", "/usr/local/bin:/usr/bin:/bin");
    o.env = env;
    o.out = Redirect::AppendTo(dir_ + "/launcher.out");
    o.err = Redirect::AppendTo(dir_ + "/launcher.err");
    auto p = Subprocess::Start(o);
    ASSERT_OK(p);
    launcher_ = std::move(p).value();
  }

  Finished Wait() {
    auto e = launcher_.Wait(kPatience);
    EXPECT_OK(e) << "the launcher still runs; it said:\n" << ReadFile(dir_ + "/launcher.err");
    Finished f{e.ok() ? *e : launcher_.Kill(), ReadFile(dir_ + "/launcher.out"), ReadFile(dir_ + "/launcher.err")};
    return f;
  }

  Finished Run(std::vector<std::string> args, const std::string& script, EnvironmentList env = PodEnv(),
               bool inherit = true) {
    Start(std::move(args), script, std::move(env), inherit);
    if (::testing::Test::HasFatalFailure()) return {};
    return Wait();
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  bool Exists(const std::string& name) const { return fs::exists(Path(name)); }
  bool AllExist(const std::vector<std::string>& names) const {
    for (const auto& n : names) {
      if (!Exists(n)) return false;
    }
    return true;
  }
  pid_t PidIn(const std::string& name) const { return static_cast<pid_t>(std::stol(ReadFile(Path(name)))); }

  std::string dir_;
  Subprocess launcher_;
};

// Shell: write the process's pid to "$0/pid.<local rank>" (atomically).
std::string WritePid() {
  return "echo $$ > \"$0/pid.tmp.$$\" && mv \"$0/pid.tmp.$$\" \"$0/pid." + Ref(kLocalRankVar) + "\"; ";
}

TEST_F(LaunchTest, EachProcessGetsItsOwnEnvironment) {
  EnvironmentList env = PodEnv();
  env.emplace_back(Var(api::env::kDevice), "7");               // a pod-wide value: each process gets its own
  env.emplace_back(Var(api::env::kWorkerId), "stale");         // likewise
  env.emplace_back(Var(api::env::kCoordinatorPort), "31000");  // the store port wins over it
  const Finished f = Run({"--processes", "3"}, "env > \"$0/env.$$\"", env);
  EXPECT_EQ(f.exit.ShellCode(), 0) << f.err;

  std::map<std::string, std::map<std::string, std::string>> by_rank;  // LOCAL_RANK -> the process's variables
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().filename().string().rfind("env.", 0) != 0) continue;
    std::map<std::string, std::string> vars;
    for (const std::string& line : Lines(ReadFile(entry.path()))) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
    }
    by_rank[vars[Var(kLocalRankVar)]] = vars;
  }
  ASSERT_EQ(by_rank.size(), 3u) << "three processes, local ranks 0..2";
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("process " + std::to_string(i));
    auto& vars = by_rank[std::to_string(i)];
    EXPECT_EQ(vars[Var(api::env::kWorkerId)], i == 0 ? std::string(kPod) : std::string(kPod) + ":" + std::to_string(i));
    EXPECT_EQ(vars[Var(api::env::kWorkerId)], api::WorkerId(kPod, i));
    EXPECT_EQ(vars[Var(api::env::kStorePort)], std::to_string(kStoreBase + i));
    EXPECT_EQ(vars[Var(api::env::kHealthPort)], std::to_string(kHealthBase + i));
    EXPECT_EQ(vars[Var(api::env::kDevice)], std::to_string(i));
    EXPECT_EQ(vars[Var(kLocalRankVar)], std::to_string(i));
    EXPECT_EQ(vars[Var(kLocalWorldSizeVar)], "3");
    EXPECT_EQ(vars["LAUNCH_TEST_INHERITED"], "kept as is");
    EXPECT_EQ(vars[Var(api::env::kPodName)], kPod);
    EXPECT_EQ(vars[Var(api::env::kCoordinatorPort)], "31000") << "inherited unchanged";
  }
  EXPECT_NE(f.err.find("ringmaster-launch: starting 3 processes of pod testpod (store ports 41000..41002, "
                       "devices 0..2)"),
            std::string::npos)
      << f.err;
}

TEST_F(LaunchTest, AHealthPortOfZeroStaysZeroForEveryProcess) {
  EnvironmentList env = {{Var(api::env::kPodName), kPod}, {Var(api::env::kHealthPort), "0"}};
  const Finished f =
      Run({"--processes", "2"}, "echo \"" + Ref(api::env::kHealthPort) + " " + Ref(api::env::kStorePort) + "\"", env);
  EXPECT_EQ(f.exit.ShellCode(), 0) << f.err;
  EXPECT_NE(f.out.find("[0] 0 " + std::to_string(api::kCoordinatorPort) + "\n"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("[1] 0 " + std::to_string(api::kCoordinatorPort + 1) + "\n"), std::string::npos) << f.out;
}

// The pod is the unit of failure: one process exits 3, the others (sleeping for ten minutes) are stopped
// and reaped, and the launcher exits 3 with everything the failed process wrote relayed.
TEST_F(LaunchTest, AFailingProcessStopsThePodAndItsCodeIsTheLaunchers) {
  const std::string script = "if [ \"" + Ref(kLocalRankVar) +
                             "\" = 1 ]; then "
                             "  while [ ! -e \"$0/pid.0\" ] || [ ! -e \"$0/pid.2\" ]; do sleep 0.05; done; "
                             "  n=0; while [ $n -lt 300 ]; do echo \"dying $n\"; n=$((n+1)); done; exit 3; "
                             "fi; " +
                             WritePid() + "exec sleep 600";
  // A grace far longer than the test's patience: the launcher ends in time only because its SIGTERM works.
  const Finished f = Run({"--processes", "3", "--grace-s", "600"}, script);
  EXPECT_EQ(f.exit.ShellCode(), 3) << f.err;
  EXPECT_NE(f.err.find("ringmaster-launch: process 1 (testpod:1) exited with code 3: stopping the pod's other "
                       "processes"),
            std::string::npos)
      << f.err;
  for (const char* pid_file : {"pid.0", "pid.2"}) {
    ASSERT_TRUE(Exists(pid_file)) << f.err;
    EXPECT_TRUE(Gone(PidIn(pid_file))) << pid_file << ": the sleeper outlived its pod";
  }
  for (int n = 0; n < 300; ++n) {
    EXPECT_NE(f.out.find("[1] dying " + std::to_string(n) + "\n"), std::string::npos) << "line " << n << " was lost";
  }
}

// SIGTERM to the launcher (the kubelet stopping the pod) reaches every process; processes that handle it
// and exit 0 make the launcher exit 0.
TEST_F(LaunchTest, SigtermIsForwardedToEveryProcess) {
  const std::string script = "trap 'echo term > \"$0/term." + Ref(kLocalRankVar) + "\"; exit 0' TERM; " +
                             "echo ready > \"$0/ready." + Ref(kLocalRankVar) + "\"; " + "while :; do sleep 0.1; done";
  Start({"--processes", "2", "--grace-s", "600"}, script);
  ASSERT_TRUE(WaitFor([&] { return AllExist({"ready.0", "ready.1"}); })) << ReadFile(Path("launcher.err"));
  ASSERT_OK(launcher_.Signal(SIGTERM));
  const Finished f = Wait();
  EXPECT_TRUE(Exists("term.0") && Exists("term.1")) << "a process did not get the SIGTERM\n" << f.err;
  EXPECT_EQ(f.exit.ShellCode(), 0) << "every process exited 0\n" << f.err;
  EXPECT_NE(f.err.find("got SIGTERM: passed it to the pod's 2 running processes"), std::string::npos) << f.err;
}

// Processes that die of the forwarded SIGTERM: the launcher exits 143 (128 + SIGTERM), as they did.
TEST_F(LaunchTest, ProcessesKilledByAForwardedSigtermMakeItExit143) {
  Start({"--processes", "2", "--grace-s", "600"}, WritePid() + "exec sleep 600");
  ASSERT_TRUE(WaitFor([&] { return AllExist({"pid.0", "pid.1"}); })) << ReadFile(Path("launcher.err"));
  ASSERT_OK(launcher_.Signal(SIGTERM));
  const Finished f = Wait();
  EXPECT_EQ(f.exit.ShellCode(), 128 + SIGTERM) << f.err;
  EXPECT_TRUE(Gone(PidIn("pid.0")) && Gone(PidIn("pid.1"))) << f.err;
}

// A process that ignores SIGTERM gets SIGKILL after --grace-s; the launcher keeps the first failure's code.
TEST_F(LaunchTest, AProcessIgnoringSigtermIsKilledAfterTheGrace) {
  const std::string script = "if [ \"" + Ref(kLocalRankVar) +
                             "\" = 0 ]; then "
                             "  while [ ! -e \"$0/pid.1\" ]; do sleep 0.05; done; exit 4; "
                             "fi; "
                             "trap '' TERM; " +
                             WritePid() + "while :; do sleep 0.1; done";
  const Finished f = Run({"--processes", "2", "--grace-s", "1"}, script);
  EXPECT_EQ(f.exit.ShellCode(), 4) << f.err;
  ASSERT_TRUE(Exists("pid.1")) << f.err;
  EXPECT_TRUE(Gone(PidIn("pid.1"))) << f.err;
  EXPECT_NE(f.err.find("process 1 (testpod:1) still runs 1 s after it was asked to stop: sending SIGKILL"),
            std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find("process 1 (testpod:1) was killed by SIGKILL"), std::string::npos) << f.err;
}

// Each process's stdout and stderr lines arrive on the launcher's stdout and stderr, prefixed "[i] ", whole
// and in order, the last line without a newline included.
TEST_F(LaunchTest, OutputIsPrefixedLineByLine) {
  const std::string script = "i=" + Ref(kLocalRankVar) +
                             "; n=0; "
                             "while [ $n -lt 2000 ]; do echo \"out $i line $n\"; echo \"err $i line $n\" >&2; "
                             "n=$((n+1)); done; printf 'out %s last without newline' $i; "
                             "printf 'err %s last without newline' $i >&2";
  const Finished f = Run({"--processes", "2"}, script);
  EXPECT_EQ(f.exit.ShellCode(), 0) << f.err;
  for (const bool err : {false, true}) {
    const std::string stream = err ? "err" : "out";
    std::map<int, int> next;  // process -> the next line number it must print
    std::map<int, bool> last;
    const std::regex line_re("\\[([01])\\] " + stream + " ([01]) line ([0-9]+)");
    const std::regex last_re("\\[([01])\\] " + stream + " ([01]) last without newline");
    for (const std::string& line : Lines(err ? f.err : f.out)) {
      if (err && line.rfind("ringmaster-launch: ", 0) == 0) continue;  // the launcher's own lines
      std::smatch m;
      if (std::regex_match(line, m, line_re)) {
        const int process = std::stoi(m[1].str());
        EXPECT_EQ(m[1].str(), m[2].str()) << "a line under another process's prefix: " << line;
        EXPECT_EQ(std::stoi(m[3].str()), next[process]) << "lost, split or reordered before: " << line;
        EXPECT_FALSE(last[process]) << line << " after the last line";
        next[process] = std::stoi(m[3].str()) + 1;
      } else if (std::regex_match(line, m, last_re)) {
        EXPECT_EQ(m[1].str(), m[2].str()) << line;
        last[std::stoi(m[1].str())] = true;
      } else {
        ADD_FAILURE() << stream << ": not a whole prefixed line: '" << line << "'";
      }
    }
    for (int process : {0, 1}) {
      EXPECT_EQ(next[process], 2000) << stream << " of process " << process;
      EXPECT_TRUE(last[process]) << stream << " of process " << process << ": its last line without a newline";
    }
  }
}

// A bad command line or environment: exit 2 and a line that names the problem.
TEST_F(LaunchTest, BadInputExits2NamingTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::string script;
    EnvironmentList env;
    std::string named;
  };
  const std::vector<Case> cases = {
      {{"--processes", "0"}, "true", PodEnv(), "--processes"},
      {{"--processes", "65"}, "true", PodEnv(), "--processes"},
      {{"--processes", "2"}, "", PodEnv(), "no command after --"},
      {{"--processes", "2"}, "true", {{"LAUNCH_TEST_INHERITED", "x"}}, Var(api::env::kPodName)},
      {{"--processes", "2"},
       "true",
       {{Var(api::env::kPodName), kPod}, {Var(api::env::kStorePort), "x"}},
       Var(api::env::kStorePort)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args) + " " + c.named);
    const Finished f = Run(c.args, c.script, c.env, /*inherit=*/false);
    EXPECT_EQ(f.exit.ShellCode(), 2) << f.err;
    EXPECT_EQ(f.err.rfind("ringmaster-launch: ", 0), 0u) << f.err;
    const std::vector<std::string> lines = Lines(f.err);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines[0].find(c.named), std::string::npos) << f.err;
    EXPECT_EQ(f.out, "");
    fs::remove(Path("launcher.err"));
    fs::remove(Path("launcher.out"));
  }
}

// One process: the launcher execs the command itself (same pid, environment unchanged, its exit code).
TEST_F(LaunchTest, OneProcessExecsTheCommandDirectly) {
  const Finished f =
      Run({"--processes", "1"},
          "echo \"$$ ${" + Var(api::env::kWorkerId) + "-unset} ${" + Var(kLocalRankVar) + "-unset}\"; exit 7", PodEnv(),
          /*inherit=*/false);
  EXPECT_EQ(f.exit.ShellCode(), 7) << f.err;
  EXPECT_EQ(f.out, std::to_string(launcher_.pid()) + " unset unset\n");
  EXPECT_EQ(f.err, "") << "nothing of the launcher's own";
}

// A SIGKILLed launcher (a container runtime killing PID 1) takes its processes along (parent-death signal).
TEST_F(LaunchTest, ASigkilledLauncherTakesItsProcessesAlong) {
  Start({"--processes", "2"}, WritePid() + "exec sleep 600");
  ASSERT_TRUE(WaitFor([&] { return AllExist({"pid.0", "pid.1"}); })) << ReadFile(Path("launcher.err"));
  const pid_t first = PidIn("pid.0"), second = PidIn("pid.1");
  ASSERT_OK(launcher_.Signal(SIGKILL));
  EXPECT_EQ(launcher_.Wait().signal, SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return Dead(first) && Dead(second); })) << "a process outlived its launcher";
}

// Orphans (a process's own children whose parent ended) come to the launcher, a child subreaper as if it
// were PID 1, which reaps them without counting them as its processes (this one exits 9).
TEST_F(LaunchTest, OrphansAreReapedAndIgnored) {
  const std::string script =
      "if [ \"" + Ref(kLocalRankVar) +
      "\" = 0 ]; then "
      "  (sh -c 'sleep 2; exit 9' & echo $! > \"$0/orphan.tmp\"; mv \"$0/orphan.tmp\" \"$0/orphan\"); "
      "  while [ ! -e \"$0/done\" ]; do sleep 0.05; done; "
      "fi";
  Start({"--processes", "2"}, script);
  ASSERT_TRUE(WaitFor([&] { return Exists("orphan"); })) << ReadFile(Path("launcher.err"));
  const pid_t orphan = PidIn("orphan");
  // Its parent, the subshell, has ended: it is the launcher's now (or, on a very slow machine, done already).
  EXPECT_TRUE(WaitFor([&] { return Gone(orphan) || ParentOf(orphan) == launcher_.pid(); }))
      << "the orphan went to " << ParentOf(orphan);
  EXPECT_TRUE(WaitFor([&] { return Gone(orphan); })) << "the orphan was not reaped";
  EXPECT_FALSE(launcher_.Poll().has_value()) << "an orphan's exit ended the launcher";
  std::ofstream(Path("done")) << "\n";
  const Finished f = Wait();
  EXPECT_EQ(f.exit.ShellCode(), 0) << f.err;
}

}  // namespace
}  // namespace ringmaster::launch

// The one subprocess spawner: output captured or in a file, exit codes and signals, deadlines, and a
// child that starts clean (its own environment, default signals, its own process group, no inherited
// descriptors) the way the pod runner and the launcher need it.
#include "base/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/status_test_macros.h"

namespace ringmaster {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SpawnOptions Captured(std::vector<std::string> argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.in = Redirect::Pipe();
  o.out = Redirect::Pipe();
  o.err = Redirect::Pipe();
  return o;
}

auto Soon() { return std::chrono::steady_clock::now() + seconds(20); }

TEST(SubprocessTest, CapturesOutputAndExitCode) {
  auto p = Subprocess::Start(Captured({"sh", "-c", "echo out; echo err >&2; exit 3"}));
  ASSERT_OK(p);
  Subprocess::Output out = p->Communicate("", Soon());
  EXPECT_FALSE(out.timed_out);
  EXPECT_EQ(out.out, "out\n");
  EXPECT_EQ(out.err, "err\n");
  ExitStatus e = p->Wait();
  EXPECT_TRUE(e.exited());
  EXPECT_EQ(e.code, 3);
  EXPECT_EQ(e.ToString(), "exited 3");
  EXPECT_FALSE(p->running());
}

TEST(SubprocessTest, FeedsStandardInputAndSurvivesAReaderThatLeaves) {
  auto p = Subprocess::Start(Captured({"cat"}));
  ASSERT_OK(p);
  EXPECT_EQ(p->Communicate("hello\n", Soon()).out, "hello\n");
  EXPECT_EQ(p->Wait().code, 0);
  // `true` never reads: writing a lot to it must not kill this process with SIGPIPE.
  auto q = Subprocess::Start(Captured({"true"}));
  ASSERT_OK(q);
  q->Communicate(std::string(1 << 20, 'x'), Soon());
  EXPECT_EQ(q->Wait().code, 0);
}

TEST(SubprocessTest, DeadlinesAndKillsReachTheWholeGroup) {
  // The shell's child (sleep) is in the same group: a group kill ends both, so the pipe closes.
  auto p = Subprocess::Start(Captured({"sh", "-c", "sleep 30; echo never"}));
  ASSERT_OK(p);
  auto start = std::chrono::steady_clock::now();
  Subprocess::Output out = p->Communicate("", std::chrono::steady_clock::now() + milliseconds(300));
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(p->Wait(milliseconds(50)).status().code(), StatusCode::kDeadlineExceeded);
  ExitStatus e = p->Kill();
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_EQ(e.ShellCode(), 128 + SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  // Once reaped, its pid may belong to someone else: no more signals.
  EXPECT_EQ(p->Signal(SIGTERM).code(), StatusCode::kFailedPrecondition);
}

TEST(SubprocessTest, TerminateAsksFirstThenKills) {
  SpawnOptions polite;
  polite.argv = {"sleep", "30"};
  auto p = Subprocess::Start(polite);
  ASSERT_OK(p);
  EXPECT_EQ(p->Terminate(seconds(10)).signal, SIGTERM);
  SpawnOptions stubborn;
  stubborn.argv = {"sh", "-c", "trap '' TERM; sleep 30"};
  auto q = Subprocess::Start(stubborn);
  ASSERT_OK(q);
  std::this_thread::sleep_for(milliseconds(200));  // let the shell install its trap
  EXPECT_EQ(q->Terminate(milliseconds(300)).signal, SIGKILL);
}

TEST(SubprocessTest, MissingProgramExits127WithALine) {
  auto p = Subprocess::Start(Captured({"ringmaster-no-such-program"}));
  ASSERT_OK(p);
  Subprocess::Output out = p->Communicate("", Soon());
  EXPECT_EQ(p->Wait().code, 127);
  EXPECT_NE(out.err.find("exec failed: ringmaster-no-such-program"), std::string::npos) << out.err;

  const std::string log = ::testing::TempDir() + "subprocess_test.exec.log";
  ::unlink(log.c_str());
  SpawnOptions o;
  o.program = "/nonexistent/binary";
  o.argv = {"binary"};
  o.out = o.err = Redirect::AppendTo(log);
  auto q = Subprocess::Start(o);
  ASSERT_OK(q);
  EXPECT_EQ(q->Wait().code, 127);
  EXPECT_NE(Read(log).find("exec failed"), std::string::npos);
}

TEST(SubprocessTest, BadRedirectOrArgvIsAnError) {
  SpawnOptions o;
  o.argv = {"true"};
  o.out = Redirect::AppendTo("/nonexistent/dir/log");
  EXPECT_EQ(Subprocess::Start(o).status().code(), StatusCode::kInternal);
  EXPECT_EQ(Subprocess::Start(SpawnOptions{}).status().code(), StatusCode::kInvalidArgument);
  o.out = Redirect::Null();
  o.cwd = "/nonexistent/dir";
  auto p = Subprocess::Start(o);
  ASSERT_OK(p);
  EXPECT_EQ(p->Wait().code, 128);
}

TEST(SubprocessTest, InheritsTheEnvironmentWithOverrides) {
  ::setenv("RINGMASTER_SUBPROCESS_TEST", "inherited", 1);
  ::setenv("RINGMASTER_SUBPROCESS_OVERRIDE", "old", 1);
  SpawnOptions o = Captured({"sh", "-c", "echo $RINGMASTER_SUBPROCESS_TEST $RINGMASTER_SUBPROCESS_OVERRIDE"});
  o.env = {{"RINGMASTER_SUBPROCESS_OVERRIDE", "new"}};
  auto p = Subprocess::Start(o);
  ASSERT_OK(p);
  EXPECT_EQ(p->Communicate("", Soon()).out, "inherited new\n");
  EXPECT_EQ(p->Wait().code, 0);
}

TEST(SubprocessTest, StartsCleanWithOnlyItsEnvironmentDefaultSignalsAndNoInheritedDescriptors) {
  const std::string dir = ::testing::TempDir();
  const std::string log = dir + "subprocess_test.log";
  ::unlink(log.c_str());
  ::setenv("RINGMASTER_LEAKED", "yes", 1);
  signal(SIGPIPE, SIG_IGN);                       // ignored here; the child must get the default back
  int leaked_fd = ::open("/dev/null", O_RDONLY);  // not O_CLOEXEC: still closed in the child
  ASSERT_GE(leaked_fd, 3);
  std::string script =
      "echo \"foo=$FOO leaked=${RINGMASTER_LEAKED:-none} pwd=$(pwd)\"; "
      "grep SigIgn /proc/self/status; "
      "if [ -e /proc/self/fd/" +
      std::to_string(leaked_fd) +
      " ]; then echo fd-inherited; else echo fd-closed; fi; "
      "echo pgid=$(cut -d' ' -f5 /proc/$$/stat) pid=$$; exit 3";
  SpawnOptions o;
  o.program = "/bin/sh";
  o.argv = {"sh", "-c", script};
  o.inherit_environment = false;
  o.env = {{"FOO", "bar"}, {"PATH", "/usr/bin:/bin"}};
  o.cwd = dir;
  o.out = o.err = Redirect::AppendTo(log);
  auto p = Subprocess::Start(o);
  ::close(leaked_fd);
  signal(SIGPIPE, SIG_DFL);
  ASSERT_OK(p);
  EXPECT_EQ(p->Wait().code, 3);
  std::string out = Read(log);
  EXPECT_NE(out.find("foo=bar leaked=none"), std::string::npos) << out;
  // Signals 1..31 must be back to their defaults. 32 and up are glibc's own (thread cancellation,
  // setxid): sigaction refuses them, glibc installs its handlers where it needs them, and a parent
  // that ignores them (seen under CI's shell) passes that on -- not the spawner's business.
  auto at = out.find("SigIgn:\t");
  ASSERT_NE(at, std::string::npos) << out;
  const unsigned long long ignored = std::stoull(out.substr(at + 8, 16), nullptr, 16);
  EXPECT_EQ(ignored & 0x7fffffffULL, 0u) << "standard signals still ignored in the child: " << out;
  EXPECT_NE(out.find("fd-closed"), std::string::npos) << out;
  EXPECT_NE(out.find("pgid=" + std::to_string(p->pid()) + " pid=" + std::to_string(p->pid())), std::string::npos)
      << out;
}

TEST(SubprocessTest, WithoutItsOwnGroupItStaysInOurs) {
  SpawnOptions o = Captured({"sh", "-c", "cut -d' ' -f5 /proc/$$/stat"});
  o.own_process_group = false;
  auto p = Subprocess::Start(o);
  ASSERT_OK(p);
  EXPECT_EQ(p->Communicate("", Soon()).out, std::to_string(::getpgrp()) + "\n");
  EXPECT_EQ(p->Wait().code, 0);
}

TEST(SubprocessTest, DestructorKillsAProcessStillRunning) {
  pid_t pid = -1;
  {
    SpawnOptions o;
    o.argv = {"sleep", "30"};
    auto p = Subprocess::Start(o);
    ASSERT_OK(p);
    pid = p->pid();
    Subprocess moved = std::move(*p);  // ownership moves with it
    EXPECT_EQ(moved.pid(), pid);
    EXPECT_FALSE(moved.Poll().has_value());
  }
  EXPECT_NE(::kill(pid, 0), 0);  // gone and reaped
}

// A caller reading many children's streams in one poll loop takes the pipes' ends over.
TEST(SubprocessTest, TakenPipesAreTheCallersToReadAndClose) {
  auto p = Subprocess::Start(Captured({"sh", "-c", "echo out; echo err >&2"}));
  ASSERT_OK(p);
  for (bool err : {false, true}) {
    const int fd = err ? p->TakeStderr() : p->TakeStdout();
    ASSERT_GE(fd, 0);
    EXPECT_EQ(err ? p->TakeStderr() : p->TakeStdout(), -1) << "taken once";
    std::string text;
    char buf[256];
    for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) != 0;) {
      if (n > 0)
        text.append(buf, static_cast<size_t>(n));
      else if (errno != EINTR)
        break;
    }
    ::close(fd);
    EXPECT_EQ(text, err ? "err\n" : "out\n");
  }
  EXPECT_EQ(p->Wait().code, 0);
}

// parent_death_signal: the child gets it when the thread that started it ends (here a thread of the test;
// in ringmaster-launch the launcher's only thread, so a SIGKILLed launcher takes its processes along).
TEST(SubprocessTest, ParentDeathSignalComesWhenTheStartingThreadEnds) {
  StatusOr<Subprocess> p = InternalError("not started");
  std::thread([&p] {
    SpawnOptions o = Captured({"sh", "-c", "echo armed; exec sleep 600"});
    o.parent_death_signal = SIGKILL;
    p = Subprocess::Start(o);
    if (!p.ok()) return;
    // The signal is armed before exec: once the shell speaks, the thread may end.
    const int fd = p->TakeStdout();
    char c = 0;
    while (::read(fd, &c, 1) < 0 && errno == EINTR) {}
    ::close(fd);
  }).join();
  ASSERT_OK(p);
  auto e = p->Wait(seconds(60));
  ASSERT_OK(e) << "the child outlived the thread that started it";
  EXPECT_EQ(e->signal, SIGKILL) << e->ToString();
}
// The one seam for what a caller adds between fork and exec (the pod runner's containers): the hook runs
// in the child with its streams already redirected, before the working directory is entered and the
// program executed; it may end the child itself.
TEST(SubprocessTest, BeforeExecRunsInTheChildBeforeItsWorkingDirectoryAndExec) {
  const std::string dir = ::testing::TempDir() + "subprocess_hook_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  SpawnOptions o = Captured({"sh", "-c", "pwd"});
  o.cwd = dir;  // made by the hook: it runs before the child changes to it
  o.before_exec = [&dir] {
    (void)::mkdir(dir.c_str(), 0755);
    (void)!::write(STDERR_FILENO, "hook\n", 5);  // on the child's (redirected) stderr
  };
  auto p = Subprocess::Start(o);
  ASSERT_OK(p);
  Subprocess::Output out = p->Communicate("", Soon());
  EXPECT_EQ(p->Wait().code, 0) << out.err;
  EXPECT_EQ(out.out, dir + "\n");
  EXPECT_EQ(out.err, "hook\n");
  std::filesystem::remove_all(dir);

  SpawnOptions failing = Captured({"true"});
  failing.before_exec = [] {
    (void)!::write(STDERR_FILENO, "setup failed\n", 13);
    ::_exit(128);
  };
  auto f = Subprocess::Start(failing);
  ASSERT_OK(f);
  out = f->Communicate("", Soon());
  EXPECT_EQ(f->Wait().code, 128);
  EXPECT_EQ(out.err, "setup failed\n");
}

TEST(SubprocessTest, LookupInTheChildSearchesItsPathWhenItExecs) {
  SpawnOptions o = Captured({"sh", "-c", "echo found"});
  o.inherit_environment = false;
  o.env = {{"PATH", "/nowhere:/usr/bin:/bin"}};
  o.lookup_program_in_child = true;
  auto p = Subprocess::Start(o);
  ASSERT_OK(p);
  Subprocess::Output out = p->Communicate("", Soon());
  EXPECT_EQ(p->Wait().code, 0) << out.err;
  EXPECT_EQ(out.out, "found\n");

  SpawnOptions missing = Captured({"ringmaster-no-such-program"});
  missing.lookup_program_in_child = true;
  auto m = Subprocess::Start(missing);
  ASSERT_OK(m);
  out = m->Communicate("", Soon());
  EXPECT_EQ(m->Wait().code, 127);
  EXPECT_NE(out.err.find("exec failed: ringmaster-no-such-program (searched PATH)"), std::string::npos) << out.err;
}

}  // namespace
}  // namespace ringmaster

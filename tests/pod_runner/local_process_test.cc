// A container's process as the pod runner starts it: only its own environment, default signals, its own
// process group, no inherited descriptors, output in its log.
#include "pod_runner/local_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include "base/status_test_macros.h"

namespace ringmaster::testing {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Wait(pid_t pid) {
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(LocalProcessTest, RunsWithOnlyItsEnvironmentDefaultSignalsAndNoInheritedDescriptors) {
  const std::string dir = ::testing::TempDir();
  const std::string log = dir + "local_process_test.log";
  ::unlink(log.c_str());
  ::setenv("RINGMASTER_LEAKED", "yes", 1);
  signal(SIGPIPE, SIG_IGN);  // the test process ignores SIGPIPE (RunCommand does); the child must not
  int leaked_fd = ::open("/dev/null", O_RDONLY);  // not O_CLOEXEC: still closed in the child
  ASSERT_GE(leaked_fd, 3);
  std::string script =
      "echo \"foo=$FOO leaked=${RINGMASTER_LEAKED:-none} pwd=$(pwd)\"; "
      "grep SigIgn /proc/self/status; "
      "if [ -e /proc/self/fd/" + std::to_string(leaked_fd) + " ]; then echo fd-inherited; else echo fd-closed; fi; "
      "echo pgid=$(cut -d' ' -f5 /proc/$$/stat) pid=$$; exit 3";
  auto pid = SpawnLocalProcess({"/bin/sh", {"sh", "-c", script}, {{"FOO", "bar"}, {"PATH", "/usr/bin:/bin"}}, dir, log});
  ::close(leaked_fd);
  ASSERT_OK(pid) << pid.status();
  EXPECT_EQ(Wait(*pid), 3);
  std::string out = Read(log);
  EXPECT_NE(out.find("foo=bar leaked=none"), std::string::npos) << out;
  // Signals 1..31 must be back to their defaults. 32 and up are glibc's own (thread cancellation,
  // setxid): sigaction refuses them, glibc installs its handlers where it needs them, and a parent
  // that ignores them (seen under CI's shell) passes that on -- not the runner's business.
  auto at = out.find("SigIgn:\t");
  ASSERT_NE(at, std::string::npos) << out;
  const unsigned long long ignored = std::stoull(out.substr(at + 8, 16), nullptr, 16);
  EXPECT_EQ(ignored & 0x7fffffffULL, 0u) << "standard signals still ignored in the child: " << out;
  EXPECT_NE(out.find("fd-closed"), std::string::npos) << out;
  EXPECT_NE(out.find("pgid=" + std::to_string(*pid) + " pid=" + std::to_string(*pid)), std::string::npos) << out;
}

TEST(LocalProcessTest, ExecFailureExits127WithALine) {
  const std::string log = ::testing::TempDir() + "local_process_test.exec.log";
  ::unlink(log.c_str());
  auto pid = SpawnLocalProcess({"/nonexistent/binary", {"binary"}, {}, "/", log});
  ASSERT_OK(pid);
  EXPECT_EQ(Wait(*pid), 127);
  EXPECT_NE(Read(log).find("exec failed"), std::string::npos);
  EXPECT_EQ(SpawnLocalProcess({"/bin/true", {"true"}, {}, "/", "/nonexistent/dir/log"}).status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace ringmaster::testing

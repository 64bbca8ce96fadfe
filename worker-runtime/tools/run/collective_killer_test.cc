#include "worker-runtime/tools/run/collective_killer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/status_test_macros.h"
#include "worker-runtime/tools/run/process_state.h"

namespace ringmaster::run {
namespace {

using namespace std::chrono_literals;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()))).string();
}

// A shell that writes phase records to `path` as a worker does: `inside` says whether it ever says "C".
StatusOr<Subprocess> StartWriter(const std::string& path, bool inside) {
  const std::string enter = inside ? "printf 'C %020d\\n' $i > " + path + "; " : "";
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c",
                  "i=0; while :; do " + enter +
                      "j=0; while [ $j -lt 100 ]; do j=$((j+1)); done; "
                      "printf -- '- %020d\\n' $i > " +
                      path + "; i=$((i+1)); sleep 0.002; done"};
  return Subprocess::Start(options);
}

TEST(CollectiveKillerTest, KillsTheWorkerWhileItsPhaseFileSaysInside) {
  const std::string path = TempPath("collective_killer_inside");
  auto worker = StartWriter(path, true);
  ASSERT_OK(worker);
  auto step = KillInsideCollective(*worker, path, 20s);
  ASSERT_OK(step);
  EXPECT_GE(*step, 0);
  const ExitStatus exit = worker->Wait();
  EXPECT_EQ(exit.signal, SIGKILL);
  std::filesystem::remove(path);
}

// A worker that never says it is inside: the killer gives up at its limit and leaves it running, not stopped.
TEST(CollectiveKillerTest, AWorkerNeverInsideIsLeftRunningAtTheLimit) {
  const std::string path = TempPath("collective_killer_outside");
  auto worker = StartWriter(path, false);
  ASSERT_OK(worker);
  const auto t0 = std::chrono::steady_clock::now();
  auto step = KillInsideCollective(*worker, path, 300ms);
  EXPECT_EQ(step.status().code(), StatusCode::kDeadlineExceeded) << step.status();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_FALSE(worker->Poll().has_value()) << "the worker was killed";
  std::this_thread::sleep_for(20ms);
  const char state = ProcessState(worker->pid());
  EXPECT_NE(state, 'T') << "the worker was left stopped";
  worker->Kill();
  std::filesystem::remove(path);
}

TEST(CollectiveKillerTest, AnEndedWorkerIsAFailedPrecondition) {
  SpawnOptions options;
  options.argv = {"/bin/true"};
  auto worker = Subprocess::Start(options);
  ASSERT_OK(worker);
  worker->Wait();
  EXPECT_EQ(KillInsideCollective(*worker, TempPath("collective_killer_none"), 1s).status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ringmaster::run

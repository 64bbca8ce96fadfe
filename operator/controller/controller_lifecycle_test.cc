// The controller's lifecycle without an apiserver: a Stop() on another thread ends a Start() still waiting for
// its caches (the operator's SIGTERM while a leader-elected Start syncs), and no worker is left unjoined.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <future>
#include <thread>

#include "kube/client.h"
#include "operator/controller/controller.h"

namespace ringmaster::controller {
namespace {

TEST(ControllerLifecycleTest, AStopOnAnotherThreadEndsAStartWaitingForItsCaches) {
  kube::ClientConfig config;
  config.server = "https://127.0.0.1:1";  // nothing listens: every request fails and is retried
  auto client = kube::NewClient(config, nullptr, [](LogLevel, std::string_view) {});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto events = kube::NewClient(config, nullptr, [](LogLevel, std::string_view) {});
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  kube::EventRecorder recorder(*events, {});
  prometheus::Registry registry;
  OperatorMetrics metrics(registry);
  ControllerOptions options;
  options.log = [](LogLevel, std::string_view) {};
  TrainingJobController controller(*client, &recorder, &metrics, options);
  std::promise<Status> started;
  std::thread starter([&] { started.set_value(controller.Start(std::chrono::hours(1))); });
  // Whatever Start is doing by now (probing Kueue's API, waiting for the caches): Stop ends it.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  controller.Stop(std::chrono::seconds(1));
  auto outcome = started.get_future();
  // An hour-long sync timeout: without the Stop reaching it, this wait would hang the test (ctest's timeout).
  Status s = outcome.get();
  starter.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_FALSE(controller.Synced());
}

}  // namespace
}  // namespace ringmaster::controller

// libFuzzer target: the worker's environment as it is read at start -- api::WorkerEnv::FromEnvironment,
// runtime::ParseRuntimeConfig (the runtime's tuning) and elastic::ApplyWorkerEnvironment /
// CheckWorkerOptions (the worker's options). The input is an environment block as in /proc/PID/environ:
// NAME=value entries separated by NUL bytes (an entry without '=' is skipped, as EnvironmentSnapshot
// does). No crash; errors are InvalidArgument naming the variable; a WorkerEnv survives
// ToEnvironment -> FromEnvironment; a parsed configuration holds only usable values.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "api/worker_env.h"
#include "worker-runtime/elastic/worker_options.h"
#include "worker-runtime/runtime/config.h"

using ringmaster::StatusCode;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

std::map<std::string, std::string> EnvironmentBlock(std::string_view block) {
  std::map<std::string, std::string> env;
  while (!block.empty()) {
    const size_t end = block.find('\0');
    std::string_view entry = block.substr(0, end);
    block.remove_prefix(end == std::string_view::npos ? block.size() : end + 1);
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos) env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto env = EnvironmentBlock(std::string_view(reinterpret_cast<const char*>(data), size));

  auto worker = ringmaster::api::WorkerEnv::FromEnvironment(env);
  if (worker.ok()) {
    auto again = ringmaster::api::WorkerEnv::FromEnvironment(worker->ToEnvironment());
    Check(again.ok() && *again == *worker);
    (void)worker->ToPodEnv({"secret", "key"});
  } else {
    Check(worker.status().code() == StatusCode::kInvalidArgument &&
          worker.status().message().starts_with("RINGMASTER_"));
  }

  auto config = ringmaster::runtime::ParseRuntimeConfig(env);
  if (config.ok()) {
    // Every duration must be usable as a deadline (now + timeout) without overflowing the clock.
    constexpr auto kMaxMs = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds::max());
    Check(config->timeout.count() >= 1 && config->timeout <= kMaxMs / 2);
    Check(config->cycle_time.count() >= 0);
    for (const auto& set : config->process_sets) {
      Check(!set.empty());
      for (int rank : set) Check(rank >= 0);
    }
  } else {
    Check(config.status().code() == StatusCode::kInvalidArgument && !config.status().message().empty());
  }

  ringmaster::elastic::WorkerOptions options;
  auto applied = ringmaster::elastic::ApplyWorkerEnvironment(env, &options);
  if (applied.ok() && ringmaster::elastic::CheckWorkerOptions(options).ok()) {
    Check(options.store_port > 0 && options.store_port <= 65535 && !options.worker_id.empty());
    Check(options.health_port >= 0 && options.health_port <= 65535);
  } else if (!applied.ok()) {
    Check(applied.code() == StatusCode::kInvalidArgument);
  }
  return 0;
}

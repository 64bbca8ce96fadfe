#include "testing/multiprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

namespace ringmaster::runtime::testing {
namespace {

int ChildMain(const WorldOptions& options, int rank, Socket listener,
              const std::function<void(RankContext&)>& body) {
  RankContext ctx;
  ctx.rank = rank;
  ctx.size = options.size;
  ctx.generation = options.generation;
  ctx.secret = options.secret;
  ctx.store_port = listener.LocalPort();
  std::unique_ptr<StoreServer> server;
  if (rank == 0) {
    StoreServerOptions so;
    so.secret = options.secret;
    so.generation = options.generation;
    auto started = StoreServer::StartOnSocket(std::move(listener), so);
    if (!started.ok()) {
      std::fprintf(stderr, "rank 0: store server: %s\n", started.status().ToString().c_str());
      return 2;
    }
    server = std::move(started).value();
    ctx.server = server.get();
  } else {
    listener = Socket();  // close our copy
  }
  StoreClientOptions co;
  co.port = ctx.store_port;
  co.secret = options.secret;
  co.generation = options.generation;
  co.rank = static_cast<uint32_t>(rank);
  auto client = StoreClient::Connect(co);
  if (!client.ok()) {
    std::fprintf(stderr, "rank %d: store client: %s\n", rank, client.status().ToString().c_str());
    return 2;
  }
  ctx.store = std::shared_ptr<StoreClient>(std::move(client).value());
  body(ctx);
  bool failed = ::testing::Test::HasFailure();
  if (options.wait_for_all_at_exit) {
    (void)ctx.store->Set("test-exit/" + std::to_string(rank), "1");
    if (rank == 0) {
      std::vector<std::string> keys;
      for (int r = 0; r < options.size; ++r) keys.push_back("test-exit/" + std::to_string(r));
      (void)ctx.store->Wait(keys, std::chrono::milliseconds(20000));
    }
  }
  ctx.store.reset();
  server.reset();
  std::fflush(stdout);
  std::fflush(stderr);
  return failed ? 1 : 0;
}

}  // namespace

std::vector<RankOutcome> RunWorld(const WorldOptions& options, const std::function<void(RankContext&)>& body) {
  std::vector<RankOutcome> outcomes(options.size);
  auto listener = Socket::Listen("127.0.0.1", 0);
  if (!listener.ok()) {
    ADD_FAILURE() << "cannot listen: " << listener.status();
    return outcomes;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(options.size, -1);
  for (int r = 0; r < options.size; ++r) {
    outcomes[r].rank = r;
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = ChildMain(options, r, std::move(*listener), body);
      ::_exit(code);
    }
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      break;
    }
    pids[r] = pid;
  }
  *listener = Socket();
  auto deadline = std::chrono::steady_clock::now() + options.deadline;
  int remaining = 0;
  for (pid_t p : pids) remaining += p > 0;
  while (remaining > 0) {
    for (int r = 0; r < options.size; ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      pid_t got = ::waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        outcomes[r].exited = WIFEXITED(status);
        outcomes[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        outcomes[r].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        pids[r] = -1;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < options.size; ++r) {
        if (pids[r] > 0) {
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], nullptr, 0);
          outcomes[r].signal = SIGKILL;
          ADD_FAILURE() << "rank " << r << " did not finish within the deadline (killed)";
          pids[r] = -1;
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return outcomes;
}

std::string DescribeFailures(const std::vector<RankOutcome>& outcomes) {
  std::string out;
  for (const auto& o : outcomes) {
    if (o.ok()) continue;
    out += "rank " + std::to_string(o.rank) +
           (o.exited ? " exited with " + std::to_string(o.exit_code) : " killed by signal " + std::to_string(o.signal)) +
           "; ";
  }
  return out;
}

}  // namespace ringmaster::runtime::testing

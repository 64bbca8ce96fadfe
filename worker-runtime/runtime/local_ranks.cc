#include "worker-runtime/runtime/local_ranks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

namespace ringmaster::runtime {
namespace {

// Rank 0 serves the store on the inherited listener; every rank connects to it.
StatusOr<std::unique_ptr<store::StoreServer>> ServeIfRankZero(const LocalRanksOptions& options, int rank,
                                                              store::Socket listener) {
  if (rank != 0) return std::unique_ptr<store::StoreServer>();
  store::StoreServerOptions so;
  so.secret = options.secret;
  so.generation = options.generation;
  return store::StoreServer::StartOnSocket(std::move(listener), so);
}

// Rank 0 keeps serving until every rank has said it is done with the store.
void WaitForAllRanks(const LocalRanksOptions& options, RankContext& ctx) {
  (void)ctx.store->Set("local-ranks/done/" + std::to_string(ctx.rank), "1");
  if (ctx.rank != 0) return;
  std::vector<std::string> keys;
  for (int r = 0; r < options.size; ++r) keys.push_back("local-ranks/done/" + std::to_string(r));
  (void)ctx.store->Wait(keys, std::chrono::milliseconds(30000));
}

int ChildMain(const LocalRanksOptions& options, int rank, store::Socket listener,
              const std::function<int(RankContext&)>& body) {
  RankContext ctx;
  ctx.rank = rank;
  ctx.size = options.size;
  ctx.generation = options.generation;
  ctx.secret = options.secret;
  ctx.store_port = listener.LocalPort();
  auto server = ServeIfRankZero(options, rank, std::move(listener));
  if (!server.ok()) {
    std::fprintf(stderr, "rank 0: cannot serve the store: %s\n", server.status().ToString().c_str());
    return 2;
  }
  ctx.server = server->get();
  store::StoreClientOptions co;
  co.port = ctx.store_port;
  co.secret = options.secret;
  co.generation = options.generation;
  co.rank = static_cast<uint32_t>(rank);
  auto client = store::StoreClient::Connect(co);
  if (!client.ok()) {
    std::fprintf(stderr, "rank %d: cannot reach the store: %s\n", rank, client.status().ToString().c_str());
    return 2;
  }
  ctx.store = std::shared_ptr<store::StoreClient>(std::move(client).value());
  const int code = body(ctx);
  if (options.wait_for_all_at_exit) WaitForAllRanks(options, ctx);
  ctx.store.reset();
  server->reset();
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

void KillAndReap(std::vector<pid_t>& pids, std::vector<RankOutcome>& outcomes) {
  for (size_t r = 0; r < pids.size(); ++r) {
    if (pids[r] <= 0) continue;
    ::kill(pids[r], SIGKILL);
    ::waitpid(pids[r], nullptr, 0);
    outcomes[r].signal = SIGKILL;
    outcomes[r].stopped = true;
    pids[r] = -1;
  }
}

// Polls the children until all ended, stopping the rest on the deadline or (if asked) a failure.
void Reap(const LocalRanksOptions& options, std::vector<pid_t>& pids, std::vector<RankOutcome>& outcomes) {
  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  int remaining = 0;
  for (pid_t p : pids) remaining += p > 0;
  while (remaining > 0) {
    bool failed = false;
    for (size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      if (pids[r] <= 0 || ::waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      outcomes[r].exited = WIFEXITED(status);
      outcomes[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      outcomes[r].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      failed |= !outcomes[r].ok();
      pids[r] = -1;
      --remaining;
    }
    const bool late = options.deadline.count() > 0 && std::chrono::steady_clock::now() > deadline;
    if (remaining > 0 && (late || (failed && options.stop_others_on_failure))) {
      KillAndReap(pids, outcomes);
      return;
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

Status RankOutcome::status() const {
  if (ok()) return Status::Ok();
  std::string how =
      exited ? "exited with " + std::to_string(exit_code) : "was killed by signal " + std::to_string(signal);
  return InternalError("rank " + std::to_string(rank) + " " + how + (stopped ? " (stopped by RunLocalRanks)" : ""));
}

StatusOr<std::vector<RankOutcome>> RunLocalRanks(const LocalRanksOptions& options,
                                                 const std::function<int(RankContext&)>& body) {
  if (options.size < 1) return InvalidArgumentError("RunLocalRanks: size " + std::to_string(options.size));
  auto listener = store::Socket::Listen("127.0.0.1", 0);
  if (!listener.ok()) return listener.status().WithContext("RunLocalRanks: the store's socket");
  std::vector<RankOutcome> outcomes(options.size);
  std::vector<pid_t> pids(options.size, -1);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < options.size; ++r) {
    outcomes[r].rank = r;
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(ChildMain(options, r, std::move(*listener), body));
    if (pid < 0) {
      KillAndReap(pids, outcomes);
      return InternalError("RunLocalRanks: fork failed for rank " + std::to_string(r));
    }
    pids[r] = pid;
  }
  *listener = store::Socket();
  Reap(options, pids, outcomes);
  return outcomes;
}

std::string DescribeFailures(const std::vector<RankOutcome>& outcomes) {
  std::string out;
  for (const auto& o : outcomes) {
    if (!o.ok()) out += o.status().message() + "; ";
  }
  return out;
}

int FirstFailureCode(const std::vector<RankOutcome>& outcomes) {
  for (const auto& o : outcomes) {
    if (!o.ok() && !o.stopped) return o.code();
  }
  for (const auto& o : outcomes) {
    if (!o.ok()) return o.code();
  }
  return 0;
}

}  // namespace ringmaster::runtime

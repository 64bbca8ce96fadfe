#include "tools/perf/local_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "store/auth.h"

namespace ringmaster::runtime {
namespace {

int ChildMain(int rank, int np, Socket listener, const std::string& secret, const std::function<int(LocalRank&)>& fn) {
  const uint16_t port = listener.LocalPort();
  std::unique_ptr<StoreServer> server;
  if (rank == 0) {
    StoreServerOptions so;
    so.secret = secret;
    auto s = StoreServer::StartOnSocket(std::move(listener), so);
    if (!s.ok()) {
      std::fprintf(stderr, "rank 0: cannot serve the store: %s\n", s.status().ToString().c_str());
      return 2;
    }
    server = std::move(s).value();
  } else {
    listener = Socket();
  }
  StoreClientOptions co;
  co.port = port;
  co.secret = secret;
  co.rank = static_cast<uint32_t>(rank);
  auto client = StoreClient::Connect(co);
  if (!client.ok()) {
    std::fprintf(stderr, "rank %d: cannot reach the store: %s\n", rank, client.status().ToString().c_str());
    return 2;
  }
  LocalRank lr{rank, np, std::shared_ptr<StoreClient>(std::move(client).value())};
  int code = fn(lr);
  // Rank 0 serves the store until every rank is done with it.
  (void)lr.store->Set("launcher/done/" + std::to_string(rank), "1");
  if (rank == 0) {
    std::vector<std::string> keys;
    for (int r = 0; r < np; ++r) keys.push_back("launcher/done/" + std::to_string(r));
    (void)lr.store->Wait(keys, std::chrono::seconds(30));
  }
  lr.store.reset();
  server.reset();
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace

int RunLocalRanks(int np, const std::function<int(LocalRank&)>& fn) {
  auto listener = Socket::Listen("127.0.0.1", 0);
  if (!listener.ok()) {
    std::fprintf(stderr, "cannot listen on 127.0.0.1: %s\n", listener.status().ToString().c_str());
    return 2;
  }
  auto nonce = RandomNonce();
  if (!nonce.ok()) return 2;
  std::string secret;
  for (unsigned char c : *nonce) secret += "0123456789abcdef"[c >> 4], secret += "0123456789abcdef"[c & 15];
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < np; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(ChildMain(r, np, std::move(*listener), secret, fn));
    if (pid < 0) {
      std::perror("fork");
      for (pid_t p : pids) ::kill(p, SIGKILL);
      for (pid_t p : pids) ::waitpid(p, nullptr, 0);
      return 2;
    }
    pids.push_back(pid);
  }
  *listener = Socket();
  int result = 0;
  size_t remaining = pids.size();
  while (remaining > 0) {
    int status = 0;
    pid_t got = ::waitpid(-1, &status, 0);
    if (got < 0) break;
    --remaining;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) {
      result = code;
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] == got) std::fprintf(stderr, "rank %zu failed (exit code %d); stopping the others\n", r, code);
      }
      for (pid_t p : pids) {
        if (p != got) ::kill(p, SIGKILL);
      }
    }
  }
  return result;
}

}  // namespace ringmaster::runtime

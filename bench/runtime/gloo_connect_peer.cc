#include "bench/runtime/gloo_connect_peer.h"

#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "worker-runtime/gloo/gloo_store.h"
#include "worker-runtime/store/socket.h"
#include "worker-runtime/store/store_client.h"
#include "worker-runtime/store/store_server.h"

namespace ringmaster::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kSecret[] = "gloo-peer-secret";

StatusOr<std::unique_ptr<store::StoreClient>> Connect(uint16_t port, int rank, std::chrono::milliseconds timeout) {
  store::StoreClientOptions co;
  co.port = port;
  co.secret = kSecret;
  co.generation = 1;
  co.rank = static_cast<uint32_t>(rank);
  co.connect_timeout = timeout;
  co.io_timeout = timeout;
  return store::StoreClient::Connect(co);
}

// One rank of the peer: per trial, barrier, then time device + connectFullMesh; reports the time.
[[noreturn]] void Rank(uint16_t port, int rank, int size, int trials, std::chrono::milliseconds timeout) {
  auto client = Connect(port, rank, timeout);
  if (!client.ok()) {
    std::fprintf(stderr, "gloo peer rank %d: %s\n", rank, client.status().ToString().c_str());
    ::_exit(1);
  }
  std::shared_ptr<store::Store> store(std::move(client).value());
  for (int t = 0; t < trials; ++t) {
    const std::string trial = "t" + std::to_string(t);
    std::vector<std::string> arrived;
    for (int r = 0; r < size; ++r) arrived.push_back(trial + "/arrived/" + std::to_string(r));
    if (!store->Set(arrived[rank], "1").ok() || !store->Wait(arrived, timeout).ok()) ::_exit(1);
    const auto start = Clock::now();
    std::shared_ptr<::gloo::rendezvous::Context> context;
    try {
      ::gloo::transport::tcp::attr attr("127.0.0.1");
      auto device = ::gloo::transport::tcp::CreateDevice(attr);
      context = std::make_shared<::gloo::rendezvous::Context>(rank, size);
      context->setTimeout(timeout);
      gloo::GlooStore gloo_store(store, trial + "/mesh", timeout);
      context->connectFullMesh(gloo_store, device);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gloo peer rank %d: %s\n", rank, e.what());
      ::_exit(1);
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!store->Set(trial + "/took/" + std::to_string(rank), std::to_string(ms)).ok()) ::_exit(1);
    // Everyone has connected before anyone tears down (a peer's close must not fail a connect).
    std::vector<std::string> took;
    for (int r = 0; r < size; ++r) took.push_back(trial + "/took/" + std::to_string(r));
    if (!store->Wait(took, timeout).ok()) ::_exit(1);
  }
  ::_exit(0);
}

}  // namespace

StatusOr<std::vector<double>> MeasureGlooConnect(int ranks, int trials, std::chrono::milliseconds timeout) {
  RINGMASTER_ASSIGN_OR_RETURN(store::Socket listener, store::Socket::Listen("127.0.0.1", 0));
  const uint16_t port = listener.LocalPort();
  std::vector<pid_t> pids;
  std::fflush(nullptr);
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) break;
    if (pid == 0) {
      ::close(listener.Release());
      Rank(port, r, ranks, trials, timeout);
    }
    pids.push_back(pid);
  }
  auto reap = [&] {
    for (pid_t p : pids) ::kill(p, SIGKILL);
    for (pid_t p : pids) ::waitpid(p, nullptr, 0);
  };
  if (static_cast<int>(pids.size()) != ranks) {
    reap();
    return UnavailableError("gloo peer: fork failed");
  }
  // Served from here, after the forks (no server threads in the children).
  store::StoreServerOptions so;
  so.secret = kSecret;
  so.generation = 1;
  auto server = store::StoreServer::StartOnSocket(std::move(listener), so);
  if (!server.ok()) {
    reap();
    return server.status();
  }
  auto client = Connect(port, ranks, timeout);
  if (!client.ok()) {
    reap();
    return client.status();
  }
  std::vector<double> slowest;
  for (int t = 0; t < trials; ++t) {
    double worst = 0;
    for (int r = 0; r < ranks; ++r) {
      auto took = (*client)->Get("t" + std::to_string(t) + "/took/" + std::to_string(r), timeout);
      if (!took.ok()) {
        reap();
        return UnavailableError("gloo peer: trial " + std::to_string(t) + ", rank " + std::to_string(r) + ": " +
                                took.status().ToString());
      }
      worst = std::max(worst, std::atof(took->c_str()));
    }
    slowest.push_back(worst);
  }
  for (pid_t p : pids) ::waitpid(p, nullptr, 0);
  return slowest;
}

}  // namespace ringmaster::bench

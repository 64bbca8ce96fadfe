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

#include "worker-runtime/gloo/gloo_connect.h"
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

// Device + connect of one kind: the connected context, or null (and a line on stderr) when it failed.
std::shared_ptr<::gloo::Context> ConnectOnce(const std::shared_ptr<store::Store>& store, const std::string& prefix,
                                             int rank, int size, bool ours, std::chrono::milliseconds timeout) {
  try {
    ::gloo::transport::tcp::attr attr("127.0.0.1");
    auto device = ::gloo::transport::tcp::CreateDevice(attr);
    gloo::GlooStore gloo_store(store, prefix, timeout);
    if (ours) {
      gloo::MeshOptions options;
      options.timeout = timeout;
      auto mesh = gloo::ConnectMesh(gloo_store, device, rank, size, options);
      if (mesh.ok()) return mesh->context;
      std::fprintf(stderr, "our connect, rank %d: %s\n", rank, mesh.status().ToString().c_str());
      return nullptr;
    }
    auto context = std::make_shared<::gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(gloo_store, device);
    return context;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo peer rank %d: %s\n", rank, e.what());
    return nullptr;
  }
}

// One rank: per trial and per kind, barrier, then time device + connect; reports the time. The contexts are
// torn down (outside the timed part) only after every rank has connected (a peer's close must not fail a connect).
[[noreturn]] void Rank(uint16_t port, int rank, int size, int trials, std::chrono::milliseconds timeout) {
  auto client = Connect(port, rank, timeout);
  if (!client.ok()) {
    std::fprintf(stderr, "gloo peer rank %d: %s\n", rank, client.status().ToString().c_str());
    ::_exit(1);
  }
  std::shared_ptr<store::Store> store(std::move(client).value());
  auto all = [&](const std::string& what) {
    std::vector<std::string> keys;
    for (int r = 0; r < size; ++r) keys.push_back(what + std::to_string(r));
    return keys;
  };
  for (int t = 0; t < trials; ++t) {
    for (int k = 0; k < 2; ++k) {
      const bool ours = (k + t) % 2 == 1;  // Gloo first in even trials, ours first in odd ones
      const std::string trial = "t" + std::to_string(t) + (ours ? "/ours" : "/gloo");
      if (!store->Set(trial + "/arrived/" + std::to_string(rank), "1").ok() ||
          !store->Wait(all(trial + "/arrived/"), timeout).ok())
        ::_exit(1);
      const auto start = Clock::now();
      std::shared_ptr<::gloo::Context> context = ConnectOnce(store, trial + "/mesh", rank, size, ours, timeout);
      if (!context) ::_exit(1);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!store->Set(trial + "/took/" + std::to_string(rank), std::to_string(ms)).ok()) ::_exit(1);
      if (!store->Wait(all(trial + "/took/"), timeout).ok()) ::_exit(1);
    }
  }
  ::_exit(0);
}

}  // namespace

StatusOr<ConnectFigures> MeasureConnects(int ranks, int trials, std::chrono::milliseconds timeout) {
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
  ConnectFigures figures;
  for (int t = 0; t < trials; ++t) {
    for (const bool ours : {false, true}) {
      const std::string trial = "t" + std::to_string(t) + (ours ? "/ours" : "/gloo");
      double worst = 0;
      for (int r = 0; r < ranks; ++r) {
        auto took = (*client)->Get(trial + "/took/" + std::to_string(r), timeout);
        if (!took.ok()) {
          reap();
          return UnavailableError("gloo peer: trial " + trial + ", rank " + std::to_string(r) + ": " +
                                  took.status().ToString());
        }
        worst = std::max(worst, std::atof(took->c_str()));
      }
      (ours ? figures.ours : figures.gloo).push_back(worst);
    }
  }
  for (pid_t p : pids) ::waitpid(p, nullptr, 0);
  return figures;
}

}  // namespace ringmaster::bench

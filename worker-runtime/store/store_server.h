// The rendezvous store server that rank 0 runs: an in-memory key-value map
// behind an authenticated TCP protocol (see protocol.h).
//
// Keys live in the namespace of the current membership generation: a client
// connects with its generation. A client of an older generation is refused
// (Aborted). A client of a newer one the server has not reached yet is
// accepted, and each of its requests is held until the server reaches that
// generation, within the request's timeout (a Get's or Wait's own timeout; for
// Set and Add the timeout the request carries, 0 from StoreClient's Set/Add):
// then it is served, or answered Unavailable when the server still has not
// reached it, or Aborted when the server moved past it. Advancing the
// generation drops every key of older generations.
//
// Robustness: every frame is length-limited, the handshake and every
// frame body must complete within `io_timeout`, and a connection that sends
// garbage is closed; no client can crash or stall the server or other clients.
//
// Thread-safety: all public methods are safe to call concurrently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "worker-runtime/store/socket.h"

namespace ringmaster::store {

struct StoreServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;        // 0: pick a free port
  std::string secret;       // per-job secret; must not be empty
  uint64_t generation = 0;  // initial membership generation
  size_t max_value_bytes = 16u << 20;
  size_t max_connections = 1024;
  std::chrono::milliseconds io_timeout{5000};           // handshake / frame body
  std::chrono::milliseconds idle_timeout{3600 * 1000};  // between requests
  std::chrono::milliseconds max_wait{10 * 60 * 1000};   // cap on a client's Get/Wait timeout
};

class StoreServer {
 public:
  // Binds and starts serving. Errors: InvalidArgument (empty secret),
  // Unavailable (bind failed).
  static StatusOr<std::unique_ptr<StoreServer>> Start(StoreServerOptions options);
  // Serves on an already listening socket (bound before fork(), for example).
  static StatusOr<std::unique_ptr<StoreServer>> StartOnSocket(Socket listener, StoreServerOptions options);

  // Stops: closes the listener and every connection, joins all threads.
  ~StoreServer();

  uint16_t port() const { return port_; }

  // Moves to a newer generation; older generations' keys are dropped and their
  // clients refused. Errors: InvalidArgument when generation is not larger.
  Status AdvanceGeneration(uint64_t generation);
  uint64_t generation() const;
  // The newest generation a client has authenticated with (0: none yet), the server's own or ahead of it: a
  // member that has moved on to a later attempt of the generation says so by connecting with it.
  uint64_t newest_requested() const;

  // Counters for tests and metrics. held_requests: requests waiting now for the server to reach their generation.
  uint64_t held_requests() const;
  uint64_t rejected_handshakes() const;
  uint64_t dropped_connections() const;

 private:
  struct Connection;
  StoreServer(Socket listener, StoreServerOptions options);
  void AcceptLoop();
  void Serve(Connection* conn);
  Status Handshake(Socket& socket, uint64_t* generation);
  std::string HandleRequest(std::string_view payload, uint64_t conn_generation);
  void ReapFinishedLocked();

  // Constant after construction.
  const StoreServerOptions options_;
  uint16_t port_ = 0;
  Socket listener_;
  std::thread accept_thread_;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // notified on every Set/Add/generation change/stop
  // Guarded by mu_.
  bool stopping_ = false;
  uint64_t generation_;
  uint64_t newest_requested_ = 0;
  uint64_t held_requests_ = 0;
  std::map<std::string, std::string> data_;  // keys of the current generation
  std::list<std::unique_ptr<Connection>> connections_;
  uint64_t rejected_handshakes_ = 0;
  uint64_t dropped_connections_ = 0;
};

}  // namespace ringmaster::store

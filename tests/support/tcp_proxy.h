// TcpProxy: forwards TCP connections from 127.0.0.1:port() to a target, until Freeze(): from then on it accepts
// nothing (a new connection completes in the kernel's listen backlog and hangs) and relays no byte on the
// connections it holds -- an apiserver gone silent (a hung host, a partition that drops packets) as a client sees
// it, without disturbing the shared test cluster. TLS passes through untouched: point a kubeconfig's server at
// https://127.0.0.1:port() (the apiserver's certificate names 127.0.0.1).
// Test support only. Thread-safety: Freeze() and the accessors from any thread. Owns one thread, joined by the
// destructor, which closes every socket.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"

namespace ringmaster::testing {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (a port the kernel picks) and forwards to target_host:target_port (an IPv4 address).
  // Internal when it cannot listen.
  static StatusOr<std::unique_ptr<TcpProxy>> Start(const std::string& target_host, int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Goes silent for good. Idempotent.
  void Freeze();
  // Connections accepted so far.
  int accepted() const { return accepted_.load(); }

 private:
  TcpProxy(int listener, int port, int wake_read, int wake_write, std::string target_host, int target_port);
  void Loop();

  const int listener_, port_, wake_read_, wake_write_;  // wake_: a pipe that interrupts the loop's poll
  const std::string target_host_;
  const int target_port_;
  std::atomic<bool> frozen_{false}, stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

}  // namespace ringmaster::testing

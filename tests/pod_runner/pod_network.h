// PodNetwork: the pod runner's pods (pod_runner.h) each in a network namespace of its own, on one
// simulated network that the test owns, so that a partition is real: take a pod's link down and its
// packets vanish -- no reset, no error, the peer's kernel never sees them -- as on a real cluster, where
// loopback processes only ever see clean "connection refused/reset" failures.
//
// Layout. A fabric namespace (rm-fab-<pid>-<n>) holds a bridge. Each pod gets a namespace
// (rm-pod-<pid>-<n>) with eth0, one end of a veth pair whose other end is a port of the bridge, holding
// the pod's IP (KWOK's, in 127.X.0.0/16), and lo with only 127.0.0.1. Loopback-range addresses off the
// loopback interface need route_localnet=1 on each interface, and the pod's lo keeps only 127.0.0.1/32 so
// the rest of 127/8 routes to eth0. The fabric owns 127.X.255.254 on the bridge: what the kubelet would
// send to a pod (probes, InFabric) goes from there, over the bridge. The host's interfaces, routes and
// sysctls are never touched: everything lives in namespaces this object creates and deletes.
//
// The control plane. Each port of `relayed_ports` (the apiserver's) on the host's 127.0.0.1 stays
// reachable from inside every pod at 127.0.0.1:PORT, through a relay: a listening socket made inside the
// pod's namespace whose connections a relay thread copies to and from the host's 127.0.0.1:PORT.
//
// Cut(pod, control_plane_too) takes the pod's link down (both sides of the veth) and, when
// control_plane_too, stalls its relayed connections: no bytes move either way and new ones wait
// unaccepted -- a node cut off from everything. Heal() undoes both.
//
// Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2's `ip`; Create says so when either is missing.
// Errors: Internal naming the `ip` command and its output when a step fails; NotFound for an unknown pod.
// Ownership: owns its namespaces (deleted by the destructor; a namespace lives on while a process is in
// it, invisible) and the relay thread. Thread-safety: every method is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/status.h"

namespace ringmaster::testing {

class PodNetwork {
 public:
  static StatusOr<std::unique_ptr<PodNetwork>> Create(std::vector<uint16_t> relayed_ports, LogSink log);
  ~PodNetwork();
  PodNetwork(const PodNetwork&) = delete;
  PodNetwork& operator=(const PodNetwork&) = delete;

  // Gives pod `key` (its uid) a namespace with `ip` (IPv4, in 127.0.0.0/8) on the fabric; returns the
  // path of the namespace for a process to join (ContainerSpawnOptions::network_namespace). InvalidArgument for
  // another kind of address or a key already added.
  StatusOr<std::string> AddPod(const std::string& key, const std::string& ip);
  // Deletes the pod's namespace and its relays. Idempotent.
  void RemovePod(const std::string& key);

  // The partition: see the top of this file. NotFound for a pod not added.
  Status Cut(const std::string& key, bool control_plane_too);
  Status Heal(const std::string& key);
  bool IsCut(const std::string& key) const;

  // Runs `fn` on a thread inside the fabric namespace (the kubelet's side of the pods' links).
  Status InFabric(const std::function<Status()>& fn) const;

 private:
  struct Pod;
  struct Conn;
  PodNetwork(std::string fabric, std::vector<uint16_t> relayed_ports, LogSink log);
  void Relay();  // the relay thread
  void Wake();   // makes the relay thread look at its sockets again

  // Constant after construction.
  const std::string fabric_;  // the fabric namespace's name
  const std::vector<uint16_t> relayed_ports_;
  const LogSink log_;
  int wake_[2] = {-1, -1};  // a pipe: written to wake the relay thread
  std::thread relay_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  std::map<std::string, std::unique_ptr<Pod>> pods_;  // by key
  std::set<std::string> fabric_subnets_;              // 127.X.0.0/16 subnets with the fabric's address on the bridge
  int next_ = 0;                                      // numbers the pods' namespaces and links
  bool stopping_ = false;
};

}  // namespace ringmaster::testing

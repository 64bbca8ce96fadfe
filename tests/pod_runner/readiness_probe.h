// Readiness probes as the kubelet runs them, for the pod runner's pods in network namespaces of their own
// (pod_runner.h, pod_network.h): the probe's spec (httpGet or tcpSocket; a named port resolved through the
// container's ports), one probe attempt over HTTP or TCP against the pod IP, and the counting that turns
// attempts into readiness (initialDelaySeconds, periodSeconds, successThreshold, failureThreshold).
// ParseReadinessProbe and ReadinessState are pure; the Probe* functions block for at most `timeout`.
// Thread-safe (no shared state); one ReadinessState is used by one thread at a time. Test support only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::testing {

struct ProbeSpec {
  enum class Kind { kHttpGet, kTcpSocket };
  Kind kind = Kind::kHttpGet;
  std::string host;                                          // "" -> the pod IP
  int port = 0;                                              // kHttpGet, kTcpSocket
  std::string path = "/";                                    // kHttpGet
  std::vector<std::pair<std::string, std::string>> headers;  // kHttpGet
  std::chrono::seconds initial_delay{0}, period{10}, timeout{1};
  int success_threshold = 1, failure_threshold = 3;
};

// The container's readinessProbe; nullopt without one. Unimplemented for exec (the runner's processes run
// on the host, with no container to exec into), grpc and an HTTPS scheme; InvalidArgument for an unknown
// named port or a probe with no handler.
StatusOr<std::optional<ProbeSpec>> ParseReadinessProbe(const nlohmann::json& container);

// One HTTP GET of http://ip:port/path: OK for a status in [200, 400), else Unavailable saying why.
Status ProbeHttp(const std::string& ip, const ProbeSpec& spec);
// One TCP connect: OK when it is accepted, else Unavailable.
Status ProbeTcp(const std::string& ip, const ProbeSpec& spec);

// A container's readiness from its probe's results: not ready until successThreshold successes in a row,
// not ready again after failureThreshold failures in a row.
class ReadinessState {
 public:
  using Clock = std::chrono::steady_clock;
  ReadinessState(const ProbeSpec& spec, Clock::time_point started);

  // Whether an attempt is due at `now` (after the initial delay, then every period).
  bool Due(Clock::time_point now) const;
  // Records an attempt made at `now`; returns true when readiness changed.
  bool Record(bool success, Clock::time_point now);
  bool ready() const { return ready_; }

 private:
  const ProbeSpec spec_;
  Clock::time_point next_;
  bool ready_ = false;
  int successes_ = 0, failures_ = 0;
};

}  // namespace ringmaster::testing

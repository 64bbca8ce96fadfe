// Readiness and liveness probes as the kubelet runs them, for the pod runner's image mode (pod_runner.h):
// the probe's spec (httpGet, tcpSocket, exec; a named port resolved through the container's ports), one
// probe attempt over HTTP or TCP against the pod IP, and the counting that turns attempts into readiness
// (initialDelaySeconds, periodSeconds, successThreshold, failureThreshold) or into a liveness verdict
// (failureThreshold failures in a row: kill the container). Both kinds share the parsing and attempts.
// Exec attempts are the runner's (they run inside the container, container_start.h).
// The Parse* functions, ReadinessState and LivenessState are pure; the Probe* functions block for at most
// `timeout`.
// Thread-safe (no shared state); one ReadinessState is used by one thread at a time.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ringmaster::testing {

struct ProbeSpec {
  enum class Kind { kHttpGet, kTcpSocket, kExec };
  Kind kind = Kind::kHttpGet;
  std::string host;                                          // "" -> the pod IP
  int port = 0;                                              // kHttpGet, kTcpSocket
  std::string path = "/";                                    // kHttpGet
  std::vector<std::pair<std::string, std::string>> headers;  // kHttpGet
  std::vector<std::string> command;                          // kExec
  std::chrono::seconds initial_delay{0}, period{10}, timeout{1};
  int success_threshold = 1, failure_threshold = 3;
};

// The container's probe `field` ("readinessProbe", "livenessProbe"); nullopt without one. Unimplemented
// for grpc and an HTTPS scheme; InvalidArgument for an unknown named port or a probe with no handler.
StatusOr<std::optional<ProbeSpec>> ParseProbe(const nlohmann::json& container, const std::string& field);
// ParseProbe(container, "readinessProbe").
StatusOr<std::optional<ProbeSpec>> ParseReadinessProbe(const nlohmann::json& container);
// ParseProbe(container, "livenessProbe"), successThreshold forced to 1 (as the apiserver requires).
StatusOr<std::optional<ProbeSpec>> ParseLivenessProbe(const nlohmann::json& container);

// One HTTP GET of http://ip:port/path: OK for a status in [200, 400), else Unavailable saying why.
Status ProbeHttp(const std::string& ip, const ProbeSpec& spec);
// One TCP connect: OK when it is accepted, else Unavailable.
Status ProbeTcp(const std::string& ip, const ProbeSpec& spec);

// A container's readiness from its probe's results: not ready until successThreshold successes in a row,
// ready again lost after failureThreshold failures in a row.
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

// A container's liveness from its probe's results: it is to be killed after failureThreshold failures in
// a row (a success starts the count over). One LivenessState per run of a container.
class LivenessState {
 public:
  using Clock = std::chrono::steady_clock;
  LivenessState(const ProbeSpec& spec, Clock::time_point started);

  // Whether an attempt is due at `now` (after the initial delay, then every period).
  bool Due(Clock::time_point now) const;
  // Records an attempt made at `now`; returns true when the container is to be killed (the failure
  // reached failureThreshold).
  bool Record(bool success, Clock::time_point now);
  int failures() const { return failures_; }

 private:
  const ProbeSpec spec_;
  Clock::time_point next_;
  int failures_ = 0;
};

}  // namespace ringmaster::testing

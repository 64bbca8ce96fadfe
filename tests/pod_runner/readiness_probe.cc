#include "tests/pod_runner/readiness_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/json_path.h"

namespace ringmaster::testing {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

StatusOr<int> Port(const json& container, const json& port, const std::string& field) {
  if (port.is_number_integer()) return static_cast<int>(port.get<int64_t>());
  const std::string name = port.is_string() ? port.get<std::string>() : "";
  for (const auto& p : At(container, {"ports"}).is_array() ? container["ports"] : json::array()) {
    if (StringAt(p, {"name"}) == name) return static_cast<int>(IntAt(p, {"containerPort"}));
  }
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) return std::stoi(name);
  return InvalidArgumentError(field + " port " + port.dump() + " is not a port of the container");
}

// A connected TCP socket to ip:port within `deadline`, or Unavailable.
StatusOr<int> Connect(const std::string& ip, int port, Clock::time_point deadline) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) return InvalidArgumentError("not an IPv4 address: " + ip);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return InternalError(std::string("socket: ") + std::strerror(errno));
  const std::string target = ip + ":" + std::to_string(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return UnavailableError("connect " + target + ": " + why);
  }
  pollfd p{fd, POLLOUT, 0};
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (::poll(&p, 1, static_cast<int>(std::max<long>(left, 0))) != 1) {
    ::close(fd);
    return UnavailableError("connect " + target + ": timed out");
  }
  int error = 0;
  socklen_t len = sizeof(error);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
  if (error != 0) {
    ::close(fd);
    return UnavailableError("connect " + target + ": " + std::strerror(error));
  }
  return fd;
}

}  // namespace

StatusOr<std::optional<ProbeSpec>> ParseReadinessProbe(const json& container) {
  const std::string field = "readinessProbe";
  const json& probe = At(container, {field});
  if (probe.is_null()) return std::optional<ProbeSpec>();
  ProbeSpec s;
  const std::string where = "container " + StringAt(container, {"name"}) + " " + field + ": ";
  if (probe.contains("httpGet")) {
    const json& h = probe["httpGet"];
    s.kind = ProbeSpec::Kind::kHttpGet;
    std::string scheme = StringAt(h, {"scheme"});
    if (!scheme.empty() && scheme != "HTTP")
      return UnimplementedError(where + "scheme " + scheme + " is not supported by the pod runner");
    RINGMASTER_ASSIGN_OR_RETURN(s.port, Port(container, At(h, {"port"}), field));
    s.host = StringAt(h, {"host"});
    if (std::string path = StringAt(h, {"path"}); !path.empty()) s.path = path[0] == '/' ? path : "/" + path;
    for (const auto& hd : At(h, {"httpHeaders"}).is_array() ? h["httpHeaders"] : json::array()) {
      s.headers.emplace_back(StringAt(hd, {"name"}), StringAt(hd, {"value"}));
    }
  } else if (probe.contains("tcpSocket")) {
    s.kind = ProbeSpec::Kind::kTcpSocket;
    RINGMASTER_ASSIGN_OR_RETURN(s.port, Port(container, At(probe, {"tcpSocket", "port"}), field));
    s.host = StringAt(probe, {"tcpSocket", "host"});
  } else if (probe.contains("exec")) {
    return UnimplementedError(where + "exec is not supported by the pod runner (its processes run on the host)");
  } else if (probe.contains("grpc")) {
    return UnimplementedError(where + "grpc is not supported by the pod runner");
  } else {
    return InvalidArgumentError(where + "no handler (httpGet or tcpSocket)");
  }
  s.initial_delay = std::chrono::seconds(IntAt(probe, {"initialDelaySeconds"}, 0));
  s.period = std::chrono::seconds(std::max<int64_t>(1, IntAt(probe, {"periodSeconds"}, 10)));
  s.timeout = std::chrono::seconds(std::max<int64_t>(1, IntAt(probe, {"timeoutSeconds"}, 1)));
  s.success_threshold = static_cast<int>(std::max<int64_t>(1, IntAt(probe, {"successThreshold"}, 1)));
  s.failure_threshold = static_cast<int>(std::max<int64_t>(1, IntAt(probe, {"failureThreshold"}, 3)));
  return std::optional<ProbeSpec>(s);
}

Status ProbeTcp(const std::string& ip, const ProbeSpec& spec) {
  RINGMASTER_ASSIGN_OR_RETURN(int fd,
                              Connect(spec.host.empty() ? ip : spec.host, spec.port, Clock::now() + spec.timeout));
  ::close(fd);
  return Status::Ok();
}

Status ProbeHttp(const std::string& ip, const ProbeSpec& spec) {
  const auto deadline = Clock::now() + spec.timeout;
  const std::string host = spec.host.empty() ? ip : spec.host;
  RINGMASTER_ASSIGN_OR_RETURN(int fd, Connect(host, spec.port, deadline));
  std::string request = "GET " + spec.path + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(spec.port) +
                        "\r\nUser-Agent: kube-probe/ringmaster-pod-runner\r\nAccept: */*\r\nConnection: close\r\n";
  for (const auto& [k, v] : spec.headers) request += k + ": " + v + "\r\n";
  request += "\r\n";
  std::string response;
  size_t sent = 0;
  Status result = UnavailableError("GET " + spec.path + ": timed out");
  while (Clock::now() < deadline) {
    pollfd p{fd, static_cast<short>(sent < request.size() ? POLLOUT : POLLIN), 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<long>(left, 1))) <= 0) continue;
    if (sent < request.size()) {
      ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        result = UnavailableError("GET " + spec.path + ": " + std::strerror(errno));
        break;
      }
      if (n > 0) sent += static_cast<size_t>(n);
      continue;
    }
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) response.append(buf, static_cast<size_t>(n));
    if (response.find("\r\n") != std::string::npos || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      // "HTTP/1.1 200 OK"
      const size_t space = response.find(' ');
      const int code = space == std::string::npos ? 0 : std::atoi(response.c_str() + space + 1);
      if (code >= 200 && code < 400)
        result = Status::Ok();
      else
        result = UnavailableError("GET " + spec.path + ": " +
                                  (code ? "status " + std::to_string(code) : "no HTTP response"));
      break;
    }
  }
  ::close(fd);
  return result;
}

ReadinessState::ReadinessState(const ProbeSpec& spec, Clock::time_point started)
    : spec_(spec), next_(started + spec.initial_delay) {}

bool ReadinessState::Due(Clock::time_point now) const { return now >= next_; }

bool ReadinessState::Record(bool success, Clock::time_point now) {
  next_ = now + spec_.period;
  const bool before = ready_;
  if (success) {
    failures_ = 0;
    if (++successes_ >= spec_.success_threshold) ready_ = true;
  } else {
    successes_ = 0;
    if (++failures_ >= spec_.failure_threshold) ready_ = false;
  }
  return ready_ != before;
}

}  // namespace ringmaster::testing

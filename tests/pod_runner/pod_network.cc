#include "tests/pod_runner/pod_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "tests/support/subprocess.h"

namespace ringmaster::testing {

namespace {

constexpr char kNetnsDir[] = "/run/netns/";
constexpr size_t kRelayChunk = 64 * 1024;

// Runs `ip ARGS...` (or any argv); Internal with its output when it fails.
Status Ip(std::vector<std::string> argv) {
  argv.insert(argv.begin(), "ip");
  auto r = RunCommand(argv, std::chrono::seconds(20));
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (!r.ok()) return r.status().WithContext(cmd);
  if (r->exit_code != 0) return InternalError(cmd + " exited " + std::to_string(r->exit_code) + ": " + r->err);
  return Status::Ok();
}

Status Sysctls(const std::string& ns, const std::vector<std::string>& settings) {
  std::vector<std::string> argv = {"netns", "exec", ns, "sysctl", "-qw"};
  argv.insert(argv.end(), settings.begin(), settings.end());
  return Ip(argv);
}

// Runs `fn` on a new thread that has joined network namespace `ns` (a name under /run/netns): the
// namespace of a socket is where it is created, and setns(CLONE_NEWNET) changes only the calling thread.
Status InNamespace(const std::string& ns, const std::function<Status()>& fn) {
  Status result;
  std::thread t([&] {
    int fd = ::open((kNetnsDir + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      result = InternalError("open " + std::string(kNetnsDir) + ns + ": " + std::strerror(errno));
      return;
    }
    if (::setns(fd, CLONE_NEWNET) != 0) {
      result = InternalError("setns " + ns + ": " + std::strerror(errno));
      ::close(fd);
      return;
    }
    ::close(fd);
    result = fn();
  });
  t.join();
  return result;
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

}  // namespace

// A relayed connection: `inside` accepted in a pod's namespace, `outside` to the host's port.
struct PodNetwork::Conn {
  int inside = -1, outside = -1;
  std::string to_outside, to_inside;  // bytes read but not written yet
  bool inside_eof = false, outside_eof = false;
  ~Conn() {
    if (inside >= 0) ::close(inside);
    if (outside >= 0) ::close(outside);
  }
};

struct PodNetwork::Pod {
  std::string ns;    // its namespace's name
  std::string link;  // the bridge's end of its veth, in the fabric
  std::string ip;
  bool cut = false;
  bool control_plane_cut = false;
  std::vector<std::pair<int, uint16_t>> listeners;  // in its namespace: fd, the host port it relays to
  std::vector<std::unique_ptr<Conn>> conns;
  ~Pod() {
    for (auto& [fd, port] : listeners) ::close(fd);
  }
};

PodNetwork::PodNetwork(std::string fabric, std::vector<uint16_t> relayed_ports, LogSink log)
    : fabric_(std::move(fabric)), relayed_ports_(std::move(relayed_ports)), log_(std::move(log)) {}

StatusOr<std::unique_ptr<PodNetwork>> PodNetwork::Create(std::vector<uint16_t> relayed_ports, LogSink log) {
  if (::geteuid() != 0) return FailedPreconditionError("PodNetwork needs root (network namespaces, veth pairs)");
  static std::atomic<int> counter{0};  // distinct fabrics of one process
  const std::string fabric = "rm-fab-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::unique_ptr<PodNetwork> net(new PodNetwork(fabric, std::move(relayed_ports), std::move(log)));
  Status made = Ip({"netns", "add", fabric});
  if (!made.ok()) {
    return FailedPreconditionError(
        "PodNetwork: cannot create a network namespace (is iproute2 installed, are we root?): " + made.ToString());
  }
  for (auto step : std::vector<std::vector<std::string>>{{"-n", fabric, "link", "add", "br0", "type", "bridge"},
                                                         {"-n", fabric, "link", "set", "br0", "up"}}) {
    RINGMASTER_RETURN_IF_ERROR(Ip(step));
  }
  RINGMASTER_RETURN_IF_ERROR(
      Sysctls(fabric, {"net.ipv4.conf.all.route_localnet=1", "net.ipv4.conf.br0.route_localnet=1"}));
  if (::pipe2(net->wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    return InternalError(std::string("pipe2: ") + std::strerror(errno));
  net->relay_ = std::thread([raw = net.get()] { raw->Relay(); });
  return net;
}

PodNetwork::~PodNetwork() {
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (const auto& [key, pod] : pods_) keys.push_back(key);
  }
  Wake();
  if (relay_.joinable()) relay_.join();
  for (const auto& key : keys) RemovePod(key);
  (void)Ip({"netns", "del", fabric_});
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

void PodNetwork::Wake() {
  char c = 1;
  (void)!::write(wake_[1], &c, 1);
}

StatusOr<std::string> PodNetwork::AddPod(const std::string& key, const std::string& ip) {
  in_addr addr{};
  if (::inet_pton(AF_INET, ip.c_str(), &addr) != 1 || (ntohl(addr.s_addr) >> 24) != 127) {
    return InvalidArgumentError("PodNetwork: pod IP '" + ip + "' is not an IPv4 address in 127.0.0.0/8");
  }
  const uint32_t host = ntohl(addr.s_addr);
  const std::string subnet = "127." + std::to_string((host >> 16) & 0xff);
  int n;
  bool add_fabric_address;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pods_.count(key)) return InvalidArgumentError("PodNetwork: pod " + key + " already has a namespace");
    n = next_++;
    add_fabric_address = fabric_subnets_.insert(subnet).second;
  }
  auto pod = std::make_unique<Pod>();
  pod->ns = "rm-pod-" + std::to_string(::getpid()) + "-" + std::to_string(n);
  pod->link = "v" + std::to_string(n);
  pod->ip = ip;
  const std::string& ns = pod->ns;
  if (add_fabric_address) {
    RINGMASTER_RETURN_IF_ERROR(Ip({"-n", fabric_, "addr", "add", subnet + ".255.254/16", "dev", "br0"}));
  }
  RINGMASTER_RETURN_IF_ERROR(Ip({"netns", "add", ns}));
  Status made = [&]() -> Status {
    // The veth is made inside the fabric and its pod end moved straight into the pod's namespace.
    for (auto step : std::vector<std::vector<std::string>>{
             {"-n", fabric_, "link", "add", pod->link, "type", "veth", "peer", "name", "eth0", "netns", ns},
             {"-n", fabric_, "link", "set", pod->link, "master", "br0"},
             {"-n", fabric_, "link", "set", pod->link, "up"}}) {
      RINGMASTER_RETURN_IF_ERROR(Ip(step));
    }
    RINGMASTER_RETURN_IF_ERROR(
        Sysctls(ns, {"net.ipv4.conf.all.route_localnet=1", "net.ipv4.conf.eth0.route_localnet=1"}));
    for (auto step : std::vector<std::vector<std::string>>{{"-n", ns, "addr", "add", "127.0.0.1/32", "dev", "lo"},
                                                           {"-n", ns, "link", "set", "lo", "up"},
                                                           {"-n", ns, "addr", "add", ip + "/16", "dev", "eth0"},
                                                           {"-n", ns, "link", "set", "eth0", "up"}}) {
      RINGMASTER_RETURN_IF_ERROR(Ip(step));
    }
    // The relays' listening sockets, made inside the pod's namespace.
    for (uint16_t port : relayed_ports_) {
      RINGMASTER_RETURN_IF_ERROR(InNamespace(ns, [&]() -> Status {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a = Loopback(port);
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
          Status s = InternalError("relay listener on 127.0.0.1:" + std::to_string(port) + " in " + ns + ": " +
                                   std::strerror(errno));
          if (fd >= 0) ::close(fd);
          return s;
        }
        pod->listeners.emplace_back(fd, port);
        return Status::Ok();
      }));
    }
    return Status::Ok();
  }();
  if (!made.ok()) {
    (void)Ip({"netns", "del", ns});
    return made.WithContext("giving pod " + key + " (" + ip + ") its network namespace");
  }
  const std::string path = kNetnsDir + ns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pods_[key] = std::move(pod);
  }
  Wake();
  return path;
}

void PodNetwork::RemovePod(const std::string& key) {
  std::unique_ptr<Pod> pod;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return;
    pod = std::move(it->second);
    pods_.erase(it);
  }
  // The relay thread only touches a pod's descriptors under mu_ (a poll that still holds one of them
  // at worst wakes once for nothing), so the pod's sockets close with `pod` at the end of this call.
  Wake();
  (void)Ip({"netns", "del", pod->ns});  // its veth goes with it
}

Status PodNetwork::Cut(const std::string& key, bool control_plane_too) {
  std::string link, ns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return NotFoundError("PodNetwork: no pod " + key);
    it->second->cut = true;
    it->second->control_plane_cut = control_plane_too;
    link = it->second->link;
    ns = it->second->ns;
  }
  Wake();
  return Ip({"-n", fabric_, "link", "set", link, "down"});
}

Status PodNetwork::Heal(const std::string& key) {
  std::string link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return NotFoundError("PodNetwork: no pod " + key);
    it->second->cut = false;
    it->second->control_plane_cut = false;
    link = it->second->link;
  }
  Wake();
  return Ip({"-n", fabric_, "link", "set", link, "up"});
}

bool PodNetwork::IsCut(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(key);
  return it != pods_.end() && it->second->cut;
}

Status PodNetwork::InFabric(const std::function<Status()>& fn) const { return InNamespace(fabric_, fn); }

// One poll loop over every pod's listeners and connections. A pod whose control plane is cut is left
// out of the set: its connections stall and its new ones wait in the backlog, as if packets vanished.
// Holding mu_ while moving bytes keeps RemovePod from closing descriptors under the loop; every socket is
// non-blocking, so nothing here waits with the lock held.
void PodNetwork::Relay() {
  char buf[kRelayChunk];
  for (;;) {
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      for (auto& [key, pod] : pods_) {
        if (pod->control_plane_cut) continue;
        for (auto& [fd, port] : pod->listeners) fds.push_back({fd, POLLIN, 0});
        for (auto& c : pod->conns) {
          fds.push_back(
              {c->inside, static_cast<short>((c->inside_eof ? 0 : POLLIN) | (c->to_inside.empty() ? 0 : POLLOUT)), 0});
          fds.push_back({c->outside,
                         static_cast<short>((c->outside_eof ? 0 : POLLIN) | (c->to_outside.empty() ? 0 : POLLOUT)), 0});
        }
      }
    }
    if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) return;
    if (fds[0].revents) {
      while (::read(wake_[0], buf, sizeof buf) > 0) {}
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    for (auto& [key, pod] : pods_) {
      if (pod->control_plane_cut) continue;
      for (auto& [lfd, port] : pod->listeners) {
        for (int in; (in = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          auto c = std::make_unique<Conn>();
          c->inside = in;
          c->outside = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
          sockaddr_in a = Loopback(port);
          if (c->outside < 0 ||
              (::connect(c->outside, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS)) {
            continue;  // closes both: the pod sees its connection reset, as when the apiserver is down
          }
          pod->conns.push_back(std::move(c));
        }
      }
      // Moves what one side has to the other; false when the connection is over.
      auto pump = [&buf](int from, int to, std::string& pending, bool& eof) {
        if (!eof) {
          ssize_t n = ::read(from, buf, sizeof buf);
          if (n > 0)
            pending.append(buf, static_cast<size_t>(n));
          else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            eof = true;
        }
        if (!pending.empty()) {
          ssize_t w = ::send(to, pending.data(), pending.size(), MSG_NOSIGNAL);
          if (w > 0)
            pending.erase(0, static_cast<size_t>(w));
          else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return false;
        }
        if (eof && pending.empty()) ::shutdown(to, SHUT_WR);
        return true;
      };
      auto& conns = pod->conns;
      for (size_t i = 0; i < conns.size();) {
        Conn& c = *conns[i];
        bool alive = pump(c.inside, c.outside, c.to_outside, c.inside_eof) &&
                     pump(c.outside, c.inside, c.to_inside, c.outside_eof) &&
                     !(c.inside_eof && c.outside_eof && c.to_inside.empty() && c.to_outside.empty());
        if (alive)
          ++i;
        else
          conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
}

}  // namespace ringmaster::testing

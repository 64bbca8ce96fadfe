#include "worker-runtime/elastic/peer_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace ringmaster::elastic {
namespace {

using namespace std::chrono_literals;

// A listening socket on `ip`:`port` (0: any free port) that never accepts; closed by the destructor.
struct Listener {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  uint16_t port = 0;
  std::vector<int> clients;
  Listener(const char* ip, uint16_t want_port, int backlog) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, ip, &a.sin_addr);
    a.sin_port = htons(want_port);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << ip << ":" << want_port;
    EXPECT_EQ(::listen(fd, backlog), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  // Fills the accept queue: Linux then drops further SYNs without an answer (no reset), which is how a
  // partitioned peer looks from here. No root and no network namespace needed.
  void Fill(int n) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    for (int i = 0; i < n; ++i) {
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      (void)::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
      clients.push_back(c);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // their handshakes complete (or stall)
  }
  ~Listener() {
    for (int c : clients) ::close(c);
    ::close(fd);
  }
};

api::Membership World(std::vector<std::pair<std::string, std::string>> pods_and_addresses) {
  api::Membership m;
  m.generation = 3;
  int rank = 0;
  for (auto& [pod, address] : pods_and_addresses) m.members.push_back({pod, "", rank++, address, ""});
  return m;
}

TEST(PeerProbeTest, PeersThatAcceptOrRefuseAreReachableAndOnlySilenceIsReported) {
  Listener listening("127.0.0.1", 0, 8);
  // 127.0.0.2 has nothing on the port: refused, i.e. its host answers (a crashed worker, not a partition).
  // 127.0.0.4's accept queue is full: its SYNs vanish.
  Listener silent("127.0.0.4", listening.port, 0);
  silent.Fill(3);
  api::Membership world = World({{"me", "127.0.0.1"},
                                 {"listening", "127.0.0.1"},
                                 {"refusing", "127.0.0.2"},
                                 {"silent", "127.0.0.4"},
                                 {"named", "worker-3.job.svc"}});
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> unreachable = UnreachablePeers(world, "me", listening.port, 300ms);
  EXPECT_EQ(unreachable, std::vector<std::string>{"silent"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // bounded by the timeout, not a TCP retry cycle
}

TEST(PeerProbeTest, NobodyElseNothingToReport) {
  EXPECT_TRUE(UnreachablePeers(World({{"me", "127.0.0.1"}}), "me", 1, 50ms).empty());
}

}  // namespace
}  // namespace ringmaster::elastic

// The watch stream and the informer's reflector against a scripted local HTTP server: client-side
// idle timeout, truncated and invalid streams, a dropped connection, cancellation from another
// thread, an HTTP error on open, and resuming from the last resourceVersion after a drop.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status_test_macros.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace ringmaster::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What the fake server does with one request.
struct Reply {
  int code = 200;
  std::vector<std::string> chunks;  // sent as HTTP chunks, in order
  milliseconds stall_after{0};      // then wait this long (or until the client goes away)...
  bool drop = false;                // ...then close without ending the chunked body
};

class FakeServer {
 public:
  explicit FakeServer(std::function<Reply(const std::string& path)> handler) : handler_(std::move(handler)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    for (auto& t : connections_) t.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> paths() {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) connections_.emplace_back([this, c] { Handle(c); });
    }
  }
  bool Send(int c, const std::string& s) { return ::send(c, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()); }
  void Handle(int c) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) break;
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, size_t(n));
    }
    auto sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    std::string path = sp1 == std::string::npos || sp2 == std::string::npos ? "" : head.substr(sp1 + 1, sp2 - sp1 - 1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      paths_.push_back(path);
    }
    Reply r = handler_(path);
    std::string out = "HTTP/1.1 " + std::to_string(r.code) +
                      " X\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    bool ok = Send(c, out);
    for (const auto& chunk : r.chunks) {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
      ok = ok && Send(c, size + chunk + "\r\n");
    }
    auto until = std::chrono::steady_clock::now() + r.stall_after;
    while (ok && !stop_ && std::chrono::steady_clock::now() < until) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0 && ::recv(c, buf, sizeof buf, MSG_DONTWAIT) == 0) break;  // client closed
    }
    if (ok && !r.drop) Send(c, "0\r\n\r\n");
    ::shutdown(c, SHUT_RDWR);
    ::close(c);
  }

  const std::function<Reply(const std::string&)> handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> connections_;  // only touched by the accept thread, then the destructor
  std::mutex mu_;
  std::vector<std::string> paths_;
};

std::shared_ptr<Client> ClientFor(const FakeServer& server) {
  ClientConfig cfg;
  cfg.server = server.url();
  cfg.qps = 0;
  auto c = NewClient(cfg);
  EXPECT_OK(c) << c.status();
  return *c;
}

std::string Event(const std::string& type, const std::string& name, int rv) {
  return R"({"type":")" + type + R"(","object":{"kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","namespace":"ns","resourceVersion":")" + std::to_string(rv) + "\"}}}\n";
}

WatchOptions Opts(milliseconds idle = milliseconds(0)) {
  WatchOptions o;
  o.resource_version = "10";
  o.timeout_seconds = 30;
  o.client_idle_timeout = idle;
  return o;
}

TEST(WatchStreamTest, ClientSideIdleTimeoutWhenTheServerStalls) {
  FakeServer server([](const std::string&) { return Reply{200, {Event("ADDED", "a", 11)}, seconds(10), false}; });
  auto client = ClientFor(server);
  auto watch = client->Watch(resources::ConfigMaps(), "ns", Opts(milliseconds(700)));
  ASSERT_OK(watch) << watch.status();
  auto first = (*watch)->Next();
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  auto start = std::chrono::steady_clock::now();
  auto second = (*watch)->Next();
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
}

TEST(WatchStreamTest, EventsSplitAcrossChunksAndCleanEnd) {
  std::string a = Event("ADDED", "a", 11), b = Event("MODIFIED", "a", 12);
  FakeServer server([&](const std::string&) {
    return Reply{200, {a.substr(0, 7), a.substr(7) + b.substr(0, 30), b.substr(30)}, milliseconds(0), false};
  });
  auto watch = ClientFor(server)->Watch(resources::ConfigMaps(), "ns", Opts());
  ASSERT_OK(watch) << watch.status();
  auto e1 = (*watch)->Next();
  ASSERT_TRUE(e1.ok() && e1->has_value()) << e1.status();
  auto e2 = (*watch)->Next();
  ASSERT_TRUE(e2.ok() && e2->has_value()) << e2.status();
  EXPECT_EQ((*e2)->type, WatchEventType::kModified);
  auto end = (*watch)->Next();
  ASSERT_OK(end) << end.status();
  EXPECT_FALSE(end->has_value());  // server ended the watch cleanly
  const auto paths = server.paths();
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_NE(paths[0].find("watch=1"), std::string::npos);
  EXPECT_NE(paths[0].find("resourceVersion=10"), std::string::npos);
  EXPECT_NE(paths[0].find("allowWatchBookmarks=true"), std::string::npos);
  EXPECT_NE(paths[0].find("timeoutSeconds=30"), std::string::npos);
}

TEST(WatchStreamTest, TruncatedLastEventIsDataLoss) {
  FakeServer server(
      [](const std::string&) { return Reply{200, {Event("ADDED", "a", 11).substr(0, 25)}, milliseconds(0), false}; });
  auto watch = ClientFor(server)->Watch(resources::ConfigMaps(), "ns", Opts());
  ASSERT_OK(watch) << watch.status();
  auto ev = (*watch)->Next();
  EXPECT_EQ(ev.status().code(), StatusCode::kDataLoss) << ev.status();
  EXPECT_NE(ev.status().message().find("truncated"), std::string::npos) << ev.status();
}

TEST(WatchStreamTest, InvalidJsonLineIsDataLoss) {
  FakeServer server(
      [](const std::string&) { return Reply{200, {"{\"type\":\"ADDED\",\"object\":{oops}}\n"}, seconds(5), false}; });
  auto watch = ClientFor(server)->Watch(resources::ConfigMaps(), "ns", Opts());
  ASSERT_OK(watch) << watch.status();
  auto ev = (*watch)->Next();
  EXPECT_EQ(ev.status().code(), StatusCode::kDataLoss) << ev.status();
}

TEST(WatchStreamTest, DroppedConnectionIsAnErrorNotAHang) {
  FakeServer server([](const std::string&) {
    return Reply{200, {Event("ADDED", "a", 11), Event("ADDED", "b", 12).substr(0, 10)}, milliseconds(0), true};
  });
  auto watch = ClientFor(server)->Watch(resources::ConfigMaps(), "ns", Opts(seconds(5)));
  ASSERT_OK(watch) << watch.status();
  auto e1 = (*watch)->Next();
  ASSERT_TRUE(e1.ok() && e1->has_value()) << e1.status();
  auto start = std::chrono::steady_clock::now();
  auto e2 = (*watch)->Next();
  EXPECT_FALSE(e2.ok());
  EXPECT_TRUE(e2.status().code() == StatusCode::kUnavailable || e2.status().code() == StatusCode::kDataLoss)
      << e2.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(4));
}

TEST(WatchStreamTest, StopFromAnotherThreadCancelsABlockedNext) {
  FakeServer server([](const std::string&) { return Reply{200, {}, seconds(10), false}; });
  auto watch = ClientFor(server)->Watch(resources::ConfigMaps(), "ns", Opts());
  ASSERT_OK(watch) << watch.status();
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    (*watch)->Stop();
  });
  auto start = std::chrono::steady_clock::now();
  auto ev = (*watch)->Next();
  stopper.join();
  EXPECT_EQ(ev.status().code(), StatusCode::kCancelled) << ev.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(3));
}

TEST(WatchStreamTest, HttpErrorOnOpenCarriesCodeAndReason) {
  FakeServer server([](const std::string&) {
    return Reply{410,
                 {R"({"kind":"Status","status":"Failure","reason":"Expired","message":"too old","code":410})"},
                 milliseconds(0),
                 false};
  });
  auto watch = ClientFor(server)->Watch(resources::ConfigMaps(), "ns", Opts());
  EXPECT_EQ(watch.status().code(), StatusCode::kGone) << watch.status();
}

// The reflector lists once, then after a dropped watch resumes from the last resourceVersion it saw.
TEST(InformerTest, ResumesFromTheLastResourceVersionAfterADroppedConnection) {
  std::atomic<int> watches{0};
  FakeServer server([&](const std::string& path) {
    if (path.find("watch=1") == std::string::npos) {
      return Reply{
          200,
          {R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}]})"},
          milliseconds(0),
          false};
    }
    if (watches++ == 0) return Reply{200, {Event("ADDED", "b", 11), Event("MODIFIED", "b", 12)}, milliseconds(0), true};
    return Reply{200, {Event("DELETED", "a", 13)}, seconds(10), false};
  });
  InformerOptions o;
  o.ns = "ns";
  o.min_backoff = milliseconds(10);
  o.log = [](LogLevel, std::string_view) {};
  Informer informer(ClientFor(server), resources::ConfigMaps(), o);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(seconds(5)));
  auto deadline = std::chrono::steady_clock::now() + seconds(5);
  while (informer.store().Get("ns/a") != nullptr && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(informer.store().Get("ns/a"), nullptr);
  ASSERT_NE(informer.store().Get("ns/b"), nullptr);
  EXPECT_EQ(ResourceVersionOf(*informer.store().Get("ns/b")), "12");
  informer.Stop();
  EXPECT_EQ(informer.lists(), 1);
  const auto paths = server.paths();
  ASSERT_GE(paths.size(), 3u);
  EXPECT_NE(paths[1].find("resourceVersion=10"), std::string::npos) << paths[1];
  EXPECT_NE(paths[2].find("resourceVersion=12"), std::string::npos) << paths[2];
}

// A relist pages (limit/continue), transforms each object before it is cached (a packed store here), keeps the
// first page's resourceVersion, and hands the handlers the differences against what they saw: a 410 on the
// watch forces it.
TEST(InformerTest, ARelistPagesTransformsAndDispatchesTheDifferences) {
  std::atomic<int> lists{0}, watches{0};
  auto item = [](const std::string& name, int rv) {
    return R"({"metadata":{"name":")" + name + R"(","namespace":"ns","resourceVersion":")" + std::to_string(rv) +
           R"("},"data":{"big":"dropped by the transform"}})";
  };
  FakeServer server([&](const std::string& path) {
    if (path.find("watch=1") != std::string::npos) {
      if (watches++ == 0)
        return Reply{
            410, {R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})"}, milliseconds(0), false};
      return Reply{200, {}, seconds(10), false};
    }
    EXPECT_NE(path.find("limit=1"), std::string::npos) << path;
    const bool second_page = path.find("continue=next") != std::string::npos;
    if (!second_page) lists++;
    // First list: a, b (one per page); the relist: b changed, c new, a gone.
    const bool relist = lists.load() > 1;
    std::string items = second_page ? (relist ? item("c", 8) : item("b", 6)) : (relist ? item("b", 7) : item("a", 5));
    std::string meta = std::string(R"({"resourceVersion":")") + (relist ? "20" : "10") + "\"" +
                       (second_page ? "" : R"(,"continue":"next")") + "}";
    return Reply{200,
                 {R"({"kind":"ConfigMapList","metadata":)" + meta + R"(,"items":[)" + items + "]}"},
                 milliseconds(0),
                 false};
  });
  InformerOptions o;
  o.ns = "ns";
  o.page_size = 1;
  o.packed_store = true;
  o.min_backoff = milliseconds(10);
  o.transform = [](json* obj) { obj->erase("data"); };
  o.log = [](LogLevel, std::string_view) {};
  Informer informer(ClientFor(server), resources::ConfigMaps(), o);
  std::mutex mu;
  std::vector<std::string> seen;
  auto note = [&](const std::string& what, const json& obj) {
    EXPECT_FALSE(obj.contains("data")) << what;  // handlers get the transformed object
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(what + " " + NameOf(obj) + "@" + ResourceVersionOf(obj));
  };
  informer.AddEventHandler({[&](const json& obj) { note("add", obj); },
                            [&](const json& old_obj, const json& obj) {
                              note("update-from", old_obj);
                              note("update", obj);
                            },
                            [&](const json& obj) { note("delete", obj); }});
  informer.Start();
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while ((informer.lists() < 2 || informer.LastSyncResourceVersion() != "20") &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(10));
  informer.Stop();
  EXPECT_EQ(informer.lists(), 2);
  EXPECT_EQ(informer.LastSyncResourceVersion(), "20");
  EXPECT_EQ(informer.store().Size(), 2u);
  EXPECT_EQ(informer.store().Get("ns/a"), nullptr);
  ASSERT_NE(informer.store().Get("ns/c"), nullptr);
  EXPECT_EQ(*informer.store().Get("ns/c"),
            json::parse(R"({"metadata":{"name":"c","namespace":"ns","resourceVersion":"8"}})"));
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::string> first(seen.begin(), seen.begin() + std::min<size_t>(2, seen.size()));
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::string>{"add a@5", "add b@6"}));
  std::vector<std::string> second(seen.begin() + std::min<size_t>(2, seen.size()), seen.end());
  std::sort(second.begin(), second.end());
  EXPECT_EQ(second, (std::vector<std::string>{"add c@8", "delete a@5", "update b@7", "update-from b@6"}));
}

}  // namespace
}  // namespace ringmaster::kube

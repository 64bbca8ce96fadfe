// The cpprestsdk transport against an apiserver that is gone without a word: a socket that completes the
// TCP handshake (the kernel's listen backlog) and never answers. A request to it blocks -- in the TLS handshake,
// or waiting for the answer -- until its 1-hour timeout, unless its cancellation trips.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "base/status_test_macros.h"
#include "kube/transport.h"

namespace ringmaster::kube {
namespace {

// A listening socket on 127.0.0.1 that never accepts: connects succeed, nothing is ever read or written.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class HttpTransportCancelTest : public ::testing::TestWithParam<std::string> {};

// The request is in flight (blocked on the silent peer) when the cancellation trips: it returns kCancelled.
// Were the cancellation ignored, the test would take the request's hour (ctest's timeout stops it first).
TEST_P(HttpTransportCancelTest, ARequestBlockedOnASilentApiserverEndsWhenCancelled) {
  SilentListener silent;
  ASSERT_NE(silent.port(), 0);
  ClientConfig config;
  config.server = GetParam() + "://127.0.0.1:" + std::to_string(silent.port());
  config.insecure_skip_tls_verify = true;
  config.warnings = {"test: no TLS verification"};  // logged instead of the default warning
  config.timeout = std::chrono::hours(1);
  auto transport = NewHttpTransport(config, [](LogLevel, std::string_view) {});
  ASSERT_OK(transport) << transport.status();

  Cancellation cancel;
  HttpRequest request;
  request.method = "POST";
  request.path = "/api/v1/namespaces/x/pods";
  request.body = "{}";
  request.content_type = "application/json";
  request.cancellation = &cancel;
  auto sent = std::async(std::launch::async, [&] { return (*transport)->Send(request); });
  // Not a timing assertion: the request must be on its way (connected, blocked) when the cancel comes, and a
  // moment lets it get there; had it not, the cancel finds it earlier, which must end it too.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cancel.Cancel();
  StatusOr<HttpResponse> result = sent.get();
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled) << result.status();

  // A request made after the cancel is not sent at all.
  auto opened = (*transport)->Open(request);
  EXPECT_EQ(opened.status().code(), StatusCode::kCancelled) << opened.status();
}

INSTANTIATE_TEST_SUITE_P(Schemes, HttpTransportCancelTest, ::testing::Values("http", "https"));

}  // namespace
}  // namespace ringmaster::kube

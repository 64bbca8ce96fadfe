// The retry rule and flow control of RestClient, and the query parameters Client writes, against a scripted
// fake Transport.
#include "kube/rest_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status_test_macros.h"
#include "kube/api_error.h"
#include "kube/client.h"
#include "kube/client_metrics.h"
#include "kube/event_recorder.h"
#include "metrics/metrics_server.h"

namespace ringmaster::kube {
namespace {

class FakeTransport : public Transport {
 public:
  struct Step {
    int code;  // 0: connection error
    std::string body;
    std::map<std::string, std::string> headers;
  };
  explicit FakeTransport(std::deque<Step> steps) : steps_(std::move(steps)) {}
  StatusOr<HttpResponse> Send(const HttpRequest& req) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    paths_.push_back(req.method + " " + req.path);
    if (steps_.empty()) {
      HttpResponse ok;
      ok.code = 200;
      ok.body = "{}";
      return ok;
    }
    Step s = steps_.front();
    steps_.pop_front();
    if (s.code == 0) return UnavailableError("connection refused");
    HttpResponse r;
    r.code = s.code;
    r.body = s.body;
    r.headers = s.headers;
    return r;
  }
  StatusOr<StreamedResponse> Open(const HttpRequest&) override { return UnimplementedError("no streams"); }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // "METHOD path?query" of every request sent, in order.
  std::vector<std::string> paths() {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_;
  }

 private:
  std::mutex mu_;
  std::deque<FakeTransport::Step> steps_;
  int calls_ = 0;
  std::vector<std::string> paths_;
};

HttpRequest Req(const std::string& method, const std::string& path, bool body = false) {
  HttpRequest r;
  r.method = method;
  r.path = path;
  if (body) {
    r.body = "{}";
    r.content_type = "application/json";
  }
  return r;
}

RestClientOptions FastOptions() {
  RestClientOptions o;
  o.qps = 0;
  o.retry.max_retries = 3;
  o.retry.initial_backoff = std::chrono::milliseconds(1);
  o.retry.max_backoff = std::chrono::milliseconds(2);
  return o;
}

const char kTooMany[] = R"({"kind":"Status","reason":"TooManyRequests","message":"slow down","code":429})";

TEST(RestClientTest, RetriesTooManyRequestsHonouringRetryAfter) {
  auto* fake = new FakeTransport({{429, kTooMany, {{"retry-after", "1"}}}, {200, R"({"ok":true})", {}}});
  RestClient rc{std::unique_ptr<Transport>(fake), FastOptions()};
  auto start = std::chrono::steady_clock::now();
  auto r = rc.Do(Req("POST", "/api/v1/namespaces/x/pods", true));
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_OK(r) << r.status();
  EXPECT_EQ(fake->calls(), 2);
  EXPECT_GE(waited, std::chrono::milliseconds(950));  // Retry-After: 1 was honoured
}

TEST(RestClientTest, GivesUpAfterMaxRetriesWithTheLastError) {
  auto* fake = new FakeTransport({{503, "", {}}, {503, "", {}}, {503, "", {}}, {503, "", {}}, {200, "{}", {}}});
  auto registry = std::make_shared<prometheus::Registry>();
  auto opts = FastOptions();
  opts.metrics = std::make_shared<ClientMetrics>(*registry);
  opts.host = "apiserver:6443";
  RestClient rc{std::unique_ptr<Transport>(fake), opts};
  auto r = rc.Do(Req("GET", "/api/v1/pods"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(ApiErrorFromStatus(r.status())->http_code, 503);
  EXPECT_EQ(fake->calls(), 4);  // 1 + 3 retries
  std::string text = metrics::RenderText({registry});
  EXPECT_NE(text.find(R"(rest_client_request_retries_total{code="503",host="apiserver:6443",verb="GET"} 3)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(rest_client_requests_total{code="503",host="apiserver:6443",method="GET"} 4)"),
            std::string::npos)
      << text;
}

TEST(RestClientTest, DoesNotRetryClientErrors) {
  auto* fake = new FakeTransport({{409, R"({"kind":"Status","reason":"Conflict","message":"stale","code":409})", {}}});
  RestClient rc{std::unique_ptr<Transport>(fake), FastOptions()};
  auto r = rc.Do(Req("PUT", "/api/v1/namespaces/x/pods/p", true));
  EXPECT_EQ(r.status().code(), StatusCode::kConflict);
  EXPECT_EQ(fake->calls(), 1);
}

TEST(RestClientTest, ConnectionErrorsAreRetriedOnlyForGet) {
  auto* get = new FakeTransport({{0, "", {}}, {200, "{}", {}}});
  RestClient rc_get{std::unique_ptr<Transport>(get), FastOptions()};
  EXPECT_OK(rc_get.Do(Req("GET", "/api/v1/pods")));
  EXPECT_EQ(get->calls(), 2);

  auto* post = new FakeTransport({{0, "", {}}, {200, "{}", {}}});
  RestClient rc_post{std::unique_ptr<Transport>(post), FastOptions()};
  auto r = rc_post.Do(Req("POST", "/api/v1/namespaces/x/pods", true));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(post->calls(), 1);
}

TEST(RestClientTest, InternalErrorOnAWriteIsNotRetriedWithoutRetryAfter) {
  auto* fake = new FakeTransport({{500, "", {}}, {200, "{}", {}}});
  RestClient rc{std::unique_ptr<Transport>(fake), FastOptions()};
  EXPECT_EQ(rc.Do(Req("POST", "/x", true)).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake->calls(), 1);
}

TEST(RestClientTest, QpsLimitSpacesRequests) {
  auto* fake = new FakeTransport({});
  auto opts = FastOptions();
  opts.qps = 50;
  opts.burst = 1;
  RestClient rc{std::unique_ptr<Transport>(fake), opts};
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) ASSERT_OK(rc.Do(Req("GET", "/x")));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(95));  // 5 waits of 20 ms
}

// Cancel(): whatever a request is waiting on -- a retry's backoff, a token, the transport -- it ends with
// kCancelled, and nothing is sent afterwards. Each wait below is an hour long, so an ignored cancel hangs the test
// (ctest's timeout ends it) instead of passing.

// A transport whose every answer is `answer(request)`.
class FuncTransport : public Transport {
 public:
  explicit FuncTransport(std::function<StatusOr<HttpResponse>(const HttpRequest&)> answer)
      : answer_(std::move(answer)) {}
  StatusOr<HttpResponse> Send(const HttpRequest& req) override {
    calls_++;
    return answer_(req);
  }
  StatusOr<StreamedResponse> Open(const HttpRequest&) override {
    calls_++;
    return UnimplementedError("no streams");
  }
  int calls() const { return calls_.load(); }

 private:
  const std::function<StatusOr<HttpResponse>(const HttpRequest&)> answer_;
  std::atomic<int> calls_{0};
};

RestClientOptions HourLongWaits() {
  RestClientOptions o;
  o.qps = 0;
  o.retry.max_retries = 5;
  o.retry.initial_backoff = std::chrono::hours(1);
  o.retry.max_backoff = std::chrono::hours(1);
  return o;
}

TEST(RestClientCancelTest, ARetrysBackoffEndsWhenCancelled) {
  auto* fake = new FakeTransport({{503, "", {}}, {200, "{}", {}}});
  RestClient rc{std::unique_ptr<Transport>(fake), HourLongWaits()};
  auto done = std::async(std::launch::async, [&] { return rc.Do(Req("GET", "/api/v1/pods")); });
  while (fake->calls() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  rc.Cancel();  // the GET is in (or about to start) its hour of backoff after the 503
  auto r = done.get();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status();
  EXPECT_EQ(fake->calls(), 1);
  EXPECT_TRUE(rc.cancelled());
}

TEST(RestClientCancelTest, AWaitForTheRateLimitersTokenEndsWhenCancelled) {
  auto* fake = new FakeTransport({});
  auto options = HourLongWaits();
  options.qps = 0.001;  // the next token in 1000 s
  options.burst = 1;
  RestClient rc{std::unique_ptr<Transport>(fake), options};
  ASSERT_OK(rc.Do(Req("GET", "/x")));
  auto done = std::async(std::launch::async, [&] { return rc.Do(Req("POST", "/x", true)); });
  rc.Cancel();
  auto r = done.get();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status();
  EXPECT_EQ(fake->calls(), 1) << "the POST was sent";
}

TEST(RestClientCancelTest, ARequestBlockedInTheTransportEndsWhenCancelled) {
  std::promise<void> entered;
  auto* fake = new FuncTransport([&](const HttpRequest& req) -> StatusOr<HttpResponse> {
    if (req.cancellation == nullptr) return InternalError("the request carries no cancellation");
    entered.set_value();
    req.cancellation->SleepFor(std::chrono::hours(1));  // as a read on a silent connection, until cancelled
    return UnavailableError("connection closed");
  });
  RestClient rc{std::unique_ptr<Transport>(fake), HourLongWaits()};
  auto done = std::async(std::launch::async, [&] { return rc.Do(Req("GET", "/api/v1/pods")); });
  entered.get_future().wait();
  rc.Cancel();
  auto r = done.get();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status();
  EXPECT_EQ(fake->calls(), 1) << "a cancelled request was retried";
}

TEST(RestClientCancelTest, NothingIsSentAfterTheCancel) {
  auto* fake = new FakeTransport({});
  RestClient rc{std::unique_ptr<Transport>(fake), FastOptions()};
  rc.Cancel();
  EXPECT_EQ(rc.Do(Req("GET", "/x")).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(rc.Stream(Req("GET", "/x?watch=1")).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(fake->calls(), 0);
}

TEST(RestClientCancelTest, ASuccessThatRacedTheCancelStands) {
  RestClient* client = nullptr;
  auto* fake = new FuncTransport([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    client->Cancel();  // while the apiserver was answering
    HttpResponse created;
    created.code = 201;
    created.body = "{}";
    return created;
  });
  RestClient rc{std::unique_ptr<Transport>(fake), FastOptions()};
  client = &rc;
  auto r = rc.Do(Req("POST", "/api/v1/namespaces/x/pods", true));
  EXPECT_OK(r) << r.status();  // the pod was created: saying otherwise would hide it from the caller
  EXPECT_EQ(rc.Do(Req("POST", "/api/v1/namespaces/x/pods", true)).status().code(), StatusCode::kCancelled);
}

// The recorder's own retries (event_recorder.h), over a RestClient that does not retry a POST it could not send:
// an Event the apiserver could not take while it restarted is written once it is back, not dropped; one it
// refuses as invalid is not tried again.
EventRecorderOptions FastRecorderOptions() {
  EventRecorderOptions o;
  o.retry_initial = std::chrono::milliseconds(1);
  o.retry_max = std::chrono::milliseconds(2);
  o.log = [](LogLevel, std::string_view) {};
  return o;
}

const json kPod = {
    {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u"}}}};

// WriteOptions::field_validation becomes the fieldValidation query parameter of a Create (and an Update); the
// server's default sends none.
TEST(ClientTest, WriteOptionsFieldValidationIsSentAsTheQueryParameter) {
  auto* fake = new FakeTransport({});
  Client client(std::make_shared<RestClient>(std::unique_ptr<Transport>(fake), FastOptions()), "ns");
  ASSERT_OK(client.Create(resources::Pods(), "ns", kPod));
  ASSERT_OK(client.Create(resources::Pods(), "ns", kPod, WriteOptions::Strict()));
  WriteOptions warn;
  warn.field_manager = "ringmaster";
  warn.dry_run = true;
  warn.field_validation = FieldValidation::kWarn;
  ASSERT_OK(client.Create(resources::Pods(), "ns", kPod, warn));
  WriteOptions ignore;
  ignore.field_validation = FieldValidation::kIgnore;
  ASSERT_OK(client.Update(resources::Pods(), "ns", kPod, ignore));
  EXPECT_EQ(fake->paths(),
            (std::vector<std::string>{
                "POST /api/v1/namespaces/ns/pods",
                "POST /api/v1/namespaces/ns/pods?fieldValidation=Strict",
                "POST /api/v1/namespaces/ns/pods?fieldManager=ringmaster&dryRun=All&fieldValidation=Warn",
                "PUT /api/v1/namespaces/ns/pods/p?fieldValidation=Ignore",
            }));
}

TEST(EventRecorderTest, AnEventTheApiserverCouldNotTakeIsTriedAgainUntilWritten) {
  auto* fake = new FakeTransport({{0, "", {}}, {0, "", {}}, {201, R"({"metadata":{"name":"p.1"}})", {}}});
  RestClientOptions ro = FastOptions();
  ro.retry.max_retries = 0;  // the recorder's retries, not the client's
  auto client = std::make_shared<Client>(std::make_shared<RestClient>(std::unique_ptr<Transport>(fake), ro), "ns");
  EventRecorder recorder(client, FastRecorderOptions());
  recorder.Event(kPod, "Warning", "WorkerFailed", "train-worker-1 failed");
  ASSERT_TRUE(recorder.Flush(std::chrono::seconds(10)));
  EXPECT_EQ(recorder.written(), 1);
  EXPECT_EQ(fake->calls(), 3);
}

TEST(EventRecorderTest, AnEventRefusedAsInvalidIsNotTriedAgain) {
  auto* fake =
      new FakeTransport({{422, R"({"kind":"Status","reason":"Invalid","message":"bad event","code":422})", {}}});
  RestClientOptions ro = FastOptions();
  ro.retry.max_retries = 0;
  auto client = std::make_shared<Client>(std::make_shared<RestClient>(std::unique_ptr<Transport>(fake), ro), "ns");
  EventRecorder recorder(client, FastRecorderOptions());
  recorder.Event(kPod, "Warning", "WorkerFailed", "train-worker-1 failed");
  ASSERT_TRUE(recorder.Flush(std::chrono::seconds(10)));
  EXPECT_EQ(recorder.written(), 0);
  EXPECT_EQ(fake->calls(), 1);
}

}  // namespace
}  // namespace ringmaster::kube

// The HTTP transport under the REST client: one request → one response, or a streamed body.
//
// Transport is a seam: the cpprestsdk implementation (NewHttpTransport) talks TLS to the apiserver
// and adds authentication; tests substitute a fake to inject failures. A transport applies no
// retries and no rate limits (RestClient does, in one place).
// Errors: kUnavailable when no HTTP answer arrived (connection refused/reset, TLS failure, timeout),
// kCancelled when a stream was cancelled or the request's cancellation tripped (before or while it waited for its
// connection, its answer or its body). A non-2xx answer is NOT an error at this layer.
// Thread-safety: Transport is thread-safe; a BodyStream is read by one thread, Cancel() from any.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "base/log.h"
#include "base/status.h"
#include "kube/cancellation.h"
#include "kube/config.h"

namespace ringmaster::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // path plus encoded query, e.g. "/api/v1/pods?limit=500"
  std::string body;
  std::string content_type;  // "" when there is no body
  std::string accept = "application/json";
  std::chrono::milliseconds timeout{0};  // 0: the transport's default
  // When tripped, ends the request (Send) or its opening (Open) with kCancelled. Borrowed for the call; null:
  // none. RestClient sets its own.
  const Cancellation* cancellation = nullptr;
};

struct HttpResponse {
  int code = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // Reads up to `n` bytes; 0 at the end of the body. Blocks until data, end, error or Cancel().
  virtual StatusOr<size_t> Read(char* buf, size_t n) = 0;
  // Makes a blocked or later Read() return kCancelled. Thread-safe, idempotent.
  virtual void Cancel() = 0;
};

struct StreamedResponse {
  int code = 0;
  std::map<std::string, std::string> headers;
  std::unique_ptr<BodyStream> body;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
  // Returns once headers arrived; the body is read incrementally from `body`.
  virtual StatusOr<StreamedResponse> Open(const HttpRequest& request) = 0;
};

// A cpprestsdk transport for `config`: TLS verification on (the config's CA alone, else system roots)
// unless insecure_skip_tls_verify, which is logged as a warning through `log`; client certificate;
// bearer token (re-read from its file as it rotates). kInvalidArgument for unusable PEM data.
StatusOr<std::unique_ptr<Transport>> NewHttpTransport(const ClientConfig& config,
                                                      LogSink log = StderrLogSink("ringmaster-kube"));

// Sizes the I/O thread pool that every HTTP transport of the process shares (cpprestsdk's, 40 threads
// unless told). Its threads only complete asynchronous socket operations -- callers wait on their own
// threads -- so a few serve any number of clients and watches; each idle one still costs a stack and
// its share of the allocator. Call once, before the first transport is made. kFailedPrecondition when
// the pool already runs; kInvalidArgument for 0 threads.
Status SetHttpIoThreads(size_t threads);

}  // namespace ringmaster::kube

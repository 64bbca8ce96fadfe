// cpprestsdk implementation of Transport. Every cpprestsdk/Boost exception is caught here.
#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pplx/threadpool.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "kube/transport.h"

namespace ringmaster::kube {

namespace {

namespace http = web::http;

Status CheckPem(const std::string& pem, bool is_key, const char* what) {
  if (pem.empty()) return Status::Ok();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return InternalError("BIO_new_mem_buf failed");
  bool ok;
  if (is_key) {
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    ok = key != nullptr;
    EVP_PKEY_free(key);
  } else {
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    ok = cert != nullptr;
    X509_free(cert);
  }
  BIO_free(bio);
  ERR_clear_error();
  if (!ok) return InvalidArgumentError(std::string(what) + " is not valid PEM");
  return Status::Ok();
}

using TrustStore = std::shared_ptr<X509_STORE>;

// The certificate authorities of `ca_pem` (every certificate in it) as one store, built once per
// transport and shared by all of its TLS connections (an X509_STORE is reference-counted and safe to
// share); null for an empty `ca_pem`. Why: cpprestsdk gives every new connection its own SSL_CTX and
// first loads the system trust store into it (about 140 parsed certificates, ~0.2 MiB a connection,
// held while the connection lives); replacing that store with this one frees them, and trusts the
// kubeconfig's CA alone, as client-go does. Also the CA's validation: kInvalidArgument when it holds no
// certificate.
StatusOr<TrustStore> NewTrustStore(const std::string& ca_pem) {
  if (ca_pem.empty()) return TrustStore();
  TrustStore store(X509_STORE_new(), X509_STORE_free);
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  if (!store || bio == nullptr) {
    BIO_free(bio);
    return ResourceExhaustedError("no memory for the certificate authority's trust store");
  }
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store.get(), cert) == 1) ++added;
    X509_free(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the read that ended the loop left "no start line"
  if (added == 0) return InvalidArgumentError("certificate authority is not valid PEM");
  return store;
}

std::map<std::string, std::string> Headers(const http::http_headers& h) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : h) {
    std::string key = k;
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out[key] = v;
  }
  return out;
}

class CppRestBodyStream : public BodyStream {
 public:
  CppRestBodyStream(std::shared_ptr<http::client::http_client> client, http::http_response response,
                    pplx::cancellation_token_source cts)
      : client_(std::move(client)), response_(std::move(response)), stream_(response_.body()), cts_(std::move(cts)) {}

  ~CppRestBodyStream() override {
    Cancel();
    try {
      // Let the in-flight request task observe the cancellation before the client goes away.
      response_.content_ready().wait();
    } catch (...) {}
  }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    if (cancelled_.load()) return CancelledError("watch stream cancelled");
    try {
      // Return what is available; block for one byte only when nothing is (istream::read would wait
      // for all n bytes, which a watch may never send).
      auto sb = stream_.streambuf();
      auto* out = reinterpret_cast<uint8_t*>(buf);
      size_t got = 0;
      size_t avail = sb.in_avail();
      if (avail == 0) {
        auto c = sb.bumpc().get();
        if (cancelled_.load()) return CancelledError("watch stream cancelled");
        if (c == concurrency::streams::streambuf<uint8_t>::traits::eof()) return size_t{0};
        out[got++] = static_cast<uint8_t>(c);
        avail = sb.in_avail();
      }
      if (avail > 0 && got < n) got += sb.getn(out + got, std::min(avail, n - got)).get();
      if (cancelled_.load()) return CancelledError("watch stream cancelled");
      return got;
    } catch (const std::exception& e) {
      if (cancelled_.load()) return CancelledError("watch stream cancelled");
      return UnavailableError(std::string("reading response body: ") + e.what());
    } catch (...) {
      return UnavailableError("reading response body: unknown error");
    }
  }

  void Cancel() override {
    if (cancelled_.exchange(true)) return;
    try {
      cts_.cancel();
      // Wakes a reader blocked on the producer/consumer buffer.
      stream_.streambuf().close(std::ios_base::out).wait();
    } catch (...) {}
  }

 private:
  std::shared_ptr<http::client::http_client> client_;  // keeps the connection alive
  http::http_response response_;
  concurrency::streams::istream stream_;
  pplx::cancellation_token_source cts_;
  std::atomic<bool> cancelled_{false};
};

class CppRestTransport : public Transport {
 public:
  CppRestTransport(ClientConfig config, TrustStore trust, LogSink log)
      : config_(std::move(config)),
        trust_(std::move(trust)),
        log_(std::move(log)),
        tokens_(config_.bearer_token, config_.bearer_token_file) {
    client_ = NewClient(config_.timeout);
  }

  StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    pplx::cancellation_token_source cts;
    Cancellation::Registration registration = CancelOnTrip(request, cts);
    try {
      RINGMASTER_ASSIGN_OR_RETURN(http::http_request req, Build(request));
      std::shared_ptr<http::client::http_client> client = client_;
      if (request.timeout.count() > 0 && request.timeout != config_.timeout) client = NewClient(request.timeout);
      // The token closes the connection when tripped, also while the body is read (extract_vector below).
      http::http_response resp = client->request(req, cts.get_token()).get();
      HttpResponse out;
      out.code = resp.status_code();
      out.headers = Headers(resp.headers());
      std::vector<unsigned char> body = resp.extract_vector().get();
      out.body.assign(body.begin(), body.end());
      return out;
    } catch (const std::exception& e) {
      return Failed(request, e.what());
    } catch (...) {
      return Failed(request, "unknown error");
    }
  }

  StatusOr<StreamedResponse> Open(const HttpRequest& request) override {
    pplx::cancellation_token_source cts;
    // Only while the headers are awaited: the stream is then cancelled by its reader (BodyStream::Cancel).
    Cancellation::Registration registration = CancelOnTrip(request, cts);
    try {
      RINGMASTER_ASSIGN_OR_RETURN(http::http_request req, Build(request));
      auto client = NewClient(request.timeout.count() > 0 ? request.timeout : config_.timeout);
      http::http_response resp = client->request(req, cts.get_token()).get();
      StreamedResponse out;
      out.code = resp.status_code();
      out.headers = Headers(resp.headers());
      out.body = std::make_unique<CppRestBodyStream>(std::move(client), std::move(resp), cts);
      return out;
    } catch (const std::exception& e) {
      return Failed(request, e.what());
    } catch (...) {
      return Failed(request, "unknown error");
    }
  }

 private:
  // Cancels `cts` (cpprestsdk then closes the request's connection, failing its connect, handshake or read) when
  // the request's cancellation trips, for as long as the returned registration lives; at once when it already has.
  static Cancellation::Registration CancelOnTrip(const HttpRequest& request, pplx::cancellation_token_source& cts) {
    if (request.cancellation == nullptr) return {};
    // A copy of the source: it is a handle on shared state, and the callback may run on another thread.
    return request.cancellation->OnCancel([cts]() mutable {
      try {
        cts.cancel();
      } catch (...) {}
    });
  }

  // kCancelled when the request's cancellation tripped (whatever cpprestsdk threw for the closed connection:
  // task_canceled, a socket error), else kUnavailable: no HTTP answer.
  Status Failed(const HttpRequest& request, const std::string& what) const {
    const std::string where = request.method + " " + config_.server + request.path;
    if (request.cancellation != nullptr && request.cancellation->cancelled())
      return CancelledError(where + ": cancelled");
    return UnavailableError(where + ": " + what);
  }

  std::shared_ptr<http::client::http_client> NewClient(std::chrono::milliseconds timeout) {
    http::client::http_client_config cc;
    cc.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
    cc.set_validate_certificates(!config_.insecure_skip_tls_verify);
    std::string cert = config_.client_cert_pem, key = config_.client_key_pem;
    cc.set_ssl_context_callback([trust = trust_, cert, key](boost::asio::ssl::context& ctx) {
      // Errors here surface as a failed handshake (kUnavailable); PEMs were validated up front.
      boost::system::error_code ec;
      // The shared CA store in place of the system one cpprestsdk loaded (NewTrustStore says why).
      if (trust) SSL_CTX_set1_cert_store(ctx.native_handle(), trust.get());
      if (!cert.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(cert.data(), cert.size()), ec);
        ctx.use_private_key(boost::asio::buffer(key.data(), key.size()), boost::asio::ssl::context::pem, ec);
      }
    });
    return std::make_shared<http::client::http_client>(utility::conversions::to_string_t(config_.server), cc);
  }

  StatusOr<http::http_request> Build(const HttpRequest& request) {
    http::http_request req(utility::conversions::to_string_t(request.method));
    req.set_request_uri(utility::conversions::to_string_t(request.path));
    req.headers().add("Accept", request.accept);
    req.headers().add("User-Agent", config_.user_agent);
    auto token = tokens_.Token();
    if (!token.ok()) return token.status();
    if (!token->empty()) req.headers().add("Authorization", "Bearer " + *token);
    if (!request.content_type.empty()) {
      // From bytes, not from the std::string overload: that one makes a streambuf<char> and casts it to the
      // streambuf<unsigned char> the request reads, through void* (undefined behaviour in cpprest's headers,
      // compiled into this file; UBSan's vptr check stops the process on it).
      req.set_body(concurrency::streams::bytestream::open_istream(
                       std::vector<unsigned char>(request.body.begin(), request.body.end())),
                   request.body.size(), request.content_type);
    }
    return req;
  }

  // Constant after construction.
  const ClientConfig config_;
  const TrustStore trust_;  // the config's CA; null: the system trust store
  const LogSink log_;
  std::shared_ptr<http::client::http_client> client_;  // thread-safe, shared by all requests
  BearerTokenSource tokens_;                           // thread-safe
};

}  // namespace

Status SetHttpIoThreads(size_t threads) {
  if (threads == 0) return InvalidArgumentError("the HTTP I/O thread pool needs at least one thread");
  try {
    crossplat::threadpool::initialize_with_threads(threads);
  } catch (const std::exception& e) {
    return FailedPreconditionError(std::string("the HTTP I/O thread pool already runs: ") + e.what());
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Transport>> NewHttpTransport(const ClientConfig& config, LogSink log) {
  if (config.server.empty()) return InvalidArgumentError("client config has no server");
  RINGMASTER_ASSIGN_OR_RETURN(TrustStore trust, NewTrustStore(config.ca_pem));  // validates the CA too
  RINGMASTER_RETURN_IF_ERROR(CheckPem(config.client_cert_pem, false, "client certificate"));
  RINGMASTER_RETURN_IF_ERROR(CheckPem(config.client_key_pem, true, "client key"));
  for (const auto& w : config.warnings) log(LogLevel::kWarning, w);
  if (config.insecure_skip_tls_verify && config.warnings.empty()) {
    log(LogLevel::kWarning, "TLS verification of " + config.server + " is disabled (insecure-skip-tls-verify)");
  }
  try {
    return std::unique_ptr<Transport>(std::make_unique<CppRestTransport>(config, std::move(trust), std::move(log)));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("cannot create HTTP client for ") + config.server + ": " + e.what());
  }
}

}  // namespace ringmaster::kube

#include "metrics/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace ringmaster::metrics {

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler handler) { handlers_[path] = std::move(handler); }

void HttpServer::HandleMetrics(const Registry* registry) {
  Handle("/metrics", [registry] {
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", registry->Render()};
  });
}

void HttpServer::HandleCheck(const std::string& path, std::function<bool()> check) {
  Handle(path, [check = std::move(check)] {
    bool ok = check();
    return HttpReply{ok ? 200 : 503, "text/plain; charset=utf-8", ok ? "ok\n" : "not ok\n"};
  });
}

Status HttpServer::Start(const std::string& bind_address) {
  auto colon = bind_address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("bind address \"" + bind_address + "\" is not host:port");
  std::string host = bind_address.substr(0, colon);
  if (host.empty() || host == "*") host = "0.0.0.0";
  int port = 0;
  try {
    port = std::stoi(bind_address.substr(colon + 1));
  } catch (...) {
    return InvalidArgumentError("bind address \"" + bind_address + "\" has no numeric port");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
    return InvalidArgumentError("bind address \"" + bind_address + "\": host is not an IPv4 address");
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    return UnavailableError("cannot listen on " + bind_address + ": " + err);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  stopping_ = false;
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (listen_fd_ < 0) return;
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::Serve() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, 100);
    if (r <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    HandleConnection(fd);
    ::close(fd);
  }
}

void HttpServer::HandleConnection(int fd) {
  std::string request;
  char buf[2048];
  // Read the request head (bounded size and time).
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  HttpReply reply;
  auto sp1 = request.find(' ');
  auto sp2 = sp1 == std::string::npos ? std::string::npos : request.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) {
    reply = {400, "text/plain", "bad request\n"};
  } else {
    std::string method = request.substr(0, sp1);
    std::string path = request.substr(sp1 + 1, sp2 - sp1 - 1);
    if (auto q = path.find('?'); q != std::string::npos) path.resize(q);
    auto it = handlers_.find(path);
    if (method != "GET" && method != "HEAD") reply = {405, "text/plain", "method not allowed\n"};
    else if (it == handlers_.end()) reply = {404, "text/plain", "not found\n"};
    else reply = it->second();
    if (method == "HEAD") reply.body.clear();
  }
  const char* text = reply.code == 200 ? "OK" : reply.code == 404 ? "Not Found" : reply.code == 503 ? "Service Unavailable" : "Error";
  std::string out = "HTTP/1.1 " + std::to_string(reply.code) + " " + text + "\r\nContent-Type: " + reply.content_type +
                    "\r\nContent-Length: " + std::to_string(reply.body.size()) + "\r\nConnection: close\r\n\r\n" + reply.body;
  size_t sent = 0;
  while (sent < out.size()) {
    ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace ringmaster::metrics

#include "worker-runtime/tools/launch/output_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace ringmaster::launch {
namespace {

constexpr size_t kReadSize = 64 * 1024;
constexpr int kReadsPerPump = 4;  // per stream: at most 256 KiB before the others get their turn

}  // namespace

void WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n > 0) {
      text.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      (void)::poll(&p, 1, 1000);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // EPIPE or worse: nobody takes it
    }
  }
}

OutputRelay::~OutputRelay() { CloseAll(); }

void OutputRelay::Add(int from, int to, std::string prefix) {
  if (from < 0) return;
  const int flags = ::fcntl(from, F_GETFL);
  if (flags >= 0) ::fcntl(from, F_SETFL, flags | O_NONBLOCK);
  streams_.push_back(Stream{from, to, std::move(prefix), {}});
}

void OutputRelay::AppendPollFds(std::vector<pollfd>& fds) const {
  for (const Stream& s : streams_) {
    if (s.from >= 0) fds.push_back(pollfd{s.from, POLLIN, 0});
  }
}

void OutputRelay::TakeLines(Stream& s, bool all, std::string& out) {
  size_t begin = 0;
  while (begin < s.partial.size()) {
    const size_t newline = s.partial.find('\n', begin);
    const size_t length = (newline == std::string::npos ? s.partial.size() : newline) - begin;
    if (length > kMaxLine) {  // cut: a piece of kMaxLine bytes, ended with a newline of ours
      out.append(s.prefix).append(s.partial, begin, kMaxLine).push_back('\n');
      begin += kMaxLine;
    } else if (newline != std::string::npos) {
      out.append(s.prefix).append(s.partial, begin, length).push_back('\n');
      begin = newline + 1;
    } else if (all) {  // the stream's last line, without a newline of its own
      out.append(s.prefix).append(s.partial, begin, length).push_back('\n');
      begin = s.partial.size();
    } else {
      break;  // the rest of this line is still to come
    }
  }
  s.partial.erase(0, begin);
}

void OutputRelay::Close(Stream& s) {
  if (s.from < 0) return;
  std::string out;
  TakeLines(s, true, out);
  WriteAll(s.to, out);
  ::close(s.from);
  s.from = -1;
}

void OutputRelay::Pump() {
  char buf[kReadSize];
  for (Stream& s : streams_) {
    if (s.from < 0) continue;
    bool ended = false;
    for (int i = 0; i < kReadsPerPump; ++i) {
      const ssize_t n = ::read(s.from, buf, sizeof(buf));
      if (n > 0) {
        s.partial.append(buf, static_cast<size_t>(n));
        if (static_cast<size_t>(n) < sizeof(buf)) break;  // drained for now
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      ended = n == 0 || errno != EAGAIN;
      break;
    }
    std::string out;
    TakeLines(s, false, out);
    WriteAll(s.to, out);
    if (ended) Close(s);
  }
}

bool OutputRelay::open() const {
  for (const Stream& s : streams_) {
    if (s.from >= 0) return true;
  }
  return false;
}

void OutputRelay::CloseAll() {
  Pump();  // what the streams hold now
  for (Stream& s : streams_) Close(s);
}

}  // namespace ringmaster::launch

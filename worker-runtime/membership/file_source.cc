#include "worker-runtime/membership/file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ringmaster::membership {

StatusOr<std::unique_ptr<FileMembershipSource>> FileMembershipSource::Start(FileSourceOptions options) {
  if (options.path.empty()) return InvalidArgumentError("FileMembershipSource: empty path");
  if (options.poll_interval.count() <= 0) options.poll_interval = std::chrono::milliseconds(50);
  std::unique_ptr<FileMembershipSource> source(new FileMembershipSource(std::move(options)));
  source->PollOnce();  // a record already there is known before Start returns
  source->poller_ = std::thread([s = source.get()] { s->PollLoop(); });
  return source;
}

FileMembershipSource::~FileMembershipSource() {
  Stop();
  if (poller_.joinable()) poller_.join();
}

void FileMembershipSource::Log(const std::string& line) const {
  ::ringmaster::Log(options_.log, LogLevel::kInfo, line);
}

void FileMembershipSource::PollLoop() {
  std::unique_lock lock(mu_);
  while (!stopped_) {
    lock.unlock();
    PollOnce();
    lock.lock();
    changed_.wait_for(lock, options_.poll_interval, [&] { return stopped_; });
  }
}

void FileMembershipSource::PollOnce() {
  struct stat st{};
  if (::stat(options_.path.c_str(), &st) != 0) return;  // not written yet (or being replaced)
  FileId id{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, static_cast<int64_t>(st.st_size),
            static_cast<uint64_t>(st.st_ino)};
  if (id == last_seen_) return;
  std::ifstream in(options_.path, std::ios::binary);
  if (!in) return;
  std::stringstream buffer;
  buffer << in.rdbuf();
  last_seen_ = id;
  std::string error;
  api::Membership record;
  StatusOr<api::Membership> parsed = api::ParseMembership(buffer.str());
  if (!parsed.ok()) {
    error = parsed.status().ToString();
  } else {
    record = std::move(parsed).value();
  }
  if (!error.empty()) {
    if (error != last_error_)
      Log("membership file " + options_.path + " ignored: " + error + "; keeping the last good record");
    last_error_ = error;
    return;
  }
  last_error_.clear();
  std::lock_guard lock(mu_);
  if (record.generation <= latest_.generation) {
    if (record.generation < latest_.generation) {
      Log("membership file " + options_.path + " ignored: generation " + std::to_string(record.generation) +
          " is older than " + std::to_string(latest_.generation));
    }
    return;
  }
  latest_ = std::move(record);
  changed_.notify_all();
}

StatusOr<api::Membership> FileMembershipSource::WaitNewer(int64_t after, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  bool ready = changed_.wait_for(lock, timeout, [&] { return stopped_ || latest_.generation > after; });
  if (stopped_) return CancelledError("membership source stopped");
  if (!ready) return DeadlineExceededError("no membership generation newer than " + std::to_string(after));
  return latest_;
}

api::Membership FileMembershipSource::Latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

void FileMembershipSource::Stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  changed_.notify_all();
}

namespace {
Status Errno(const std::string& what, const std::string& path) {
  return UnavailableError(what + " " + path + ": " + std::strerror(errno));
}
}  // namespace

Status WriteMembershipFile(const std::string& path, const api::Membership& record) {
  const std::string text = api::MembershipToJson(record).dump(2) + "\n";
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", tmp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Errno("write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status s = Errno("fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Errno("rename", tmp);
    ::unlink(tmp.c_str());
    return s;
  }
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace ringmaster::membership

#include "worker-runtime/membership/file_source.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ringmaster::membership {

StatusOr<std::unique_ptr<FileMembershipSource>> FileMembershipSource::Start(FileSourceOptions options) {
  if (options.path.empty()) return InvalidArgumentError("FileMembershipSource: empty path");
  if (options.poll_interval.count() <= 0) options.poll_interval = std::chrono::milliseconds(50);
  std::unique_ptr<FileMembershipSource> source(new FileMembershipSource(std::move(options)));
  // The launcher replaces the file by a rename in its directory: watch the directory (the file's inode changes).
  std::string dir = std::filesystem::path(source->options_.path).parent_path().string();
  source->inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (source->inotify_fd_ >= 0 && ::inotify_add_watch(source->inotify_fd_, dir.empty() ? "." : dir.c_str(),
                                                      IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE) < 0) {
    ::close(source->inotify_fd_);  // e.g. the directory does not exist yet: polling alone
    source->inotify_fd_ = -1;
  }
  source->stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  source->PollOnce();  // a record already there is known before Start returns
  source->poller_ = std::thread([s = source.get()] { s->PollLoop(); });
  return source;
}

FileMembershipSource::~FileMembershipSource() {
  Stop();
  if (poller_.joinable()) poller_.join();
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void FileMembershipSource::Log(const std::string& line) const {
  ::ringmaster::Log(options_.log, LogLevel::kInfo, line);
}

void FileMembershipSource::PollLoop() {
  std::unique_lock lock(mu_);
  while (!stopped_) {
    lock.unlock();
    PollOnce();
    WaitForChange();
    lock.lock();
  }
}

void FileMembershipSource::WaitForChange() {
  if (inotify_fd_ < 0 || stop_fd_ < 0) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, options_.poll_interval, [&] { return stopped_; });
    return;
  }
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  const int timeout_ms = static_cast<int>(options_.poll_interval.count());
  if (::poll(fds, 2, timeout_ms) > 0 && (fds[0].revents & POLLIN)) {
    alignas(inotify_event) char events[4096];
    while (::read(inotify_fd_, events, sizeof(events)) > 0) {
    }  // drained: PollOnce looks at the file itself, whichever entry of the directory changed
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
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof(one));
  }
}

namespace {
Status Errno(const std::string& what, const std::string& path) {
  return UnavailableError(what + " " + path + ": " + std::strerror(errno));
}

// Writes `text` to `path` atomically: a temp file in the same directory, fsync, rename, fsync of the directory.
Status WriteFileAtomically(const std::string& path, const std::string& text) {
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

}  // namespace

Status WriteMembershipFile(const std::string& path, const api::Membership& record) {
  return WriteFileAtomically(path, api::MembershipToJson(record).dump(2) + "\n");
}

Status FileMembershipSource::ReportHang(const api::HangReport& report) {
  if (report.reporter.empty()) return InvalidArgumentError("a hang report without a reporter");
  const std::filesystem::path dir = std::filesystem::path(options_.path).parent_path();
  return WriteFileAtomically((dir / api::HangReportFileName(report.reporter)).string(),
                             api::EncodeHangReport(report) + "\n");
}

}  // namespace ringmaster::membership

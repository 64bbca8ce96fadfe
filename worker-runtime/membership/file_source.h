// FileMembershipSource: the membership record read from a JSON file that a
// launcher (ringmaster-run, tests) rewrites atomically (WriteMembershipFile:
// temp file, fsync, rename). The document has the shape of the operator's
// status.membership and is parsed with api::MembershipFromJson.
//
// A background thread reads the file whenever inotify reports a change in its
// directory (the launcher's rename lands at once, not up to a poll interval
// later: recovery waits for it), and also every `poll_interval` (stat: mtime,
// size, inode), which is all it does where inotify is unavailable; it wakes
// WaitNewer when a record with a larger generation appears. A missing, garbled or half-written file never fails the
// source: it is ignored with one logged reason, and the last good record stays. A record whose generation is not larger
// than the newest one is ignored too.
//
// Thread-safety: all methods are safe to call concurrently (see
// MembershipSource). The destructor stops and joins the poller.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "base/log.h"
#include "worker-runtime/membership/membership_source.h"

namespace ringmaster::membership {

struct FileSourceOptions {
  std::string path;  // the membership file
  std::chrono::milliseconds poll_interval{50};
  LogSink log;  // one line per notable event; may be empty
};

class FileMembershipSource : public MembershipSource {
 public:
  // Starts polling. Errors: InvalidArgument for an empty path. The file need
  // not exist yet.
  static StatusOr<std::unique_ptr<FileMembershipSource>> Start(FileSourceOptions options);
  ~FileMembershipSource() override;

  StatusOr<api::Membership> WaitNewer(int64_t after, std::chrono::milliseconds timeout) override;
  api::Membership Latest() const override;
  void Stop() override;
  // Writes the report to api::HangReportFileName(report.reporter) in the membership file's directory, atomically
  // (as WriteMembershipFile), for the launcher to read. Errors: InvalidArgument without a reporter, Unavailable
  // naming the path and errno.
  Status ReportHang(const api::HangReport& report) override;

 private:
  explicit FileMembershipSource(FileSourceOptions options) : options_(std::move(options)) {}
  void PollLoop();
  void PollOnce();
  // Until inotify reports a change in the file's directory, Stop() is called, or `poll_interval` passed.
  void WaitForChange();
  void Log(const std::string& line) const;

  // Constant after construction.
  const FileSourceOptions options_;
  int inotify_fd_ = -1;  // watching the file's directory; -1 where inotify is unavailable
  int stop_fd_ = -1;     // an eventfd Stop() writes, to wake WaitForChange; -1 if none could be made

  // Poller-thread only.
  struct FileId {
    int64_t mtime_ns = -1, size = -1;
    uint64_t inode = 0;
    bool operator==(const FileId&) const = default;
  } last_seen_;
  std::string last_error_;  // logged once per distinct reason

  mutable std::mutex mu_;
  std::condition_variable changed_;
  // Guarded by mu_.
  bool stopped_ = false;
  api::Membership latest_;

  std::thread poller_;  // started last
};

// Writes `record` to `path` atomically: a temp file in the same directory,
// fsync, rename over `path`, fsync of the directory. Readers see either the old
// or the new document, never a mix. Errors: Unavailable naming the path and errno.
Status WriteMembershipFile(const std::string& path, const api::Membership& record);

}  // namespace ringmaster::membership

// Copies the output of a pod's processes to the launcher's own stdout and stderr, line by line, each line
// prefixed with its process ("[1] "), so that `kubectl logs` tells the ranks apart.
//
// Only whole lines are written, each write(2) holding one or more whole lines (prefixed), so lines of two
// processes never mix. A line is cut (and ended with '\n') after kMaxLine bytes without a newline, so that
// a process printing no newline cannot grow the launcher without bound; a stream's last line without a
// newline is written, with one, when the stream ends or CloseAll is called. Lines end at '\n' only (a
// progress bar's '\r' updates stay in one line).
//
// Errors: none are returned: a write that fails (EPIPE: nobody reads the launcher's output any more) drops
// that text; a read error ends that stream as if it had closed.
// Ownership: the relay owns the descriptors it reads (Add) and closes them at their end or in CloseAll /
// the destructor; it does not own the descriptors it writes to.
// Thread-safety: none; one thread (the launcher's supervision loop) uses it.
#pragma once

#include <poll.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ringmaster::launch {

// Writes all of `text` to `fd` (retrying EINTR and short writes; waiting for a non-blocking fd to take
// more). Best effort: an error other than EINTR/EAGAIN drops the rest.
void WriteAll(int fd, std::string_view text);

class OutputRelay {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;

  OutputRelay() = default;
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;
  ~OutputRelay();  // CloseAll()

  // Relays `from` (taken over and made non-blocking; -1 is ignored) to `to`, each line prefixed `prefix`.
  void Add(int from, int to, std::string prefix);

  // Appends a POLLIN entry for each stream still open, for the caller's poll(2).
  void AppendPollFds(std::vector<pollfd>& fds) const;

  // Reads what each open stream has now (a bounded amount per stream, so that one chatty process does not
  // starve the others: call again after the next poll) and writes its whole lines. A stream at its end is
  // closed, its last partial line written.
  void Pump();

  // True while any stream is open.
  bool open() const;

  // Relays what the streams hold now (as Pump), then every stream's partial line, and closes them.
  void CloseAll();

 private:
  struct Stream {
    int from = -1;
    int to = -1;
    std::string prefix;
    std::string partial;  // bytes after the last newline
  };
  // Appends to `out` the prefixed whole lines of s.partial (and, with `all`, the rest as a last line).
  static void TakeLines(Stream& s, bool all, std::string& out);
  void Close(Stream& s);

  std::vector<Stream> streams_;
};

}  // namespace ringmaster::launch

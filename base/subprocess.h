// Starting other programs: the one place Ringmaster forks and execs -- fork, exec, pipes, signals. Used by
// ringmaster-run and ringmaster-launch for their workers, and by the tests for the commands they run.
//
// A child starts clean: default signal dispositions and nothing blocked (whatever the parent set), no
// descriptor of the parent beyond stdin/stdout/stderr, optionally its own process group (so a kill reaches
// its children) and a clean environment. What a caller adds to a child's start between fork and exec goes
// through one seam, SpawnOptions::before_exec.
//
// Errors: Start returns InvalidArgument for an empty argv and Internal when a file cannot be opened or
// fork fails. A program that cannot be executed is not an error of Start: the child writes "exec failed:
// PROGRAM: REASON" on its stderr and exits 127; one that cannot chdir to `cwd` exits 128; a before_exec
// hook that fails exits as it chooses.
// Ownership: a Subprocess owns its process until it is reaped, and the parent's ends of its pipes (until
// TakeStdout/TakeStderr hand one to the caller).
// Thread-safety: Start may be called from any thread of a multithreaded program (the child makes only
// async-signal-safe calls before exec, and so must a before_exec hook). One Subprocess is used by one
// thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ringmaster {

// Where one of the child's standard streams goes.
struct Redirect {
  enum class Kind { kInherit, kNull, kPipe, kAppendToFile };
  Kind kind = Kind::kInherit;
  std::string path;  // kAppendToFile: created (0644) when missing, appended to

  static Redirect Inherit() { return {Kind::kInherit, ""}; }
  static Redirect Null() { return {Kind::kNull, ""}; }
  static Redirect Pipe() { return {Kind::kPipe, ""}; }
  static Redirect AppendTo(std::string path) { return {Kind::kAppendToFile, std::move(path)}; }
};

using EnvironmentList = std::vector<std::pair<std::string, std::string>>;

struct SpawnOptions {
  std::vector<std::string> argv;    // argv[0]: the program, looked up in PATH unless it contains a '/'
  std::string program;              // when set, the file executed as is (argv[0] is only the name it sees)
  bool inherit_environment = true;  // false: `env` is the child's whole environment
  EnvironmentList env;              // set in the child (replacing an inherited variable of the same name)
  std::string cwd;                  // empty: the parent's
  Redirect in = Redirect::Null();
  Redirect out = Redirect::Inherit();
  Redirect err = Redirect::Inherit();
  bool own_process_group = true;  // false: it stays in the parent's group (a terminal's Ctrl-C reaches it)
  // true: an argv[0] without a '/' (and no `program`) is looked up when the child execs, in the child's
  // PATH (a shell's default when it has none), trying each directory in turn as execvp does -- for a child
  // whose before_exec hook changes its root. false: it is resolved in the parent before fork.
  bool lookup_program_in_child = false;
  // Run in the child after its process group, signal dispositions, death signal and standard streams are
  // set, before it changes to `cwd`, closes the parent's other descriptors and execs. It runs in a forked
  // copy of a possibly multithreaded process: async-signal-safe calls only (no allocation, no locks, no
  // Status), on data the caller prepared before Start and keeps alive until Start returns. To fail, it
  // writes why on stderr (already redirected) and calls _exit(CODE); returning goes on with the start.
  std::function<void()> before_exec;
  // Non-zero: the signal the child gets when the thread that started it ends (prctl PR_SET_PDEATHSIG, set
  // before exec, which keeps it): a SIGKILLed parent takes its children along. A parent that is already
  // gone by then (the child was reparented) gets the child killed by that signal before exec. Meant for a
  // single-threaded parent (the death of the starting thread counts, not the process's).
  int parent_death_signal = 0;
};

struct ExitStatus {
  int code = 0;    // the exit code when it exited
  int signal = 0;  // the signal that ended it; 0 when it exited
  bool exited() const { return signal == 0; }
  int ShellCode() const { return signal == 0 ? code : 128 + signal; }  // as a shell reports it
  std::string ToString() const;                                        // "exited 3", "killed by signal 9"
};

class Subprocess {
 public:
  static StatusOr<Subprocess> Start(const SpawnOptions& options);
  Subprocess() = default;  // no process (a placeholder to move a started one into)

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();  // a process not yet reaped is SIGKILLed (with its group when it has one) and reaped

  pid_t pid() const { return pid_; }                               // also its process group's id with own_process_group
  bool running() const { return pid_ > 0 && !exit_.has_value(); }  // started and not reaped yet
  std::optional<ExitStatus> exit_status() const { return exit_; }

  // Reaps the process when it has ended; its exit status, or nullopt while it runs. Never blocks.
  std::optional<ExitStatus> Poll();
  // Waits until it ends. DeadlineExceeded when it still runs after `timeout`.
  StatusOr<ExitStatus> Wait(std::chrono::milliseconds timeout);
  ExitStatus Wait();

  // Sends `sig` to the process alone. FailedPrecondition once it has been reaped (its pid may have been
  // reused); Internal when kill(2) fails.
  Status Signal(int sig);
  // Sends `sig` to its process group (to the process alone when it has no group of its own).
  Status SignalGroup(int sig);
  // SIGKILL to the group, then reaps it. Its exit status (also when it had ended before).
  ExitStatus Kill();
  // SIGTERM to the group, up to `grace` for it to end, then Kill().
  ExitStatus Terminate(std::chrono::milliseconds grace);

  struct Output {
    std::string out, err;
    bool timed_out = false;  // the deadline passed before both streams closed
  };
  // For a process started with pipes: writes `input` to its stdin (then closes it) and reads its stdout
  // and stderr (those that are pipes) until both close or `deadline` passes. Does not reap it. A reader
  // that goes away early does not raise SIGPIPE in this process.
  Output Communicate(const std::string& input, std::chrono::steady_clock::time_point deadline);

  // The parent's end of the child's stdout (TakeStdout) or stderr (TakeStderr) pipe, handed to the
  // caller, who closes it from then on (this object forgets it); -1 when that stream is no pipe or was
  // taken already. For a caller that reads the streams itself (a poll loop over many children).
  int TakeStdout() { return std::exchange(stdout_fd_, -1); }
  int TakeStderr() { return std::exchange(stderr_fd_, -1); }

 private:
  void CloseFds();

  pid_t pid_ = -1;
  bool own_group_ = false;
  std::optional<ExitStatus> exit_;
  int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;  // the parent's ends of the pipes; -1: none
};

}  // namespace ringmaster

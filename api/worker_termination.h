// A worker's termination message: what a worker that cannot go on (a sticky CUDA error, a GPU library that
// cannot be loaded, a refused configuration: worker-runtime/elastic/failure_class.h) writes to its container's
// termination message file before it exits non-zero, and what the operator reads back from the pod's
// status.containerStatuses[].state.terminated.message into the job's status.recentFailures[]. One paragraph for
// a person, in a form the operator can take apart:
//
//   worker <id> on node <node>, GPU <gpu>: <error>
//
// <node> is "unknown" when the worker does not know it; <gpu> is the CUDA device index with, when known, the
// physical GPU in parentheses ("2 (GPU-8932f937-...)"), or "none" for a worker without one. A message in any
// other form (the log tail the kubelet takes under terminationMessagePolicy FallbackToLogsOnError) parses to
// an empty node and GPU and the whole text as the error.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ringmaster::api {

// The kubelet keeps at most this many bytes of a container's termination message (4 KiB).
inline constexpr size_t kTerminationMessageLimit = 4096;
// Kubernetes' default terminationMessagePath of a container.
inline constexpr std::string_view kDefaultTerminationLogPath = "/dev/termination-log";

struct WorkerTermination {
  std::string worker;  // the worker's id (its pod name in a pod); may be empty
  std::string node;    // empty: unknown
  std::string gpu;     // "2 (GPU-...)"; empty: no GPU
  std::string error;   // what ended it (a Status's text)
  bool operator==(const WorkerTermination&) const = default;
};

// The message, at most kTerminationMessageLimit bytes (a long error is cut at a UTF-8 character boundary).
std::string FormatTerminationMessage(const WorkerTermination& t);
// The parts of a message FormatTerminationMessage wrote; see the top of this file for any other message.
WorkerTermination ParseTerminationMessage(std::string_view message);

// `text` cut to at most `limit` bytes at a UTF-8 character boundary, with "..." in place of what was cut.
std::string TruncateUtf8(std::string_view text, size_t limit);

}  // namespace ringmaster::api

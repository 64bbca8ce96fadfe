// Status and StatusOr: the one error model of every Ringmaster library.
//
// No exception crosses a library boundary; a function that can fail returns a
// Status (or a StatusOr<T> carrying its value). The code says what the caller
// should do next:
//   kUnavailable / kDeadlineExceeded / kResourceExhausted -> retry with backoff
//   kAborted             -> the operation's world is gone (a peer died, a
//                           generation changed); rebuild, then retry
//   kFailedPrecondition  -> stop and report; retrying will not help
//   kInvalidArgument     -> the input is wrong; fix it
//   kNotFound / kAlreadyExists / kConflict / kPermissionDenied /
//   kUnauthenticated / kGone -> as the names say (mirroring HTTP statuses)
//   kInternal / kUnknown -> a bug or an unexpected failure; report it
//
// Thread-safety: Status and StatusOr are values; distinct objects may be used
// from distinct threads, a single object needs external synchronization.
#pragma once

#include <cassert>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace ringmaster {

enum class StatusCode : int {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
  kUnauthenticated,
  kConflict,  // optimistic-concurrency failure (HTTP 409 with reason Conflict)
  kGone,      // resource version too old (HTTP 410): relist
};

// Returns the code's name, e.g. "NotFound".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NotFound: pods \"x\" not found", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: message"; OK stays OK.
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& other) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

// Constructors named after the codes, so call sites read as sentences.
Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status UnauthenticatedError(std::string message);
Status ConflictError(std::string message);
Status GoneError(std::string message);

// True for codes a caller may retry with backoff without changing anything.
bool IsRetryable(StatusCode code);

// Either a value or a non-OK Status. Accessing the value of a non-OK StatusOr
// is a programming error (asserts in debug builds).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}             // NOLINT: implicit by design
  StatusOr(T&& value) : value_(std::move(value)) {}       // NOLINT
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "StatusOr constructed from an OK Status without a value");
    if (status_.ok()) status_ = InternalError("StatusOr constructed from OK status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T& value() & {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ringmaster

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define RINGMASTER_RETURN_IF_ERROR(expr)      \
  do {                                        \
    ::ringmaster::Status rm_status_ = (expr); \
    if (!rm_status_.ok()) return rm_status_;  \
  } while (0)

#define RINGMASTER_STATUS_CONCAT_INNER(a, b) a##b
#define RINGMASTER_STATUS_CONCAT(a, b) RINGMASTER_STATUS_CONCAT_INNER(a, b)

// `RINGMASTER_ASSIGN_OR_RETURN(auto x, F());` declares x from F()'s value or
// returns F()'s error.
#define RINGMASTER_ASSIGN_OR_RETURN(lhs, expr)                        \
  auto RINGMASTER_STATUS_CONCAT(rm_statusor_, __LINE__) = (expr);     \
  if (!RINGMASTER_STATUS_CONCAT(rm_statusor_, __LINE__).ok())         \
    return RINGMASTER_STATUS_CONCAT(rm_statusor_, __LINE__).status(); \
  lhs = std::move(RINGMASTER_STATUS_CONCAT(rm_statusor_, __LINE__)).value()

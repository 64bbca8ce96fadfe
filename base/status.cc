#include "base/status.h"

namespace ringmaster {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kUnknown: return "Unknown";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
    case StatusCode::kConflict: return "Conflict";
    case StatusCode::kGone: return "Gone";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

#define RINGMASTER_DEFINE_ERROR(Name, Code) \
  Status Name(std::string message) { return Status(StatusCode::Code, std::move(message)); }
RINGMASTER_DEFINE_ERROR(CancelledError, kCancelled)
RINGMASTER_DEFINE_ERROR(UnknownError, kUnknown)
RINGMASTER_DEFINE_ERROR(InvalidArgumentError, kInvalidArgument)
RINGMASTER_DEFINE_ERROR(DeadlineExceededError, kDeadlineExceeded)
RINGMASTER_DEFINE_ERROR(NotFoundError, kNotFound)
RINGMASTER_DEFINE_ERROR(AlreadyExistsError, kAlreadyExists)
RINGMASTER_DEFINE_ERROR(PermissionDeniedError, kPermissionDenied)
RINGMASTER_DEFINE_ERROR(ResourceExhaustedError, kResourceExhausted)
RINGMASTER_DEFINE_ERROR(FailedPreconditionError, kFailedPrecondition)
RINGMASTER_DEFINE_ERROR(AbortedError, kAborted)
RINGMASTER_DEFINE_ERROR(OutOfRangeError, kOutOfRange)
RINGMASTER_DEFINE_ERROR(UnimplementedError, kUnimplemented)
RINGMASTER_DEFINE_ERROR(InternalError, kInternal)
RINGMASTER_DEFINE_ERROR(UnavailableError, kUnavailable)
RINGMASTER_DEFINE_ERROR(DataLossError, kDataLoss)
RINGMASTER_DEFINE_ERROR(UnauthenticatedError, kUnauthenticated)
RINGMASTER_DEFINE_ERROR(ConflictError, kConflict)
RINGMASTER_DEFINE_ERROR(GoneError, kGone)
#undef RINGMASTER_DEFINE_ERROR

bool IsRetryable(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded ||
         code == StatusCode::kResourceExhausted;
}

}  // namespace ringmaster

#include "worker-runtime/elastic/failure_class.h"

namespace ringmaster::elastic {

FailureClass ClassifyFailure(StatusCode code) {
  switch (code) {
    case StatusCode::kAborted:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnavailable:
    case StatusCode::kCancelled: return FailureClass::kMembership;
    default: return FailureClass::kEndsWorker;  // OK included: nothing to repair, nothing to retry
  }
}

std::string_view Describe(FailureClass c) {
  return c == FailureClass::kMembership ? "a membership failure (a rebuild repairs it)"
                                        : "a failure no rebuild repairs";
}

}  // namespace ringmaster::elastic

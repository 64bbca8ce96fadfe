// Mapping between apiserver failures (HTTP code + metav1.Status reason) and our Status codes.
//
// Every failure of a request to the apiserver becomes a Status whose message starts with
// "HTTP <code> <Reason>: " (after any context added with
// Status::WithContext) followed by the apiserver's message, so the HTTP code and reason stay
// accessible to callers through ApiErrorFromStatus(). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::kube {

// What the apiserver said about a failed request.
struct ApiError {
  int http_code = 0;    // 0 when the request never got an HTTP answer (connection error)
  std::string reason;   // metav1.Status reason: NotFound, AlreadyExists, Conflict, Forbidden, ...
  std::string message;  // the apiserver's human-readable message
};

// 404→kNotFound, 409+AlreadyExists→kAlreadyExists, other 409→kConflict, 403→kPermissionDenied,
// 401→kUnauthenticated, 400/422→kInvalidArgument, 410 (or reason Expired/Gone)→kGone,
// 429→kResourceExhausted, 504/408→kDeadlineExceeded, other 5xx→kUnavailable, other→kUnknown.
StatusCode StatusCodeForHttp(int http_code, std::string_view reason);

// Builds the Status for a non-2xx answer. `body` is parsed as a metav1.Status when it is one;
// otherwise its first 512 bytes become the message.
Status StatusFromHttpResponse(int http_code, std::string_view body);

// Builds the Status for an ApiError (the inverse of ApiErrorFromStatus).
Status StatusFromApiError(const ApiError& error);

// Recovers the HTTP code, reason and message of a Status made by this library; nullopt for a
// Status that did not come from an HTTP answer (OK included).
std::optional<ApiError> ApiErrorFromStatus(const Status& status);

// Convenience predicates in client-go's spelling (apierrors.IsNotFound, ...).
inline bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }
inline bool IsConflict(const Status& s) { return s.code() == StatusCode::kConflict; }
inline bool IsGone(const Status& s) { return s.code() == StatusCode::kGone; }

}  // namespace ringmaster::kube

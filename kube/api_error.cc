#include "kube/api_error.h"

#include <charconv>

#include <nlohmann/json.hpp>

namespace ringmaster::kube {

StatusCode StatusCodeForHttp(int http_code, std::string_view reason) {
  if (reason == "Expired" || reason == "Gone") return StatusCode::kGone;
  switch (http_code) {
    case 400: return StatusCode::kInvalidArgument;
    case 401: return StatusCode::kUnauthenticated;
    case 403: return StatusCode::kPermissionDenied;
    case 404: return StatusCode::kNotFound;
    case 405: return StatusCode::kUnimplemented;
    case 408: return StatusCode::kDeadlineExceeded;
    case 409: return reason == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kConflict;
    case 410: return StatusCode::kGone;
    case 415: return StatusCode::kInvalidArgument;
    case 422: return StatusCode::kInvalidArgument;
    case 429: return StatusCode::kResourceExhausted;
    case 504: return StatusCode::kDeadlineExceeded;
    default: break;
  }
  if (http_code >= 500 && http_code <= 599) return StatusCode::kUnavailable;
  if (http_code == 0) return StatusCode::kUnavailable;
  return StatusCode::kUnknown;
}

namespace {

std::string DefaultReason(int http_code) {
  switch (http_code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "Unknown";
  }
}

}  // namespace

Status StatusFromApiError(const ApiError& e) {
  std::string msg =
      "HTTP " + std::to_string(e.http_code) + " " + (e.reason.empty() ? "Unknown" : e.reason) + ": " + e.message;
  return Status(StatusCodeForHttp(e.http_code, e.reason), std::move(msg));
}

Status StatusFromHttpResponse(int http_code, std::string_view body) {
  ApiError e;
  e.http_code = http_code;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("kind", "") == "Status") {
    if (j.contains("reason") && j["reason"].is_string()) e.reason = j["reason"].get<std::string>();
    if (j.contains("message") && j["message"].is_string()) e.message = j["message"].get<std::string>();
  } else {
    e.message = std::string(body.substr(0, 512));
  }
  if (e.reason.empty()) e.reason = DefaultReason(http_code);
  return StatusFromApiError(e);
}

std::optional<ApiError> ApiErrorFromStatus(const Status& status) {
  const std::string& m = status.message();
  if (status.ok()) return std::nullopt;
  // Context may have been prepended ("creating pod x: HTTP 409 ..."), and the apiserver's message may
  // itself mention "HTTP": take the first marker that parses.
  for (size_t at = m.find("HTTP "); at != std::string::npos; at = m.find("HTTP ", at + 1)) {
    ApiError e;
    const char* begin = m.data() + at + 5;
    const char* end = m.data() + m.size();
    auto [p, ec] = std::from_chars(begin, end, e.http_code);
    if (ec != std::errc() || p == end || *p != ' ') continue;
    size_t reason_start = static_cast<size_t>(p - m.data()) + 1;
    size_t colon = m.find(": ", reason_start);
    if (colon == std::string::npos) continue;
    e.reason = m.substr(reason_start, colon - reason_start);
    if (e.reason.empty() || e.reason.find(' ') != std::string::npos) continue;
    e.message = m.substr(colon + 2);
    return e;
  }
  return std::nullopt;
}

}  // namespace ringmaster::kube

#include "kube/watch_decoder.h"

#include "kube/api_error.h"

namespace ringmaster::kube {

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded: return "ADDED";
    case WatchEventType::kModified: return "MODIFIED";
    case WatchEventType::kDeleted: return "DELETED";
    case WatchEventType::kBookmark: return "BOOKMARK";
    case WatchEventType::kError: return "ERROR";
  }
  return "UNKNOWN";
}

namespace {
std::string Preview(std::string_view line) {
  std::string out(line.substr(0, 120));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  if (line.size() > 120) out += "...";
  return out;
}
}  // namespace

StatusOr<WatchEvent> ParseWatchEvent(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return DataLossError("watch event is not valid JSON: \"" + Preview(line) + "\"");
  if (!j.is_object()) return DataLossError("watch event is not a JSON object: \"" + Preview(line) + "\"");
  auto type_it = j.find("type");
  if (type_it == j.end() || !type_it->is_string())
    return DataLossError("watch event has no string \"type\": \"" + Preview(line) + "\"");
  const std::string& t = type_it->get_ref<const std::string&>();
  WatchEvent ev;
  if (t == "ADDED")
    ev.type = WatchEventType::kAdded;
  else if (t == "MODIFIED")
    ev.type = WatchEventType::kModified;
  else if (t == "DELETED")
    ev.type = WatchEventType::kDeleted;
  else if (t == "BOOKMARK")
    ev.type = WatchEventType::kBookmark;
  else if (t == "ERROR")
    ev.type = WatchEventType::kError;
  else
    return DataLossError("watch event has unknown type \"" + Preview(t) + "\"");
  auto obj = j.find("object");
  if (obj == j.end() || !obj->is_object()) return DataLossError("watch event " + t + " has no object");
  ev.object = std::move(*obj);
  return ev;
}

Status StatusFromWatchError(const nlohmann::json& s) {
  ApiError e;
  if (s.is_object()) {
    if (auto c = s.find("code"); c != s.end() && c->is_number_integer()) e.http_code = c->get<int>();
    if (auto r = s.find("reason"); r != s.end() && r->is_string()) e.reason = r->get<std::string>();
    if (auto m = s.find("message"); m != s.end() && m->is_string()) e.message = m->get<std::string>();
  }
  if (e.http_code == 0) e.http_code = 500;
  if (e.reason.empty()) e.reason = "Unknown";
  return StatusFromApiError(e).WithContext("watch ERROR event");
}

WatchDecoder::WatchDecoder(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

Status WatchDecoder::Feed(std::string_view chunk, std::vector<WatchEvent>* out) {
  if (!failed_.ok()) return failed_;
  size_t start = 0;
  while (start < chunk.size()) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) {
      partial_.append(chunk.substr(start));
      if (partial_.size() > max_line_bytes_) {
        failed_ = DataLossError("watch event line exceeds " + std::to_string(max_line_bytes_) + " bytes");
        partial_.clear();
        return failed_;
      }
      break;
    }
    std::string_view piece = chunk.substr(start, nl - start);
    std::string_view line = piece;
    if (!partial_.empty()) {
      partial_.append(piece);
      line = partial_;
    }
    if (line.size() > max_line_bytes_) {
      failed_ = DataLossError("watch event line exceeds " + std::to_string(max_line_bytes_) + " bytes");
      partial_.clear();
      return failed_;
    }
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos) {
      auto ev = ParseWatchEvent(line);
      if (!ev.ok()) {
        failed_ = ev.status();
        partial_.clear();
        return failed_;
      }
      out->push_back(std::move(ev).value());
    }
    partial_.clear();
    start = nl + 1;
  }
  return Status::Ok();
}

Status WatchDecoder::Finish(std::vector<WatchEvent>* out) {
  if (!failed_.ok()) return failed_;
  if (partial_.find_first_not_of(" \t\r") != std::string::npos) {
    // The apiserver may end the last line without a newline; accept it only if it is a whole event.
    auto ev = ParseWatchEvent(partial_);
    if (!ev.ok()) {
      failed_ = DataLossError("watch stream ended inside an event (truncated chunk, " +
                              std::to_string(partial_.size()) + " bytes buffered): " + ev.status().message());
      return failed_;
    }
    out->push_back(std::move(ev).value());
    partial_.clear();
  }
  return Status::Ok();
}

}  // namespace ringmaster::kube

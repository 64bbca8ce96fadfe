#include "api/worker_termination.h"

namespace ringmaster::api {
namespace {

constexpr std::string_view kWorker = "worker ";
constexpr std::string_view kOnNode = " on node ";
constexpr std::string_view kGpu = ", GPU ";
constexpr std::string_view kUnknownNode = "unknown";
constexpr std::string_view kNoGpu = "none";

}  // namespace

std::string TruncateUtf8(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  constexpr std::string_view kCut = "...";
  if (limit < kCut.size()) return std::string(kCut.substr(0, limit));
  size_t end = limit - kCut.size();
  // Back off continuation bytes (10xxxxxx) so that no character is split.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + std::string(kCut);
}

std::string FormatTerminationMessage(const WorkerTermination& t) {
  std::string m(kWorker);
  m += t.worker.empty() ? "?" : t.worker;
  m += kOnNode;
  m += t.node.empty() ? kUnknownNode : std::string_view(t.node);
  m += kGpu;
  m += t.gpu.empty() ? kNoGpu : std::string_view(t.gpu);
  m += ": ";
  m += t.error;
  return TruncateUtf8(m, kTerminationMessageLimit);
}

WorkerTermination ParseTerminationMessage(std::string_view message) {
  WorkerTermination t;
  t.error = std::string(message);
  if (message.substr(0, kWorker.size()) != kWorker) return t;
  const size_t on = message.find(kOnNode);
  if (on == std::string_view::npos) return t;
  const size_t node_at = on + kOnNode.size();
  const size_t gpu = message.find(kGpu, node_at);
  if (gpu == std::string_view::npos) return t;
  const size_t gpu_at = gpu + kGpu.size();
  const size_t colon = message.find(": ", gpu_at);
  if (colon == std::string_view::npos) return t;
  // A node name is a DNS name and a worker id a pod name: neither holds a space or a comma.
  const std::string_view worker = message.substr(kWorker.size(), on - kWorker.size());
  const std::string_view node = message.substr(node_at, gpu - node_at);
  if (worker.find_first_of(" ,") != std::string_view::npos || node.find_first_of(" ,") != std::string_view::npos)
    return t;
  t.worker = worker == "?" ? "" : std::string(worker);
  t.node = node == kUnknownNode ? "" : std::string(node);
  const std::string_view g = message.substr(gpu_at, colon - gpu_at);
  t.gpu = g == kNoGpu ? "" : std::string(g);
  t.error = std::string(message.substr(colon + 2));
  return t;
}

}  // namespace ringmaster::api

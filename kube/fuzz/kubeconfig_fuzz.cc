// libFuzzer target: kubeconfig parsing must never crash or throw; failures are Status values.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // No base directory: file references cannot reach the real file system outside /nonexistent.
  auto cfg = ringmaster::kube::ParseKubeconfig(text, "/nonexistent-fuzz-dir");
  if (!cfg.ok() && cfg.status().message().empty()) std::abort();
  if (cfg.ok() && cfg->server.empty()) std::abort();  // a successful parse always has a server
  auto other = ringmaster::kube::ParseKubeconfig(text, "/nonexistent-fuzz-dir", "ctx");
  (void)other;
  return 0;
}

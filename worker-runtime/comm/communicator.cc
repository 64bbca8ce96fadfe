#include "comm/communicator.h"

#include <string>

namespace ringmaster::runtime {

std::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kGloo: return "gloo";
    case Backend::kNccl: return "nccl";
  }
  return "?";
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Shrink(const std::vector<int>& excluded,
                                                              const std::string& name) {
  (void)excluded;
  return UnimplementedError("backend " + std::string(BackendName(backend())) + " cannot shrink communicator '" + name +
                            "': build a new one");
}

StatusOr<Backend> ParseBackend(std::string_view name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "gloo") return Backend::kGloo;
  if (name == "nccl") return Backend::kNccl;
  return InvalidArgumentError("unknown backend '" + std::string(name) + "' (want auto, gloo or nccl)");
}

}  // namespace ringmaster::runtime

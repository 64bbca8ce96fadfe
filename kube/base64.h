// Base64 (RFC 4648, standard alphabet) as kubeconfig *-data fields use it. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::kube {

std::string Base64Encode(std::string_view data);
// kInvalidArgument for characters outside the alphabet or a bad length/padding. Whitespace is skipped.
StatusOr<std::string> Base64Decode(std::string_view text);

}  // namespace ringmaster::kube

// Pieces of the manifests tests apply, built from the contract's names (api/names.h) so that no test
// spells them. Thread-safety: pure functions.
#pragma once

#include <string>

#include "api/names.h"

namespace ringmaster::testing {

// "apiVersion: ringmaster.io/v1alpha1\nkind: TrainingJob\n": the head of a TrainingJob manifest (YAML).
inline std::string TrainingJobHead() {
  return "apiVersion: " + std::string(api::kApiVersion) + "\nkind: " + std::string(api::kKind) + "\n";
}

// The CRD file's path in the source tree.
inline std::string TrainingJobCrdPath() {
  return std::string(RINGMASTER_SOURCE_DIR) + "/" + std::string(api::kCrdFile);
}

}  // namespace ringmaster::testing

// Image references as the pod runner resolves them (pod_runner.h, image mode): a pod's `image` names an
// OCI archive in the runner's image directory, not a registry.
//
//   [registry[:port]/][path/]NAME[:TAG][@sha256:HEX]  ->  <image_dir>/NAME.tar, tag TAG (default "latest", none with a
//   digest)
//
// The registry and path are ignored (the images are built locally and never pushed); a digest, when
// given, must be the manifest's. Pure functions; thread-safe.
#pragma once

#include <string>

#include "base/status.h"

namespace ringmaster::testing {

struct ImageReference {
  std::string name;    // the last path component, without tag or digest
  std::string tag;     // "latest" when neither a tag nor a digest was given; "" for a digest alone
  std::string digest;  // "sha256:..." or ""
};

// Parses `image`. InvalidArgument (saying what is wrong) for an empty or malformed reference.
StatusOr<ImageReference> ParseImageReference(const std::string& image);

// <image_dir>/NAME.tar.
std::string ImageArchivePath(const std::string& image_dir, const ImageReference& ref);

}  // namespace ringmaster::testing

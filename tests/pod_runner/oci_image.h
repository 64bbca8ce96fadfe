// The images the pod runner runs pods from (pod_runner.h, image mode): OCI archives in an image directory,
// as `buildah push IMAGE oci-archive:<dir>/NAME.tar:TAG` writes them (a tar of an OCI image layout whose
// index.json names each manifest by its org.opencontainers.image.ref.name annotation, the tag).
// Finding an image reads index.json, its manifest and its config from the archive without unpacking it
// (tar_reader.h); unpacking is rootfs_cache.h's. Thread-safe (no shared state).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "tests/pod_runner/container_env.h"

namespace ringmaster::testing {

// What a container takes from its image's config (the OCI image config's "config" object).
struct ImageConfig {
  std::vector<std::string> entrypoint, cmd;   // Entrypoint, Cmd
  EnvList env;                                // Env ("NAME=VALUE" entries), in order
  std::string working_dir;                    // WorkingDir ("" when unset)
  std::string user;                           // User: "", "uid", "uid:gid", "name", "name:group"...
  std::map<std::string, std::string> labels;  // Labels (org.opencontainers.image.* and others)
};

// Parses an OCI image config document (the blob the manifest's `config` names). InvalidArgument for a
// field of the wrong type or an Env entry without '='.
StatusOr<ImageConfig> ParseImageConfig(const nlohmann::json& config);

// One image found in the image directory.
struct LocalImage {
  std::string reference;        // as the pod wrote it
  std::string archive;          // <image_dir>/NAME.tar
  std::string tag;              // the ref name its manifest carries
  std::string manifest_digest;  // "sha256:..."; names the unpacked rootfs in the cache
  ImageConfig config;
};

// Finds `image` (image_ref.h) in `image_dir`. NotFound, saying "image X not found in DIR: ..." and why
// (no archive, no such tag: the tags it has), as the kubelet's ErrImageNeverPull; InvalidArgument for a
// malformed reference; DataLoss for an archive that is not an OCI layout.
StatusOr<LocalImage> FindLocalImage(const std::string& image_dir, const std::string& image);

}  // namespace ringmaster::testing

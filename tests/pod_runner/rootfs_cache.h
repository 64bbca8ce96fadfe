// Unpacked image root filesystems, shared between pods: each image manifest is unpacked once (umoci) into
// <cache_dir>/<manifest hex>/rootfs and then only read (every container gets its own overlayfs layer over
// it, container_start.h). The worker image is ~5 GB unpacked, so this is what makes a second pod cheap.
//
// Several processes may ask for the same image at once: the first takes an exclusive flock on
// <cache_dir>/<hex>.lock, unpacks into a temporary directory beside it and renames it into place; the
// others wait for the lock and find it done. A rootfs is complete exactly when its directory exists.
// Progress lines ("unpacking ...", "unpacked ... in 12.3 s") go to `progress`. Each use marks the root used
// (its directory's mtime); after an unpack, roots beyond the three most recently used that nobody used
// for a day are removed (an image is GBs unpacked).
//
// Errors: Internal when the cache cannot be written, or tar/umoci fail (with their output);
// DeadlineExceeded when unpacking takes longer than `timeout`. Needs root (umoci keeps file owners).
// Thread-safe; blocks while it unpacks.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "base/status.h"
#include "pod_runner/oci_image.h"

namespace ringmaster::testing {

// The default cache: $RINGMASTER_CACHE/rootfs, else $HOME/.cache/ringmaster/rootfs.
std::string DefaultRootfsCacheDir();

// The path of `image`'s unpacked root filesystem, unpacking it first when the cache lacks it.
StatusOr<std::string> EnsureRootfs(const LocalImage& image, const std::string& cache_dir,
                                   const std::function<void(const std::string&)>& progress,
                                   std::chrono::seconds timeout = std::chrono::minutes(30));

}  // namespace ringmaster::testing

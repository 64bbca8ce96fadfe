// Unpacked image root filesystems, shared between pods: each image manifest is unpacked once (umoci) into
// <cache_dir>/<manifest hex>/rootfs and then only read (every container gets its own overlayfs layer over
// it, container_start.h). The worker image is ~5 GB unpacked, so this is what makes a second pod cheap.
//
// Several processes may ask for the same image at once: the first takes an exclusive flock on
// <cache_dir>/<hex>.lock, unpacks into a temporary directory beside it and renames it into place; the
// others wait for the lock and find it done. A rootfs is complete exactly when its directory exists.
// Progress lines ("unpacking ...", "unpacked ... in 12.3 s") go to `progress`.
//
// A root in use is held: EnsureRootfs returns a RootfsLease, a shared flock on <hex>.lock kept until the
// lease is destroyed (a container keeps its lease while it runs; the flock dies with its process). Every
// image build leaves GBs behind, so after each unpack, and on PruneUnusedRootfs, every root that no
// process holds is removed (under the exclusive lock, so nobody can take it meanwhile).
//
// Errors: Internal when the cache cannot be written, or tar/umoci fail (with their output);
// DeadlineExceeded when unpacking takes longer than `timeout`. Needs root (umoci keeps file owners).
// Thread-safe; blocks while it unpacks.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "base/status.h"
#include "tests/pod_runner/oci_image.h"

namespace ringmaster::testing {

// The default cache: $RINGMASTER_CACHE/rootfs, else $HOME/.cache/ringmaster/rootfs.
std::string DefaultRootfsCacheDir();

// An unpacked root filesystem held against pruning. Move-only; destroying it lets the root go.
class RootfsLease {
 public:
  RootfsLease() = default;
  RootfsLease(std::string rootfs, int lock_fd) : rootfs_(std::move(rootfs)), lock_fd_(lock_fd) {}
  RootfsLease(RootfsLease&& other) noexcept;
  RootfsLease& operator=(RootfsLease&& other) noexcept;
  RootfsLease(const RootfsLease&) = delete;
  RootfsLease& operator=(const RootfsLease&) = delete;
  ~RootfsLease();

  // The root filesystem's path; "" for a default-constructed lease.
  const std::string& rootfs() const { return rootfs_; }

 private:
  std::string rootfs_;
  int lock_fd_ = -1;  // holds LOCK_SH on <hex>.lock
};

// `image`'s unpacked root filesystem, unpacking it first when the cache lacks it, held until the lease goes.
StatusOr<RootfsLease> EnsureRootfs(const LocalImage& image, const std::string& cache_dir,
                                   const std::function<void(const std::string&)>& progress,
                                   std::chrono::seconds timeout = std::chrono::minutes(30));

// Removes every unpacked root in `cache_dir` that no process holds a lease on, except `keep` (a root
// directory, or ""); says which through `progress`. Returns how many it removed.
int PruneUnusedRootfs(const std::string& cache_dir, const std::string& keep,
                      const std::function<void(const std::string&)>& progress);

}  // namespace ringmaster::testing

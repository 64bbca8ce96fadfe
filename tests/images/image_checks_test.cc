// The images `make images` writes (build/images/*.tar, from docker/*/Dockerfile), checked as a registry's
// policy or a platform engineer would before running them: who they run as, whether every shared library
// their programs load is inside the image, whether their programs start there, what else they carry, and
// their OCI labels. Each image is unpacked once into the pod runner's rootfs cache (rootfs_cache.h) and
// its programs run under chroot with the image's user. Needs root, umoci and `make images`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/status_test_macros.h"
#include "tests/pod_runner/container_user.h"
#include "tests/pod_runner/oci_image.h"
#include "tests/pod_runner/rootfs_cache.h"
#include "tests/support/subprocess.h"

namespace ringmaster::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kLoader[] = "/lib64/ld-linux-x86-64.so.2";

struct Unpacked {
  LocalImage image;
  std::string rootfs;
  std::shared_ptr<RootfsLease> lease;  // the root stays while a test looks at it
};

// Finds NAME:<chart appVersion> in build/images and unpacks it (once per manifest, shared with the pod runner).
StatusOr<Unpacked> Unpack(const std::string& name) {
  const std::string dir = RINGMASTER_IMAGES_DIR;
  if (!fs::exists(dir + "/" + name + ".tar")) {
    return FailedPreconditionError(dir + "/" + name + ".tar does not exist: run `make images` (make test does)");
  }
  RINGMASTER_ASSIGN_OR_RETURN(LocalImage image, FindLocalImage(dir, name + ":" + RINGMASTER_IMAGE_TAG));
  RINGMASTER_ASSIGN_OR_RETURN(
      RootfsLease lease, EnsureRootfs(image, DefaultRootfsCacheDir(),
                                      [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }));
  const std::string rootfs = lease.rootfs();
  return Unpacked{image, rootfs, std::make_shared<RootfsLease>(std::move(lease))};
}

bool IsElf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// The image's user as uid:gid, the way the pod runner resolves it (a name is looked up in its /etc/passwd).
std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
StatusOr<std::string> UserSpec(const Unpacked& u) {
  const nlohmann::json pod = {{"metadata", {{"namespace", "checks"}, {"name", "image"}}},
                              {"spec", nlohmann::json::object()}};
  RINGMASTER_ASSIGN_OR_RETURN(
      ContainerUser user, ResolveContainerUser(pod, {{"name", "c"}}, u.image.config.user,
                                               ReadFile(u.rootfs + "/etc/passwd"), ReadFile(u.rootfs + "/etc/group")));
  return std::to_string(user.uid) + ":" + std::to_string(user.gid);
}

// Every library `program` (a path inside the image) loads resolves inside the image: the image's own
// loader lists them under chroot, so nothing of this machine can stand in for a missing one.
void ExpectLibrariesResolveInside(const Unpacked& u, const std::string& program) {
  auto listed = RunCommand({"chroot", u.rootfs, kLoader, "--list", program}, seconds(30));
  ASSERT_OK(listed);
  EXPECT_EQ(listed->exit_code, 0) << program << ":\n" << listed->out << listed->err;
  EXPECT_EQ(listed->out.find("not found"), std::string::npos) << program << ":\n" << listed->out;
}

void ExpectLabels(const Unpacked& u, const std::string& title) {
  const auto& labels = u.image.config.labels;
  auto label = [&](const std::string& key) { return labels.count(key) ? labels.at(key) : std::string(); };
  EXPECT_EQ(label("org.opencontainers.image.title"), title);
  EXPECT_EQ(label("org.opencontainers.image.version"), RINGMASTER_IMAGE_TAG);
  EXPECT_FALSE(label("org.opencontainers.image.revision").empty());
  EXPECT_FALSE(label("org.opencontainers.image.source").empty());
  EXPECT_FALSE(label("org.opencontainers.image.licenses").empty());
}

TEST(OperatorImageTest, RunsAsNonRootAndStartsWithOnlyWhatIsInside) {
  auto u = Unpack("ringmaster-operator");
  ASSERT_OK(u);
  ASSERT_EQ(u->image.config.entrypoint, std::vector<std::string>{"/usr/local/bin/ringmaster-operator"});
  auto user = UserSpec(*u);
  ASSERT_OK(user);
  EXPECT_EQ(*user, "65532:65532") << "the chart's securityContext runs it as 65532";
  ExpectLibrariesResolveInside(*u, u->image.config.entrypoint[0]);
  auto help =
      RunCommand({"chroot", "--userspec=" + *user, u->rootfs, u->image.config.entrypoint[0], "--help"}, seconds(30));
  EXPECT_COMMAND_OK(help);
  if (help.ok()) {
    EXPECT_NE(help->out.find("--leader-elect"), std::string::npos) << help->out;
  }
  ExpectLabels(*u, "ringmaster-operator");
}

// Nothing but the binary, its libraries and the two files that name its user: no shell, no compiler, no
// package manager, nothing an attacker inside could use.
TEST(OperatorImageTest, HoldsOnlyTheBinaryItsLibrariesAndItsUser) {
  auto u = Unpack("ringmaster-operator");
  ASSERT_OK(u);
  const std::set<std::string> allowed_files = {"/usr/local/bin/ringmaster-operator", "/etc/passwd", "/etc/group"};
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(u->rootfs); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file() && !it->is_symlink()) continue;
    const std::string inside = "/" + fs::relative(it->path(), u->rootfs).string();
    ++files;
    if (allowed_files.count(inside)) continue;
    const std::string base = it->path().filename().string();
    const bool library = base.find(".so") != std::string::npos && it->is_regular_file() && IsElf(it->path());
    EXPECT_TRUE(library) << inside << " is neither the operator, one of its libraries nor its user";
  }
  EXPECT_GT(files, 3);
  for (const char* tool : {"/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/gcc", "/usr/bin/apt", "/usr/bin/dpkg"}) {
    EXPECT_FALSE(fs::exists(u->rootfs + tool)) << tool;
  }
}

// The worker image: every program and library of the runtime resolves inside the image, the programs
// start as the image's non-root user, and the Python package imports beside torch.
TEST(WorkerImageTest, RuntimeAndPythonPackageWorkAsNonRoot) {
  auto u = Unpack("ringmaster-worker");
  ASSERT_OK(u);
  auto user = UserSpec(*u);
  ASSERT_OK(user);
  EXPECT_NE(user->rfind("0:", 0), 0u) << "the worker image runs as root: " << *user;
  int elves = 0;
  for (const char* dir : {"/opt/ringmaster/bin", "/opt/ringmaster/lib", "/opt/ringmaster/python/ringmaster"}) {
    ASSERT_TRUE(fs::is_directory(u->rootfs + dir)) << dir;
    for (const auto& entry : fs::directory_iterator(u->rootfs + dir)) {
      if (!entry.is_regular_file() || !IsElf(entry.path())) continue;
      ++elves;
      ExpectLibrariesResolveInside(*u, std::string(dir) + "/" + entry.path().filename().string());
    }
  }
  EXPECT_GE(elves, 6) << "ringmaster-run, ringmaster-launch, ringmaster-train-example, ringmaster-perf, _native, "
                         "libgloo...";
  // No NCCL or CUDA runtime of our own: the runtime loads the process's (torch's) at run time, so a worker
  // holds one NCCL (worker-runtime/nccl/gpu_libraries.h).
  for (const char* lib : {"libnccl.so.2", "libcudart.so.12", "libcudart.so.13"}) {
    EXPECT_FALSE(fs::exists(u->rootfs + "/opt/ringmaster/lib/" + lib)) << lib;
  }

  // Started as a container runtime would: /proc mounted (the loader finds $ORIGIN through /proc/self/exe)
  // in a mount namespace of its own, the image's environment only (/usr/bin/env -i), its user.
  std::vector<std::string> env = {
      "unshare",
      "--mount",
      "--propagation",
      "private",
      "--",
      "/bin/sh",
      "-c",
      "u=\"$1\"; shift; mount -t proc proc \"$0/proc\" && exec chroot --userspec=\"$u\" \"$0\" \"$@\"",
      u->rootfs,
      *user,
      "/usr/bin/env",
      "-i",
      "PYTHONDONTWRITEBYTECODE=1"};
  for (const auto& [k, v] : u->image.config.env) env.push_back(k + "=" + v);
  auto run = [&](std::vector<std::string> argv) {
    std::vector<std::string> full = env;
    full.insert(full.end(), argv.begin(), argv.end());
    return RunCommand(full, seconds(120));
  };
  for (const char* program : {"ringmaster-run", "ringmaster-launch", "ringmaster-train-example", "ringmaster-perf"}) {
    EXPECT_COMMAND_OK(run({program, "--help"})) << program;
  }
  auto imported = run({"python", "-c",
                       "import torch, ringmaster.torch as hvd, ringmaster.distributed, ringmaster._native; "
                       "print('torch', torch.__version__)"});
  EXPECT_COMMAND_OK(imported);
  for (const char* example : {"digits_horovod_elastic.py", "digits_ddp_elastic.py", "digits_common.py",
                              "resnet_ddp_elastic.py", "gpt_horovod_elastic.py", "gpu_common.py"}) {
    EXPECT_TRUE(fs::exists(u->rootfs + "/opt/ringmaster/examples/python/" + example)) << example;
  }
  ExpectLabels(*u, "ringmaster-worker");
}

// `make push` (docker/push-images.sh): skopeo copies each archive to $REGISTRY/<name>:<tag> unchanged.
// Here the destination is an OCI layout directory (PUSH_TRANSPORT=oci:): no registry on this machine. The
// operator image only: the worker's (torch and its CUDA wheels, gigabytes) takes the same loop.
TEST(PushImagesTest, EveryImageLandsUnderTheRegistryWithTheSameManifest) {
  const fs::path dest = fs::temp_directory_path() / ("ringmaster-push-test." + std::to_string(::getpid()));
  fs::remove_all(dest);
  fs::create_directories(dest);  // an OCI layout's parent must exist (a registry's path need not)
  auto pushed = RunCommand({"env", "PUSH_TRANSPORT=oci:", "PUSH_IMAGES=ringmaster-operator",
                            "REGISTRY=" + dest.string(), std::string("IMAGES_DIR=") + RINGMASTER_IMAGES_DIR,
                            std::string(RINGMASTER_SOURCE_DIR) + "/docker/push-images.sh"},
                           seconds(600));
  ASSERT_COMMAND_OK(pushed);
  for (const std::string name : {"ringmaster-operator"}) {
    const std::string tag = std::string(":") + RINGMASTER_IMAGE_TAG;
    auto original = RunCommand({"skopeo", "inspect", "--raw",
                                std::string("oci-archive:") + RINGMASTER_IMAGES_DIR + "/" + name + ".tar" + tag});
    auto copy = RunCommand({"skopeo", "inspect", "--raw", "oci:" + (dest / name).string() + tag});
    ASSERT_COMMAND_OK(original);
    ASSERT_COMMAND_OK(copy);
    EXPECT_EQ(copy->out, original->out) << name << ": the pushed manifest differs from the archive's";
  }
  auto unset = RunCommand({"env", "-u", "REGISTRY", std::string(RINGMASTER_SOURCE_DIR) + "/docker/push-images.sh"});
  ASSERT_OK(unset);
  EXPECT_NE(unset->exit_code, 0);
  EXPECT_NE(unset->err.find("REGISTRY is not set"), std::string::npos) << unset->err;
  fs::remove_all(dest);
}

}  // namespace
}  // namespace ringmaster::testing

// The images `make images` writes (build/images/*.tar, from docker/*/Dockerfile), checked as a registry's
// policy or a platform engineer would before running them: who they run as, whether every shared library
// their programs load is inside the image, whether their programs start there, what else they carry, and
// their OCI labels. Each image is looked at as a real node of the test cluster holds it after pulling it from
// the cluster's registry (the ctest fixture cluster.images pushes and pulls them): its root filesystem mounted
// read-only from that node's containerd (`ctr images mount`), its config as the registry serves it (`skopeo
// inspect --config`), its programs run under chroot as the image's user. Needs root, the cluster fixture with
// real nodes and `make images`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/status_test_macros.h"
#include "tests/support/real_nodes.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"

namespace ringmaster::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kLoader[] = "/lib64/ld-linux-x86-64.so.2";
constexpr char kNode[] = "ringmaster-node-0";  // every real node pulled both images (cluster.sh push)

// The parts of an image's OCI config the checks read.
struct ImageConfig {
  std::string user;
  std::vector<std::string> entrypoint;
  std::vector<std::string> env;  // KEY=VALUE
  std::map<std::string, std::string> labels;
};

// An image's root filesystem as a real node unpacked it, mounted read-only at a directory of the test's own
// (`ctr images mount`, a view of the node's snapshot) and unmounted, with the view removed, when destroyed.
class MountedImage {
 public:
  // NAME:<chart appVersion> from the cluster's registry. FailedPrecondition when the cluster has no real nodes
  // or the node has not pulled the image; Internal when ctr or skopeo fail (their messages included).
  static StatusOr<std::unique_ptr<MountedImage>> Mount(const std::string& name) {
    RINGMASTER_ASSIGN_OR_RETURN(TestCluster cluster, TestCluster::FromEnvironment());
    RINGMASTER_ASSIGN_OR_RETURN(std::string ref, RegistryImage(cluster, name, RINGMASTER_IMAGE_TAG));
    const std::string socket = cluster.dir() + "/nodes/" + kNode + "/containerd.sock";
    if (!fs::exists(socket)) {
      return FailedPreconditionError("the test cluster has no real node " + std::string(kNode) +
                                     ": it starts with --real-nodes 2 (tests/CMakeLists.txt)");
    }
    auto image = std::unique_ptr<MountedImage>(new MountedImage());
    image->socket_ = socket;
    image->rootfs_ = fs::temp_directory_path() / ("ringmaster-image-" + name + "." + std::to_string(::getpid()));
    fs::create_directories(image->rootfs_);
    auto mounted =
        RunCommand({"ctr", "-a", socket, "-n", "k8s.io", "images", "mount", ref, image->rootfs_}, seconds(300));
    if (!mounted.ok()) return mounted.status();
    if (!mounted->ok()) {
      return FailedPreconditionError("ctr images mount " + ref + " on " + kNode +
                                     " failed (did cluster.images pull it?): " + mounted->err);
    }
    image->mounted_ = true;
    auto config = RunCommand({"skopeo", "inspect", "--tls-verify=false", "--config", "docker://" + ref}, seconds(120));
    if (!config.ok()) return config.status();
    if (!config->ok()) return InternalError("skopeo inspect --config " + ref + ": " + config->err);
    const nlohmann::json j = nlohmann::json::parse(config->out, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("config")) return InternalError("skopeo printed no image config for " + ref);
    const nlohmann::json& c = j["config"];
    image->config_.user = c.value("User", "");
    image->config_.entrypoint = c.value("Entrypoint", std::vector<std::string>{});
    image->config_.env = c.value("Env", std::vector<std::string>{});
    image->config_.labels = c.value("Labels", std::map<std::string, std::string>{});
    return image;
  }

  ~MountedImage() {
    if (mounted_) {
      auto unmounted =
          RunCommand({"ctr", "-a", socket_, "-n", "k8s.io", "images", "unmount", "--rm", rootfs_}, seconds(60));
      if (!unmounted.ok() || !unmounted->ok()) std::fprintf(stderr, "could not unmount %s\n", rootfs_.c_str());
    }
    std::error_code ignored;
    fs::remove(rootfs_, ignored);
  }

  const std::string& rootfs() const { return rootfs_; }
  const ImageConfig& config() const { return config_; }

 private:
  MountedImage() = default;
  std::string socket_, rootfs_;
  bool mounted_ = false;
  ImageConfig config_;
};

bool IsElf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// The image's user, which must be numeric uid:gid: a kubelet can then verify runAsNonRoot before starting it.
std::string UserSpec(const MountedImage& u) {
  const std::string& user = u.config().user;
  EXPECT_TRUE(std::regex_match(user, std::regex("[0-9]+:[0-9]+"))) << "the image's user is '" << user << "'";
  return user;
}

// Every library `program` (a path inside the image) loads resolves inside the image: the image's own
// loader lists them under chroot, so nothing of this machine can stand in for a missing one.
void ExpectLibrariesResolveInside(const MountedImage& u, const std::string& program) {
  auto listed = RunCommand({"chroot", u.rootfs(), kLoader, "--list", program}, seconds(30));
  ASSERT_OK(listed);
  EXPECT_EQ(listed->exit_code, 0) << program << ":\n" << listed->out << listed->err;
  EXPECT_EQ(listed->out.find("not found"), std::string::npos) << program << ":\n" << listed->out;
}

void ExpectLabels(const MountedImage& u, const std::string& title) {
  const auto& labels = u.config().labels;
  auto label = [&](const std::string& key) { return labels.count(key) ? labels.at(key) : std::string(); };
  EXPECT_EQ(label("org.opencontainers.image.title"), title);
  EXPECT_EQ(label("org.opencontainers.image.version"), RINGMASTER_IMAGE_TAG);
  EXPECT_FALSE(label("org.opencontainers.image.revision").empty());
  EXPECT_FALSE(label("org.opencontainers.image.source").empty());
  EXPECT_FALSE(label("org.opencontainers.image.licenses").empty());
}

TEST(OperatorImageTest, RunsAsNonRootAndStartsWithOnlyWhatIsInside) {
  auto u = MountedImage::Mount("ringmaster-operator");
  ASSERT_OK(u);
  const MountedImage& image = **u;
  ASSERT_EQ(image.config().entrypoint, std::vector<std::string>{"/usr/local/bin/ringmaster-operator"});
  const std::string user = UserSpec(image);
  EXPECT_EQ(user, "65532:65532") << "the chart's securityContext runs it as 65532";
  ExpectLibrariesResolveInside(image, image.config().entrypoint[0]);
  auto help =
      RunCommand({"chroot", "--userspec=" + user, image.rootfs(), image.config().entrypoint[0], "--help"}, seconds(30));
  EXPECT_COMMAND_OK(help);
  if (help.ok()) {
    EXPECT_NE(help->out.find("--leader-elect"), std::string::npos) << help->out;
  }
  ExpectLabels(image, "ringmaster-operator");
}

// Nothing but the binary, its libraries and the two files that name its user: no shell, no compiler, no
// package manager, nothing an attacker inside could use.
TEST(OperatorImageTest, HoldsOnlyTheBinaryItsLibrariesAndItsUser) {
  auto u = MountedImage::Mount("ringmaster-operator");
  ASSERT_OK(u);
  const std::string rootfs = (*u)->rootfs();
  const std::set<std::string> allowed_files = {"/usr/local/bin/ringmaster-operator", "/etc/passwd", "/etc/group"};
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(rootfs); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file() && !it->is_symlink()) continue;
    const std::string inside = "/" + fs::relative(it->path(), rootfs).string();
    ++files;
    if (allowed_files.count(inside)) continue;
    const std::string base = it->path().filename().string();
    const bool library = base.find(".so") != std::string::npos && it->is_regular_file() && IsElf(it->path());
    EXPECT_TRUE(library) << inside << " is neither the operator, one of its libraries nor its user";
  }
  EXPECT_GT(files, 3);
  for (const char* tool : {"/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/gcc", "/usr/bin/apt", "/usr/bin/dpkg"}) {
    EXPECT_FALSE(fs::exists(rootfs + tool)) << tool;
  }
}

// The worker image: every program and library of the runtime resolves inside the image, the programs
// start as the image's non-root user, and the Python package imports beside torch.
// Runs argv in the image as a container runtime would: /proc mounted (the loader finds $ORIGIN through
// /proc/self/exe) and a writable /tmp (the image is mounted read-only; `import tensorflow` needs a temporary
// directory) in a mount namespace of its own, the image's environment only (/usr/bin/env -i), its user.
StatusOr<CommandResult> RunInImage(const MountedImage& image, const std::string& user, std::vector<std::string> argv) {
  std::vector<std::string> full = {
      "unshare",
      "--mount",
      "--propagation",
      "private",
      "--",
      "/bin/sh",
      "-c",
      "u=\"$1\"; shift; mount -t proc proc \"$0/proc\" && mount -t tmpfs -o mode=1777 tmpfs \"$0/tmp\" && "
      "exec chroot --userspec=\"$u\" \"$0\" \"$@\"",
      image.rootfs(),
      user,
      "/usr/bin/env",
      "-i",
      "PYTHONDONTWRITEBYTECODE=1"};
  for (const auto& kv : image.config().env) full.push_back(kv);
  full.insert(full.end(), argv.begin(), argv.end());
  return RunCommand(full, seconds(120));
}

TEST(WorkerImageTest, RuntimeAndPythonPackageWorkAsNonRoot) {
  auto u = MountedImage::Mount("ringmaster-worker");
  ASSERT_OK(u);
  const MountedImage& image = **u;
  const std::string rootfs = image.rootfs();
  const std::string user = UserSpec(image);
  EXPECT_NE(user.rfind("0:", 0), 0u) << "the worker image runs as root: " << user;
  int elves = 0;
  for (const char* dir : {"/opt/ringmaster/bin", "/opt/ringmaster/lib", "/opt/ringmaster/python/ringmaster"}) {
    ASSERT_TRUE(fs::is_directory(rootfs + dir)) << dir;
    for (const auto& entry : fs::directory_iterator(rootfs + dir)) {
      if (!entry.is_regular_file() || !IsElf(entry.path())) continue;
      ++elves;
      ExpectLibrariesResolveInside(image, std::string(dir) + "/" + entry.path().filename().string());
    }
  }
  EXPECT_GE(elves, 6) << "ringmaster-run, ringmaster-launch, ringmaster-train-example, ringmaster-perf, _native, "
                         "libgloo...";
  // No NCCL or CUDA runtime of our own: the runtime loads the process's (torch's) at run time, so a worker
  // holds one NCCL (worker-runtime/nccl/gpu_libraries.h).
  for (const char* lib : {"libnccl.so.2", "libcudart.so.12", "libcudart.so.13"}) {
    EXPECT_FALSE(fs::exists(rootfs + "/opt/ringmaster/lib/" + lib)) << lib;
  }

  auto run = [&](std::vector<std::string> argv) { return RunInImage(image, user, std::move(argv)); };
  for (const char* program : {"ringmaster-run", "ringmaster-launch", "ringmaster-train-example", "ringmaster-perf"}) {
    EXPECT_COMMAND_OK(run({program, "--help"})) << program;
  }
  auto imported = run({"python", "-c",
                       "import torch, ringmaster.torch as hvd, ringmaster.distributed, ringmaster._native; "
                       "print('torch', torch.__version__)"});
  EXPECT_COMMAND_OK(imported);
  for (const char* example : {"digits_horovod_elastic.py", "digits_ddp_elastic.py", "digits_common.py",
                              "resnet_ddp_elastic.py", "gpt_horovod_elastic.py", "gpu_common.py"}) {
    EXPECT_TRUE(fs::exists(rootfs + "/opt/ringmaster/examples/python/" + example)) << example;
  }
  ExpectLabels(image, "ringmaster-worker");
}

// The TensorFlow variant: the same runtime, TensorFlow and Keras 3 instead of torch, and the op library
// ringmaster.tensorflow loads, compiled against that TensorFlow: a world of one runs a collective in it.
TEST(WorkerImageTest, TensorFlowVariantRunsACollectiveAsNonRoot) {
  auto u = MountedImage::Mount("ringmaster-worker-tensorflow");
  ASSERT_OK(u);
  const MountedImage& image = **u;
  const std::string user = UserSpec(image);
  EXPECT_NE(user.rfind("0:", 0), 0u) << "the TensorFlow worker image runs as root: " << user;
  EXPECT_TRUE(fs::exists(image.rootfs() + "/opt/ringmaster/python/ringmaster/_tf_ops.so"));
  EXPECT_FALSE(fs::exists(image.rootfs() + "/opt/venv/lib/python3.11/site-packages/torch")) << "torch in the variant";
  auto ran = RunInImage(image, user,
                        {"python", "-c",
                         "import tensorflow as tf, keras, ringmaster.tensorflow as hvd, ringmaster.keras; hvd.init(); "
                         "x = hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum); "
                         "assert x.numpy().tolist() == [1.0, 2.0], x; print('tensorflow', tf.__version__, "
                         "'keras', keras.__version__)"});
  EXPECT_COMMAND_OK(ran);
  for (const char* example : {"keras_elastic.py", "tf1_linear_regression.py", "digits_common.py"}) {
    EXPECT_TRUE(fs::exists(image.rootfs() + "/opt/ringmaster/examples/python/" + example)) << example;
  }
  ExpectLabels(image, "ringmaster-worker-tensorflow");
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

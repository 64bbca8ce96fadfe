// A process started as a container's (container_process.h): its mounts stay in its own namespace, its
// host name and user are its own, it finds its program inside its root, a second process joins its mount
// namespace, and a failed step is named. Container setup needs root (CAP_SYS_ADMIN); these skip elsewhere.
// The suite keeps its name from when this lived in base/subprocess (ctest selects it as Subprocess*).
#include "tests/pod_runner/container_process.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "base/status_test_macros.h"

namespace ringmaster::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

ContainerSpawnOptions Captured(std::vector<std::string> argv) {
  ContainerSpawnOptions o;
  o.spawn.argv = std::move(argv);
  o.spawn.in = Redirect::Pipe();
  o.spawn.out = Redirect::Pipe();
  o.spawn.err = Redirect::Pipe();
  return o;
}

auto Soon() { return std::chrono::steady_clock::now() + seconds(20); }

bool CanMount() { return ::geteuid() == 0; }

TEST(SubprocessContainerTest, MountsStayInTheChildsNamespaceAndTheUserSwitches) {
  if (!CanMount()) GTEST_SKIP() << "needs root";
  const std::string dir = ::testing::TempDir() + "subprocess_container_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/ro");
  std::ofstream(dir + "/ro/file") << "read-only\n";
  ContainerSpawnOptions o = Captured({"sh", "-c",
                                      "echo x > " + dir + "/tmp/new/f && cat " + dir +
                                          "/tmp/new/f; "
                                          "cat " +
                                          dir + "/bound/file; echo y > " + dir +
                                          "/bound/file || echo refused; "
                                          "hostname; id -u; id -g; id -G"});
  ContainerSetup c;
  c.hostname = "pod-a";
  c.mounts.push_back({"tmpfs", dir + "/tmp/new", "tmpfs", 0, "mode=1777", MountSpec::Create::kDirectory});
  c.mounts.push_back({dir + "/ro", dir + "/bound", "", MS_BIND | MS_RDONLY, "", MountSpec::Create::kDirectory});
  c.uid = 65534;
  c.gid = 65533;
  c.groups = {65533, 4242};
  o.container = c;
  auto p = StartContainerProcess(o);
  ASSERT_OK(p);
  Subprocess::Output out = p->Communicate("", Soon());
  EXPECT_EQ(p->Wait().code, 0) << out.err;
  EXPECT_EQ(out.out, "x\nread-only\nrefused\npod-a\n65534\n65533\n65533 4242\n") << out.err;
  // Nothing of it is mounted here: the directories exist (made by the child), empty.
  EXPECT_FALSE(std::filesystem::exists(dir + "/tmp/new/f"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/bound/file"));
  std::filesystem::remove_all(dir);
}

TEST(SubprocessContainerTest, ChrootsFindsTheProgramInsideTheRootAndJoinsANamespace) {
  if (!CanMount()) GTEST_SKIP() << "needs root";
  const std::string root = ::testing::TempDir() + "subprocess_root_" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  // A root made of the host's /usr (read-only) with Debian's merged-/usr links.
  for (const char* link : {"bin", "lib", "lib64", "sbin"}) {
    std::filesystem::create_symlink(std::string("usr/") + link, root + "/" + link);
  }
  ContainerSetup c;
  c.mounts.push_back({"/usr", root + "/usr", "", MS_BIND | MS_REC | MS_RDONLY, "", MountSpec::Create::kDirectory});
  c.mounts.push_back({"tmpfs", root + "/data", "tmpfs", 0, "", MountSpec::Create::kDirectory});
  c.root = root;
  ContainerSpawnOptions o = Captured({"sh", "-c", "pwd; echo inside > /data/f; exec sleep 30"});
  o.spawn.inherit_environment = false;
  o.spawn.env = {{"PATH", "/nowhere:/usr/bin"}};
  o.spawn.cwd = "/usr/share";
  o.container = c;
  o.spawn.out = Redirect::Pipe();
  o.spawn.in = Redirect::Null();
  o.spawn.err = Redirect::Inherit();
  auto p = StartContainerProcess(o);
  ASSERT_OK(p);
  // Wait for the file to exist in its namespace, then look at it from a second process that joins it.
  std::string seen;
  for (int i = 0; i < 200 && seen != "inside\n"; ++i) {
    ContainerSpawnOptions j = Captured({"cat", "/data/f"});
    j.container = ContainerSetup{};
    j.container->join_mount_namespace = "/proc/" + std::to_string(p->pid()) + "/ns/mnt";
    j.container->root = root;
    auto q = StartContainerProcess(j);
    ASSERT_OK(q);
    seen = q->Communicate("", Soon()).out;
    q->Wait();
    if (seen != "inside\n") std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(seen, "inside\n");
  EXPECT_FALSE(std::filesystem::exists(root + "/data/f"));
  p->Kill();

  ContainerSpawnOptions missing = Captured({"no-such-program-in-root"});
  missing.container = c;
  auto m = StartContainerProcess(missing);
  ASSERT_OK(m);
  Subprocess::Output out = m->Communicate("", Soon());
  EXPECT_EQ(m->Wait().code, 127);
  EXPECT_NE(out.err.find("exec failed: no-such-program-in-root (searched PATH)"), std::string::npos) << out.err;

  ContainerSpawnOptions bad = Captured({"true"});
  bad.container = ContainerSetup{};
  bad.container->mounts.push_back({"/nonexistent-source", root + "/x", "", MS_BIND, "", MountSpec::Create::kNone});
  auto b = StartContainerProcess(bad);
  ASSERT_OK(b);
  out = b->Communicate("", Soon());
  EXPECT_EQ(b->Wait().code, 128);
  EXPECT_NE(out.err.find("container setup failed: mount " + root + "/x"), std::string::npos) << out.err;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace ringmaster::testing

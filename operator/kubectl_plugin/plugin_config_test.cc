#include "operator/kubectl_plugin/plugin_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "base/status_test_macros.h"

namespace ringmaster::kubectl_plugin {
namespace {

namespace fs = std::filesystem;

std::string Kubeconfig(const std::string& server, const std::string& ns = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: main\nclusters:\n- name: c\n  cluster: {server: " + server +
         "}\nusers:\n- name: u\n  user: {token: abc}\ncontexts:\n- name: main\n  context: {cluster: c, user: u" +
         (ns.empty() ? "" : ", namespace: " + ns) +
         "}\n- name: other\n  context: {cluster: c, user: u, namespace: other-ns}\n";
}

class PluginConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kubectl-plugin-config-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    env_.getenv = [this](const std::string& name) -> std::optional<std::string> {
      auto it = vars_.find(name);
      if (it == vars_.end()) return std::nullopt;
      return it->second;
    };
    env_.home = dir_ + "/home";
    env_.service_account_dir = dir_ + "/no-service-account";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
  std::map<std::string, std::string> vars_;
  kube::ConfigEnvironment env_;
  PluginOptions options_;
};

TEST_F(PluginConfigTest, KubeconfigFlagThenKubeconfigVariableThenHome) {
  Write("home/.kube/config", Kubeconfig("https://home:6443", "home-ns"));
  auto home = LoadPluginConfig(options_, env_);
  ASSERT_OK(home);
  EXPECT_EQ(home->server, "https://home:6443");
  EXPECT_EQ(home->namespace_name, "home-ns");  // the context's namespace

  // KUBECONFIG: a colon-separated list, the first file to name a context wins; missing files are skipped.
  const std::string a = Write("a.yaml", Kubeconfig("https://a:6443"));
  const std::string b = Write("b.yaml", Kubeconfig("https://b:6443", "b-ns"));
  vars_["KUBECONFIG"] = dir_ + "/missing.yaml:" + a + ":" + b;
  auto from_var = LoadPluginConfig(options_, env_);
  ASSERT_OK(from_var);
  EXPECT_EQ(from_var->server, "https://a:6443");
  EXPECT_EQ(from_var->namespace_name, "default");  // the context has none

  options_.kubeconfig = b;
  auto from_flag = LoadPluginConfig(options_, env_);
  ASSERT_OK(from_flag);
  EXPECT_EQ(from_flag->server, "https://b:6443");
  EXPECT_EQ(from_flag->namespace_name, "b-ns");
}

TEST_F(PluginConfigTest, ContextAndNamespaceFlags) {
  options_.kubeconfig = Write("kc.yaml", Kubeconfig("https://k:6443", "main-ns"));
  options_.context = "other";
  auto other = LoadPluginConfig(options_, env_);
  ASSERT_OK(other);
  EXPECT_EQ(other->namespace_name, "other-ns");
  options_.ns = "flag-ns";
  auto flagged = LoadPluginConfig(options_, env_);
  ASSERT_OK(flagged);
  EXPECT_EQ(flagged->namespace_name, "flag-ns");
}

// Each failure is one line naming the problem and what to do.
TEST_F(PluginConfigTest, AMalformedOrMissingKubeconfigIsOneClearLine) {
  struct Case {
    std::string text;  // the kubeconfig's content
    std::string context;
    std::string said;  // what the message must hold
  };
  const std::vector<Case> cases = {
      {"clusters: [\n  - name: {{{\n", "", "is not usable"},
      {"- just\n- a list\n", "", "top level is not a mapping"},
      {"\x01\x02\xff\xfe binary", "", "is not usable"},
      {"clusters: 7\n", "", "clusters is not a list"},
      {Kubeconfig("https://k:6443"), "nope", "context \"nope\" not found; `kubectl config get-contexts`"},
      {"apiVersion: v1\nkind: Config\n", "", "no current-context"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: gone}\n", "", "cluster \"gone\""},
      {"current-context: x\nclusters:\n- name: c\n  cluster: {server: ftp://x}\ncontexts:\n- name: x\n  context: "
       "{cluster: c}\n",
       "", "not an http(s) URL"},
  };
  for (const Case& c : cases) {
    options_.kubeconfig = Write("bad.yaml", c.text);
    options_.context = c.context;
    auto config = LoadPluginConfig(options_, env_);
    ASSERT_FALSE(config.ok()) << c.text;
    const std::string& m = config.status().message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find(c.said), std::string::npos) << "for:\n" << c.text << "\ngot: " << m;
    if (c.context.empty()) {
      EXPECT_NE(m.find(options_.kubeconfig), std::string::npos) << m;
      EXPECT_NE(m.find("fix it"), std::string::npos) << m;
    }
  }

  options_.context = "";
  options_.kubeconfig = dir_ + "/absent.yaml";
  auto absent = LoadPluginConfig(options_, env_);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().message(),
            "cannot read the kubeconfig " + options_.kubeconfig + " given by --kubeconfig; check the path");

  options_.kubeconfig = "";
  vars_["KUBECONFIG"] = dir_ + "/x:" + dir_ + "/y";
  auto none_readable = LoadPluginConfig(options_, env_);
  ASSERT_FALSE(none_readable.ok());
  EXPECT_NE(none_readable.status().message().find("no readable kubeconfig among KUBECONFIG="), std::string::npos)
      << none_readable.status();

  vars_.clear();  // no KUBECONFIG, no ~/.kube/config, not in a pod
  auto nothing = LoadPluginConfig(options_, env_);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(nothing.status().message().find("pass --kubeconfig, set KUBECONFIG, or create ~/.kube/config"),
            std::string::npos)
      << nothing.status();
}

}  // namespace
}  // namespace ringmaster::kubectl_plugin

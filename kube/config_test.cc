#include "kube/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/status_test_macros.h"
#include "kube/base64.h"

namespace ringmaster::kube {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kubeconfig-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A real self-signed certificate is not needed for parsing: the loader keeps PEM bytes as they are.
const char kKubeconfig[] = R"(apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EtUEVN
- name: insecure
  cluster:
    server: https://10.0.0.1:443
    insecure-skip-tls-verify: true
- name: files
  cluster:
    server: https://files:443
    certificate-authority: ca.pem
contexts:
- name: admin
  context: {cluster: local, user: admin, namespace: team-a}
- name: tok
  context: {cluster: insecure, user: tok}
- name: fromfiles
  context: {cluster: files, user: fileuser}
- name: broken
  context: {cluster: nowhere, user: admin}
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: tok
  user:
    token: s3cr3t
- name: fileuser
  user:
    client-certificate: certs/cert.pem
    client-key: /ABS/key.pem
    tokenFile: token
)";

TEST(KubeconfigTest, CurrentContextWithInlineData) {
  auto cfg = ParseKubeconfig(kKubeconfig, "/nowhere");
  ASSERT_OK(cfg) << cfg.status();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");  // trailing slash dropped
  EXPECT_EQ(cfg->ca_pem, "CA-PEM");
  EXPECT_EQ(cfg->client_cert_pem, "CERT");
  EXPECT_EQ(cfg->client_key_pem, "KEY");
  EXPECT_EQ(cfg->namespace_name, "team-a");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  EXPECT_TRUE(cfg->warnings.empty());
}

TEST(KubeconfigTest, ExplicitContextWithTokenAndInsecureWarns) {
  auto cfg = ParseKubeconfig(kKubeconfig, "/nowhere", "tok");
  ASSERT_OK(cfg) << cfg.status();
  EXPECT_EQ(cfg->bearer_token, "s3cr3t");
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
  ASSERT_EQ(cfg->warnings.size(), 1u);
  EXPECT_NE(cfg->warnings[0].find("insecure-skip-tls-verify"), std::string::npos);
  EXPECT_EQ(cfg->namespace_name, "default");
}

TEST(KubeconfigTest, FilesAreResolvedRelativeToTheKubeconfig) {
  TempDir dir;
  fs::create_directories(dir.path() + "/certs");
  dir.Write("ca.pem", "CA-FROM-FILE");
  dir.Write("certs/cert.pem", "CERT-FROM-FILE");
  std::string text = kKubeconfig;
  text.replace(text.find("/ABS"), 4, dir.path());
  dir.Write("key.pem", "KEY-FROM-FILE");
  auto cfg = ParseKubeconfig(text, dir.path(), "fromfiles");
  ASSERT_OK(cfg) << cfg.status();
  EXPECT_EQ(cfg->ca_pem, "CA-FROM-FILE");
  EXPECT_EQ(cfg->client_cert_pem, "CERT-FROM-FILE");
  EXPECT_EQ(cfg->client_key_pem, "KEY-FROM-FILE");
  EXPECT_EQ(cfg->bearer_token_file, dir.path() + "/token");
}

TEST(KubeconfigTest, MissingReferencedFileIsFailedPrecondition) {
  auto cfg = ParseKubeconfig(kKubeconfig, "/definitely/not/here", "fromfiles");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cfg.status().message().find("ca.pem"), std::string::npos) << cfg.status();
}

TEST(KubeconfigTest, BadInputIsInvalidArgument) {
  struct Case {
    const char* name;
    std::string yaml;
    std::string context;
  } cases[] = {
      {"unknown context", kKubeconfig, "nope"},
      {"dangling cluster", kKubeconfig, "broken"},
      {"not yaml", "clusters: [unterminated", ""},
      {"top level list", "- a\n- b\n", ""},
      {"clusters not a list", "clusters: 3\ncurrent-context: x\n", ""},
      {"entry without name", "clusters:\n- cluster: {server: https://x}\n", ""},
      {"no current context", "apiVersion: v1\nclusters: []\n", ""},
      {"bad base64",
       "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n- name: k\n  cluster:\n    "
       "server: https://x\n    certificate-authority-data: '***'\n",
       ""},
      {"server not a URL",
       "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n- name: k\n  cluster: {server: "
       "'ftp://x'}\n",
       ""},
      {"cert without key",
       "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: "
       "{server: 'https://x'}\nusers:\n- name: u\n  user: {client-certificate-data: Q0VSVA==}\n",
       ""},
  };
  for (const auto& c : cases) {
    auto cfg = ParseKubeconfig(c.yaml, "/tmp", c.context);
    EXPECT_FALSE(cfg.ok()) << c.name;
    EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument) << c.name << ": " << cfg.status();
  }
}

TEST(KubeconfigTest, KubeconfigListMergesFirstWins) {
  TempDir dir;
  std::string a = dir.Write("a",
                            "current-context: one\ncontexts:\n- name: one\n  context: {cluster: k}\nclusters:\n- name: "
                            "k\n  cluster: {server: 'https://first'}\n");
  std::string b =
      dir.Write("b",
                "current-context: two\nclusters:\n- name: k\n  cluster: {server: 'https://second'}\n- name: k2\n  "
                "cluster: {server: 'https://k2'}\ncontexts:\n- name: two\n  context: {cluster: k2}\n");
  auto cfg = LoadKubeconfigFiles(a + ":" + dir.path() + "/missing:" + b);
  ASSERT_OK(cfg) << cfg.status();
  EXPECT_EQ(cfg->server, "https://first");
  auto two = LoadKubeconfigFiles(a + ":" + b, "two");
  ASSERT_OK(two) << two.status();
  EXPECT_EQ(two->server, "https://k2");
}

ConfigEnvironment FakeEnv(std::map<std::string, std::string> vars, std::string home, std::string sa_dir) {
  ConfigEnvironment env;
  env.getenv = [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  env.home = std::move(home);
  env.service_account_dir = std::move(sa_dir);
  return env;
}

TEST(LoadConfigTest, PrecedenceFlagThenEnvThenInClusterThenHome) {
  TempDir dir;
  auto kc = [](const std::string& server) {
    return "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n- name: k\n  cluster: "
           "{server: '" +
           server + "'}\n";
  };
  std::string flag = dir.Write("flag", kc("https://flag"));
  std::string envkc = dir.Write("env", kc("https://env"));
  fs::create_directories(dir.path() + "/home/.kube");
  dir.Write("home/.kube/config", kc("https://home"));
  fs::create_directories(dir.path() + "/sa");
  dir.Write("sa/token", "tok\n");
  dir.Write("sa/ca.crt", "CA");
  dir.Write("sa/namespace", "podns\n");
  std::map<std::string, std::string> vars = {
      {"KUBECONFIG", envkc}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  auto env = FakeEnv(vars, dir.path() + "/home", dir.path() + "/sa");

  auto a = LoadConfig(flag, "", env);
  ASSERT_OK(a) << a.status();
  EXPECT_EQ(a->server, "https://flag");
  auto b = LoadConfig("", "", env);
  ASSERT_OK(b) << b.status();
  EXPECT_EQ(b->server, "https://env");
  vars.erase("KUBECONFIG");
  auto c = LoadConfig("", "", FakeEnv(vars, dir.path() + "/home", dir.path() + "/sa"));
  ASSERT_OK(c) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->bearer_token_file, dir.path() + "/sa/token");
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->namespace_name, "podns");
  auto d = LoadConfig("", "", FakeEnv({}, dir.path() + "/home", dir.path() + "/sa"));
  ASSERT_OK(d) << d.status();
  EXPECT_EQ(d->server, "https://home");
  auto e = LoadConfig("", "", FakeEnv({}, dir.path() + "/nohome", dir.path() + "/sa"));
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
}

TEST(BearerTokenSourceTest, RereadsRotatedTokenFile) {
  TempDir dir;
  std::string path = dir.Write("token", "first\n");
  BearerTokenSource src("", path);
  auto t1 = src.Token();
  ASSERT_OK(t1);
  EXPECT_EQ(*t1, "first");
  // Rotation the kubelet way: write a new file and rename it over the old one.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::string tmp = dir.Write("token.new", "second-longer\n");
  fs::rename(tmp, path);
  auto t2 = src.Token();
  ASSERT_OK(t2);
  EXPECT_EQ(*t2, "second-longer");
  // A vanished file keeps the last good token.
  fs::remove(path);
  auto t3 = src.Token();
  ASSERT_OK(t3);
  EXPECT_EQ(*t3, "second-longer");
}

TEST(BearerTokenSourceTest, MissingFileWithoutHistoryFails) {
  BearerTokenSource src("", "/does/not/exist");
  EXPECT_EQ(src.Token().status().code(), StatusCode::kFailedPrecondition);
  BearerTokenSource fixed("static", "");
  EXPECT_EQ(*fixed.Token(), "static");
}

TEST(Base64Test, RoundTripAndErrors) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_OK(d);
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(*Base64Decode("Q0VS\nVA=="), "CERT");
  EXPECT_FALSE(Base64Decode("Q0VSV").ok());
  EXPECT_FALSE(Base64Decode("Q0*S").ok());
  EXPECT_FALSE(Base64Decode("Q0==VA==").ok());
}

}  // namespace
}  // namespace ringmaster::kube

#include "kube/config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "kube/base64.h"

namespace ringmaster::kube {

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return FailedPreconditionError("cannot read file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return FailedPreconditionError("error reading file " + path);
  return ss.str();
}

ConfigEnvironment ProcessEnvironment() {
  ConfigEnvironment env;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  if (auto h = env.getenv("HOME")) env.home = *h;
  return env;
}

namespace {

// The merged maps of one or more kubeconfig files.
struct Kubeconfig {
  std::map<std::string, std::pair<YAML::Node, std::string>> clusters, users, contexts;  // node, base dir
  std::string current_context;
};

std::string Dirname(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// Merges one document into `kc`; names already present win (first file wins, as in kubectl).
Status Merge(const std::string& yaml, const std::string& base_dir, Kubeconfig* kc) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (!root || root.IsNull()) return Status::Ok();  // an empty file contributes nothing
    if (!root.IsMap()) return InvalidArgumentError("kubeconfig: top level is not a mapping");
    auto take = [&](const char* list, const char* inner,
                    std::map<std::string, std::pair<YAML::Node, std::string>>* out) -> Status {
      YAML::Node seq = root[list];
      if (!seq || seq.IsNull()) return Status::Ok();
      if (!seq.IsSequence()) return InvalidArgumentError(std::string("kubeconfig: ") + list + " is not a list");
      for (const YAML::Node& item : seq) {
        if (!item.IsMap() || !item["name"] || !item["name"].IsScalar())
          return InvalidArgumentError(std::string("kubeconfig: an entry of ") + list + " has no name");
        YAML::Node body = item[inner];
        if (body && !body.IsMap() && !body.IsNull())
          return InvalidArgumentError(std::string("kubeconfig: ") + list + " entry " + item["name"].as<std::string>() +
                                      ": " + inner + " is not a mapping");
        out->emplace(item["name"].as<std::string>(),
                     std::make_pair(body ? body : YAML::Node(YAML::NodeType::Map), base_dir));
      }
      return Status::Ok();
    };
    RINGMASTER_RETURN_IF_ERROR(take("clusters", "cluster", &kc->clusters));
    RINGMASTER_RETURN_IF_ERROR(take("users", "user", &kc->users));
    RINGMASTER_RETURN_IF_ERROR(take("contexts", "context", &kc->contexts));
    if (kc->current_context.empty() && root["current-context"] && root["current-context"].IsScalar())
      kc->current_context = root["current-context"].as<std::string>();
    return Status::Ok();
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("kubeconfig: ") + e.what());
  }
}

// Reads `<key>-data` (base64) or `<key>` (a file path) from `node`; "" when neither is present.
StatusOr<std::string> DataOrFile(const YAML::Node& node, const std::string& key, const std::string& base_dir) {
  YAML::Node data = node[key + "-data"];
  if (data && data.IsScalar() && !data.Scalar().empty()) {
    auto decoded = Base64Decode(data.Scalar());
    if (!decoded.ok()) return decoded.status().WithContext("kubeconfig " + key + "-data");
    return decoded;
  }
  YAML::Node file = node[key];
  if (file && file.IsScalar() && !file.Scalar().empty()) return ReadFileToString(Resolve(file.Scalar(), base_dir));
  return std::string();
}

std::string Scalar(const YAML::Node& node, const char* key) {
  YAML::Node v = node[key];
  return v && v.IsScalar() ? v.Scalar() : std::string();
}

StatusOr<ClientConfig> Resolve(const Kubeconfig& kc, const std::string& context_override) {
  try {
    std::string ctx_name = context_override.empty() ? kc.current_context : context_override;
    if (ctx_name.empty()) return InvalidArgumentError("kubeconfig: no current-context and no context given");
    auto ctx = kc.contexts.find(ctx_name);
    if (ctx == kc.contexts.end()) return InvalidArgumentError("kubeconfig: context \"" + ctx_name + "\" not found");
    const YAML::Node& c = ctx->second.first;
    std::string cluster_name = Scalar(c, "cluster");
    std::string user_name = Scalar(c, "user");
    auto cl = kc.clusters.find(cluster_name);
    if (cl == kc.clusters.end())
      return InvalidArgumentError("kubeconfig: cluster \"" + cluster_name + "\" of context \"" + ctx_name +
                                  "\" not found");
    ClientConfig cfg;
    const YAML::Node& cn = cl->second.first;
    cfg.server = Scalar(cn, "server");
    if (cfg.server.empty()) return InvalidArgumentError("kubeconfig: cluster \"" + cluster_name + "\" has no server");
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0)
      return InvalidArgumentError("kubeconfig: server \"" + cfg.server + "\" is not an http(s) URL");
    cfg.insecure_skip_tls_verify = Scalar(cn, "insecure-skip-tls-verify") == "true";
    cfg.tls_server_name = Scalar(cn, "tls-server-name");
    RINGMASTER_ASSIGN_OR_RETURN(cfg.ca_pem, DataOrFile(cn, "certificate-authority", cl->second.second));
    if (cfg.insecure_skip_tls_verify) {
      cfg.warnings.push_back("kubeconfig cluster \"" + cluster_name +
                             "\" sets insecure-skip-tls-verify: the apiserver's certificate is NOT verified");
    }
    if (!user_name.empty()) {
      auto us = kc.users.find(user_name);
      if (us == kc.users.end())
        return InvalidArgumentError("kubeconfig: user \"" + user_name + "\" of context \"" + ctx_name + "\" not found");
      const YAML::Node& un = us->second.first;
      const std::string& dir = us->second.second;
      RINGMASTER_ASSIGN_OR_RETURN(cfg.client_cert_pem, DataOrFile(un, "client-certificate", dir));
      RINGMASTER_ASSIGN_OR_RETURN(cfg.client_key_pem, DataOrFile(un, "client-key", dir));
      if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty())
        return InvalidArgumentError("kubeconfig: user \"" + user_name +
                                    "\" has a client certificate without a key or vice versa");
      cfg.bearer_token = Scalar(un, "token");
      std::string token_file = Scalar(un, "tokenFile");
      if (!token_file.empty()) cfg.bearer_token_file = Resolve(token_file, dir);
      if (un["exec"] || un["auth-provider"])
        cfg.warnings.push_back("kubeconfig user \"" + user_name + "\" uses exec/auth-provider, which is not supported");
    }
    std::string ns = Scalar(c, "namespace");
    if (!ns.empty()) cfg.namespace_name = ns;
    return cfg;
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("kubeconfig: ") + e.what());
  }
}

}  // namespace

StatusOr<ClientConfig> ParseKubeconfig(const std::string& yaml, const std::string& base_dir,
                                       const std::string& context) {
  Kubeconfig kc;
  RINGMASTER_RETURN_IF_ERROR(Merge(yaml, base_dir, &kc));
  return Resolve(kc, context);
}

StatusOr<ClientConfig> LoadKubeconfigFiles(const std::string& paths, const std::string& context) {
  Kubeconfig kc;
  std::stringstream ss(paths);
  std::string path;
  int read = 0;
  while (std::getline(ss, path, ':')) {
    if (path.empty()) continue;
    auto text = ReadFileToString(path);
    if (!text.ok()) continue;  // kubectl skips missing files in $KUBECONFIG
    ++read;
    RINGMASTER_RETURN_IF_ERROR(Merge(*text, Dirname(path), &kc).WithContext(path));
  }
  if (read == 0) return NotFoundError("no readable kubeconfig among \"" + paths + "\"");
  auto cfg = Resolve(kc, context);
  if (!cfg.ok()) return cfg.status().WithContext(paths);
  return cfg;
}

StatusOr<ClientConfig> InClusterConfig(const ConfigEnvironment& env) {
  auto host = env.getenv ? env.getenv("KUBERNETES_SERVICE_HOST") : std::nullopt;
  auto port = env.getenv ? env.getenv("KUBERNETES_SERVICE_PORT") : std::nullopt;
  if (!host || !port || host->empty() || port->empty())
    return NotFoundError("not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  ClientConfig cfg;
  bool ipv6 = host->find(':') != std::string::npos;
  cfg.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  cfg.bearer_token_file = env.service_account_dir + "/token";
  RINGMASTER_ASSIGN_OR_RETURN(std::string token, ReadFileToString(cfg.bearer_token_file));
  (void)token;  // read again per request by BearerTokenSource; here we only check it exists
  RINGMASTER_ASSIGN_OR_RETURN(cfg.ca_pem, ReadFileToString(env.service_account_dir + "/ca.crt"));
  auto ns = ReadFileToString(env.service_account_dir + "/namespace");
  if (ns.ok()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    if (!n.empty()) cfg.namespace_name = n;
  }
  return cfg;
}

StatusOr<ClientConfig> LoadConfig(const std::string& explicit_kubeconfig, const std::string& context,
                                  const ConfigEnvironment& env) {
  if (!explicit_kubeconfig.empty()) {
    auto text = ReadFileToString(explicit_kubeconfig);
    if (!text.ok()) return text.status();
    auto cfg = ParseKubeconfig(*text, Dirname(explicit_kubeconfig), context);
    if (!cfg.ok()) return cfg.status().WithContext(explicit_kubeconfig);
    return cfg;
  }
  if (env.getenv) {
    if (auto kc = env.getenv("KUBECONFIG"); kc && !kc->empty()) return LoadKubeconfigFiles(*kc, context);
  }
  auto in_cluster = InClusterConfig(env);
  if (in_cluster.ok() || in_cluster.status().code() != StatusCode::kNotFound) return in_cluster;
  if (!env.home.empty()) {
    auto home = LoadKubeconfigFiles(env.home + "/.kube/config", context);
    if (home.ok() || home.status().code() != StatusCode::kNotFound) return home;
  }
  return NotFoundError(
      "no Kubernetes configuration: pass --kubeconfig, set $KUBECONFIG, run in a pod, or create ~/.kube/config");
}

BearerTokenSource::BearerTokenSource(std::string static_token, std::string token_file, std::chrono::seconds max_age)
    : static_token_(std::move(static_token)), token_file_(std::move(token_file)), max_age_(max_age) {}

StatusOr<std::string> BearerTokenSource::Token() {
  if (token_file_.empty()) return static_token_;
  std::lock_guard<std::mutex> lock(mu_);
  struct stat st{};
  const auto now = std::chrono::steady_clock::now();
  bool stat_ok = ::stat(token_file_.c_str(), &st) == 0;
  long long mtime_ns = stat_ok ? (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec : -2;
  long long size = stat_ok ? (long long)st.st_size : -2;
  bool fresh = cached_mtime_ns_ == mtime_ns && cached_size_ == size && now - read_at_ < max_age_ && !cached_.empty();
  if (fresh) return cached_;
  auto text = ReadFileToString(token_file_);
  if (!text.ok()) {
    if (!cached_.empty()) return cached_;
    if (!static_token_.empty()) return static_token_;
    return text.status().WithContext("bearer token file");
  }
  std::string token = *text;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  cached_ = token;
  cached_mtime_ns_ = mtime_ns;
  cached_size_ = size;
  read_at_ = now;
  return cached_;
}

}  // namespace ringmaster::kube

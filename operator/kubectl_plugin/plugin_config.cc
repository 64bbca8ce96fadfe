#include "operator/kubectl_plugin/plugin_config.h"

#include <algorithm>
#include <filesystem>

namespace ringmaster::kubectl_plugin {

namespace {

// The loader's message on one line (a YAML error may carry a newline), with what to do about it. `paths`: the
// prefix the loader put before its message ("<paths>: "), left out since `source` names the files.
Status Explain(const Status& s, const std::string& source, const std::string& paths) {
  std::string message = s.message();
  if (!paths.empty() && message.rfind(paths + ": ", 0) == 0) message = message.substr(paths.size() + 2);
  std::replace(message.begin(), message.end(), '\n', ' ');
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      if (message.find("kubeconfig: context \"") != std::string::npos) {
        return InvalidArgumentError(message + "; `kubectl config get-contexts` lists the contexts of " + source);
      }
      return InvalidArgumentError("the kubeconfig " + source + " is not usable: " + message +
                                  "; fix it, or point --kubeconfig or KUBECONFIG at a valid one");
    case StatusCode::kFailedPrecondition:
      return FailedPreconditionError(message + " (reading " + source + "); make it readable or fix the kubeconfig");
    default: return Status(s.code(), message);
  }
}

}  // namespace

StatusOr<kube::ClientConfig> LoadPluginConfig(const PluginOptions& options, const kube::ConfigEnvironment& env) {
  StatusOr<kube::ClientConfig> config = NotFoundError("");
  std::string source, paths;
  auto from_env = env.getenv ? env.getenv("KUBECONFIG") : std::nullopt;
  if (!options.kubeconfig.empty()) {
    source = options.kubeconfig;
    auto text = kube::ReadFileToString(options.kubeconfig);
    if (!text.ok()) {
      return FailedPreconditionError("cannot read the kubeconfig " + options.kubeconfig +
                                     " given by --kubeconfig; check the path");
    }
    std::string dir = std::filesystem::path(options.kubeconfig).parent_path().string();
    config = kube::ParseKubeconfig(*text, dir.empty() ? "." : dir, options.context);
  } else if (from_env && !from_env->empty()) {
    source = "KUBECONFIG=" + *from_env;
    paths = *from_env;
    config = kube::LoadKubeconfigFiles(*from_env, options.context);
    if (config.status().code() == StatusCode::kNotFound) {
      return NotFoundError("no readable kubeconfig among KUBECONFIG=" + *from_env +
                           "; fix KUBECONFIG or pass --kubeconfig");
    }
  } else {
    if (!env.home.empty()) {
      source = paths = env.home + "/.kube/config";
      config = kube::LoadKubeconfigFiles(source, options.context);
    }
    if (config.status().code() == StatusCode::kNotFound) {
      source = "the in-cluster service account";
      config = kube::InClusterConfig(env);
      if (config.status().code() == StatusCode::kNotFound) {
        return NotFoundError(
            "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or create ~/.kube/config (kubectl config "
            "view shows what kubectl uses)");
      }
    }
  }
  if (!config.ok()) return Explain(config.status(), source, paths);
  if (!options.ns.empty()) config->namespace_name = options.ns;
  if (config->namespace_name.empty()) config->namespace_name = "default";
  return config;
}

}  // namespace ringmaster::kubectl_plugin

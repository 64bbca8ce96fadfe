// Where kubectl-ringmaster finds the cluster, by kubectl's rules: --kubeconfig, else $KUBECONFIG (a
// colon-separated list, merged: the first file to name a cluster, user or context wins), else ~/.kube/config,
// else the in-cluster service account; --context picks a context; -n/--namespace the namespace, else the
// context's, else "default". The parsing itself is kube/config.h's.
//
// Errors: one line naming the problem and what to do, for people: InvalidArgument for a malformed kubeconfig or
// an unknown context, NotFound when no configuration exists, FailedPrecondition for a file that cannot be read.
// Never throws, whatever the files hold. Thread-safety: pure but for reading the files `env` names.
#pragma once

#include <string>

#include "base/status.h"
#include "kube/config.h"
#include "operator/kubectl_plugin/plugin_options.h"

namespace ringmaster::kubectl_plugin {

// The client configuration for `options` (its kubeconfig, context and namespace); `env` is the process's
// (kube::ProcessEnvironment()) or a test's.
StatusOr<kube::ClientConfig> LoadPluginConfig(const PluginOptions& options, const kube::ConfigEnvironment& env);

}  // namespace ringmaster::kubectl_plugin

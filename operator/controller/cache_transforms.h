// What the controller's informers keep of each object (kube::InformerOptions::transform): only the
// fields reconcile, its indexes and event handlers read, so the cache of a large cluster costs little
// memory (a worker pod as the apiserver sends it, managedFields and all, is ~10x what is kept). A field
// the controller starts to read must be added here; the tests list what is kept.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

namespace ringmaster::controller {

// A worker pod: metadata (name, namespace, uid, resourceVersion, labels, annotations, ownerReferences,
// creation/deletion timestamps), spec.nodeName, status (phase, podIP, conditions' type/status/
// lastTransitionTime, containerStatuses' name and terminated state).
void SlimPod(nlohmann::json* pod);

// A node: its name, resourceVersion and the conditions' type/status/lastTransitionTime.
void SlimNode(nlohmann::json* node);

}  // namespace ringmaster::controller

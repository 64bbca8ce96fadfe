// What the controller's informers keep of each object (kube::InformerOptions::transform): only the
// fields reconcile, its indexes and event handlers read, so the cache of a large cluster costs little
// memory (a worker pod as the apiserver sends it, managedFields and all, is ~10x what is kept). A field
// the controller starts to read must be added here; the tests list what is kept.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

namespace ringmaster::controller {

// A worker pod (10,000 jobs x 8 workers are 80,000 of them, so every field counts): metadata (name, namespace,
// uid, resourceVersion, the operator's labels -- job name, worker index -- and its created-for annotation,
// deletion timestamp and grace), spec.nodeName, status (phase, podIP, the Ready condition's status and time, a
// True DisruptionTarget's reason, a False PodScheduled's reason and message, and the containers that ended
// or cannot start: name and terminated/waiting state). No apiVersion/kind, owner references, template
// labels or annotations, other conditions or running containers: nothing reads them.
void SlimPod(nlohmann::json* pod);

// A TrainingJob: all of it (reconcile reads its spec and status, and writes the status back whole) but its
// managedFields and kubectl's last-applied-configuration annotation, a second copy of the spec in every job a
// person applied. A status write sends the object back without them; the /status subresource ignores metadata.
void SlimJob(nlohmann::json* job);

// A node: its name, resourceVersion, taints and the Ready condition's type/status/lastTransitionTime.
void SlimNode(nlohmann::json* node);

}  // namespace ringmaster::controller

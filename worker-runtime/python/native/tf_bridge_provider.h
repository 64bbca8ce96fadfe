// The session's side of the TensorFlow bridge (tf_bridge.h): collectives submitted by the op library run on
// the session's current generation, and their completion is reported through the C callback.
#pragma once

#include "worker-runtime/elastic/worker_session.h"
#include "worker-runtime/python/native/tf_bridge.h"

namespace ringmaster::python {

// A bridge over `session`, which must outlive it (the Python Session owns both). Thread-safe like the
// runtime it calls: the op library submits from TensorFlow's threads.
RingmasterTfBridge MakeTfBridge(elastic::WorkerSession* session);

}  // namespace ringmaster::python

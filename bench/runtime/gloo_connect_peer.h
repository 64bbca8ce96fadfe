// The peer of ringmaster-elastic-bench's communicator phase: bare Gloo building
// a full mesh, measured in the same run, next to our parallel connect
// (worker-runtime/gloo/gloo_connect.h) in the same processes.
//
// `ranks` forked processes connect to one rendezvous store (our StoreServer,
// authenticated, served by the calling process; StoreClient + GlooStore, as the
// runtime uses them) and, per trial and per connect, leave a store barrier
// together, then time creating a Gloo TCP device on 127.0.0.1 and connecting
// under a fresh key prefix: Gloo's gloo::rendezvous::Context::connectFullMesh,
// and ConnectMesh. The two alternate which goes first from trial to trial. A
// trial's figure is the slowest rank's time, in milliseconds, as the bench's
// per-phase columns are.
//
// Errors: Unavailable when the store cannot be served or a process fails or
// times out (a rank that fails exits non-zero and its trial never completes;
// the call gives up after `timeout` per trial). Progress: none (the caller
// prints). Thread-safety: call from a single-threaded parent (it forks).
#pragma once

#include <chrono>
#include <vector>

#include "base/status.h"

namespace ringmaster::bench {

struct ConnectFigures {
  std::vector<double> gloo;  // connectFullMesh, per trial
  std::vector<double> ours;  // ConnectMesh, per trial
};

StatusOr<ConnectFigures> MeasureConnects(int ranks, int trials, std::chrono::milliseconds timeout);

}  // namespace ringmaster::bench

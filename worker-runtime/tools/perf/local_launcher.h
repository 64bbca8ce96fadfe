// Starts N ranks of one job as forked processes on loopback, with the
// rendezvous store served by rank 0 on a port picked by the kernel, and a
// fresh random job secret.
//
// The caller must not have started threads before RunLocalRanks (fork).
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "store/store_client.h"
#include "store/store_server.h"

namespace ringmaster::runtime {

struct LocalRank {
  int rank = 0;
  int size = 0;
  std::shared_ptr<StoreClient> store;  // connected to rank 0's store
};

// Runs fn in `np` child processes and waits for them. When a rank fails, the
// others are killed (they would only wait for it). Returns 0 when every rank
// returned 0, else the first failing rank's code (128+signal when killed).
int RunLocalRanks(int np, const std::function<int(LocalRank&)>& fn);

}  // namespace ringmaster::runtime

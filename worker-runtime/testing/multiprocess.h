// Test support: runs a body in N forked rank processes on loopback, with the
// rendezvous store served by rank 0, and collects how each rank ended.
//
// The parent binds the store's listening socket (127.0.0.1, port 0) before
// forking and never starts a thread or touches Gloo, so fork() is safe. In a
// child, GoogleTest EXPECT/ASSERT failures are printed as usual and turn into
// exit code 1; the parent then sees the failure through RankOutcome.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store/store_client.h"
#include "store/store_server.h"

namespace ringmaster::runtime::testing {

struct RankContext {
  int rank = 0;
  int size = 0;
  uint64_t generation = 0;
  std::string secret;
  uint16_t store_port = 0;
  std::shared_ptr<StoreClient> store;  // connected, authenticated
  StoreServer* server = nullptr;        // rank 0 only
};

struct WorldOptions {
  int size = 2;
  std::string secret = "test-job-secret";
  uint64_t generation = 1;
  std::chrono::milliseconds deadline{60000};  // whole run; children are killed after it
  bool wait_for_all_at_exit = true;           // rank 0 keeps serving until every rank is done
};

struct RankOutcome {
  int rank = 0;
  bool exited = false;  // normal exit (else killed by a signal)
  int exit_code = -1;
  int signal = 0;
  bool ok() const { return exited && exit_code == 0; }
};

// Forks options.size ranks running body(context). Returns one outcome per rank.
std::vector<RankOutcome> RunWorld(const WorldOptions& options, const std::function<void(RankContext&)>& body);

// True when every rank exited 0; otherwise a description for the test log.
std::string DescribeFailures(const std::vector<RankOutcome>& outcomes);

}  // namespace ringmaster::runtime::testing

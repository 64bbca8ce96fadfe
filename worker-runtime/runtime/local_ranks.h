// Local ranks: one job's N ranks as forked processes on this host (loopback),
// with the rendezvous store served by rank 0 on a port the kernel picks; runs a
// body in each and reports how each rank ended. The building block of
// ringmaster-perf (tools/perf), and of the tests through their GoogleTest
// adapter (testing/multiprocess.h).
//
// The parent binds the store's listening socket (127.0.0.1, port 0) before
// forking and starts no thread, so fork() is safe as long as the caller has not
// started threads either.
//
// Errors: Unavailable when the store socket cannot be bound (no rank started);
// Internal when fork fails (the ranks already started are killed and reaped).
// Ownership: the children own their store client and (rank 0) the server.
// Thread-safety: call from one thread of a process that has no other threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/store/store_client.h"
#include "worker-runtime/store/store_server.h"

namespace ringmaster::runtime {

struct RankContext {
  int rank = 0;
  int size = 0;
  uint64_t generation = 0;
  std::string secret;
  uint16_t store_port = 0;
  std::shared_ptr<store::StoreClient> store;  // connected, authenticated
  store::StoreServer* server = nullptr;       // rank 0 only
};

struct LocalRanksOptions {
  int size = 2;
  std::string secret = "test-job-secret";
  uint64_t generation = 1;
  // Whole run; ranks still running after it are killed (stopped). Zero: no deadline.
  std::chrono::milliseconds deadline{60000};
  bool wait_for_all_at_exit = true;     // rank 0 keeps serving the store until every rank is done
  bool stop_others_on_failure = false;  // a rank that fails gets the others killed (they would wait for it)
};

struct RankOutcome {
  int rank = 0;
  bool exited = false;  // normal exit (else killed by a signal)
  int exit_code = -1;
  int signal = 0;
  bool stopped = false;  // killed by RunLocalRanks: the deadline passed or another rank failed
  bool ok() const { return exited && exit_code == 0; }
  // The exit code, or 128 + signal when killed (as a shell reports it).
  int code() const { return exited ? exit_code : 128 + signal; }
  // OK, or Internal naming the rank and how it ended.
  Status status() const;
};

// Lets ASSERT_OK / EXPECT_OK (base/status_test_macros.h) take a RankOutcome
// (found by argument-dependent lookup, so it lives in RankOutcome's namespace).
inline Status StatusOf(const RankOutcome& outcome) { return outcome.status(); }

// Forks options.size ranks; rank r runs body(context) and exits with its result.
// Returns one outcome per rank, in rank order, once every rank has ended.
StatusOr<std::vector<RankOutcome>> RunLocalRanks(const LocalRanksOptions& options,
                                                 const std::function<int(RankContext&)>& body);

// The failing ranks and how they ended, for a log line; empty when all are OK.
std::string DescribeFailures(const std::vector<RankOutcome>& outcomes);

// The code of the first rank that failed on its own (not stopped by us), else
// of the first failed one, else 0.
int FirstFailureCode(const std::vector<RankOutcome>& outcomes);

}  // namespace ringmaster::runtime

// OperatorReplicas: two ringmaster-operator processes with leader election (a 4 s lease, as the chart's
// test values), for e2e tests and the soak that crash the leader: which one leads, kill it as a crash
// would (the lease is not released), wait for the other to take over, start the dead one again as the
// new standby. Not thread-safe: one test thread drives it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"
#include "tests/support/background_process.h"
#include "tests/support/cluster_test.h"
#include "tests/support/operator_process.h"

namespace ringmaster::testing {

class OperatorReplicas {
 public:
  static constexpr char kLease[] = "ringmaster";

  // Starts replica-a and replica-b against `cluster` for namespace `ns`, logging to <log_prefix>-a.log and -b.log.
  Status Start(const std::string& binary, const TestCluster& cluster, const std::string& ns,
               const std::string& log_prefix) {
    binary_ = binary;
    cluster_ = &cluster;
    ns_ = ns;
    log_prefix_ = log_prefix;
    RINGMASTER_RETURN_IF_ERROR(StartReplica(0));
    return StartReplica(1);
  }

  // The lease's holder ("replica-a" or "replica-b") once there is one. DeadlineExceeded after `timeout`.
  StatusOr<std::string> Holder(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::string holder;
    Status s = WaitFor("a lease holder", timeout, [&](std::string* last) {
      auto lease = cluster_->KubectlJson({"get", "lease", kLease, "-n", ns_});
      holder = lease.ok() ? (*lease)["spec"].value("holderIdentity", "") : "";
      *last = lease.ok() ? "holder '" + holder + "'" : lease.status().ToString();
      return (holder == kNames[0] || holder == kNames[1]) && processes_[Index(holder)].Running();
    });
    if (!s.ok()) return s;
    return holder;
  }

  // SIGKILLs the leader and waits until the other replica holds the lease; returns the handover's
  // seconds. The killed one stays down until Restart().
  StatusOr<double> KillLeader() {
    RINGMASTER_ASSIGN_OR_RETURN(std::string leader, Holder());
    const std::string standby = kNames[1 - Index(leader)];
    if (!processes_[Index(standby)].Running()) {
      return FailedPreconditionError("the standby " + standby + " is not running: RestartExited() first");
    }
    const auto killed_at = std::chrono::steady_clock::now();
    processes_[Index(leader)].Kill();
    killed_ = Index(leader);
    RINGMASTER_RETURN_IF_ERROR(
        WaitFor("the standby " + standby + " to take the lease", std::chrono::seconds(30), [&](std::string* last) {
          auto lease = cluster_->KubectlJson({"get", "lease", kLease, "-n", ns_});
          *last = lease.ok() ? (*lease)["spec"].value("holderIdentity", "") : lease.status().ToString();
          return *last == standby;
        }));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  }

  // Starts again every replica whose process exited, as the kubelet restarts a Deployment's pod (a
  // replica that loses its lease, e.g. across an apiserver restart, exits on purpose to rejoin as a
  // candidate). Returns the names it restarted.
  StatusOr<std::vector<std::string>> RestartExited() {
    std::vector<std::string> restarted;
    for (int i = 0; i < 2; ++i) {
      if (i == killed_ || processes_[i].Running()) continue;
      RINGMASTER_RETURN_IF_ERROR(StartReplica(i));
      restarted.push_back(kNames[i]);
    }
    return restarted;
  }

  // Starts the replica KillLeader() killed again (it becomes the standby). OK when none was killed.
  Status Restart() {
    if (killed_ < 0) return Status::Ok();
    const int i = killed_;
    killed_ = -1;
    return StartReplica(i);
  }

  // Both replicas' logs, for a failure's message.
  std::string Logs() {
    return "---- replica-a ----\n" + processes_[0].Log() + "\n---- replica-b ----\n" + processes_[1].Log() + "\n";
  }

  void Stop() {
    for (auto& p : processes_) p.Stop(std::chrono::seconds(5));
  }

 private:
  static constexpr const char* kNames[2] = {"replica-a", "replica-b"};
  static int Index(const std::string& name) { return name == kNames[0] ? 0 : 1; }

  Status StartReplica(int i) {
    std::vector<std::string> flags = {"--leader-elect",
                                      "--leader-election-namespace",
                                      ns_,
                                      "--leader-election-id",
                                      kLease,
                                      "--lease-duration",
                                      "4s",
                                      "--renew-deadline",
                                      "3s",
                                      "--retry-period",
                                      "1s",
                                      "--identity",
                                      kNames[i]};
    return StartOperatorProcess(&processes_[i], binary_, *cluster_, ns_, log_prefix_ + (i == 0 ? "-a.log" : "-b.log"),
                                flags);
  }

  std::string binary_, ns_, log_prefix_;
  const TestCluster* cluster_ = nullptr;
  BackgroundProcess processes_[2];
  int killed_ = -1;  // the replica KillLeader() killed and Restart() has not started again
};

}  // namespace ringmaster::testing

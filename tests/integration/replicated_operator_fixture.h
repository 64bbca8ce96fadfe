// ReplicatedOperatorWorkersTest: elastic_workers_fixture.h's job under two operator replicas with leader
// election (operator_replicas.h) instead of one operator, with every membership the job shows recorded by a
// watch of the test's own (membership_history.h). For the failover e2e tests and the soak.
#pragma once

#include <iostream>
#include <memory>

#include "tests/integration/elastic_workers_fixture.h"
#include "tests/integration/membership_history.h"
#include "tests/integration/operator_replicas.h"

namespace ringmaster::testing {

class ReplicatedOperatorWorkersTest : public ElasticWorkersE2eTest {
 protected:
  void StartOperator() override {
    Status started = replicas_.Start(RINGMASTER_OPERATOR_BIN, cluster_, ns_, out_ + "/operator");
    ASSERT_OK(started) << started;
    auto history = MembershipHistory::Watch(cluster_.kubeconfig(), ns_, kJob);
    ASSERT_OK(history) << history.status();
    history_ = std::move(history).value();
  }

  void TearDown() override {
    if (HasFailure()) std::cerr << replicas_.Logs();
    replicas_.Stop();
    history_.reset();
    ElasticWorkersE2eTest::TearDown();
  }

  OperatorReplicas replicas_;  // in place of the fixture's one operator
  std::unique_ptr<MembershipHistory> history_;
};

}  // namespace ringmaster::testing

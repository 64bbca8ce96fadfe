// Test support: a Communicator that hands every call to another one, for a test to override the call it wants to
// fail or falsify (a rank's own failure after negotiation, an OK holding a partial result). Header-only; test code
// only.
//
// Ownership: owns `inner`. Thread-safety: as `inner`'s.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "worker-runtime/comm/communicator.h"

namespace ringmaster::runtime_testing {

class ForwardingCommunicator : public comm::Communicator {
 public:
  explicit ForwardingCommunicator(std::unique_ptr<comm::Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  comm::Backend backend() const override { return inner_->backend(); }
  comm::MemoryKind memory() const override { return inner_->memory(); }
  void Abort(const std::string& reason) override { inner_->Abort(reason); }
  Status health() const override { return inner_->health(); }

 protected:
  Status DoAllreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override {
    return inner_->Allreduce(in, out, count, type, op);
  }
  Status DoAllgather(const void* in, void* out, size_t count, common::DataType type) override {
    return inner_->Allgather(in, out, count, type);
  }
  Status DoAllgatherv(const void* in, void* out, const std::vector<size_t>& counts, common::DataType type) override {
    return inner_->Allgatherv(in, out, counts, type);
  }
  Status DoBroadcast(const void* in, void* out, size_t count, common::DataType type, int root) override {
    return inner_->Broadcast(in, out, count, type, root);
  }
  Status DoReduceScatter(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) override {
    return inner_->ReduceScatter(in, out, count, type, op);
  }
  Status DoAlltoall(const void* in, void* out, size_t count, common::DataType type) override {
    return inner_->Alltoall(in, out, count, type);
  }
  Status DoBarrier() override { return inner_->Barrier(); }
  StatusOr<std::unique_ptr<comm::Communicator>> DoSplit(const std::vector<int>& ranks,
                                                        const std::string& name) override {
    return inner_->Split(ranks, name);
  }
  StatusOr<std::unique_ptr<comm::Transfer>> DoPostSend(const void* buf, size_t bytes, int peer, uint32_t tag) override {
    return inner_->PostSend(buf, bytes, peer, tag);
  }
  StatusOr<std::unique_ptr<comm::Transfer>> DoPostRecv(void* buf, size_t bytes, int peer, uint32_t tag) override {
    return inner_->PostRecv(buf, bytes, peer, tag);
  }

  comm::Communicator& inner() { return *inner_; }

 private:
  std::unique_ptr<comm::Communicator> inner_;
};

}  // namespace ringmaster::runtime_testing

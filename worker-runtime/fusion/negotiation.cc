#include "worker-runtime/fusion/negotiation.h"

namespace ringmaster::fusion {

StatusOr<size_t> AgreeOnCount(comm::Communicator& control, size_t local_pending) {
  int64_t n = static_cast<int64_t>(local_pending);
  RINGMASTER_RETURN_IF_ERROR(control.Allreduce(&n, &n, 1, common::DataType::kInt64, common::ReduceOp::kMin));
  return static_cast<size_t>(n);
}

Status VerifySameRequests(comm::Communicator& control, const std::vector<Request*>& requests,
                          const std::string& set_name) {
  const size_t k = requests.size();
  if (k == 0) return Status::Ok();
  // min over ranks of h and of -h: equal (negated) exactly when every rank has the same h.
  std::vector<int64_t> v(2 * k);
  for (size_t i = 0; i < k; ++i) {
    int64_t h = static_cast<int64_t>(requests[i]->Fingerprint() & 0x3fffffffffffffffull);
    v[i] = h;
    v[k + i] = -h;
  }
  RINGMASTER_RETURN_IF_ERROR(
      control.Allreduce(v.data(), v.data(), v.size(), common::DataType::kInt64, common::ReduceOp::kMin));
  for (size_t i = 0; i < k; ++i) {
    if (v[i] != -v[k + i]) {
      return FailedPreconditionError(
          "collective mismatch in process set '" + set_name + "': at position " + std::to_string(i) +
          " of a batch of " + std::to_string(k) + ", rank " + std::to_string(control.rank()) + " submitted " +
          requests[i]->Describe() +
          " but another rank submitted something else; every rank must submit the same collectives in the same order");
    }
  }
  return Status::Ok();
}

}  // namespace ringmaster::fusion

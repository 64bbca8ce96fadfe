#include "worker-runtime/fusion/negotiation.h"

#include <unordered_map>
#include <unordered_set>

namespace ringmaster::fusion {

namespace {

// Fingerprints folded to 62 bits, so that h and -h both fit an int64.
int64_t Folded(uint64_t h) { return static_cast<int64_t>(h & 0x3fffffffffffffffull); }

// The first position where the ranks' requests differ (the same on every rank), or k when none does.
StatusOr<size_t> FirstDifference(comm::Communicator& control, const std::vector<Request*>& requests) {
  const size_t k = requests.size();
  if (k == 0) return k;
  // min over ranks of h and of -h: equal (negated) exactly when every rank has the same h.
  std::vector<int64_t> v(2 * k);
  for (size_t i = 0; i < k; ++i) {
    int64_t h = Folded(requests[i]->Fingerprint());
    v[i] = h;
    v[k + i] = -h;
  }
  RINGMASTER_RETURN_IF_ERROR(
      control.Allreduce(v.data(), v.data(), v.size(), common::DataType::kInt64, common::ReduceOp::kMin));
  for (size_t i = 0; i < k; ++i) {
    if (v[i] != -v[k + i]) return i;
  }
  return k;
}

// FNV-1a of the name alone: what MatchByName matches on.
int64_t NameKey(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return Folded(h);
}

}  // namespace

StatusOr<bool> SameRequests(comm::Communicator& control, const std::vector<Request*>& requests) {
  RINGMASTER_ASSIGN_OR_RETURN(size_t first, FirstDifference(control, requests));
  return first == requests.size();
}

StatusOr<Agreement> Agree(comm::Communicator& control, const std::vector<Request*>& queued, int64_t vote) {
  // min over ranks of: the count, then h and -h of each of the first kAgreeAtOnce requests (as FirstDifference),
  // then the vote. A rank pads past its own queue; those positions are past the agreed count, which is at most
  // its own.
  constexpr size_t k = kAgreeAtOnce;
  std::vector<int64_t> v(2 + 2 * k, 0);
  v[0] = static_cast<int64_t>(queued.size());
  v[1 + 2 * k] = vote;
  for (size_t i = 0; i < k && i < queued.size(); ++i) {
    const int64_t h = Folded(queued[i]->Fingerprint());
    v[1 + i] = h;
    v[1 + k + i] = -h;
  }
  RINGMASTER_RETURN_IF_ERROR(
      control.Allreduce(v.data(), v.data(), v.size(), common::DataType::kInt64, common::ReduceOp::kMin));
  Agreement a;
  a.count = static_cast<size_t>(v[0]);
  a.vote = v[1 + 2 * k];
  if (a.count > k) {
    // Every rank sees the same count, so every rank takes this branch (one more allreduce, as before).
    RINGMASTER_ASSIGN_OR_RETURN(a.same,
                                SameRequests(control, std::vector<Request*>(queued.begin(), queued.begin() + a.count)));
    return a;
  }
  for (size_t i = 0; i < a.count; ++i) a.same = a.same && v[1 + i] == -v[1 + k + i];
  return a;
}

StatusOr<std::vector<size_t>> MatchByName(comm::Communicator& control, const std::vector<Request*>& queued) {
  const int n = control.size();
  std::vector<int64_t> keys;
  std::unordered_map<int64_t, size_t> local;  // key -> first index in `queued`
  for (size_t i = 0; i < queued.size(); ++i) {
    const int64_t key = NameKey(queued[i]->name);
    if (local.emplace(key, i).second) keys.push_back(key);
  }
  int64_t mine = static_cast<int64_t>(keys.size());
  std::vector<int64_t> lengths(n);
  RINGMASTER_RETURN_IF_ERROR(control.Allgather(&mine, lengths.data(), 1, common::DataType::kInt64));
  std::vector<size_t> counts(n);
  size_t total = 0;
  for (int r = 0; r < n; ++r) total += counts[r] = static_cast<size_t>(lengths[r]);
  std::vector<int64_t> all(total);
  RINGMASTER_RETURN_IF_ERROR(control.Allgatherv(keys.data(), all.data(), counts, common::DataType::kInt64));
  // How many ranks queued each key; a key every rank queued matches.
  std::unordered_map<int64_t, int> ranks_with;
  for (int64_t key : all) ++ranks_with[key];  // keys are unique within a rank's list
  std::vector<size_t> matched;
  for (size_t i = 0; i < counts[0]; ++i) {  // rank 0's list comes first: its order is the run order
    const int64_t key = all[i];
    if (ranks_with[key] == n) matched.push_back(local.at(key));
  }
  return matched;
}

Status VerifySameRequests(comm::Communicator& control, const std::vector<Request*>& requests,
                          const std::string& set_name) {
  const size_t k = requests.size();
  RINGMASTER_ASSIGN_OR_RETURN(size_t i, FirstDifference(control, requests));
  if (i == k) return Status::Ok();
  return FailedPreconditionError(
      "collective mismatch in process set '" + set_name + "': at position " + std::to_string(i) + " of a batch of " +
      std::to_string(k) + ", rank " + std::to_string(control.rank()) + " submitted " + requests[i]->Describe() +
      " but another rank submitted a different collective under that name; every rank must give a name to the "
      "same collective (the same kind, type, op and element count)");
}

}  // namespace ringmaster::fusion

// Runtime: subgroups built by their members alone, and point-to-point transfers (runtime.h).
#include <algorithm>

#include "worker-runtime/comm/validate.h"
#include "worker-runtime/runtime/runtime.h"

namespace ringmaster::runtime {

StatusOr<int> Runtime::AddGroup(std::vector<int> ranks, const std::string& key, fusion::Ordering ordering) {
  RINGMASTER_RETURN_IF_ERROR(comm::CheckSubset(ranks, size_));
  if (key.empty() || key.find('/') != std::string::npos) {
    return InvalidArgumentError("group key '" + key + "': want a non-empty name without '/'");
  }
  auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (me == ranks.end())
    return FailedPreconditionError("rank " + std::to_string(rank_) + " is not in group '" + key + "'");
  const int group_rank = static_cast<int>(me - ranks.begin());
  const int group_size = static_cast<int>(ranks.size());
  int id;
  std::string prefix;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_set_id_++;
    prefix = config_.name + "/group/" + key + "#" + std::to_string(group_keys_[key]++);
  }
  RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> made,
                              NewCommunicator(config_, backend_, store_, group_rank, group_size, prefix));
  std::shared_ptr<comm::Communicator> data(std::move(made));
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<comm::Communicator> control,
                              ControlChannel(config_, store_, data, prefix + "-control"));
  const std::string name = "group:" + key;
  RINGMASTER_RETURN_IF_ERROR(sets_.Add(
      process_sets::ProcessSet{id, name, std::move(ranks),
                               std::make_shared<fusion::Engine>(data, control, EngineOptionsFor(id, name, ordering))}));
  return id;
}

StatusOr<std::unique_ptr<comm::Transfer>> Runtime::SendAsync(const void* buf, size_t bytes, int peer, uint32_t tag,
                                                             int set) {
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<fusion::Engine> engine, sets_.EngineFor(set));
  return engine->control()->PostSend(buf, bytes, peer, tag);
}

StatusOr<std::unique_ptr<comm::Transfer>> Runtime::RecvAsync(void* buf, size_t bytes, int peer, uint32_t tag, int set) {
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<fusion::Engine> engine, sets_.EngineFor(set));
  return engine->control()->PostRecv(buf, bytes, peer, tag);
}

}  // namespace ringmaster::runtime

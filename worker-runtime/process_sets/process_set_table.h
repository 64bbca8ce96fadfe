// The process sets of one runtime: id -> ranks and, on members, the engine
// that runs the set's collectives. Id 0 is the world.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker-runtime/fusion/engine.h"

namespace ringmaster::process_sets {

struct ProcessSet {
  int id = 0;
  std::string name;
  std::vector<int> ranks;                  // world ranks, sorted
  std::shared_ptr<fusion::Engine> engine;  // null on ranks outside the set
};

class ProcessSetTable {
 public:
  explicit ProcessSetTable(int world_rank) : world_rank_(world_rank) {}

  // Errors: AlreadyExists when the id is taken.
  Status Add(ProcessSet set);
  // Removes the set and returns it (its engine stops when the last user lets go).
  // Errors: InvalidArgument for id 0 or an unknown id.
  StatusOr<ProcessSet> Remove(int id);
  // The engine to run a collective of set `id` on this rank.
  // Errors: InvalidArgument (no such set), FailedPrecondition (this rank is
  // not a member; the message names the set and its ranks).
  StatusOr<std::shared_ptr<fusion::Engine>> EngineFor(int id) const;
  // Errors: InvalidArgument (no such set).
  StatusOr<std::vector<int>> Ranks(int id) const;
  std::vector<int> Ids() const;
  // Every set, for shutdown.
  std::vector<ProcessSet> TakeAll();

 private:
  // Constant after construction.
  const int world_rank_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  std::map<int, ProcessSet> sets_;
};

}  // namespace ringmaster::process_sets

// The tags of a mesh's messages: a kind in the top byte, a sequence number or id below. Every
// operation of a communicator has its own tags (collectives numbered in call order, sends and
// receives per peer pair, management exchanges by the child's id), so messages never mix.
#pragma once

#include <cstdint>

namespace gpuemu {

enum class TagKind : uint8_t {
  kCollScatter = 1,  // a collective's first phase
  kCollGather = 2,   // its second phase (allreduce)
  kP2p = 3,          // ncclSend/ncclRecv
  kSplitInfo = 4,    // ncclCommSplit's (color, key) exchange
  kChildAddr = 5,    // a child communicator's listening addresses
  kGrowHandle = 6,   // the grow root's id, from ncclCommGetUniqueId
};

constexpr uint64_t MakeTag(TagKind kind, uint64_t seq) {
  return (static_cast<uint64_t>(kind) << 56) | (seq & ((uint64_t{1} << 56) - 1));
}

}  // namespace gpuemu

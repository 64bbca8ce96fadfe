#include "worker-runtime/python/native/tf_bridge_provider.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "worker-runtime/common/dtype.h"
#include "worker-runtime/runtime/runtime.h"

namespace ringmaster::python {
namespace {

using common::DataType;
using common::ReduceOp;

void Fail(RingmasterTfDone done, void* arg, const Status& s) {
  done(arg, static_cast<int>(s.code()), s.message().c_str());
}

StatusOr<DataType> TypeOf(int dtype) {
  for (DataType t : common::kAllDataTypes) {
    if (static_cast<int>(t) == dtype) return t;
  }
  return InvalidArgumentError("TensorFlow bridge: unknown data type code " + std::to_string(dtype));
}

StatusOr<ReduceOp> OpOf(int op) {
  for (ReduceOp o : common::kAllReduceOps) {
    if (static_cast<int>(o) == op) return o;
  }
  return InvalidArgumentError("TensorFlow bridge: unknown reduce op code " + std::to_string(op));
}

runtime::Runtime* RuntimeOf(void* session) { return static_cast<elastic::WorkerSession*>(session)->runtime(); }

Status NotInitialized() {
  return FailedPreconditionError("ringmaster is not initialized: call ringmaster.tensorflow.init() first");
}

void Submit(void* session, const RingmasterTfRequest* r, RingmasterTfDone done, void* arg) {
  runtime::Runtime* rt = RuntimeOf(session);
  if (rt == nullptr) return Fail(done, arg, NotInitialized());
  StatusOr<DataType> type = TypeOf(r->dtype);
  if (!type.ok()) return Fail(done, arg, type.status());
  std::string name = r->name != nullptr ? r->name : "";
  fusion::Handle h;
  switch (r->kind) {
    case RINGMASTER_TF_ALLREDUCE:
    case RINGMASTER_TF_REDUCESCATTER: {
      StatusOr<ReduceOp> op = OpOf(r->op);
      if (!op.ok()) return Fail(done, arg, op.status());
      h = r->kind == RINGMASTER_TF_ALLREDUCE
              ? rt->AllreduceAsync(std::move(name), r->in, r->out, r->count, *type, *op, r->process_set)
              : rt->ReduceScatterAsync(std::move(name), r->in, r->out, r->count, *type, *op, r->process_set);
      break;
    }
    case RINGMASTER_TF_ALLGATHERV: {
      if (r->counts == nullptr && r->num_counts != 0) {
        return Fail(done, arg, InvalidArgumentError("TensorFlow bridge: allgatherv without its counts"));
      }
      std::vector<size_t> counts(r->counts, r->counts + r->num_counts);
      h = rt->AllgathervAsync(std::move(name), r->in, r->out, std::move(counts), *type, r->process_set);
      break;
    }
    case RINGMASTER_TF_BROADCAST:
      h = rt->BroadcastAsync(std::move(name), r->in, r->out, r->count, *type, r->root, r->process_set);
      break;
    case RINGMASTER_TF_ALLTOALL:
      h = rt->AlltoallAsync(std::move(name), r->in, r->out, r->count, *type, r->process_set);
      break;
    default:
      return Fail(done, arg,
                  InvalidArgumentError("TensorFlow bridge: unknown collective kind " + std::to_string(r->kind)));
  }
  h.OnDone([done, arg](const Status& s) { Fail(done, arg, s); });
}

int SetInfo(void* session, int process_set, int* size, int* rank, char* err, size_t err_len) {
  auto report = [&](const Status& s) {
    if (err != nullptr && err_len > 0) {
      const size_t n = std::min(err_len - 1, s.message().size());
      std::memcpy(err, s.message().data(), n);
      err[n] = '\0';
    }
    return static_cast<int>(s.code());
  };
  runtime::Runtime* rt = RuntimeOf(session);
  if (rt == nullptr) return report(NotInitialized());
  StatusOr<std::vector<int>> ranks = rt->ProcessSetRanks(process_set);
  if (!ranks.ok()) return report(ranks.status());
  StatusOr<int> r = rt->ProcessSetRank(process_set);
  if (!r.ok()) return report(r.status());
  *size = static_cast<int>(ranks->size());
  *rank = *r;
  return 0;
}

}  // namespace

RingmasterTfBridge MakeTfBridge(elastic::WorkerSession* session) {
  return RingmasterTfBridge{RINGMASTER_TF_BRIDGE_ABI, session, &Submit, &SetInfo};
}

}  // namespace ringmaster::python

// The kernels of ringmaster's TensorFlow op library (ops in ops.cc). Each is asynchronous, as Horovod's
// are: it allocates its output, submits the collective to the worker session through the bridge and
// returns; the runtime's engine calls TensorFlow's done callback when the collective finishes. No
// TensorFlow thread waits on a collective, so independent collectives of one graph never starve each other
// of threads while the runtime negotiates their order across ranks.
#include <string>
#include <vector>

#include "tensorflow/core/framework/device.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"
#include "worker-runtime/python/tensorflow_ops/bridge_client.h"

namespace ringmaster::tensorflow_ops {
namespace {

using ::tensorflow::AsyncOpKernel;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;

// common::DataType's code for a TensorFlow type (tf_bridge.h). Data movement also takes the one-byte types
// the runtime has no arithmetic for (int8, bool), moved as bytes.
absl::StatusOr<int> TypeCode(::tensorflow::DataType t, bool movement) {
  switch (t) {
    case ::tensorflow::DT_FLOAT: return 0;
    case ::tensorflow::DT_DOUBLE: return 1;
    case ::tensorflow::DT_HALF: return 2;
    case ::tensorflow::DT_BFLOAT16: return 3;
    case ::tensorflow::DT_INT32: return 4;
    case ::tensorflow::DT_INT64: return 5;
    case ::tensorflow::DT_UINT8: return 6;
    case ::tensorflow::DT_INT8:
    case ::tensorflow::DT_BOOL:
      if (movement) return 6;
      break;
    default: break;
  }
  return absl::InvalidArgumentError("ringmaster: tensors of type " + ::tensorflow::DataTypeString(t) +
                                    " are not supported by this collective");
}

// Runs `submit` once the tensors it reads hold their values: at once on the CPU; on a GPU after the ops
// TensorFlow queued on its stream so far have run (the runtime hands device buffers to NCCL, which does not
// know TensorFlow's stream). The runtime completes a GPU collective only once NCCL's stream has finished,
// so TensorFlow's later work sees the result.
void WhenInputsReady(OpKernelContext* ctx, std::function<void()> submit) {
  auto* device_context = ctx->op_device_context();
  if (device_context == nullptr || device_context->stream() == nullptr) return submit();
  absl::Status s = device_context->ThenExecute(static_cast<::tensorflow::Device*>(ctx->device()),
                                               device_context->stream(), std::move(submit));
  if (!s.ok()) ctx->SetStatus(s);  // ThenExecute did not take `submit`: the caller's done still runs
}

// What every collective kernel shares: its process set, its name and the bridge.
class CollectiveKernel : public AsyncOpKernel {
 public:
  explicit CollectiveKernel(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("process_set", &process_set_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) final {
    absl::StatusOr<const RingmasterTfBridge*> bridge = Bridge();
    OP_REQUIRES_OK_ASYNC(ctx, bridge.status(), done);
    const Tensor& name_input = ctx->input(ctx->num_inputs() - 1);
    OP_REQUIRES_ASYNC(ctx, ::tensorflow::TensorShapeUtils::IsScalar(name_input.shape()),
                      absl::InvalidArgumentError("ringmaster: tensor_name must be a scalar string"), done);
    std::string name(name_input.scalar<::tensorflow::tstring>()());
    // Unnamed: the node's name, which is the same on every rank for the same graph (the Python API names
    // eager calls itself).
    if (name.empty()) name = this->name();
    int size = 0, rank = 0;
    OP_REQUIRES_OK_ASYNC(ctx, SetInfo(**bridge, process_set_, &size, &rank), done);
    Start(ctx, std::move(done), **bridge, std::move(name), size, rank);
  }

 protected:
  // Allocates the outputs, then submits (WhenInputsReady) and owns `done` from here on.
  virtual void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name,
                     int size, int rank) = 0;

  // Submits one request and completes the kernel when it finishes.
  void SubmitOne(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name,
                 RingmasterTfRequest request, std::vector<size_t> counts = {}) {
    auto* completion = new KernelCompletion(ctx, std::move(done), name, 1);
    WhenInputsReady(ctx, [&bridge, completion, request, name = std::move(name), counts = std::move(counts)]() mutable {
      request.name = name.c_str();
      request.counts = counts.empty() ? nullptr : counts.data();
      request.num_counts = counts.size();
      // The runtime copies what it keeps of the request (name, counts) before submit returns.
      bridge.submit(bridge.session, &request, &KernelCompletion::OnPart, completion);
      completion->Release();
    });
  }

  RingmasterTfRequest Request(int kind, const Tensor& in, Tensor* out, size_t count, int type) const {
    RingmasterTfRequest r{};
    r.kind = kind;
    r.in = in.tensor_data().data();
    r.out = const_cast<char*>(out->tensor_data().data());
    r.count = count;
    r.dtype = type;
    r.process_set = process_set_;
    return r;
  }

  int process_set_ = 0;
};

class AllreduceKernel : public CollectiveKernel {
 public:
  explicit AllreduceKernel(OpKernelConstruction* c) : CollectiveKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &reduce_op_));
  }

 private:
  void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name, int,
             int) override {
    const Tensor& in = ctx->input(0);
    absl::StatusOr<int> type = TypeCode(in.dtype(), false);
    OP_REQUIRES_OK_ASYNC(ctx, type.status(), done);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    RingmasterTfRequest r = Request(RINGMASTER_TF_ALLREDUCE, in, out, in.NumElements(), *type);
    r.op = reduce_op_;
    SubmitOne(ctx, std::move(done), bridge, std::move(name), r);
  }

  int reduce_op_ = 0;
};

// Every tensor of the list submitted back to back, as "<name>.<i>", so the runtime fuses them into as few
// collectives as its fusion threshold allows.
class GroupedAllreduceKernel : public CollectiveKernel {
 public:
  explicit GroupedAllreduceKernel(OpKernelConstruction* c) : CollectiveKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &reduce_op_));
  }

 private:
  void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name, int,
             int) override {
    const int n = ctx->num_inputs() - 1;
    std::vector<RingmasterTfRequest> requests;
    for (int i = 0; i < n; ++i) {
      const Tensor& in = ctx->input(i);
      absl::StatusOr<int> type = TypeCode(in.dtype(), false);
      OP_REQUIRES_OK_ASYNC(ctx, type.status(), done);
      Tensor* out = nullptr;
      OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(i, in.shape(), &out), done);
      requests.push_back(Request(RINGMASTER_TF_ALLREDUCE, in, out, in.NumElements(), *type));
      requests.back().op = reduce_op_;
    }
    auto* completion = new KernelCompletion(ctx, std::move(done), name, n);
    WhenInputsReady(ctx, [&bridge, completion, requests = std::move(requests), name = std::move(name)]() mutable {
      for (size_t i = 0; i < requests.size(); ++i) {
        const std::string part = name + "." + std::to_string(i);
        requests[i].name = part.c_str();
        bridge.submit(bridge.session, &requests[i], &KernelCompletion::OnPart, completion);
      }
      completion->Release();
    });
  }

  int reduce_op_ = 0;
};

// The shape of a gathered tensor: `rows` along the first dimension, the input's other dimensions.
TensorShape WithRows(const TensorShape& in, int64_t rows) {
  TensorShape out = in;
  out.set_dim(0, rows);
  return out;
}

// Elements per row of the first dimension (the product of the other dimensions).
int64_t RowElements(const TensorShape& s) {
  int64_t n = 1;
  for (int d = 1; d < s.dims(); ++d) n *= s.dim_size(d);
  return n;
}

// Allgather of equal shapes: every rank contributes the same count.
class AllgatherKernel : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;

 private:
  void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name, int size,
             int) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_ASYNC(ctx, in.dims() >= 1, absl::InvalidArgumentError("ringmaster allgather: cannot gather a scalar"),
                      done);
    absl::StatusOr<int> type = TypeCode(in.dtype(), true);
    OP_REQUIRES_OK_ASYNC(ctx, type.status(), done);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, WithRows(in.shape(), in.dim_size(0) * size), &out), done);
    RingmasterTfRequest r = Request(RINGMASTER_TF_ALLGATHERV, in, out, 0, *type);
    SubmitOne(ctx, std::move(done), bridge, std::move(name), r,
              std::vector<size_t>(size, static_cast<size_t>(in.NumElements())));
  }
};

// Allgather of first dimensions that differ: first_dims (host memory) holds every rank's.
class AllgathervKernel : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;

 private:
  void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name, int size,
             int rank) override {
    const Tensor& in = ctx->input(0);
    const Tensor& dims = ctx->input(1);
    OP_REQUIRES_ASYNC(ctx, in.dims() >= 1, absl::InvalidArgumentError("ringmaster allgather: cannot gather a scalar"),
                      done);
    OP_REQUIRES_ASYNC(ctx, dims.dims() == 1 && dims.NumElements() == size,
                      absl::InvalidArgumentError("ringmaster allgather: first_dims must hold one entry per rank of the "
                                                 "process set (" +
                                                 std::to_string(size) + ")"),
                      done);
    auto first = dims.flat<int64_t>();
    OP_REQUIRES_ASYNC(ctx, first(rank) == in.dim_size(0),
                      absl::InvalidArgumentError("ringmaster allgather: first_dims[" + std::to_string(rank) +
                                                 "] is not this rank's first dimension"),
                      done);
    absl::StatusOr<int> type = TypeCode(in.dtype(), true);
    OP_REQUIRES_OK_ASYNC(ctx, type.status(), done);
    const int64_t row = RowElements(in.shape());
    std::vector<size_t> counts(size);
    int64_t rows = 0;
    for (int i = 0; i < size; ++i) {
      OP_REQUIRES_ASYNC(ctx, first(i) >= 0, absl::InvalidArgumentError("ringmaster allgather: a negative first_dims"),
                        done);
      counts[i] = static_cast<size_t>(first(i) * row);
      rows += first(i);
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, WithRows(in.shape(), rows), &out), done);
    RingmasterTfRequest r = Request(RINGMASTER_TF_ALLGATHERV, in, out, 0, *type);
    SubmitOne(ctx, std::move(done), bridge, std::move(name), r, std::move(counts));
  }
};

class BroadcastKernel : public CollectiveKernel {
 public:
  explicit BroadcastKernel(OpKernelConstruction* c) : CollectiveKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root_));
  }

 private:
  void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name, int size,
             int) override {
    OP_REQUIRES_ASYNC(
        ctx, root_ >= 0 && root_ < size,
        absl::InvalidArgumentError("ringmaster broadcast: root_rank " + std::to_string(root_) +
                                   " is not a rank of the process set (size " + std::to_string(size) + ")"),
        done);
    const Tensor& in = ctx->input(0);
    absl::StatusOr<int> type = TypeCode(in.dtype(), true);
    OP_REQUIRES_OK_ASYNC(ctx, type.status(), done);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    RingmasterTfRequest r = Request(RINGMASTER_TF_BROADCAST, in, out, in.NumElements(), *type);
    r.root = root_;
    SubmitOne(ctx, std::move(done), bridge, std::move(name), r);
  }

  int root_ = 0;
};

// Reduce-scatter and alltoall split the first dimension into `size` equal chunks.
absl::Status CheckEqualChunks(const Tensor& in, int size, const char* what) {
  if (in.dims() < 1 || in.dim_size(0) % size != 0) {
    return absl::InvalidArgumentError(std::string("ringmaster ") + what + ": the first dimension (" +
                                      (in.dims() < 1 ? std::string("a scalar") : std::to_string(in.dim_size(0))) +
                                      ") must be divisible by the process set's size (" + std::to_string(size) + ")");
  }
  return absl::OkStatus();
}

class ReducescatterKernel : public CollectiveKernel {
 public:
  explicit ReducescatterKernel(OpKernelConstruction* c) : CollectiveKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &reduce_op_));
  }

 private:
  void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name, int size,
             int) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK_ASYNC(ctx, CheckEqualChunks(in, size, "reducescatter"), done);
    absl::StatusOr<int> type = TypeCode(in.dtype(), false);
    OP_REQUIRES_OK_ASYNC(ctx, type.status(), done);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, WithRows(in.shape(), in.dim_size(0) / size), &out), done);
    RingmasterTfRequest r = Request(RINGMASTER_TF_REDUCESCATTER, in, out, out->NumElements(), *type);
    r.op = reduce_op_;
    SubmitOne(ctx, std::move(done), bridge, std::move(name), r);
  }

  int reduce_op_ = 0;
};

class AlltoallKernel : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;

 private:
  void Start(OpKernelContext* ctx, DoneCallback done, const RingmasterTfBridge& bridge, std::string name, int size,
             int) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK_ASYNC(ctx, CheckEqualChunks(in, size, "alltoall"), done);
    absl::StatusOr<int> type = TypeCode(in.dtype(), true);
    OP_REQUIRES_OK_ASYNC(ctx, type.status(), done);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    RingmasterTfRequest r = Request(RINGMASTER_TF_ALLTOALL, in, out, in.NumElements() / size, *type);
    SubmitOne(ctx, std::move(done), bridge, std::move(name), r);
  }
};

// size / rank: read from the session when the op runs (they change with the membership).
template <bool kRank>
class SetQueryKernel : public OpKernel {
 public:
  explicit SetQueryKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("process_set", &process_set_));
  }
  void Compute(OpKernelContext* ctx) override {
    absl::StatusOr<const RingmasterTfBridge*> bridge = Bridge();
    OP_REQUIRES_OK(ctx, bridge.status());
    int size = 0, rank = 0;
    OP_REQUIRES_OK(ctx, SetInfo(**bridge, process_set_, &size, &rank));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<int32_t>()() = kRank ? rank : size;
  }

 private:
  int process_set_ = 0;
};

}  // namespace

#define RINGMASTER_REGISTER_CPU(op, kernel) REGISTER_KERNEL_BUILDER(Name(op).Device(::tensorflow::DEVICE_CPU), kernel)
RINGMASTER_REGISTER_CPU("RingmasterAllreduce", AllreduceKernel);
RINGMASTER_REGISTER_CPU("RingmasterGroupedAllreduce", GroupedAllreduceKernel);
RINGMASTER_REGISTER_CPU("RingmasterAllgather", AllgatherKernel);
RINGMASTER_REGISTER_CPU("RingmasterAllgatherv", AllgathervKernel);
RINGMASTER_REGISTER_CPU("RingmasterBroadcast", BroadcastKernel);
RINGMASTER_REGISTER_CPU("RingmasterReducescatter", ReducescatterKernel);
RINGMASTER_REGISTER_CPU("RingmasterAlltoall", AlltoallKernel);
RINGMASTER_REGISTER_CPU("RingmasterSize", SetQueryKernel<false>);
RINGMASTER_REGISTER_CPU("RingmasterRank", SetQueryKernel<true>);

// GPU kernels: the same kernels over device memory (the runtime runs them on NCCL), registered when the
// library is compiled against a CUDA build of TensorFlow (CMake defines RINGMASTER_TF_GPU). Names, first
// dimensions, and the queries stay in host memory.
#ifdef RINGMASTER_TF_GPU
#define RINGMASTER_REGISTER_GPU(op, kernel) \
  REGISTER_KERNEL_BUILDER(Name(op).Device(::tensorflow::DEVICE_GPU).HostMemory("tensor_name"), kernel)
RINGMASTER_REGISTER_GPU("RingmasterAllreduce", AllreduceKernel);
RINGMASTER_REGISTER_GPU("RingmasterGroupedAllreduce", GroupedAllreduceKernel);
RINGMASTER_REGISTER_GPU("RingmasterAllgather", AllgatherKernel);
REGISTER_KERNEL_BUILDER(
    Name("RingmasterAllgatherv").Device(::tensorflow::DEVICE_GPU).HostMemory("first_dims").HostMemory("tensor_name"),
    AllgathervKernel);
RINGMASTER_REGISTER_GPU("RingmasterBroadcast", BroadcastKernel);
RINGMASTER_REGISTER_GPU("RingmasterReducescatter", ReducescatterKernel);
RINGMASTER_REGISTER_GPU("RingmasterAlltoall", AlltoallKernel);
REGISTER_KERNEL_BUILDER(Name("RingmasterSize").Device(::tensorflow::DEVICE_GPU).HostMemory("size"),
                        SetQueryKernel<false>);
REGISTER_KERNEL_BUILDER(Name("RingmasterRank").Device(::tensorflow::DEVICE_GPU).HostMemory("rank"),
                        SetQueryKernel<true>);
#endif

}  // namespace ringmaster::tensorflow_ops

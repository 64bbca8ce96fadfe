// The op definitions of ringmaster's TensorFlow op library: names, attributes and shape functions.
// Kernels: kernels.cc. Python names and semantics: ringmaster/tensorflow/_library.py.
//
// Every collective takes its name as a string input (not an attribute, so eager calls with per-call names
// reuse one kernel): the same on every rank for the same collective; empty means the graph node's name,
// which is deterministic inside a tf.function. None is stateful (as Horovod's are not): independent collectives run
// concurrently and the runtime negotiates their order across ranks by name. The two queries (size, rank) are stateful
// so TensorFlow never folds them into constants: they change with the membership.
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace ringmaster::tensorflow_ops {
namespace {

using ::tensorflow::shape_inference::DimensionHandle;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

constexpr char kReduceTypes[] = "T: {uint8, int32, int64, float16, bfloat16, float32, float64}";
constexpr char kMoveTypes[] = "T: {uint8, int8, bool, int32, int64, float16, bfloat16, float32, float64}";

absl::Status SameShape(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

// The input's shape with an unknown first dimension (allgather: the set's sum, known only when it runs).
absl::Status UnknownFirstDim(InferenceContext* c) {
  ShapeHandle in = c->input(0);
  if (!c->RankKnown(in)) {
    c->set_output(0, c->UnknownShape());
    return absl::OkStatus();
  }
  if (c->Rank(in) == 0) return absl::InvalidArgumentError("ringmaster: cannot gather a scalar; reshape it to [1]");
  ShapeHandle out;
  TF_RETURN_IF_ERROR(c->ReplaceDim(in, 0, c->UnknownDim(), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status Scalar(InferenceContext* c) {
  c->set_output(0, c->Scalar());
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("RingmasterAllreduce")
    .Attr(kReduceTypes)
    .Attr("reduce_op: int")
    .Attr("process_set: int = 0")
    .Input("tensor: T")
    .Input("tensor_name: string")
    .Output("reduced: T")
    .SetShapeFn(SameShape)
    .Doc("Reduces `tensor` across the process set (reduce_op: 0 sum, 1 average, 2 min, 3 max, 4 product).");

REGISTER_OP("RingmasterGroupedAllreduce")
    .Attr("T: list({uint8, int32, int64, float16, bfloat16, float32, float64})")
    .Attr("reduce_op: int")
    .Attr("process_set: int = 0")
    .Input("tensors: T")
    .Input("tensor_name: string")
    .Output("reduced: T")
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i));
      return absl::OkStatus();
    })
    .Doc("Reduces every tensor of the list, submitted together so the runtime fuses them.");

REGISTER_OP("RingmasterAllgather")
    .Attr(kMoveTypes)
    .Attr("process_set: int = 0")
    .Input("tensor: T")
    .Input("tensor_name: string")
    .Output("gathered: T")
    .SetShapeFn(UnknownFirstDim)
    .Doc("Concatenates every rank's `tensor` along the first dimension; every rank's shape must be the same.");

REGISTER_OP("RingmasterAllgatherv")
    .Attr(kMoveTypes)
    .Attr("process_set: int = 0")
    .Input("tensor: T")
    .Input("first_dims: int64")
    .Input("tensor_name: string")
    .Output("gathered: T")
    .SetShapeFn(UnknownFirstDim)
    .Doc(
        "Concatenates every rank's `tensor` along the first dimension; first_dims holds each rank's first "
        "dimension (the set's size of them), the other dimensions must agree.");

REGISTER_OP("RingmasterBroadcast")
    .Attr(kMoveTypes)
    .Attr("root_rank: int")
    .Attr("process_set: int = 0")
    .Input("tensor: T")
    .Input("tensor_name: string")
    .Output("broadcast: T")
    .SetShapeFn(SameShape)
    .Doc("The root's `tensor` on every rank of the set.");

REGISTER_OP("RingmasterReducescatter")
    .Attr(kReduceTypes)
    .Attr("reduce_op: int")
    .Attr("process_set: int = 0")
    .Input("tensor: T")
    .Input("tensor_name: string")
    .Output("reduced: T")
    .SetShapeFn(UnknownFirstDim)
    .Doc(
        "Reduces `tensor` across the set and keeps this rank's chunk of the first dimension (which the set's "
        "size must divide).");

REGISTER_OP("RingmasterAlltoall")
    .Attr(kMoveTypes)
    .Attr("process_set: int = 0")
    .Input("tensor: T")
    .Input("tensor_name: string")
    .Output("exchanged: T")
    .SetShapeFn(SameShape)
    .Doc(
        "Sends chunk i of the first dimension (which the set's size must divide) to rank i and receives rank "
        "i's chunk for this rank into chunk i.");

REGISTER_OP("RingmasterSize")
    .Attr("process_set: int = 0")
    .Output("size: int32")
    .SetIsStateful()
    .SetShapeFn(Scalar)
    .Doc("The process set's size in the current membership generation.");

REGISTER_OP("RingmasterRank")
    .Attr("process_set: int = 0")
    .Output("rank: int32")
    .SetIsStateful()
    .SetShapeFn(Scalar)
    .Doc("This worker's rank in the process set in the current membership generation.");

}  // namespace ringmaster::tensorflow_ops

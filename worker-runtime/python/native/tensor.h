// What a collective needs from a tensor handed over by DLPack (a torch tensor, a NumPy array): its data
// pointer, element count, element type and device — or a clear refusal. Nothing is ever copied: a
// non-contiguous tensor or an unsupported dtype is an error, because a collective that wrote into a
// hidden copy would lose its result without a word.
#pragma once

#include <nanobind/ndarray.h>

#include <cstddef>
#include <string_view>

#include "base/status.h"
#include "worker-runtime/common/dtype.h"

namespace ringmaster::python {

struct TensorArg {
  void* data = nullptr;
  size_t count = 0;
  common::DataType type = common::DataType::kFloat32;
  bool cuda = false;
  int device = 0;
};

// `role` names the argument in errors ("tensor", "output"). Errors: InvalidArgument for a non-contiguous
// tensor (call .contiguous()), an unsupported dtype (naming it and the supported ones), or a device other
// than CPU and CUDA.
StatusOr<TensorArg> DescribeTensor(const nanobind::ndarray<>& array, std::string_view role);

// The input and output of one collective agree on dtype and device. Errors: InvalidArgument naming both.
Status CheckSameKind(const TensorArg& in, const TensorArg& out);

}  // namespace ringmaster::python

#include "worker-runtime/python/native/tensor.h"

#include <string>

namespace ringmaster::python {
namespace nb = nanobind;
namespace {

StatusOr<common::DataType> TypeOf(const nb::dlpack::dtype& t) {
  using common::DataType;
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(t.code);
  if (t.lanes == 1) {
    if (code == Code::Float && t.bits == 32) return DataType::kFloat32;
    if (code == Code::Float && t.bits == 64) return DataType::kFloat64;
    if (code == Code::Float && t.bits == 16) return DataType::kFloat16;
    if (code == Code::Bfloat && t.bits == 16) return DataType::kBFloat16;
    if (code == Code::Int && t.bits == 32) return DataType::kInt32;
    if (code == Code::Int && t.bits == 64) return DataType::kInt64;
    if (code == Code::UInt && t.bits == 8) return DataType::kUInt8;
  }
  static const char* const kCodes[] = {"int", "uint", "float", "?", "bfloat", "complex", "bool"};
  std::string name = t.code < 7 ? kCodes[t.code] : "code" + std::to_string(t.code);
  return InvalidArgumentError("unsupported dtype " + name + std::to_string(t.bits) +
                              (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "") +
                              ": collectives take float32, float64, float16, bfloat16, int32, int64 or uint8");
}

}  // namespace

StatusOr<TensorArg> DescribeTensor(const nb::ndarray<>& array, std::string_view role) {
  TensorArg arg;
  auto type = TypeOf(array.dtype());
  if (!type.ok()) return type.status().WithContext(std::string(role));
  arg.type = *type;
  arg.count = array.size();
  arg.data = static_cast<char*>(array.data_handle()) + array.byte_offset();
  if (array.device_type() == nb::device::cpu::value) {
    arg.cuda = false;
  } else if (array.device_type() == nb::device::cuda::value) {
    arg.cuda = true;
    arg.device = array.device_id();
  } else {
    return InvalidArgumentError(std::string(role) + " lives on DLPack device type " +
                                std::to_string(array.device_type()) + ": only CPU and CUDA tensors are supported");
  }
  // Row-major contiguity; dimensions of extent 1 may carry any stride, and an empty tensor has no layout.
  // Strides are in elements.
  const int64_t* strides = array.stride_ptr();
  if (strides != nullptr && arg.count > 0) {
    int64_t expected = 1;
    for (size_t i = array.ndim(); i-- > 0;) {
      const int64_t extent = static_cast<int64_t>(array.shape(i));
      if (extent != 1 && strides[i] != expected) {
        return InvalidArgumentError(std::string(role) +
                                    " is not contiguous: a collective would work on a copy and an in-place "
                                    "result would be lost; call .contiguous() on it first");
      }
      expected *= extent;
    }
  }
  return arg;
}

Status CheckSameKind(const TensorArg& in, const TensorArg& out) {
  if (in.type != out.type) {
    return InvalidArgumentError("mixed dtypes: the input is " + std::string(common::DataTypeName(in.type)) +
                                " and the output " + std::string(common::DataTypeName(out.type)) +
                                "; give both the same dtype");
  }
  if (in.cuda != out.cuda || in.device != out.device) {
    return InvalidArgumentError("the input and the output are on different devices; put both on one");
  }
  return Status::Ok();
}

}  // namespace ringmaster::python

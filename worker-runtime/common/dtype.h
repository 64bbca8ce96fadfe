// Element types and reduction operators of the collectives, and the host-side
// reduction kernels the CPU backend (and the tests' reference) use.
//
// Thread-safety: every function here is pure; call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace ringmaster::common {

enum class DataType : uint8_t { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8 };
enum class ReduceOp : uint8_t { kSum, kAvg, kMin, kMax, kProduct };

inline constexpr DataType kAllDataTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                             DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                                             DataType::kUInt8};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                                             ReduceOp::kProduct};

// Bytes per element: 4, 8, 2, 2, 4, 8, 1.
size_t DataTypeSize(DataType type);
std::string_view DataTypeName(DataType type);  // "float32", "bfloat16", ...
std::string_view ReduceOpName(ReduceOp op);    // "sum", "avg", ...
// Parses the names above. Errors: InvalidArgument naming the bad value.
StatusOr<DataType> ParseDataType(std::string_view name);
StatusOr<ReduceOp> ParseReduceOp(std::string_view name);

// IEEE binary16 and bfloat16 conversions, round-to-nearest-even, NaN kept NaN.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

// out[i] = op(a[i], b[i]) for i < count; out may alias a or b. kAvg reduces as a
// sum (the average is FinishAverage's job, once, at the end). 16-bit floats are
// widened to float, combined and rounded back, so every rank that applies the
// same sequence gets bit-identical results.
void ReduceBuffers(DataType type, ReduceOp op, void* out, const void* a, const void* b, size_t count);

// Divides every element by `divisor` (for kAvg after a sum). Integers divide
// with truncation toward zero, floats in their own precision (16-bit via float).
void FinishAverage(DataType type, void* buf, size_t count, int divisor);

// Reads/writes element i of a typed buffer as a double (for tests and --check).
double LoadAsDouble(DataType type, const void* buf, size_t i);
void StoreFromDouble(DataType type, void* buf, size_t i, double value);

}  // namespace ringmaster::common

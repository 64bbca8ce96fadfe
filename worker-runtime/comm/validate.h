// Argument checks shared by the backends, so both refuse the same inputs the
// same way.
#pragma once

#include <cstddef>
#include <vector>

#include "base/status.h"

namespace ringmaster::runtime {

// Errors: InvalidArgument when a pointer is null while count > 0.
Status CheckBuffers(const void* in, const void* out, size_t count, const char* op);
// Errors: InvalidArgument when root is outside [0, size).
Status CheckRoot(int root, int size);
// Errors: InvalidArgument unless ranks is sorted, unique and within [0, size).
Status CheckSubset(const std::vector<int>& ranks, int size);

}  // namespace ringmaster::runtime

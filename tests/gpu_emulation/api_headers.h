// The headers whose C entry points this library defines: cuda_runtime_api.h (the CUDA runtime) and
// nccl.h. The library is built with hidden visibility; these declarations are wrapped in
// `visibility push(default)` so the definitions of their functions (cuda_api.cc, nccl_*_api.cc) are
// exported under the very names the headers declare, and nothing else is.
#pragma once

#pragma GCC visibility push(default)
#include <cuda_runtime_api.h>
#include <nccl.h>
#pragma GCC visibility pop

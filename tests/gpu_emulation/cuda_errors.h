// cudaGetErrorName / cudaGetErrorString texts, and the calling thread's last error
// (cudaGetLastError / cudaPeekAtLastError).
//
// Thread-safety: the last error is per thread, as the CUDA runtime's.
#pragma once

#include "tests/gpu_emulation/api_headers.h"

namespace gpuemu {

const char* CudaErrorName(cudaError_t e);
const char* CudaErrorString(cudaError_t e);

// Records e as the thread's last error (unless it is cudaSuccess or cudaErrorNotReady, which the
// runtime does not record) and returns it.
cudaError_t RecordCudaError(cudaError_t e);
cudaError_t TakeLastCudaError();
cudaError_t PeekLastCudaError();

}  // namespace gpuemu

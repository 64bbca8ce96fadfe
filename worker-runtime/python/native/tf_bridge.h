// The C ABI between ringmaster._native, which owns the worker session, and the TensorFlow op library
// (_tf_ops.so: worker-runtime/python/tensorflow_ops/), which is compiled against the installed TensorFlow
// with TensorFlow's own flags and must not share a C++ type with us. Only C types cross it.
//
// The module hands out one RingmasterTfBridge per session (_native.Session.tf_bridge() returns its address);
// ringmaster.tensorflow passes that address to the op library's ringmaster_tf_attach() once, after init().
// The bridge lives as long as the session; shutdown() detaches it first.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bumped whenever a struct below changes; the op library refuses a bridge of another version.
#define RINGMASTER_TF_BRIDGE_ABI 1

enum RingmasterTfKind {
  RINGMASTER_TF_ALLREDUCE = 0,
  RINGMASTER_TF_ALLGATHERV = 1,
  RINGMASTER_TF_BROADCAST = 2,
  RINGMASTER_TF_REDUCESCATTER = 3,
  RINGMASTER_TF_ALLTOALL = 4,
};

// One collective. `dtype` is common::DataType's value (0 float32, 1 float64, 2 float16, 3 bfloat16,
// 4 int32, 5 int64, 6 uint8), `op` common::ReduceOp's (0 sum, 1 average, 2 min, 3 max, 4 product).
// Buffers are host memory or CUDA device memory (the runtime tells them apart); they are borrowed until
// `done` is called, and GPU buffers must already hold their values (the op library submits only after
// TensorFlow's stream has produced them).
struct RingmasterTfRequest {
  int kind;
  const char* name;  // every rank names the same collective alike: negotiation matches by name
  const void* in;
  void* out;
  size_t count;  // allreduce, broadcast: elements of in and out; reducescatter: of out (in holds count x set
                 // size); alltoall: elements sent to each rank; allgatherv: unused (see counts)
  int dtype;
  int op;
  int root;  // broadcast: the root's rank in the process set
  int process_set;
  const size_t* counts;  // allgatherv: the elements each rank of the set contributes (num_counts of them)
  size_t num_counts;
};

// Called exactly once per submitted request, from any thread (often the runtime's engine thread, so it
// must be quick): `code` is a base::StatusCode (0 ok; the numbers are absl's canonical codes), `message`
// is valid only during the call.
typedef void (*RingmasterTfDone)(void* arg, int code, const char* message);

struct RingmasterTfBridge {
  uint32_t abi;   // RINGMASTER_TF_BRIDGE_ABI
  void* session;  // opaque; the first argument of every function below
  // Submits a collective on the session's current generation. Never blocks on the collective; invalid
  // requests and a missing runtime call `done` at once with the error. Thread-safe.
  void (*submit)(void* session, const struct RingmasterTfRequest* request, RingmasterTfDone done, void* arg);
  // The process set's size and this worker's rank in it, in the current generation. Returns a status
  // code; on error writes a NUL-terminated message of at most err_len bytes into err. Thread-safe.
  int (*set_info)(void* session, int process_set, int* size, int* rank, char* err, size_t err_len);
};

#ifdef __cplusplus
}
#endif

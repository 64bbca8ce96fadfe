// The GPU emulation library (libringmaster_emulated_gpu.so) driven as the runtime drives the real
// libnccl/libcudart: dlopen, then every call through dlsym -- never linked. Each test forks its
// ranks (the parent never loads the library: CUDA, real or emulated, does not survive a fork); a
// rank runs its part, reports through a pipe to the parent (which relays notes between ranks: the
// unique ids, "I am inside the allreduce", "rank 3 is dead"), and exits 0 when all its checks hold.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- the entry points, resolved with dlsym (as worker-runtime/nccl/gpu_api.cc) ----

struct Api {
  cudaError_t (*cudaGetDeviceCount)(int*);
  cudaError_t (*cudaSetDevice)(int);
  cudaError_t (*cudaGetDevice)(int*);
  const char* (*cudaGetErrorName)(cudaError_t);
  const char* (*cudaGetErrorString)(cudaError_t);
  cudaError_t (*cudaGetLastError)();
  cudaError_t (*cudaPeekAtLastError)();
  cudaError_t (*cudaDriverGetVersion)(int*);
  cudaError_t (*cudaRuntimeGetVersion)(int*);
  cudaError_t (*cudaMalloc)(void**, size_t);
  cudaError_t (*cudaFree)(void*);
  cudaError_t (*cudaMemcpy)(void*, const void*, size_t, cudaMemcpyKind);
  cudaError_t (*cudaMemcpyAsync)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  cudaError_t (*cudaMemset)(void*, int, size_t);
  cudaError_t (*cudaMemsetAsync)(void*, int, size_t, cudaStream_t);
  cudaError_t (*cudaStreamCreate)(cudaStream_t*);
  cudaError_t (*cudaStreamCreateWithFlags)(cudaStream_t*, unsigned);
  cudaError_t (*cudaStreamDestroy)(cudaStream_t);
  cudaError_t (*cudaStreamQuery)(cudaStream_t);
  cudaError_t (*cudaStreamSynchronize)(cudaStream_t);
  cudaError_t (*cudaStreamWaitEvent)(cudaStream_t, cudaEvent_t, unsigned);
  cudaError_t (*cudaEventCreate)(cudaEvent_t*);
  cudaError_t (*cudaEventCreateWithFlags)(cudaEvent_t*, unsigned);
  cudaError_t (*cudaEventRecord)(cudaEvent_t, cudaStream_t);
  cudaError_t (*cudaEventQuery)(cudaEvent_t);
  cudaError_t (*cudaEventSynchronize)(cudaEvent_t);
  cudaError_t (*cudaEventDestroy)(cudaEvent_t);
  cudaError_t (*cudaDeviceSynchronize)();
  cudaError_t (*cudaPointerGetAttributes)(cudaPointerAttributes*, const void*);

  ncclResult_t (*ncclGetVersion)(int*);
  const char* (*ncclGetErrorString)(ncclResult_t);
  const char* (*ncclGetLastError)(ncclComm_t);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId*);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*ncclCommInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t, ncclResult_t*);
  ncclResult_t (*ncclCommAbort)(ncclComm_t);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  ncclResult_t (*ncclCommFinalize)(ncclComm_t);
  ncclResult_t (*ncclCommSplit)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*);
  ncclResult_t (*ncclCommShrink)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
  ncclResult_t (*ncclCommRevoke)(ncclComm_t, int);
  ncclResult_t (*ncclCommGetUniqueId)(ncclComm_t, ncclUniqueId*);
  ncclResult_t (*ncclCommGrow)(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, ncclConfig_t*);
  ncclResult_t (*ncclCommCount)(const ncclComm_t, int*);
  ncclResult_t (*ncclCommCuDevice)(const ncclComm_t, int*);
  ncclResult_t (*ncclCommUserRank)(const ncclComm_t, int*);
  ncclResult_t (*ncclGroupStart)();
  ncclResult_t (*ncclGroupEnd)();
  ncclResult_t (*ncclAllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclAllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclBroadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclSend)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ncclRecv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
};

int g_rank = -1;  // in a child: its rank (for the failure lines)

#define CHILD_CHECK(cond)                                                                             \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      std::fprintf(stderr, "[rank %d] %s:%d: check failed: %s\n", g_rank, __FILE__, __LINE__, #cond); \
      std::fflush(stderr);                                                                            \
      ::_exit(1);                                                                                     \
    }                                                                                                 \
  } while (0)

#define CHILD_EQ(a, b)                                                                                                 \
  do {                                                                                                                 \
    auto va_ = (a);                                                                                                    \
    auto vb_ = (b);                                                                                                    \
    if (!(va_ == vb_)) {                                                                                               \
      std::fprintf(stderr, "[rank %d] %s:%d: check failed: %s == %s (%lld vs %lld)\n", g_rank, __FILE__, __LINE__, #a, \
                   #b, static_cast<long long>(va_), static_cast<long long>(vb_));                                      \
      std::fflush(stderr);                                                                                             \
      ::_exit(1);                                                                                                      \
    }                                                                                                                  \
  } while (0)

// A call that must start fine (ncclSuccess, or ncclInProgress on a non-blocking communicator).
#define NCCL_STARTED(call)                                                                        \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess && r_ != ncclInProgress) {                                              \
      std::fprintf(stderr, "[rank %d] %s:%d: %s -> %d\n", g_rank, __FILE__, __LINE__, #call, r_); \
      std::fflush(stderr);                                                                        \
      ::_exit(1);                                                                                 \
    }                                                                                             \
  } while (0)

#define CUDA_OK(call) CHILD_EQ((call), cudaSuccess)

const Api& LoadApi() {
  static Api api;
  // The build's library, or the copy RINGMASTER_GPU_EMULATION_LIBRARY names (the GPU kit's: tests/gpu_kit).
  const char* path = std::getenv("RINGMASTER_GPU_EMULATION_LIBRARY");
  void* h = ::dlopen(path != nullptr && *path != '\0' ? path : RINGMASTER_EMULATION_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) std::fprintf(stderr, "dlopen: %s\n", ::dlerror());
  CHILD_CHECK(h != nullptr);
#define RESOLVE(name)                                                     \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(h, #name));     \
  if (api.name == nullptr) std::fprintf(stderr, "no symbol %s\n", #name); \
  CHILD_CHECK(api.name != nullptr)
  RESOLVE(cudaGetDeviceCount);
  RESOLVE(cudaSetDevice);
  RESOLVE(cudaGetDevice);
  RESOLVE(cudaGetErrorName);
  RESOLVE(cudaGetErrorString);
  RESOLVE(cudaGetLastError);
  RESOLVE(cudaPeekAtLastError);
  RESOLVE(cudaDriverGetVersion);
  RESOLVE(cudaRuntimeGetVersion);
  RESOLVE(cudaMalloc);
  RESOLVE(cudaFree);
  RESOLVE(cudaMemcpy);
  RESOLVE(cudaMemcpyAsync);
  RESOLVE(cudaMemset);
  RESOLVE(cudaMemsetAsync);
  RESOLVE(cudaStreamCreate);
  RESOLVE(cudaStreamCreateWithFlags);
  RESOLVE(cudaStreamDestroy);
  RESOLVE(cudaStreamQuery);
  RESOLVE(cudaStreamSynchronize);
  RESOLVE(cudaStreamWaitEvent);
  RESOLVE(cudaEventCreate);
  RESOLVE(cudaEventCreateWithFlags);
  RESOLVE(cudaEventRecord);
  RESOLVE(cudaEventQuery);
  RESOLVE(cudaEventSynchronize);
  RESOLVE(cudaEventDestroy);
  RESOLVE(cudaDeviceSynchronize);
  RESOLVE(cudaPointerGetAttributes);
  RESOLVE(ncclGetVersion);
  RESOLVE(ncclGetErrorString);
  RESOLVE(ncclGetLastError);
  RESOLVE(ncclGetUniqueId);
  RESOLVE(ncclCommInitRank);
  RESOLVE(ncclCommInitRankConfig);
  RESOLVE(ncclCommGetAsyncError);
  RESOLVE(ncclCommAbort);
  RESOLVE(ncclCommDestroy);
  RESOLVE(ncclCommFinalize);
  RESOLVE(ncclCommSplit);
  RESOLVE(ncclCommShrink);
  RESOLVE(ncclCommRevoke);
  RESOLVE(ncclCommGetUniqueId);
  RESOLVE(ncclCommGrow);
  RESOLVE(ncclCommCount);
  RESOLVE(ncclCommCuDevice);
  RESOLVE(ncclCommUserRank);
  RESOLVE(ncclGroupStart);
  RESOLVE(ncclGroupEnd);
  RESOLVE(ncclAllReduce);
  RESOLVE(ncclAllGather);
  RESOLVE(ncclBroadcast);
  RESOLVE(ncclReduce);
  RESOLVE(ncclReduceScatter);
  RESOLVE(ncclSend);
  RESOLVE(ncclRecv);
#undef RESOLVE
  return api;
}

// ---- the ranks and their notes ----

// A note between a rank and the parent (who relays notes to the other ranks unless told otherwise).
struct Note {
  int32_t from = -1;
  int32_t kind = 0;
  uint64_t value = 0;
  char data[128] = {};
};

enum NoteKind : int32_t {
  kUniqueId = 1,  // data: an ncclUniqueId
  kGrowId,        // data: the grow root's ncclUniqueId
  kResultHash,    // value: a hash of the rank's result, data: its label (the parent compares them)
  kInside,        // the rank is inside a collective that must hang
  kReadyToDie,    // the rank waits to be killed
  kPeerDead,      // parent -> ranks: the victim is dead
  kDone,          // a rank finished a phase
};

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The child's side: notes to the parent, notes from it (kept until asked for).
class Board {
 public:
  Board(int rank, int to_parent, int from_parent) : rank_(rank), to_parent_(to_parent), from_parent_(from_parent) {}
  void Post(int32_t kind, uint64_t value = 0, const void* data = nullptr, size_t bytes = 0) {
    Note n;
    n.from = rank_;
    n.kind = kind;
    n.value = value;
    if (data) std::memcpy(n.data, data, std::min(bytes, sizeof n.data));
    CHILD_CHECK(WriteAll(to_parent_, &n, sizeof n));
  }
  Note Wait(int32_t kind) {
    for (;;) {
      for (size_t i = 0; i < kept_.size(); ++i) {
        if (kept_[i].kind == kind) {
          Note n = kept_[i];
          kept_.erase(kept_.begin() + static_cast<long>(i));
          return n;
        }
      }
      Note n;
      CHILD_CHECK(ReadAll(from_parent_, &n, sizeof n));
      kept_.push_back(n);
    }
  }
  // Whether a note of that kind has come (without waiting).
  bool Has(int32_t kind) {
    pollfd p{from_parent_, POLLIN, 0};
    while (::poll(&p, 1, 0) > 0) {
      Note n;
      CHILD_CHECK(ReadAll(from_parent_, &n, sizeof n));
      kept_.push_back(n);
    }
    for (const Note& n : kept_) {
      if (n.kind == kind) return true;
    }
    return false;
  }

 private:
  int rank_, to_parent_, from_parent_;
  std::vector<Note> kept_;
};

struct Outcome {
  bool exited = false;
  int code = -1;
  int signal = 0;
};

struct World {
  std::vector<pid_t> pids;
  std::vector<int> to_child;  // write ends
  std::vector<Outcome> outcomes;
  std::map<std::string, std::map<int, uint64_t>> results;  // kResultHash: label (data) -> rank -> hash
  void Send(int rank, const Note& n) {
    if (pids[rank] > 0) (void)WriteAll(to_child[rank], &n, sizeof n);
  }
  void Relay(const Note& n) {
    for (int r = 0; r < static_cast<int>(to_child.size()); ++r) {
      if (r != n.from) Send(r, n);
    }
  }
  void Kill(int rank) {
    ::kill(pids[rank], SIGKILL);
    int status = 0;
    ::waitpid(pids[rank], &status, 0);
    outcomes[rank].exited = false;
    outcomes[rank].signal = SIGKILL;
    pids[rank] = -1;
  }
};

struct Options {
  int ranks = 2;
  std::map<std::string, std::string> env;  // on top of RINGMASTER_EMULATED_GPUS=4
  int deadline_ms = 20000;
  // the parent's part, per note (default: relay to the other ranks)
  std::function<void(World&, const Note&)> on_note;
};

// Forks the ranks, runs body(rank, board) in each, relays notes; returns when all have ended.
World RunRanks(const Options& o, const std::function<void(int, Board&)>& body) {
  World w;
  ::signal(SIGPIPE, SIG_IGN);  // a note to a rank that just died must not kill the test
  int up[2];
  EXPECT_EQ(::pipe(up), 0);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < o.ranks; ++r) {
    int down[2];
    EXPECT_EQ(::pipe(down), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(up[0]);
      ::close(down[1]);
      for (int fd : w.to_child) ::close(fd);
      g_rank = r;
      ::setenv("RINGMASTER_EMULATED_GPUS", "4", 1);
      for (const auto& [k, v] : o.env) ::setenv(k.c_str(), v.c_str(), 1);
      Board board(r, up[1], down[0]);
      body(r, board);
      ::_exit(0);
    }
    ::close(down[0]);
    w.pids.push_back(pid);
    w.to_child.push_back(down[1]);
  }
  ::close(up[1]);
  w.outcomes.resize(o.ranks);
  const auto deadline = Clock::now() + milliseconds(o.deadline_ms);
  int alive = o.ranks;
  bool up_open = true;
  while (alive > 0) {
    if (Clock::now() > deadline) {
      ADD_FAILURE() << "ranks still running at the deadline: killed";
      for (int r = 0; r < o.ranks; ++r) {
        if (w.pids[r] > 0) w.Kill(r);
      }
      break;
    }
    if (up_open) {
      pollfd p{up[0], POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) {
        Note n;
        if (ReadAll(up[0], &n, sizeof n)) {
          if (n.kind == kResultHash) w.results[n.data][n.from] = n.value;
          if (o.on_note) {
            o.on_note(w, n);
          } else {
            w.Relay(n);
          }
        } else {
          up_open = false;
        }
      }
    } else {
      std::this_thread::sleep_for(milliseconds(20));
    }
    for (int r = 0; r < o.ranks; ++r) {
      if (w.pids[r] <= 0) continue;
      int status = 0;
      if (::waitpid(w.pids[r], &status, WNOHANG) == w.pids[r]) {
        w.outcomes[r].exited = WIFEXITED(status);
        w.outcomes[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        w.outcomes[r].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        w.pids[r] = -1;
      }
    }
    alive = 0;
    for (pid_t pid : w.pids) alive += pid > 0;
  }
  ::close(up[0]);
  for (int fd : w.to_child) ::close(fd);
  return w;
}

void ExpectAllOk(const World& w, const std::set<int>& killed = {}) {
  for (int r = 0; r < static_cast<int>(w.outcomes.size()); ++r) {
    if (killed.count(r)) {
      EXPECT_EQ(w.outcomes[r].signal, SIGKILL) << "rank " << r;
      continue;
    }
    EXPECT_TRUE(w.outcomes[r].exited && w.outcomes[r].code == 0)
        << "rank " << r << " exited=" << w.outcomes[r].exited << " code=" << w.outcomes[r].code
        << " signal=" << w.outcomes[r].signal;
  }
}

// Every rank posted the same hash for each label (bit-identical results).
void ExpectIdenticalResults(const World& w, size_t labels, int ranks) {
  EXPECT_EQ(w.results.size(), labels);
  for (const auto& [label, by_rank] : w.results) {
    EXPECT_EQ(by_rank.size(), static_cast<size_t>(ranks)) << label;
    for (const auto& [rank, hash] : by_rank) EXPECT_EQ(hash, by_rank.begin()->second) << label << " rank " << rank;
  }
}

// ---- helpers run in the ranks ----

uint64_t Fnv(const void* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ull;
  return h;
}

void PostResult(Board& board, const char* label, const void* p, size_t n) {
  board.Post(kResultHash, Fnv(p, n), label, std::strlen(label) + 1);
}

// Every rank of `ranks` posts kDone and waits for the others'.
void Barrier(Board& board, int ranks) {
  board.Post(kDone);
  for (int i = 1; i < ranks; ++i) board.Wait(kDone);
}

// Polls a communicator until it leaves ncclInProgress; fails the rank after timeout_ms.
ncclResult_t WaitComm(const Api& api, ncclComm_t comm, int timeout_ms = 8000) {
  const auto deadline = Clock::now() + milliseconds(timeout_ms);
  for (;;) {
    ncclResult_t state = ncclInProgress;
    CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
    if (state != ncclInProgress) return state;
    CHILD_CHECK(Clock::now() < deadline);
    std::this_thread::sleep_for(milliseconds(1));
  }
}

void WaitStream(const Api& api, cudaStream_t s, int timeout_ms = 8000) {
  const auto deadline = Clock::now() + milliseconds(timeout_ms);
  for (;;) {
    cudaError_t e = api.cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    CHILD_EQ(e, cudaErrorNotReady);
    CHILD_CHECK(Clock::now() < deadline);
    std::this_thread::sleep_for(milliseconds(1));
  }
}

ncclConfig_t NonBlocking() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Rank 0 makes the unique id and posts it; the others wait for it.
ncclUniqueId ShareId(const Api& api, Board& board, int rank) {
  ncclUniqueId id;
  if (rank == 0) {
    CHILD_EQ(api.ncclGetUniqueId(&id), ncclSuccess);
    board.Post(kUniqueId, 0, id.internal, sizeof id.internal);
  } else {
    Note n = board.Wait(kUniqueId);
    std::memcpy(id.internal, n.data, sizeof id.internal);
  }
  return id;
}

// A non-blocking communicator of n ranks, this one on `device`, ready.
ncclComm_t InitComm(const Api& api, Board& board, int rank, int n, int device) {
  ncclUniqueId id = ShareId(api, board, rank);
  CUDA_OK(api.cudaSetDevice(device));
  ncclConfig_t config = NonBlocking();
  ncclComm_t comm = nullptr;
  NCCL_STARTED(api.ncclCommInitRankConfig(&comm, n, id, rank, &config));
  CHILD_CHECK(comm != nullptr);  // written at the call (ncclCommInitRankDev)
  CHILD_EQ(WaitComm(api, comm), ncclSuccess);
  return comm;
}

template <typename T>
T* DeviceCopy(const Api& api, const std::vector<T>& host) {
  void* p = nullptr;
  CUDA_OK(api.cudaMalloc(&p, host.size() * sizeof(T)));
  CUDA_OK(api.cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> HostCopy(const Api& api, const T* dev, size_t count) {
  std::vector<T> host(count);
  CUDA_OK(api.cudaMemcpy(host.data(), dev, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

uint16_t ToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float FromBf16(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// A sum allreduce over comm where every rank contributes `value`; checks every element agrees.
int64_t SumInts(const Api& api, ncclComm_t comm, cudaStream_t stream, int64_t value) {
  std::vector<int64_t> in(17, value);
  int64_t* buf = DeviceCopy(api, in);
  NCCL_STARTED(api.ncclAllReduce(buf, buf, in.size(), ncclInt64, ncclSum, comm, stream));
  CHILD_EQ(WaitComm(api, comm), ncclSuccess);
  WaitStream(api, stream);
  std::vector<int64_t> out = HostCopy(api, buf, in.size());
  CUDA_OK(api.cudaFree(buf));
  for (int64_t v : out) CHILD_EQ(v, out[0]);
  return out[0];
}

// Starts an allreduce that cannot finish (a peer will never join) and reports it is inside; then
// checks it hangs -- no completion, no error -- until the parent says the victim is dead, and a
// while after.
void HangInAllReduce(const Api& api, Board& board, ncclComm_t comm, cudaStream_t stream, int64_t* buf) {
  NCCL_STARTED(api.ncclAllReduce(buf, buf, 17, ncclInt64, ncclSum, comm, stream));
  CHILD_EQ(WaitComm(api, comm), ncclSuccess);  // the launch succeeded: the kernel waits on the stream
  board.Post(kInside);
  while (!board.Has(kPeerDead)) {
    CHILD_EQ(api.cudaStreamQuery(stream), cudaErrorNotReady);
    std::this_thread::sleep_for(milliseconds(5));
  }
  const auto until = Clock::now() + milliseconds(400);
  while (Clock::now() < until) {  // the peer's connection is closed now: still a hang, never an error
    CHILD_EQ(api.cudaStreamQuery(stream), cudaErrorNotReady);
    ncclResult_t state = ncclInProgress;
    CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
    CHILD_EQ(state, ncclSuccess);
    std::this_thread::sleep_for(milliseconds(10));
  }
}

// The parent's part when `victim` must die once every other rank is inside its collective.
std::function<void(World&, const Note&)> KillWhenAllInside(int ranks, int victim) {
  auto inside = std::make_shared<std::set<int>>();
  auto ready = std::make_shared<bool>(false);
  return [=](World& w, const Note& n) {
    if (n.kind == kInside) inside->insert(n.from);
    if (n.kind == kReadyToDie) *ready = true;
    if (n.kind != kInside && n.kind != kReadyToDie) w.Relay(n);
    if (*ready && static_cast<int>(inside->size()) == ranks - 1 && w.pids[victim] > 0) {
      w.Kill(victim);
      Note dead;
      dead.kind = kPeerDead;
      dead.value = static_cast<uint64_t>(victim);
      for (int r = 0; r < ranks; ++r) {
        if (r != victim) w.Send(r, dead);
      }
    }
  };
}

}  // namespace

// ---- the tests ----

TEST(GpuEmulation, CudaRuntimeSlice) {
  World w = RunRanks(Options{1, {}, 10000, nullptr}, [](int, Board&) {
    const Api& api = LoadApi();
    int n = 0, dev = -1, v = 0;
    CUDA_OK(api.cudaGetDeviceCount(&n));
    CHILD_EQ(n, 4);
    CUDA_OK(api.cudaGetDevice(&dev));
    CHILD_EQ(dev, 0);
    CHILD_EQ(api.cudaSetDevice(4), cudaErrorInvalidDevice);
    CHILD_EQ(api.cudaPeekAtLastError(), cudaErrorInvalidDevice);
    CHILD_EQ(api.cudaGetLastError(), cudaErrorInvalidDevice);
    CHILD_EQ(api.cudaGetLastError(), cudaSuccess);
    CHILD_CHECK(std::string(api.cudaGetErrorName(cudaErrorNoDevice)) == "cudaErrorNoDevice");
    CHILD_CHECK(std::string(api.cudaGetErrorString(cudaErrorNoDevice)) == "no CUDA-capable device is detected");
    CUDA_OK(api.cudaDriverGetVersion(&v));
    CHILD_EQ(v, 13000);
    CUDA_OK(api.cudaRuntimeGetVersion(&v));
    CHILD_EQ(v, CUDART_VERSION);
    CHILD_EQ(api.ncclGetVersion(&v), ncclSuccess);
    CHILD_EQ(v, NCCL_VERSION_CODE);

    // memory: tagged with the current device, interior pointers resolve, copy kinds are checked
    CUDA_OK(api.cudaSetDevice(2));
    char* d = nullptr;
    CUDA_OK(api.cudaMalloc(reinterpret_cast<void**>(&d), 1000));
    std::vector<char> host(1000, 7);
    cudaPointerAttributes attr;
    CUDA_OK(api.cudaPointerGetAttributes(&attr, d + 999));
    CHILD_EQ(attr.type, cudaMemoryTypeDevice);
    CHILD_EQ(attr.device, 2);
    // Just past the end is no memory of the allocation (as a real GPU answers: device_memory.h).
    CUDA_OK(api.cudaPointerGetAttributes(&attr, d + 1000));
    CHILD_EQ(attr.type, cudaMemoryTypeUnregistered);
    CHILD_EQ(api.cudaMemcpy(d + 1000, host.data(), 1, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CUDA_OK(api.cudaPointerGetAttributes(&attr, host.data()));
    CHILD_EQ(attr.type, cudaMemoryTypeUnregistered);
    CHILD_EQ(api.cudaMemcpy(d, host.data(), 1000, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    CHILD_EQ(api.cudaMemcpy(d, host.data(), 1001, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CUDA_OK(api.cudaMemcpy(d, host.data(), 1000, cudaMemcpyDefault));
    CHILD_EQ(api.cudaFree(d + 1), cudaErrorInvalidValue);
    CHILD_EQ(api.cudaFree(host.data()), cudaErrorInvalidValue);
    CHILD_EQ(api.cudaMemset(host.data(), 0, 10), cudaErrorInvalidValue);

    // streams run in order on their own threads; an event marks a point of one
    cudaStream_t s = nullptr, s2 = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(api.cudaStreamCreate(&s2));
    char* d2 = nullptr;
    CUDA_OK(api.cudaMalloc(reinterpret_cast<void**>(&d2), 1000));
    cudaEvent_t ev = nullptr;
    CUDA_OK(api.cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CHILD_EQ(api.cudaEventQuery(ev), cudaSuccess);  // never recorded
    CUDA_OK(api.cudaMemsetAsync(d, 3, 1000, s));
    CUDA_OK(api.cudaEventRecord(ev, s));
    CUDA_OK(api.cudaStreamWaitEvent(s2, ev, 0));
    CUDA_OK(api.cudaMemcpyAsync(d2, d, 1000, cudaMemcpyDeviceToDevice, s2));
    CUDA_OK(api.cudaEventSynchronize(ev));
    CUDA_OK(api.cudaStreamSynchronize(s2));
    CHILD_EQ(api.cudaStreamQuery(s2), cudaSuccess);
    std::vector<char> back(1000);
    CUDA_OK(api.cudaMemcpy(back.data(), d2, 1000, cudaMemcpyDeviceToHost));
    for (char c : back) CHILD_EQ(c, 3);
    CUDA_OK(api.cudaSetDevice(1));
    cudaEvent_t other = nullptr;
    CUDA_OK(api.cudaEventCreate(&other));
    CHILD_EQ(api.cudaEventRecord(other, s), cudaErrorInvalidResourceHandle);  // event of device 1, stream of 2
    CUDA_OK(api.cudaDeviceSynchronize());
    CUDA_OK(api.cudaEventDestroy(ev));
    CUDA_OK(api.cudaEventDestroy(other));
    CUDA_OK(api.cudaStreamDestroy(s));
    CUDA_OK(api.cudaStreamDestroy(s2));
    CHILD_EQ(api.cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
    CUDA_OK(api.cudaFree(d));
    CUDA_OK(api.cudaFree(d2));
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, NoDeviceWhenNoneIsEmulated) {
  World w = RunRanks(Options{1, {{"RINGMASTER_EMULATED_GPUS", "0"}}, 10000, nullptr}, [](int, Board&) {
    const Api& api = LoadApi();
    int n = -1;
    CHILD_EQ(api.cudaGetDeviceCount(&n), cudaErrorNoDevice);
    CHILD_EQ(n, 0);
    void* p = nullptr;
    CHILD_EQ(api.cudaMalloc(&p, 16), cudaErrorNoDevice);
    CHILD_EQ(api.cudaSetDevice(0), cudaErrorNoDevice);
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, AllReduceFloat32AndBf16AreBitIdenticalOnFourRanks) {
  World w = RunRanks(Options{4, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 4, rank);
    int count = 0, me = -1, dev = -1;
    CHILD_EQ(api.ncclCommCount(comm, &count), ncclSuccess);
    CHILD_EQ(api.ncclCommUserRank(comm, &me), ncclSuccess);
    CHILD_EQ(api.ncclCommCuDevice(comm, &dev), ncclSuccess);
    CHILD_EQ(count, 4);
    CHILD_EQ(me, rank);
    CHILD_EQ(dev, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    // float32: a count that does not divide by 4, values whose sum depends on the order
    const size_t n = 100003;
    auto value = [](int r, size_t i) {
      return static_cast<float>(std::sin(0.001 * static_cast<double>(i) + r) * std::pow(10.0, r % 3));
    };
    std::vector<float> in(n);
    for (size_t i = 0; i < n; ++i) in[i] = value(rank, i);
    float* send = DeviceCopy(api, in);
    float* recv = nullptr;
    CUDA_OK(api.cudaMalloc(reinterpret_cast<void**>(&recv), n * sizeof(float)));
    NCCL_STARTED(api.ncclAllReduce(send, recv, n, ncclFloat32, ncclSum, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    WaitStream(api, stream);
    std::vector<float> out = HostCopy(api, recv, n);
    for (size_t i = 0; i < n; ++i) {
      float expect = value(0, i);
      for (int r = 1; r < 4; ++r) expect += value(r, i);  // in rank order, as the emulation folds
      CHILD_CHECK(std::memcmp(&out[i], &expect, 4) == 0);
    }
    PostResult(board, "float32", out.data(), n * sizeof(float));

    // bf16, in place
    std::vector<uint16_t> hb(n);
    for (size_t i = 0; i < n; ++i) hb[i] = ToBf16(value(rank, i));
    uint16_t* b = DeviceCopy(api, hb);
    NCCL_STARTED(api.ncclAllReduce(b, b, n, ncclBfloat16, ncclSum, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    WaitStream(api, stream);
    std::vector<uint16_t> ob = HostCopy(api, b, n);
    for (size_t i = 0; i < n; i += 97) {
      float exact = 0;
      for (int r = 0; r < 4; ++r) exact += FromBf16(ToBf16(value(r, i)));
      CHILD_CHECK(std::fabs(FromBf16(ob[i]) - exact) <= 0.02f * std::fabs(exact) + 0.05f);
    }
    PostResult(board, "bf16", ob.data(), n * sizeof(uint16_t));

    // avg, and the other collectives
    std::vector<float> avg_in(8, static_cast<float>(rank) * 2);
    float* a = DeviceCopy(api, avg_in);
    NCCL_STARTED(api.ncclAllReduce(a, a, 8, ncclFloat32, ncclAvg, comm, stream));
    std::vector<int32_t> mine(5, rank + 1);
    int32_t* g = DeviceCopy(api, std::vector<int32_t>(20, 0));
    int32_t* src = DeviceCopy(api, mine);
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    NCCL_STARTED(api.ncclAllGather(src, g, 5, ncclInt32, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    NCCL_STARTED(api.ncclBroadcast(src, src, 5, ncclInt32, 2, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    int32_t* rs = DeviceCopy(api, std::vector<int32_t>(5, 0));
    NCCL_STARTED(api.ncclReduceScatter(g, rs, 5, ncclInt32, ncclMax, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    WaitStream(api, stream);
    CHILD_CHECK(HostCopy(api, a, 8)[0] == 3.0f);  // (0+2+4+6)/4
    std::vector<int32_t> gathered = HostCopy(api, g, 20);
    for (int i = 0; i < 20; ++i) CHILD_EQ(gathered[i], i / 5 + 1);
    CHILD_EQ(HostCopy(api, src, 5)[4], 3);        // rank 2's value
    CHILD_EQ(HostCopy(api, rs, 5)[0], rank + 1);  // block r of everyone's gathered buffer is r+1

    Barrier(board, 4);  // everyone is done with the collectives before anyone tears down
    NCCL_STARTED(api.ncclCommFinalize(comm));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    CHILD_EQ(api.ncclCommDestroy(comm), ncclSuccess);
    CUDA_OK(api.cudaStreamDestroy(stream));
  });
  ExpectAllOk(w);
  ExpectIdenticalResults(w, 2, 4);
}

TEST(GpuEmulation, GroupedSendRecvAllToAll) {
  World w = RunRanks(Options{4, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 4, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const size_t block = 257;
    std::vector<int32_t> in(4 * block);
    for (int p = 0; p < 4; ++p) {
      for (size_t i = 0; i < block; ++i) in[p * block + i] = rank * 1000 + p * 10 + static_cast<int32_t>(i % 10);
    }
    int32_t* send = DeviceCopy(api, in);
    int32_t* recv = DeviceCopy(api, std::vector<int32_t>(4 * block, -1));
    // receives posted before the sends, as a careless caller would: one group, no deadlock
    CHILD_EQ(api.ncclGroupStart(), ncclSuccess);
    for (int p = 0; p < 4; ++p) NCCL_STARTED(api.ncclRecv(recv + p * block, block, ncclInt32, p, comm, stream));
    for (int p = 0; p < 4; ++p) NCCL_STARTED(api.ncclSend(send + p * block, block, ncclInt32, p, comm, stream));
    CHILD_EQ(api.ncclGroupEnd(), ncclInProgress);  // a non-blocking group: launched on NCCL's thread
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    WaitStream(api, stream);
    std::vector<int32_t> out = HostCopy(api, recv, 4 * block);
    for (int p = 0; p < 4; ++p) {
      for (size_t i = 0; i < block; ++i) CHILD_EQ(out[p * block + i], p * 1000 + rank * 10 + static_cast<int>(i % 10));
    }
    Barrier(board, 4);
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, SplitByColourOrdersByKeyAndLeavesNoColourNull) {
  World w = RunRanks(Options{4, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 4, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    // ranks 0 and 2: colour 0, keys reversed (rank 2 comes first); rank 1 alone; rank 3 out
    const int colour = rank == 3 ? NCCL_SPLIT_NOCOLOR : rank % 2;
    ncclConfig_t config = NonBlocking();
    ncclComm_t child = reinterpret_cast<ncclComm_t>(0x1);
    NCCL_STARTED(api.ncclCommSplit(comm, colour, 10 - rank, &child, &config));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);  // the parent's state says when the split is done
    if (rank == 3) {
      CHILD_CHECK(child == nullptr);
    } else {
      CHILD_CHECK(child != nullptr);
      CHILD_EQ(WaitComm(api, child), ncclSuccess);
      int size = 0, me = -1;
      CHILD_EQ(api.ncclCommCount(child, &size), ncclSuccess);
      CHILD_EQ(api.ncclCommUserRank(child, &me), ncclSuccess);
      CHILD_EQ(size, rank == 1 ? 1 : 2);
      CHILD_EQ(me, rank == 0 ? 1 : 0);
      CHILD_EQ(SumInts(api, child, stream, rank), rank == 1 ? 1 : 2);
    }
    CHILD_EQ(SumInts(api, comm, stream, 1), 4);  // the parent still works
    Barrier(board, 4);
    // ends with live communicators and std::exit (static destructors run, threads still up)
    std::exit(0);
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, PeerKilledInAllReduceHangsUntilRevokeThenShrinkDefault) {
  Options o{4, {}, 25000, KillWhenAllInside(4, 3)};
  World w = RunRanks(o, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 4, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHILD_EQ(SumInts(api, comm, stream, rank), 6);
    int64_t* buf = DeviceCopy(api, std::vector<int64_t>(17, 1));
    if (rank == 3) {
      board.Post(kReadyToDie);
      for (;;) std::this_thread::sleep_for(milliseconds(100));  // killed here
    }
    HangInAllReduce(api, board, comm, stream, buf);

    // a revoke inside an open group: its abort flags go up at the call (the hung op ends), its job
    // -- quiesce, lower the flags, ncclInProgress then ncclSuccess -- waits for the group's end
    CHILD_EQ(api.ncclGroupStart(), ncclSuccess);
    CHILD_EQ(api.ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclSuccess);  // the state is still the old one
    WaitStream(api, stream, 2000);
    std::this_thread::sleep_for(milliseconds(200));
    ncclResult_t state = ncclInProgress;
    CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
    CHILD_EQ(state, ncclSuccess);                                                  // nothing launched yet
    CHILD_EQ(api.ncclGroupEnd(), ncclInProgress);                                  // the revoke's job runs now
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);                                    // quiescent
    CHILD_EQ(api.ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclInvalidArgument);  // already revoked
    CHILD_EQ(api.ncclAllReduce(buf, buf, 17, ncclInt64, ncclSum, comm, stream), ncclInvalidUsage);

    int exclude[] = {3};
    ncclConfig_t config = NonBlocking();
    ncclComm_t child = nullptr;
    NCCL_STARTED(api.ncclCommShrink(comm, exclude, 1, &child, &config, NCCL_SHRINK_DEFAULT));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    CHILD_CHECK(child != nullptr);
    CHILD_EQ(WaitComm(api, child), ncclSuccess);
    int size = 0, me = -1;
    CHILD_EQ(api.ncclCommCount(child, &size), ncclSuccess);
    CHILD_EQ(api.ncclCommUserRank(child, &me), ncclSuccess);
    CHILD_EQ(size, 3);
    CHILD_EQ(me, rank);
    cudaStream_t s2 = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHILD_EQ(SumInts(api, child, s2, 10 + rank), 33);
    Barrier(board, 3);
    CHILD_EQ(api.ncclCommAbort(child), ncclSuccess);
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
  });
  ExpectAllOk(w, {3});
}

TEST(GpuEmulation, ShrinkAbortEndsAHungAllReduce) {
  Options o{3, {}, 25000, KillWhenAllInside(3, 1)};
  World w = RunRanks(o, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 3, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int64_t* buf = DeviceCopy(api, std::vector<int64_t>(17, 1));
    if (rank == 1) {
      board.Post(kReadyToDie);
      for (;;) std::this_thread::sleep_for(milliseconds(100));
    }
    HangInAllReduce(api, board, comm, stream, buf);
    int exclude[] = {1};
    ncclConfig_t config = NonBlocking();
    ncclComm_t child = nullptr;
    NCCL_STARTED(api.ncclCommShrink(comm, exclude, 1, &child, &config, NCCL_SHRINK_ABORT));
    WaitStream(api, stream, 2000);  // the abort ended the hung op
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    CHILD_CHECK(child != nullptr);
    CHILD_EQ(WaitComm(api, child), ncclSuccess);
    int me = -1;
    CHILD_EQ(api.ncclCommUserRank(child, &me), ncclSuccess);
    CHILD_EQ(me, rank == 0 ? 0 : 1);  // the survivors fill the gap in order
    CHILD_EQ(SumInts(api, child, stream, 5), 10);
    Barrier(board, 2);
    CHILD_EQ(api.ncclCommAbort(child), ncclSuccess);
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
  });
  ExpectAllOk(w, {1});
}

TEST(GpuEmulation, GrowByOneNewProcess) {
  World w = RunRanks(Options{4, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclConfig_t config = NonBlocking();
    cudaStream_t stream = nullptr;
    ncclComm_t grown = nullptr;
    if (rank < 3) {
      // the existing communicator: processes 0..2 (process 3 does not take part in its init)
      ncclUniqueId id = ShareId(api, board, rank);
      CUDA_OK(api.cudaSetDevice(rank));
      ncclComm_t comm = nullptr;
      NCCL_STARTED(api.ncclCommInitRankConfig(&comm, 3, id, rank, &config));
      CHILD_EQ(WaitComm(api, comm), ncclSuccess);
      CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      CHILD_EQ(SumInts(api, comm, stream, 1), 3);
      ncclUniqueId grow_id;
      if (rank == 0) {
        CHILD_EQ(api.ncclCommGetUniqueId(comm, &grow_id), ncclSuccess);
        board.Post(kGrowId, 0, grow_id.internal, sizeof grow_id.internal);
      }
      NCCL_STARTED(api.ncclCommGrow(comm, 4, rank == 0 ? &grow_id : nullptr, -1, &grown, &config));
      // written at the call, and again from the job's thread when it ends
      CHILD_CHECK(__atomic_load_n(&grown, __ATOMIC_ACQUIRE) != nullptr);
      CHILD_EQ(WaitComm(api, __atomic_load_n(&grown, __ATOMIC_ACQUIRE)), ncclSuccess);
      CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
    } else {
      (void)board.Wait(kUniqueId);  // (the first communicator's id: not this process's business)
      Note n = board.Wait(kGrowId);
      ncclUniqueId grow_id;
      std::memcpy(grow_id.internal, n.data, sizeof grow_id.internal);
      CUDA_OK(api.cudaSetDevice(3));
      CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      NCCL_STARTED(api.ncclCommGrow(nullptr, 4, &grow_id, 3, &grown, &config));
      CHILD_CHECK(__atomic_load_n(&grown, __ATOMIC_ACQUIRE) != nullptr);
      CHILD_EQ(WaitComm(api, __atomic_load_n(&grown, __ATOMIC_ACQUIRE)), ncclSuccess);
    }
    int size = 0, me = -1;
    CHILD_EQ(api.ncclCommCount(grown, &size), ncclSuccess);
    CHILD_EQ(api.ncclCommUserRank(grown, &me), ncclSuccess);
    CHILD_EQ(size, 4);
    CHILD_EQ(me, rank);  // the existing ranks keep their numbers
    CHILD_EQ(SumInts(api, grown, stream, 1 << rank), 15);
    Barrier(board, 4);
    CHILD_EQ(api.ncclCommAbort(grown), ncclSuccess);
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, HostAndWrongDevicePointersAndStreamsAreRefused) {
  World w = RunRanks(Options{2, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclUniqueId id = ShareId(api, board, rank);
    CUDA_OK(api.cudaSetDevice(rank));
    ncclComm_t comm = nullptr;
    CHILD_EQ(api.ncclCommInitRank(&comm, 2, id, rank), ncclSuccess);  // blocking: done at return
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreate(&stream));
    std::vector<float> host(64, 1.0f);
    float* mine = DeviceCopy(api, host);
    CHILD_EQ(api.ncclAllReduce(host.data(), mine, 64, ncclFloat32, ncclSum, comm, stream), ncclInvalidArgument);
    CHILD_CHECK(std::strstr(api.ncclGetLastError(nullptr), "is not a valid pointer") != nullptr);
    CUDA_OK(api.cudaSetDevice(2));
    float* elsewhere = DeviceCopy(api, host);
    cudaStream_t other_stream = nullptr;
    CUDA_OK(api.cudaStreamCreate(&other_stream));
    CUDA_OK(api.cudaSetDevice(rank));
    CHILD_EQ(api.ncclAllReduce(mine, elsewhere, 64, ncclFloat32, ncclSum, comm, stream), ncclInvalidArgument);
    CHILD_CHECK(std::strstr(api.ncclGetLastError(nullptr), "allocated on device 2 mismatchs with NCCL device") !=
                nullptr);
    CHILD_EQ(api.ncclAllReduce(mine, mine, 65, ncclFloat32, ncclSum, comm, stream), ncclInvalidArgument);
    CHILD_EQ(api.ncclAllReduce(mine, mine, 64, ncclFloat32, ncclSum, comm, other_stream), ncclUnhandledCudaError);
    CHILD_EQ(api.ncclBroadcast(mine, mine, 64, ncclFloat32, 2, comm, stream), ncclInvalidArgument);  // root
    // the communicator is still fine
    CHILD_EQ(api.ncclAllReduce(mine, mine, 64, ncclFloat32, ncclSum, comm, stream), ncclSuccess);
    CUDA_OK(api.cudaStreamSynchronize(stream));
    CHILD_CHECK(HostCopy(api, mine, 64)[63] == 2.0f);
    Barrier(board, 2);
    CHILD_EQ(api.ncclCommDestroy(comm), ncclSuccess);
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, TwoRanksOnOneDeviceAreRefused) {
  World w = RunRanks(Options{2, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclUniqueId id = ShareId(api, board, rank);
    CUDA_OK(api.cudaSetDevice(1));  // both ranks
    ncclConfig_t config = NonBlocking();
    ncclComm_t comm = nullptr;
    // As ncclCommInitRankConfig (init.cc): after launching the group a non-blocking init returns the new
    // communicator's async state, so a job that already failed shows in the call's own result.
    const ncclResult_t started = api.ncclCommInitRankConfig(&comm, 2, id, rank, &config);
    CHILD_CHECK(started == ncclInProgress || started == ncclInvalidUsage);
    CHILD_EQ(WaitComm(api, comm), ncclInvalidUsage);
    CHILD_CHECK(std::strstr(api.ncclGetLastError(nullptr), "Duplicate GPU detected") != nullptr);
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, TwoRanksOnOneDeviceWithMultiRankGpuEnable) {
  World w = RunRanks(Options{2, {{"NCCL_MULTI_RANK_GPU_ENABLE", "1"}}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 2, 1);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHILD_EQ(SumInts(api, comm, stream, 2), 4);
    Barrier(board, 2);
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, InitWaitsForAMissingRankUntilAborted) {
  World w = RunRanks(Options{2, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclUniqueId id = ShareId(api, board, rank);
    CUDA_OK(api.cudaSetDevice(rank));
    ncclConfig_t config = NonBlocking();
    ncclComm_t comm = nullptr;
    NCCL_STARTED(api.ncclCommInitRankConfig(&comm, 3, id, rank, &config));  // rank 2 never comes
    const auto until = Clock::now() + milliseconds(1000);
    while (Clock::now() < until) {
      ncclResult_t state = ncclSuccess;
      CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
      CHILD_EQ(state, ncclInProgress);
      std::this_thread::sleep_for(milliseconds(20));
    }
    const auto t0 = Clock::now();
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
    CHILD_CHECK(Clock::now() - t0 < milliseconds(1000));
  });
  ExpectAllOk(w);
}

TEST(GpuEmulation, ShrinkWritesNewcommFromTheJobThreadWhenItEnds) {
  // every management job ends 400 ms late: the child arrives late
  World w = RunRanks(Options{3, {{"RINGMASTER_EMULATED_NCCL_LATENCY_MS", "400"}}, 20000, nullptr},
                     [](int rank, Board& board) {
                       const Api& api = LoadApi();
                       const auto t_init = Clock::now();
                       ncclComm_t comm = InitComm(api, board, rank, 3, rank);
                       CHILD_CHECK(Clock::now() - t_init >= milliseconds(400));  // "init takes a while"
                       if (rank == 2) {  // excluded, alive: it waits for the survivors, then leaves
                         Barrier(board, 3);
                         CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
                         return;
                       }
                       int exclude[] = {2};
                       ncclConfig_t config = NonBlocking();
                       ncclComm_t* child = new ncclComm_t(reinterpret_cast<ncclComm_t>(0x1));  // must outlive the call
                       const auto t0 = Clock::now();
                       ncclResult_t r = api.ncclCommShrink(comm, exclude, 1, child, &config, NCCL_SHRINK_DEFAULT);
                       CHILD_CHECK(r == ncclSuccess || r == ncclInProgress);
                       CHILD_CHECK(__atomic_load_n(child, __ATOMIC_ACQUIRE) == nullptr);  // NULL at the call
                       ncclResult_t state = ncclSuccess;
                       CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
                       CHILD_EQ(state, ncclInProgress);
                       while (__atomic_load_n(child, __ATOMIC_ACQUIRE) == nullptr) {
                         CHILD_CHECK(Clock::now() - t0 < milliseconds(5000));
                         std::this_thread::sleep_for(milliseconds(1));
                       }
                       CHILD_CHECK(Clock::now() - t0 >= milliseconds(400));  // written by the job, at its end
                       CHILD_EQ(WaitComm(api, comm), ncclSuccess);
                       CHILD_EQ(WaitComm(api, *child), ncclSuccess);
                       cudaStream_t stream = nullptr;
                       CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
                       CHILD_EQ(SumInts(api, *child, stream, 3), 6);
                       Barrier(board, 3);
                       CHILD_EQ(api.ncclCommAbort(*child), ncclSuccess);
                       CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
                       delete child;
                     });
  ExpectAllOk(w);
}

TEST(GpuEmulation, LargeAllReduceOnEightRanks) {
  // 8 emulated GPUs, 16 MiB of float32 per rank (the emulation handles 64 MiB x 8; this keeps CI quick)
  const size_t count = (16u << 20) / sizeof(float);
  World w = RunRanks(Options{8, {{"RINGMASTER_EMULATED_GPUS", "8"}}, 60000, nullptr}, [count](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 8, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<float> in(count);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((i % 1000) * 0.001 + rank);
    float* buf = DeviceCopy(api, in);
    const auto t0 = Clock::now();
    NCCL_STARTED(api.ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    WaitStream(api, stream, 50000);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::vector<float> out = HostCopy(api, buf, count);
    for (size_t i = 0; i < count; i += 4099) {
      float expect = static_cast<float>((i % 1000) * 0.001 + 0);
      for (int r = 1; r < 8; ++r) expect += static_cast<float>((i % 1000) * 0.001 + r);
      CHILD_CHECK(out[i] == expect);
    }
    PostResult(board, "large", out.data(), count * sizeof(float));
    if (rank == 0) std::fprintf(stderr, "allreduce of %zu MiB on 8 ranks: %.0f ms\n", count * sizeof(float) >> 20, ms);
    Barrier(board, 8);
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
  });
  ExpectAllOk(w);
  ExpectIdenticalResults(w, 1, 8);
}

TEST(GpuEmulation, EveryDataTypeAndOperator) {
  // rank 0 gives 2, rank 1 gives 3: sum 5, prod 6, max 3, min 2, avg 2.5 (floating) or 2 (integers)
  struct Case {
    ncclDataType_t type;
    size_t size;
    uint64_t two, three, sum, prod, max, min, avg;  // encodings (little-endian, `size` bytes)
  };
  const std::vector<Case> cases = {
      {ncclInt8, 1, 2, 3, 5, 6, 3, 2, 2},
      {ncclUint8, 1, 2, 3, 5, 6, 3, 2, 2},
      {ncclInt32, 4, 2, 3, 5, 6, 3, 2, 2},
      {ncclUint32, 4, 2, 3, 5, 6, 3, 2, 2},
      {ncclInt64, 8, 2, 3, 5, 6, 3, 2, 2},
      {ncclUint64, 8, 2, 3, 5, 6, 3, 2, 2},
      {ncclFloat16, 2, 0x4000, 0x4200, 0x4500, 0x4600, 0x4200, 0x4000, 0x4100},
      {ncclFloat32, 4, 0x40000000, 0x40400000, 0x40a00000, 0x40c00000, 0x40400000, 0x40000000, 0x40200000},
      {ncclFloat64, 8, 0x4000000000000000, 0x4008000000000000, 0x4014000000000000, 0x4018000000000000,
       0x4008000000000000, 0x4000000000000000, 0x4004000000000000},
      {ncclBfloat16, 2, 0x4000, 0x4040, 0x40a0, 0x40c0, 0x4040, 0x4000, 0x4020},
      {ncclFloat8e4m3, 1, 0x40, 0x44, 0x4a, 0x4c, 0x44, 0x40, 0x42},
      {ncclFloat8e5m2, 1, 0x40, 0x42, 0x45, 0x46, 0x42, 0x40, 0x41},
  };
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  World w = RunRanks(Options{2, {}, 20000, nullptr}, [&](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclUniqueId id = ShareId(api, board, rank);
    CUDA_OK(api.cudaSetDevice(rank));
    ncclComm_t comm = nullptr;
    CHILD_EQ(api.ncclCommInitRank(&comm, 2, id, rank), ncclSuccess);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreate(&stream));
    std::vector<char*> bufs;
    CHILD_EQ(api.ncclGroupStart(), ncclSuccess);  // all of them as one launch
    for (const Case& c : cases) {
      for (ncclRedOp_t op : ops) {
        char* b = nullptr;
        CUDA_OK(api.cudaMalloc(reinterpret_cast<void**>(&b), c.size));
        const uint64_t mine = rank == 0 ? c.two : c.three;
        CUDA_OK(api.cudaMemcpy(b, &mine, c.size, cudaMemcpyHostToDevice));
        CHILD_EQ(api.ncclAllReduce(b, b, 1, c.type, op, comm, stream), ncclSuccess);
        bufs.push_back(b);
      }
    }
    // saturation and overflow: fp8 e4m3 448+448 stays 448 (satfinite), fp16 65504+65504 is inf
    char* sat = nullptr;
    char* inf = nullptr;
    CUDA_OK(api.cudaMalloc(reinterpret_cast<void**>(&sat), 1));
    CUDA_OK(api.cudaMalloc(reinterpret_cast<void**>(&inf), 2));
    const uint8_t e4m3_max = 0x7e;
    const uint16_t half_max = 0x7bff;
    CUDA_OK(api.cudaMemcpy(sat, &e4m3_max, 1, cudaMemcpyHostToDevice));
    CUDA_OK(api.cudaMemcpy(inf, &half_max, 2, cudaMemcpyHostToDevice));
    CHILD_EQ(api.ncclAllReduce(sat, sat, 1, ncclFloat8e4m3, ncclSum, comm, stream), ncclSuccess);
    CHILD_EQ(api.ncclAllReduce(inf, inf, 1, ncclFloat16, ncclSum, comm, stream), ncclSuccess);
    CHILD_EQ(api.ncclGroupEnd(), ncclSuccess);  // a blocking group: launched when it returns
    CUDA_OK(api.cudaStreamSynchronize(stream));
    size_t i = 0;
    for (const Case& c : cases) {
      const uint64_t expect[] = {c.sum, c.prod, c.max, c.min, c.avg};
      for (int k = 0; k < 5; ++k, ++i) {
        uint64_t got = 0;
        CUDA_OK(api.cudaMemcpy(&got, bufs[i], c.size, cudaMemcpyDeviceToHost));
        if (got != expect[k]) {
          std::fprintf(stderr, "type %d op %d: got 0x%llx, expected 0x%llx\n", static_cast<int>(c.type), k,
                       static_cast<unsigned long long>(got), static_cast<unsigned long long>(expect[k]));
        }
        CHILD_CHECK(got == expect[k]);
      }
    }
    uint8_t s = 0;
    uint16_t h = 0;
    CUDA_OK(api.cudaMemcpy(&s, sat, 1, cudaMemcpyDeviceToHost));
    CUDA_OK(api.cudaMemcpy(&h, inf, 2, cudaMemcpyDeviceToHost));
    CHILD_EQ(s, 0x7e);
    CHILD_EQ(h, 0x7c00);
    Barrier(board, 2);
    CHILD_EQ(api.ncclCommDestroy(comm), ncclSuccess);
  });
  ExpectAllOk(w);
}

// ---- failure knobs: the emulation fails the way NCCL and CUDA fail ----

// A revoke while an allreduce waits for a peer (one that never comes): the kernel exits, the stream drains
// with cudaSuccess, the output holds a partial result, and the async state reads ncclSuccess -- nothing but
// the revoke itself says the result is not one (collectives.h; init.cc commRevokeAsync).
TEST(GpuEmulation, ARevokedAllReduceLeavesAnIdleStreamAndAPartialResult) {
  World w = RunRanks(Options{3, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    ncclComm_t comm = InitComm(api, board, rank, 3, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const size_t n = 30;  // 10 per chunk
    int64_t* buf = DeviceCopy(api, std::vector<int64_t>(n, 1 + rank));
    if (rank == 2) {  // never joins the allreduce
      Barrier(board, 3);
      return;
    }
    NCCL_STARTED(api.ncclAllReduce(buf, buf, n, ncclInt64, ncclSum, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    std::this_thread::sleep_for(milliseconds(300));  // ranks 0 and 1 fold what they have, then wait for rank 2
    CHILD_EQ(api.cudaStreamQuery(stream), cudaErrorNotReady);
    NCCL_STARTED(api.ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    WaitStream(api, stream, 2000);  // idle: "success"
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);
    std::vector<int64_t> out = HostCopy(api, buf, n);
    // each rank's own chunk: ranks 0 and 1 folded (1 + 2), rank 2's part never came -- neither the sum (6)
    // nor the input; the rest of the output is the untouched input
    for (size_t i = 0; i < n; ++i) CHILD_EQ(out[i], i / 10 == static_cast<size_t>(rank) ? 3 : 1 + rank);
    Barrier(board, 3);
  });
  ExpectAllOk(w);
}

// RINGMASTER_EMULATED_NCCL_ASYNC_ERROR: the data moves, the stream drains, and the async state says
// ncclRemoteError.
TEST(GpuEmulation, AsyncErrorKnobFailsACompletedAllReduce) {
  World w = RunRanks(Options{2, {{"RINGMASTER_EMULATED_NCCL_ASYNC_ERROR", "AllReduce:2"}}, 20000, nullptr},
                     [](int rank, Board& board) {
                       const Api& api = LoadApi();
                       ncclComm_t comm = InitComm(api, board, rank, 2, rank);
                       cudaStream_t stream = nullptr;
                       CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
                       CHILD_EQ(SumInts(api, comm, stream, 1), 2);  // the first is fine
                       int64_t* buf = DeviceCopy(api, std::vector<int64_t>(17, 1));
                       NCCL_STARTED(api.ncclAllReduce(buf, buf, 17, ncclInt64, ncclSum, comm, stream));
                       const ncclResult_t launched = WaitComm(api, comm);  // (the kernel may have ended already)
                       CHILD_CHECK(launched == ncclSuccess || launched == ncclRemoteError);
                       WaitStream(api, stream);
                       CHILD_EQ(HostCopy(api, buf, 17)[16], 2);  // the data moved
                       ncclResult_t state = ncclSuccess;
                       CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
                       CHILD_EQ(state, ncclRemoteError);
                       Barrier(board, 2);
                       CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
                     });
  ExpectAllOk(w);
}

// RINGMASTER_EMULATED_NCCL_VANISH: rank 1 stops at its second allreduce without a word; rank 0's hangs --
// no completion, no async error -- until rank 0 aborts.
TEST(GpuEmulation, AVanishedPeerProducesNoErrorOnlyAHang) {
  World w = RunRanks(Options{2, {}, 20000, nullptr}, [](int rank, Board& board) {
    const Api& api = LoadApi();
    if (rank == 1) ::setenv("RINGMASTER_EMULATED_NCCL_VANISH", "AllReduce:2", 1);
    ncclComm_t comm = InitComm(api, board, rank, 2, rank);
    cudaStream_t stream = nullptr;
    CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHILD_EQ(SumInts(api, comm, stream, 1), 2);
    int64_t* buf = DeviceCopy(api, std::vector<int64_t>(17, 1));
    NCCL_STARTED(api.ncclAllReduce(buf, buf, 17, ncclInt64, ncclSum, comm, stream));
    CHILD_EQ(WaitComm(api, comm), ncclSuccess);  // launched
    const auto until = Clock::now() + milliseconds(500);
    while (Clock::now() < until) {
      CHILD_EQ(api.cudaStreamQuery(stream), cudaErrorNotReady);
      ncclResult_t state = ncclInProgress;
      CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
      CHILD_EQ(state, ncclSuccess);
      std::this_thread::sleep_for(milliseconds(10));
    }
    CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
    WaitStream(api, stream, 2000);
  });
  ExpectAllOk(w);
}

// RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS: the second kernel faults; from then on every CUDA call on that
// device returns cudaErrorIllegalAddress (sticky: cudaGetLastError does not clear it), another device is
// fine, and NCCL reports ncclUnhandledCudaError.
TEST(GpuEmulation, AnIllegalAddressIsStickyOnItsDevice) {
  World w =
      RunRanks(Options{2, {{"RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS", "2"}, {"NCCL_DEBUG", "NONE"}}, 20000, nullptr},
               [](int rank, Board& board) {
                 const Api& api = LoadApi();
                 ncclComm_t comm = InitComm(api, board, rank, 2, rank);
                 cudaStream_t stream = nullptr;
                 CUDA_OK(api.cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
                 CHILD_EQ(SumInts(api, comm, stream, 1), 2);
                 int64_t* buf = DeviceCopy(api, std::vector<int64_t>(17, 1));
                 NCCL_STARTED(api.ncclAllReduce(buf, buf, 17, ncclInt64, ncclSum, comm, stream));
                 const ncclResult_t launched = WaitComm(api, comm);  // (the kernel may have faulted already)
                 CHILD_CHECK(launched == ncclSuccess || launched == ncclUnhandledCudaError);
                 const auto deadline = Clock::now() + milliseconds(3000);
                 cudaError_t e = cudaErrorNotReady;
                 while (e == cudaErrorNotReady && Clock::now() < deadline) e = api.cudaStreamQuery(stream);
                 CHILD_EQ(e, cudaErrorIllegalAddress);
                 void* p = nullptr;
                 CHILD_EQ(api.cudaMalloc(&p, 16), cudaErrorIllegalAddress);
                 CHILD_EQ(api.cudaGetLastError(), cudaErrorIllegalAddress);
                 CHILD_EQ(api.cudaGetLastError(), cudaErrorIllegalAddress);
                 ncclResult_t state = ncclSuccess;
                 CHILD_EQ(api.ncclCommGetAsyncError(comm, &state), ncclSuccess);
                 CHILD_EQ(state, ncclUnhandledCudaError);
                 CUDA_OK(api.cudaSetDevice(3));
                 CUDA_OK(api.cudaMalloc(&p, 16));  // another device is fine
                 CHILD_EQ(api.ncclCommAbort(comm), ncclSuccess);
               });
  ExpectAllOk(w);
}

// RINGMASTER_EMULATED_CUDA_ASYNC_PAGEABLE: a copy from pageable memory returns before its destination is
// written (cudaMemcpy too); the source was staged, so reusing it at once is safe; a sync shows the data.
TEST(GpuEmulation, APageableCopyLandsAfterTheCallReturns) {
  World w = RunRanks(Options{1, {{"RINGMASTER_EMULATED_CUDA_ASYNC_PAGEABLE", "200"}}, 10000, nullptr}, [](int, Board&) {
    const Api& api = LoadApi();
    std::vector<int32_t> host(64, 7);
    int32_t* dev = nullptr;
    CUDA_OK(api.cudaMalloc(reinterpret_cast<void**>(&dev), 64 * sizeof(int32_t)));
    CUDA_OK(api.cudaMemset(dev, 0, 64 * sizeof(int32_t)));
    CUDA_OK(api.cudaMemcpy(dev, host.data(), 64 * sizeof(int32_t), cudaMemcpyHostToDevice));
    std::fill(host.begin(), host.end(), 9);  // reused at once: the copy staged it
    CHILD_EQ(dev[0], 0);                     // (emulated device memory is host memory)
    CHILD_EQ(api.cudaStreamQuery(nullptr), cudaErrorNotReady);
    CUDA_OK(api.cudaDeviceSynchronize());
    CHILD_EQ(dev[63], 7);
  });
  ExpectAllOk(w);
}

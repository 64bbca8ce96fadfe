// ringmaster._native: the Python package's native core, a nanobind module over the worker runtime.
// Tensors arrive by DLPack (tensor.h), so the module links no libtorch and one build serves every torch
// version. Every call that waits (joining a generation, a collective) releases the GIL. Errors become
// Python exceptions here, at the boundary, and nowhere else:
//   Aborted, DeadlineExceeded, Unavailable, Cancelled -> CollectiveAborted (a peer died, the membership
//     changed, a timeout fired: the elastic loop rebuilds and restores; Horovod's HorovodInternalError)
//   InvalidArgument, NotFound -> ValueError;  FailedPrecondition -> PreconditionError;  others -> RuntimeError
// except that a Session's start() or join() that fails with what no rebuild repairs (elastic/failure_class.h: a
// GPU library that cannot be loaded, a refused configuration, a sticky CUDA error) first writes the worker's
// termination message (WorkerSession::EndWorker) and raises WorkerFailed (a RuntimeError): the script ends
// non-zero instead of building the same generation again.
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "api/worker_env.h"
#include "worker-runtime/data/elastic_sampler.h"
#include "worker-runtime/elastic/failure_class.h"
#include "worker-runtime/elastic/worker_session.h"
#include "worker-runtime/nccl/cuda_fence.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/python/native/gpu_info.h"
#include "worker-runtime/python/native/tensor.h"
#include "worker-runtime/python/native/tf_bridge_provider.h"
#include "worker-runtime/runtime/runtime.h"

namespace nb = nanobind;

namespace ringmaster::python {
namespace {

using common::DataType;
using common::ReduceOp;

struct CollectiveAborted : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct PreconditionFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct WorkerFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Raise(const Status& s) {
  switch (s.code()) {
    case StatusCode::kAborted:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnavailable:
    case StatusCode::kCancelled: throw CollectiveAborted(s.ToString());
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound: throw nb::value_error(s.ToString().c_str());
    case StatusCode::kFailedPrecondition: throw PreconditionFailed(s.ToString());
    default: throw std::runtime_error(s.ToString());
  }
}

void Check(const Status& s) {
  if (!s.ok()) Raise(s);
}

template <typename T>
T Value(StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return std::move(v).value();
}

// The process's CUDA runtime (the one torch loaded, found at run time: nccl/gpu_libraries.h). A CUDA
// tensor reaching us without one is a broken install, not a lost peer: PreconditionError, saying what to do.
const nccl::CudaApi& CudaOrRaise() {
  StatusOr<const nccl::CudaApi*> cuda = nccl::Cuda();
  if (!cuda.ok()) {
    // The message lists every place tried and what to do (install torch with CUDA, or set
    // RINGMASTER_CUDART_LIBRARY; build the emulation under RINGMASTER_EMULATED_GPUS).
    Raise(
        FailedPreconditionError("a CUDA tensor, but the CUDA runtime could not be loaded: " + cuda.status().message()));
  }
  return **cuda;
}

// Orders a collective after the work torch queued on its current stream for a CUDA tensor: a fence (an event
// recorded on that stream) that the NCCL communicator's stream waits for on the device, so this thread returns
// to torch at once -- a DDP bucket's hook must not stall the backward pass until the bucket's gradients exist.
// The runtime's Wait() returns only when NCCL's stream has finished, so torch's later work sees the result.
// Null for a CPU tensor.
std::shared_ptr<comm::ReadyFence> FenceAfterStream(const TensorArg& t, uintptr_t stream) {
  if (!t.cuda) return nullptr;
  return Value(nccl::CudaEventFence::Record(CudaOrRaise(), t.device, reinterpret_cast<cudaStream_t>(stream)));
}

// Arrays of failed collectives: a revoked or aborted NCCL kernel, or a late peer's write into an aborted Gloo
// pair's buffer, may still land in them until their communicator is finished, which only the destruction of the
// runtime that ran it guarantees. The driver keeps an aborted runtime until the next generation's first commit
// (its peers may still write to it), so the session clears them after a successful Commit(), after a Finish()
// that left no runtime, and at its end. Touched with the GIL held.
using Parked = std::shared_ptr<std::vector<nb::object>>;

// A submitted collective: the runtime's handle and the arrays it borrows, kept alive until it completes --
// after a failure, until its runtime is gone (Parked).
class PyHandle {
 public:
  PyHandle(fusion::Handle handle, std::vector<nb::object> keep, Parked parked = nullptr)
      : handle_(handle), keep_(std::move(keep)), parked_(std::move(parked)) {}
  bool Poll() const { return handle_.Poll(); }
  void Wait() {
    Status s;
    {
      nb::gil_scoped_release release;
      s = handle_.Wait();
    }
    if (!s.ok() && parked_) {
      for (auto& o : keep_) parked_->push_back(std::move(o));
    }
    keep_.clear();
    Check(s);
  }

 private:
  fusion::Handle handle_;
  std::vector<nb::object> keep_;
  Parked parked_;
};

// A point-to-point send or receive in flight and the array it borrows, kept alive until it completes.
class PyTransfer {
 public:
  PyTransfer(std::unique_ptr<comm::Transfer> transfer, nb::object keep)
      : transfer_(std::move(transfer)), keep_(std::move(keep)) {}
  void Wait() {
    Status s;
    {
      nb::gil_scoped_release release;
      s = transfer_->Wait();
    }
    keep_ = nb::none();
    Check(s);
  }

 private:
  std::unique_ptr<comm::Transfer> transfer_;
  nb::object keep_;
};

LogSink WorkerLog(std::string who) {
  return [who = std::move(who)](LogLevel, std::string_view line) {
    std::fprintf(stderr, "[%s] %.*s\n", who.c_str(), static_cast<int>(line.size()), line.data());
  };
}

// The Python Session: one WorkerSession and the collectives on its current generation's runtime.
class PySession {
 public:
  PySession() {
    auto env = api::EnvironmentSnapshot();
    auto id = env.find("RINGMASTER_WORKER_ID");
    auto pod = env.find("RINGMASTER_POD_NAME");
    std::string who = id != env.end() ? id->second : pod != env.end() ? pod->second : "ringmaster";
    session_ = Value(elastic::WorkerSession::Create(env, WorkerLog(who)));
    tf_bridge_ = MakeTfBridge(session_.get());
  }

  void Start() {
    Status s;
    {
      nb::gil_scoped_release release;
      s = session_->Start();
      if (!s.ok() && elastic::ClassifyFailure(s) == elastic::FailureClass::kEndsWorker) s = session_->EndWorker(s);
    }
    CheckJoined(s);
  }
  bool Join() {
    StatusOr<bool> r = false;
    {
      nb::gil_scoped_release release;
      r = session_->Join();
      if (!r.ok() && elastic::ClassifyFailure(r.status()) == elastic::FailureClass::kEndsWorker)
        r = session_->EndWorker(r.status());
    }
    CheckJoined(r.status());
    return *r;
  }
  void Interrupted(const std::string& why) { session_->Interrupted(AbortedError(why)); }
  bool Superseded() const {
    nb::gil_scoped_release release;  // at an orderly switch's boundary it agrees on the last step first
    return session_->Superseded();
  }
  // A step whose collectives cannot be confirmed on every member raises CollectiveAborted (HorovodInternalError):
  // elastic.run rejoins and rolls back to the last agreed step.
  void Commit(nb::bytes state, uint64_t epoch, uint64_t committed) {
    std::string bytes(state.c_str(), state.size());
    Status s;
    {
      nb::gil_scoped_release release;
      s = session_->Commit(std::move(bytes), {epoch, committed});
    }
    if (s.ok()) parked_->clear();  // a generation's first commit destroys the one before (ElasticDriver::Commit)
    Check(s);
  }
  void Agree() {
    Status s;
    {
      nb::gil_scoped_release release;
      s = session_->AgreeOnLast();
    }
    Check(s);
  }
  nb::tuple Committed() const {
    const auto& c = session_->cursor();
    const std::string& bytes = session_->committed_bytes();
    return nb::make_tuple(session_->committed_step(), c.epoch, c.committed, nb::bytes(bytes.data(), bytes.size()));
  }
  int64_t CommittedStep() const { return session_->committed_step(); }
  bool Journaling() const { return session_->journaling(); }
  void CountSamples(uint64_t n) { session_->CountSamples(n); }
  void Finish() {
    {
      nb::gil_scoped_release release;
      session_->Finish();
    }
    if (session_->runtime() == nullptr) parked_->clear();
  }
  ~PySession() {
    session_.reset();  // the runtimes first: their NCCL work is finished (aborted or destroyed) after this
    parked_->clear();
  }
  nb::dict Topology() const {
    auto t = session_->topology();
    nb::dict d;
    d["generation"] = t.generation;
    d["rank"] = t.rank;
    d["size"] = t.size;
    d["local_rank"] = t.local_rank;
    d["local_size"] = t.local_size;
    d["cross_rank"] = t.cross_rank;
    d["cross_size"] = t.cross_size;
    d["worker_ids"] = t.worker_ids;
    return d;
  }
  std::string WorkerId() const { return session_->options().worker_id; }
  std::string CheckpointDir() const { return session_->options().checkpoint_dir; }
  void RequireMinSize(int n) {
    if (n < 1) throw nb::value_error("require_min_size: the minimum must be >= 1");
    session_->RequireMinSize(n);
  }
  int MinSize() const { return session_->min_size(); }
  bool Standalone() const { return session_->standalone(); }
  nb::dict LastRebuild() const {
    auto r = session_->last_rebuild();
    nb::dict d;
    d["generation"] = r.generation;
    d["detect"] = r.detect;
    d["rendezvous"] = r.rendezvous;
    d["communicator"] = r.communicator;
    d["restore"] = r.restore;
    d["shrunk"] = r.shrunk;
    return d;
  }
  std::string Backend() const { return std::string(comm::BackendName(Rt().backend())); }
  int Device() const { return Rt().device(); }
  int MetricsPort() const { return session_->metrics_port(); }
  // The address of this session's TensorFlow bridge (tf_bridge.h), for ringmaster.tensorflow's op library.
  uintptr_t TfBridge() const { return reinterpret_cast<uintptr_t>(&tf_bridge_); }

  PyHandle Allreduce(const std::string& name, nb::ndarray<> in, nb::ndarray<> out, int op, int set, uintptr_t stream) {
    auto [i, o, ready] = Pair(in, out, stream);
    if (i.count != o.count)
      Raise(InvalidArgumentError("allreduce: the output must have as many elements as the input"));
    return Submit(Rt().AllreduceAsync(name, i.data, o.data, i.count, i.type, static_cast<ReduceOp>(op), set, ready), in,
                  out);
  }
  PyHandle Allgather(const std::string& name, nb::ndarray<> in, nb::ndarray<> out, std::vector<size_t> counts, int set,
                     uintptr_t stream) {
    auto [i, o, ready] = Pair(in, out, stream);
    size_t total = 0;
    for (size_t c : counts) total += c;
    if (total != o.count) Raise(InvalidArgumentError("allgather: the output must hold every rank's elements"));
    return Submit(Rt().AllgathervAsync(name, i.data, o.data, std::move(counts), i.type, set, ready), in, out);
  }
  PyHandle Broadcast(const std::string& name, nb::ndarray<> in, nb::ndarray<> out, int root, int set,
                     uintptr_t stream) {
    auto [i, o, ready] = Pair(in, out, stream);
    if (i.count != o.count)
      Raise(InvalidArgumentError("broadcast: the output must have as many elements as the input"));
    return Submit(Rt().BroadcastAsync(name, i.data, o.data, i.count, i.type, root, set, ready), in, out);
  }
  PyHandle ReduceScatter(const std::string& name, nb::ndarray<> in, nb::ndarray<> out, int op, int set,
                         uintptr_t stream) {
    auto [i, o, ready] = Pair(in, out, stream);
    const int n = SetSize(set);
    if (i.count != o.count * static_cast<size_t>(n)) {
      Raise(InvalidArgumentError("reducescatter: the input must hold the output's element count times the set size (" +
                                 std::to_string(n) + ")"));
    }
    return Submit(Rt().ReduceScatterAsync(name, i.data, o.data, o.count, i.type, static_cast<ReduceOp>(op), set, ready),
                  in, out);
  }
  PyHandle Alltoall(const std::string& name, nb::ndarray<> in, nb::ndarray<> out, int set, uintptr_t stream) {
    auto [i, o, ready] = Pair(in, out, stream);
    const size_t n = static_cast<size_t>(SetSize(set));
    if (i.count != o.count || i.count % n != 0) {
      Raise(InvalidArgumentError(
          "alltoall: input and output must have the same element count, divisible by the set size"));
    }
    return Submit(Rt().AlltoallAsync(name, i.data, o.data, i.count / n, i.type, set, ready), in, out);
  }
  PyHandle Barrier(int set) { return PyHandle(Rt().BarrierAsync(set), {}); }
  // Point-to-point on set `set` with its rank `peer`: host memory only (the Python side stages CUDA tensors).
  PyTransfer Send(nb::ndarray<> buf, int peer, uint32_t tag, int set) {
    TensorArg t = HostBuffer(buf, "send");
    const size_t bytes = t.count * common::DataTypeSize(t.type);
    return PyTransfer(Value(Rt().SendAsync(t.data, bytes, peer, tag, set)), nb::cast(buf));
  }
  PyTransfer Recv(nb::ndarray<> buf, int peer, uint32_t tag, int set) {
    TensorArg t = HostBuffer(buf, "recv");
    const size_t bytes = t.count * common::DataTypeSize(t.type);
    return PyTransfer(Value(Rt().RecvAsync(t.data, bytes, peer, tag, set)), nb::cast(buf));
  }

  int AddProcessSet(std::vector<int> ranks, bool submission_order) {
    StatusOr<int> id = 0;
    {
      nb::gil_scoped_release release;
      id = Rt().AddProcessSet(std::move(ranks),
                              submission_order ? fusion::Ordering::kSubmissionOrder : fusion::Ordering::kNegotiated);
    }
    return Value(std::move(id));
  }
  int AddGroup(std::vector<int> ranks, const std::string& key) {
    StatusOr<int> id = 0;
    {
      nb::gil_scoped_release release;
      id = Rt().AddGroup(std::move(ranks), key);
    }
    return Value(std::move(id));
  }
  void RemoveProcessSet(int id) { Check(Rt().RemoveProcessSet(id)); }
  std::vector<int> ProcessSetRanks(int id) const { return Value(Rt().ProcessSetRanks(id)); }
  int ProcessSetRank(int id) const { return Value(Rt().ProcessSetRank(id)); }
  int RuleProcessSet(const std::string& name) const { return Value(session_->RuleProcessSet(name)); }
  void Journal(int64_t step, uint64_t epoch, const std::vector<uint64_t>& samples) {
    Check(session_->JournalAttempt(step, epoch, samples));
  }

 private:
  // Start's and Join's errors: what ended the worker (EndWorker wrote its termination message) is WorkerFailed.
  static void CheckJoined(const Status& s) {
    if (s.ok()) return;
    if (elastic::ClassifyFailure(s) == elastic::FailureClass::kEndsWorker)
      throw WorkerFailed("this worker cannot go on (no rebuild repairs it): " + s.ToString());
    Raise(s);
  }
  runtime::Runtime& Rt() const {
    runtime::Runtime* rt = session_->runtime();
    if (rt == nullptr) Raise(FailedPreconditionError("ringmaster is not initialized: call init() first"));
    return *rt;
  }
  static TensorArg HostBuffer(const nb::ndarray<>& buf, std::string_view role) {
    TensorArg t = Value(DescribeTensor(buf, role));
    if (t.cuda)
      Raise(InvalidArgumentError(std::string(role) + ": point-to-point takes host memory; stage CUDA tensors"));
    return t;
  }
  int SetSize(int set) const { return static_cast<int>(Value(Rt().ProcessSetRanks(set)).size()); }
  // A collective's operands: its input, its output, and the fence its input's stream sets (FenceAfterStream).
  struct Operands {
    TensorArg in, out;
    std::shared_ptr<comm::ReadyFence> ready;
  };
  Operands Pair(const nb::ndarray<>& in, const nb::ndarray<>& out, uintptr_t stream) {
    TensorArg i = Value(DescribeTensor(in, "input"));
    TensorArg o = Value(DescribeTensor(out, "output"));
    Check(CheckSameKind(i, o));
    // Under NCCL a CPU tensor runs on the host communicator beside it (the runtime tells them apart), as
    // Horovod's CPU ops run on Gloo: objects, optimizer state and metrics stay on the CPU.
    if (i.cuda && Rt().backend() != comm::Backend::kNccl) {
      Raise(
          InvalidArgumentError("a CUDA tensor, but this generation runs Gloo (CPU): set RINGMASTER_BACKEND=nccl "
                               "(or auto) on a GPU worker, or move the tensor to the CPU"));
    }
    return {i, o, FenceAfterStream(i, stream)};
  }
  PyHandle Submit(fusion::Handle h, const nb::ndarray<>& in, const nb::ndarray<>& out) {
    return PyHandle(h, {nb::cast(in), nb::cast(out)}, parked_);
  }

  std::unique_ptr<elastic::WorkerSession> session_;
  Parked parked_ = std::make_shared<std::vector<nb::object>>();
  RingmasterTfBridge tf_bridge_{};
};

// The exactly-once sampler's arithmetic (data/elastic_sampler.h) for ringmaster.torch.elastic.ElasticSampler.
class PySampler {
 public:
  PySampler(uint64_t num_samples, uint64_t batch, uint64_t seed)
      : sampler_(Value(data::ElasticSampler::Create({num_samples, batch, seed}))) {}
  // (epoch of the step, this rank's ids, the cursor after the step)
  nb::tuple Plan(uint64_t epoch, uint64_t committed, uint32_t size, uint32_t rank) {
    auto plan = Value(sampler_.Plan({epoch, committed}, size, rank));
    return nb::make_tuple(plan.epoch, plan.indices, plan.next.epoch, plan.next.committed);
  }

 private:
  data::ElasticSampler sampler_;
};

}  // namespace
}  // namespace ringmaster::python

NB_MODULE(_native, m) {
  using namespace ringmaster::python;
  m.doc() = "Ringmaster's worker runtime (see ringmaster.torch for the Horovod-style API)";
  nb::exception<CollectiveAborted>(m, "CollectiveAborted", PyExc_RuntimeError);
  nb::exception<PreconditionFailed>(m, "PreconditionError", PyExc_RuntimeError);
  nb::exception<WorkerFailed>(m, "WorkerFailed", PyExc_RuntimeError);

  m.attr("SUM") = static_cast<int>(ReduceOp::kSum);
  m.attr("AVERAGE") = static_cast<int>(ReduceOp::kAvg);
  m.attr("MIN") = static_cast<int>(ReduceOp::kMin);
  m.attr("MAX") = static_cast<int>(ReduceOp::kMax);
  m.attr("PRODUCT") = static_cast<int>(ReduceOp::kProduct);

  nb::class_<PyHandle>(m, "Handle")
      .def("poll", &PyHandle::Poll, "True once the collective has finished (never blocks)")
      .def("wait", &PyHandle::Wait, "Blocks (without the GIL) until the collective finishes; raises on failure");

  nb::class_<PyTransfer>(m, "Transfer")
      .def("wait", &PyTransfer::Wait,
           "Blocks (without the GIL) until the send or receive completes; raises on failure");

  const auto in = nb::arg("input").noconvert();
  const auto out = nb::arg("output").noconvert();
  nb::class_<PySession>(m, "Session")
      .def(nb::init<>(), "Reads the worker's RINGMASTER_* environment once (a world of one without a launcher)")
      .def("start", &PySession::Start, "Joins the first membership generation and restores the newest state")
      .def("join", &PySession::Join, "Rebuilds at the newest generation; False when this worker has left the job")
      .def("interrupted", &PySession::Interrupted, nb::arg("why"))
      .def("superseded", &PySession::Superseded)
      .def("commit", &PySession::Commit, nb::arg("state"), nb::arg("epoch"), nb::arg("committed"))
      .def("agree", &PySession::Agree, "every member confirms the last committed step (before finish)")
      .def("committed", &PySession::Committed, "(step, epoch, committed, state bytes)")
      .def("committed_step", &PySession::CommittedStep)
      .def("count_samples", &PySession::CountSamples, nb::arg("n"),
           "counts n samples this rank trained on in a committed step (ringmaster_worker_samples_total)")
      .def("journaling", &PySession::Journaling, "whether the sampler's steps go into the sample journal")
      .def("finish", &PySession::Finish)
      .def("topology", &PySession::Topology)
      .def("worker_id", &PySession::WorkerId)
      .def("checkpoint_dir", &PySession::CheckpointDir, "RINGMASTER_CHECKPOINT_DIR (empty when none)")
      .def("require_min_size", &PySession::RequireMinSize, nb::arg("n"),
           "generations with fewer than n workers pause (the program's layout needs n); never lowers the minimum")
      .def("min_size", &PySession::MinSize, "the size below which this worker pauses")
      .def("standalone", &PySession::Standalone, "a world of one without a launcher or operator")
      .def("last_rebuild", &PySession::LastRebuild, "the last rebuild's phases in seconds")
      .def("backend", &PySession::Backend)
      .def("device", &PySession::Device, "the CUDA device of this generation's NCCL communicators; -1 under Gloo")
      .def("metrics_port", &PySession::MetricsPort)
      .def("tf_bridge", &PySession::TfBridge,
           "the address of the session's C bridge for the TensorFlow op library (native/tf_bridge.h)")
      .def("allreduce", &PySession::Allreduce, nb::arg("name"), in, out, nb::arg("op"), nb::arg("set"),
           nb::arg("stream"))
      .def("allgather", &PySession::Allgather, nb::arg("name"), in, out, nb::arg("counts"), nb::arg("set"),
           nb::arg("stream"))
      .def("broadcast", &PySession::Broadcast, nb::arg("name"), in, out, nb::arg("root"), nb::arg("set"),
           nb::arg("stream"))
      .def("reducescatter", &PySession::ReduceScatter, nb::arg("name"), in, out, nb::arg("op"), nb::arg("set"),
           nb::arg("stream"))
      .def("alltoall", &PySession::Alltoall, nb::arg("name"), in, out, nb::arg("set"), nb::arg("stream"))
      .def("barrier", &PySession::Barrier, nb::arg("set"))
      .def("send", &PySession::Send, nb::arg("buffer").noconvert(), nb::arg("peer"), nb::arg("tag"), nb::arg("set"),
           "posts a send of a host buffer to rank `peer` of the set; returns a Transfer")
      .def("recv", &PySession::Recv, nb::arg("buffer").noconvert(), nb::arg("peer"), nb::arg("tag"), nb::arg("set"),
           "posts a receive into a host buffer from rank `peer` of the set; returns a Transfer")
      .def("add_group", &PySession::AddGroup, nb::arg("ranks"), nb::arg("key"),
           "a set over its own communicator, made by its members alone (a torch.distributed subgroup)")
      .def("add_process_set", &PySession::AddProcessSet, nb::arg("ranks"), nb::arg("submission_order") = false,
           "submission_order: collectives run as submitted, no negotiation or fusion (torch.distributed's contract)")
      .def("remove_process_set", &PySession::RemoveProcessSet, nb::arg("id"))
      .def("process_set_ranks", &PySession::ProcessSetRanks, nb::arg("id"))
      .def("process_set_rank", &PySession::ProcessSetRank, nb::arg("id"))
      .def("rule_process_set", &PySession::RuleProcessSet, nb::arg("name"))
      .def("journal", &PySession::Journal, nb::arg("step"), nb::arg("epoch"), nb::arg("samples"));

  m.def("nccl_info", &NcclInfo,
        "the NCCL this process loaded: {version, version_code, path, shrink, revoke, grow, emulated}, or {error}");
  m.def("cuda_info", &CudaInfo,
        "the CUDA runtime this process loaded: {path, emulated, device_count or device_error}, or {error}");

  nb::class_<PySampler>(m, "Sampler")
      .def(nb::init<uint64_t, uint64_t, uint64_t>(), nb::arg("num_samples"), nb::arg("global_batch"), nb::arg("seed"))
      .def("plan", &PySampler::Plan, nb::arg("epoch"), nb::arg("committed"), nb::arg("size"), nb::arg("rank"));
}

#include "worker-runtime/runtime/runtime.h"

#include <algorithm>
#include <optional>

#include "worker-runtime/comm/validate.h"
#include "worker-runtime/gloo/gloo_communicator.h"
#include "worker-runtime/nccl/gpu_api.h"
#include "worker-runtime/nccl/gpu_probe.h"
#include "worker-runtime/runtime/world.h"

namespace ringmaster::runtime {

namespace {

// The CUDA device an NCCL communicator built with `config` runs on: CreateWorldCommunicator's choice
// (nccl::DeviceIndex), which refuses an index beyond the visible GPUs before any Runtime exists (-1 then);
// 0 without GPUs.
int DeviceOf(const RuntimeConfig& config) {
  if (nccl::VisibleGpuCount() == 0) return 0;
  StatusOr<int> device = nccl::DeviceIndex(config.device, config.local_rank);
  return device.ok() ? *device : -1;
}

}  // namespace

StatusOr<std::unique_ptr<comm::Communicator>> Runtime::NewCommunicator(const RuntimeConfig& config,
                                                                       comm::Backend backend,
                                                                       std::shared_ptr<store::Store> store, int rank,
                                                                       int size, const std::string& prefix) {
  WorldOptions wo;
  wo.backend = backend;
  wo.timeout = config.timeout;
  wo.local_rank = config.local_rank;
  wo.device = config.device;
  wo.host = config.host;
  wo.gpu_traffic = config.gpu_traffic;
  wo.allreduce = config.allreduce;
  wo.prefix = prefix;
  if (config.communicator_factory) return config.communicator_factory(std::move(store), rank, size, wo);
  return CreateWorldCommunicator(std::move(store), rank, size, wo);
}

StatusOr<std::unique_ptr<Runtime>> Runtime::Create(const RuntimeConfig& config, std::shared_ptr<store::Store> store,
                                                   int rank, int size, std::shared_ptr<timeline::Timeline> timeline) {
  RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> world,
                              NewCommunicator(config, config.backend, store, rank, size, config.name + "/world"));
  return Assemble(config, std::move(store), std::move(world), std::move(timeline));
}

bool Runtime::CanShrink() const {
  if (!quiesced_.load()) return false;
  auto world = sets_.EngineFor(kWorldSet);
  return world.ok() && (*world)->data()->can_shrink();
}

bool Runtime::SameDevice(const RuntimeConfig& config) const {
  return backend_ != comm::Backend::kNccl || DeviceOf(config) == device_;
}

StatusOr<std::unique_ptr<Runtime>> Runtime::CreateByShrinking(const RuntimeConfig& config,
                                                              std::shared_ptr<store::Store> store, Runtime& parent,
                                                              const std::vector<int>& excluded,
                                                              std::shared_ptr<timeline::Timeline> timeline) {
  // Quiesce() joined the parent's engine threads, so this thread is the only one inside the
  // communicator, as Shrink requires.
  if (!parent.quiesced_.load()) {
    return FailedPreconditionError(
        "shrinking a runtime that is not quiesced: its engine may still be inside its "
        "communicator (call Quiesce first)");
  }
  if (!parent.SameDevice(config)) {
    return FailedPreconditionError("shrinking a communicator on GPU " + std::to_string(parent.device()) +
                                   " into one on GPU " + std::to_string(DeviceOf(config)) +
                                   ": build a new communicator");
  }
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<fusion::Engine> world, parent.sets_.EngineFor(kWorldSet));
  RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> shrunk,
                              world->data()->Shrink(excluded, config.name + "/world"));
  return Assemble(config, std::move(store), std::move(shrunk), std::move(timeline));
}

StatusOr<std::unique_ptr<Runtime>> Runtime::Assemble(const RuntimeConfig& config, std::shared_ptr<store::Store> store,
                                                     std::unique_ptr<comm::Communicator> world,
                                                     std::shared_ptr<timeline::Timeline> timeline) {
  const int rank = world->rank(), size = world->size();
  if (!timeline) {
    RINGMASTER_ASSIGN_OR_RETURN(timeline, timeline::OpenTimelineForRank(config.timeline_path, rank));
  }
  std::shared_ptr<comm::Communicator> data(std::move(world));
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<comm::Communicator> control,
                              ControlChannel(config, store, data, config.name + "/control"));
  std::unique_ptr<Runtime> rt(new Runtime(config, rank, size, data->backend(), std::move(timeline)));
  rt->store_ = store;
  RINGMASTER_RETURN_IF_ERROR(rt->sets_.Add(process_sets::ProcessSet{
      kWorldSet, "world",
      [&] {
        std::vector<int> all(size);
        for (int i = 0; i < size; ++i) all[i] = i;
        return all;
      }(),
      std::make_shared<fusion::Engine>(data, control, rt->EngineOptionsFor(kWorldSet, "world"))}));
  for (const auto& ranks : config.process_sets) {
    auto id = rt->AddProcessSet(ranks);
    if (!id.ok()) return id.status().WithContext("static process set");
  }
  return rt;
}

StatusOr<std::shared_ptr<comm::Communicator>> Runtime::ControlChannel(const RuntimeConfig& config,
                                                                      const std::shared_ptr<store::Store>& store,
                                                                      const std::shared_ptr<comm::Communicator>& data,
                                                                      const std::string& prefix) {
  if (data->memory() == comm::MemoryKind::kHost) return data;
  // Negotiation runs on the host (Horovod's controller/ops split): a Gloo side channel.
  gloo::GlooOptions go;
  go.host = config.host;
  go.timeout = config.timeout;
  RINGMASTER_ASSIGN_OR_RETURN(auto c, gloo::GlooCommunicator::Create(store, prefix, data->rank(), data->size(), go));
  return std::shared_ptr<comm::Communicator>(std::move(c));
}

Runtime::Runtime(const RuntimeConfig& config, int rank, int size, comm::Backend backend,
                 std::shared_ptr<timeline::Timeline> timeline)
    : config_(config),
      rank_(rank),
      size_(size),
      backend_(backend),
      device_(backend == comm::Backend::kNccl ? DeviceOf(config) : -1),
      timeline_(std::move(timeline)),
      sets_(rank) {}

Runtime::~Runtime() {
  std::vector<process_sets::ProcessSet> all = sets_.TakeAll();
  // Sets first (their engines may use the world's stores), the world last.
  std::stable_partition(all.begin(), all.end(), [](const process_sets::ProcessSet& s) { return s.id != kWorldSet; });
  for (auto& s : all) s.engine.reset();
}

fusion::EngineOptions Runtime::EngineOptionsFor(int id, const std::string& name, fusion::Ordering ordering) const {
  fusion::EngineOptions o;
  o.id = id;
  o.name = name;
  o.ordering = ordering;
  o.fusion_threshold = config_.fusion_threshold_bytes;
  o.cycle_time = config_.cycle_time;
  o.timeline = timeline_.get();
  return o;
}

namespace {

// Under NCCL, whether the request's buffers are host memory (then it runs on the host beside NCCL).
// Errors: InvalidArgument when one buffer is host memory and the other a GPU's, or CUDA cannot tell.
StatusOr<bool> OnHost(const fusion::Request& r) {
  std::optional<bool> host;
  for (const void* p : {r.in, static_cast<const void*>(r.out)}) {
    if (p == nullptr) continue;
    RINGMASTER_ASSIGN_OR_RETURN(bool h, nccl::IsHostMemory(p));
    if (host && *host != h) {
      return InvalidArgumentError(
          "one buffer is host memory and the other a GPU's: pass both on the CPU or both "
          "on this rank's GPU");
    }
    host = h;
  }
  return host.value_or(false);
}

}  // namespace

fusion::Handle Runtime::Submit(int set, fusion::Request request) {
  auto fail = [&](const Status& why) {
    request.completion->Finish(
        why.WithContext(std::string(fusion::CollectiveKindName(request.kind)) + " '" + request.name + "'"));
    return fusion::Handle(request.completion);
  };
  auto engine = sets_.EngineFor(set);
  if (!engine.ok()) return fail(engine.status());
  if (backend_ == comm::Backend::kNccl) {
    StatusOr<bool> host = OnHost(request);
    if (!host.ok()) return fail(host.status());
    request.host = *host;
  }
  return (*engine)->Submit(std::move(request));
}

namespace {

// The fields every data collective sets; callers add op, root or counts.
fusion::Request DataRequest(std::string name, fusion::CollectiveKind kind, const void* in, void* out, size_t count,
                            common::DataType type) {
  fusion::Request r;
  r.name = std::move(name);
  r.kind = kind;
  r.in = in;
  r.out = out;
  r.count = count;
  r.type = type;
  return r;
}

}  // namespace

fusion::Handle Runtime::AllreduceAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                       common::ReduceOp op, int set, std::shared_ptr<comm::ReadyFence> ready) {
  fusion::Request r = DataRequest(std::move(name), fusion::CollectiveKind::kAllreduce, in, out, count, type);
  r.op = op;
  r.ready = std::move(ready);
  return Submit(set, std::move(r));
}

fusion::Handle Runtime::AllgatherAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                       int set) {
  return Submit(set, DataRequest(std::move(name), fusion::CollectiveKind::kAllgather, in, out, count, type));
}

fusion::Handle Runtime::AllgathervAsync(std::string name, const void* in, void* out, std::vector<size_t> counts,
                                        common::DataType type, int set, std::shared_ptr<comm::ReadyFence> ready) {
  fusion::Request r = DataRequest(std::move(name), fusion::CollectiveKind::kAllgatherv, in, out, 0, type);
  r.counts = std::move(counts);
  r.ready = std::move(ready);
  return Submit(set, std::move(r));
}

fusion::Handle Runtime::BroadcastAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                       int root, int set, std::shared_ptr<comm::ReadyFence> ready) {
  fusion::Request r = DataRequest(std::move(name), fusion::CollectiveKind::kBroadcast, in, out, count, type);
  r.root = root;
  r.ready = std::move(ready);
  return Submit(set, std::move(r));
}

fusion::Handle Runtime::ReduceScatterAsync(std::string name, const void* in, void* out, size_t count,
                                           common::DataType type, common::ReduceOp op, int set,
                                           std::shared_ptr<comm::ReadyFence> ready) {
  fusion::Request r = DataRequest(std::move(name), fusion::CollectiveKind::kReduceScatter, in, out, count, type);
  r.op = op;
  r.ready = std::move(ready);
  return Submit(set, std::move(r));
}

fusion::Handle Runtime::AlltoallAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                      int set, std::shared_ptr<comm::ReadyFence> ready) {
  fusion::Request r = DataRequest(std::move(name), fusion::CollectiveKind::kAlltoall, in, out, count, type);
  r.ready = std::move(ready);
  return Submit(set, std::move(r));
}

fusion::Handle Runtime::BarrierAsync(int set) {
  fusion::Request r;
  r.name = "barrier";
  r.kind = fusion::CollectiveKind::kBarrier;
  return Submit(set, std::move(r));
}

StatusOr<int> Runtime::AddProcessSet(std::vector<int> ranks, fusion::Ordering ordering) {
  std::sort(ranks.begin(), ranks.end());
  RINGMASTER_RETURN_IF_ERROR(comm::CheckSubset(ranks, size_));
  int id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_set_id_++;
  }
  const std::string name = "ps" + std::to_string(id);
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<fusion::Engine> world, sets_.EngineFor(kWorldSet));
  // Split on the world engine's thread, ordered with the world's collectives.
  std::shared_ptr<comm::Communicator> data, control;
  std::string fingerprint = "process-set/add/" + std::to_string(id) + ":";
  for (int r : ranks) fingerprint += std::to_string(r) + ",";
  fusion::Handle h = world->SubmitTask(fingerprint, [&](comm::Communicator& d, comm::Communicator& c) -> Status {
    RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> sub, d.Split(ranks, name));
    data = std::move(sub);
    if (&c == &d) {
      control = data;
    } else {
      RINGMASTER_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> sub_control, c.Split(ranks, name + "-control"));
      control = std::move(sub_control);
    }
    return Status::Ok();
  });
  RINGMASTER_RETURN_IF_ERROR(h.Wait());
  process_sets::ProcessSet set{id, name, ranks, nullptr};
  if (data) set.engine = std::make_shared<fusion::Engine>(data, control, EngineOptionsFor(id, name, ordering));
  RINGMASTER_RETURN_IF_ERROR(sets_.Add(std::move(set)));
  return id;
}

Status Runtime::RemoveProcessSet(int id) {
  RINGMASTER_ASSIGN_OR_RETURN(process_sets::ProcessSet set, sets_.Remove(id));
  set.engine.reset();  // stops its thread once in-flight handles' engine work ends
  return Status::Ok();
}

StatusOr<int> Runtime::ProcessSetRank(int id) const {
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<fusion::Engine> engine, sets_.EngineFor(id));
  return engine->rank();
}

StatusOr<fusion::EngineStats> Runtime::Stats(int set) const {
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<fusion::Engine> engine, sets_.EngineFor(set));
  return engine->stats();
}

Status Runtime::RunOnHost(std::string name, const std::function<Status(comm::Communicator& host)>& fn) {
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<fusion::Engine> world, sets_.EngineFor(kWorldSet));
  return world
      ->SubmitTask(std::move(name), [&](comm::Communicator&, comm::Communicator& control) { return fn(control); })
      .Wait();
}

void Runtime::Vote(int64_t step) {
  auto world = sets_.EngineFor(kWorldSet);
  if (world.ok()) (*world)->Vote(step);
}

int64_t Runtime::Agreed() const {
  auto world = sets_.EngineFor(kWorldSet);
  return world.ok() ? (*world)->agreed() : -1;
}

fusion::Handle Runtime::AgreeAsync(int64_t step) {
  auto world = sets_.EngineFor(kWorldSet);
  if (!world.ok()) {
    auto failed = std::make_shared<fusion::Completion>();
    failed->Finish(world.status());
    return fusion::Handle(std::move(failed));
  }
  return (*world)->SubmitVote(step);
}

Status Runtime::Health() const {
  for (int id : sets_.Ids()) {
    auto engine = sets_.EngineFor(id);
    if (!engine.ok()) continue;  // not a member of that set, or removed meanwhile
    for (const auto* comm : {(*engine)->data().get(), (*engine)->control().get()}) {
      if (comm == nullptr) continue;
      Status health = comm->health();
      if (!health.ok()) return health;
    }
  }
  return Status::Ok();
}

void Runtime::Abort(const std::string& reason) {
  for (int id : sets_.Ids()) {
    auto engine = sets_.EngineFor(id);
    if (engine.ok()) (*engine)->Abort(reason);
  }
}

Status Runtime::Quiesce(const std::string& reason, std::chrono::milliseconds timeout) {
  Abort(reason);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status first;
  for (int id : sets_.Ids()) {
    auto engine = sets_.EngineFor(id);
    if (!engine.ok()) continue;  // removed meanwhile: its destructor joined its thread
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    Status stopped = (*engine)->Stop(std::max(left, std::chrono::milliseconds(0)));
    if (!stopped.ok() && first.ok()) first = stopped;
  }
  if (!first.ok()) return first.WithContext(std::to_string(timeout.count()) + " ms after the abort");
  quiesced_.store(true);
  return Status::Ok();
}

}  // namespace ringmaster::runtime

#include "tests/gpu_emulation/comm_jobs.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "tests/gpu_emulation/group.h"
#include "tests/gpu_emulation/log.h"
#include "tests/gpu_emulation/settings.h"
#include "tests/gpu_emulation/tags.h"

namespace gpuemu {
namespace {

// RINGMASTER_EMULATED_NCCL_LATENCY_MS: the job ends this much later (sooner if aborted).
void LatencyDelay(const AbortCheck& abort) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(GetSettings().latency_ms);
  while (std::chrono::steady_clock::now() < end && !abort.Aborted()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// as initTransportsRank's check (init.cc): two ranks of one communicator on one GPU of one host.
ncclResult_t CheckDuplicateGpus(const std::vector<PeerInfo>& peers, int cuda_dev) {
  if (GetSettings().multi_rank_gpu) return ncclSuccess;
  for (size_t i = 0; i < peers.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (peers[i].host_hash == peers[j].host_hash && peers[i].phys_dev == peers[j].phys_dev) {
        Warn(cuda_dev,
             "Duplicate GPU detected : rank %zu and rank %zu both on CUDA device %d (emulated GPU %d of host %s). "
             "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this "
             "configuration.",
             j, i, peers[i].cuda_dev, peers[i].phys_dev, peers[i].host);
        return ncclInvalidUsage;
      }
    }
  }
  return ncclSuccess;
}

// A child's mesh, its listening addresses exchanged over the parent's mesh among the members only.
ncclResult_t BuildChildMesh(Mesh& parent, const std::vector<int>& members, int me, uint64_t child_id, uint64_t tag,
                            const AbortCheck& abort, std::shared_ptr<Mesh>* out) {
  WireAddr mine;
  int lfd = ListenOn(parent.local_ip(), &mine);
  if (lfd < 0) {
    Warn(-1, "Bootstrap : unable to listen on %s", ToString(parent.local_ip()).c_str());
    return ncclSystemError;
  }
  const uint64_t addr_tag = MakeTag(TagKind::kChildAddr, tag);
  for (size_t i = 0; i < members.size(); ++i) {
    if (static_cast<int>(i) != me) parent.Send(members[i], addr_tag, &mine, sizeof mine, abort);
  }
  std::vector<WireAddr> addrs(members.size());
  addrs[me] = mine;
  for (size_t i = 0; i < members.size(); ++i) {
    if (static_cast<int>(i) == me) continue;
    Message m;
    if (!parent.Recv(members[i], addr_tag, &m, abort) || m.size != sizeof(WireAddr)) {
      CloseFd(lfd);
      return ncclInternalError;  // aborted
    }
    std::memcpy(&addrs[i], m.data.get(), sizeof(WireAddr));
  }
  return Mesh::Build(me, addrs, child_id, lfd, abort, out);
}

void Publish(ncclComm** slot, ncclComm* value) {
  // as COMPILER_ATOMIC_STORE(job->newcomm, comm) in ncclCommInitRankFunc: from the job's thread
  if (slot) __atomic_store_n(slot, value, __ATOMIC_RELEASE);
}

void Adopt(CommCore& c, std::shared_ptr<Mesh> mesh) {
  std::lock_guard<std::mutex> lock(c.mu);
  c.mesh = std::move(mesh);
  c.send_seq.assign(c.nranks, 0);
  c.recv_seq.assign(c.nranks, 0);
}

}  // namespace

ncclResult_t InitRankJob(const InitJobArgs& a) {
  CommCore& c = *a.comm;
  const AbortCheck abort(c.abort_flag);
  ncclResult_t res = ncclSuccess;
  IdHandle id = a.id;
  if (!a.has_id) {
    // an existing rank of a grow that was given no id: the grow root's id comes over the parent's
    // mesh (bcastGrowHandle, from the rank that called ncclCommGetUniqueId)
    Message m;
    int from = -1;
    std::shared_ptr<Mesh> pm = a.parent->GetMesh();
    if (!pm || !pm->RecvAny(a.grow_tag, &m, &from, abort) || m.size != sizeof(ncclUniqueId)) {
      res = ncclInternalError;
    } else {
      ncclUniqueId uid;
      std::memcpy(uid.internal, m.data.get(), sizeof uid.internal);
      if (!DecodeId(uid, &id)) res = ncclInternalError;
    }
  }
  int listen_fd = -1;
  std::vector<PeerInfo> table;
  if (res == ncclSuccess) {
    c.id = a.grow ? HashCombine(id.magic, static_cast<uint64_t>(c.nranks)) : HashBytes(&id, sizeof id);
    if (auto root = FindLocalRoot(id.magic)) {
      std::lock_guard<std::mutex> lock(c.mu);
      c.root = std::move(root);  // this process's root: stopped with this communicator
    }
    PeerInfo self;
    self.rank = c.rank;
    self.nranks = c.nranks;
    self.host_hash = GetSettings().host_hash;
    self.cuda_dev = c.cuda_dev;
    self.phys_dev = c.phys_dev;
    self.pid = static_cast<int32_t>(::getpid());
    std::snprintf(self.host, sizeof self.host, "%s", GetSettings().hostname.c_str());
    res = BootstrapExchange(id, self, abort, &listen_fd, &table);
    std::shared_ptr<BootstrapRoot> root;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      root = c.root;
    }
    if (res == ncclSuccess && root && root->WaitFinished(abort)) {
      // this process's root has answered every rank: its thread is over, joined now
      ForgetRoot(root);
      std::lock_guard<std::mutex> lock(c.mu);
      c.root.reset();
    }
  }
  if (res == ncclSuccess) res = CheckDuplicateGpus(table, c.cuda_dev);
  if (res == ncclSuccess) {
    std::vector<WireAddr> addrs;
    for (const PeerInfo& p : table) addrs.push_back(p.addr);
    std::shared_ptr<Mesh> mesh;
    res = Mesh::Build(c.rank, addrs, c.id, listen_fd, abort, &mesh);
    listen_fd = -1;
    if (res == ncclSuccess) Adopt(c, std::move(mesh));
  }
  CloseFd(listen_fd);
  if (res == ncclSuccess) LatencyDelay(abort);
  c.init_state.store(res);
  Publish(a.newcomm, a.handle);
  return res;
}

ncclResult_t ChildJob(const ChildJobArgs& a) {
  CommCore& parent = *a.parent;
  const AbortCheck abort(a.child ? a.child->abort_flag : parent.abort_flag);
  std::shared_ptr<Mesh> pm = parent.GetMesh();
  ncclResult_t res = pm ? ncclSuccess : ncclInternalError;
  std::vector<int> members;
  if (res == ncclSuccess && !a.shrink) {
    // as commGetSplitInfo: every parent rank's (color, key), to all
    const uint64_t tag = MakeTag(TagKind::kSplitInfo, a.tag);
    const int mine[2] = {a.color, a.key};
    for (int p = 0; p < parent.nranks; ++p) {
      if (p != parent.rank) pm->Send(p, tag, mine, sizeof mine, abort);
    }
    std::vector<std::pair<int, int>> info(parent.nranks);
    info[parent.rank] = {a.color, a.key};
    for (int p = 0; p < parent.nranks && res == ncclSuccess; ++p) {
      if (p == parent.rank) continue;
      Message m;
      if (!pm->Recv(p, tag, &m, abort) || m.size != sizeof mine) {
        res = ncclInternalError;
        break;
      }
      int theirs[2];
      std::memcpy(theirs, m.data.get(), sizeof theirs);
      info[p] = {theirs[0], theirs[1]};
    }
    // the members of my color, by key, ties in parent rank order (the insertion of commGetSplitInfo)
    if (a.color != NCCL_SPLIT_NOCOLOR) {
      for (int p = 0; p < parent.nranks; ++p) {
        if (info[p].first != a.color) continue;
        size_t at = 0;
        while (at < members.size() && info[members[at]].second <= info[p].second) ++at;
        members.insert(members.begin() + static_cast<long>(at), p);
      }
    }
  } else if (res == ncclSuccess) {
    // as getParentRanks: the survivors keep their order, filling the gaps
    for (int p = 0; p < parent.nranks; ++p) {
      if (!std::binary_search(a.excluded.begin(), a.excluded.end(), p)) members.push_back(p);
    }
  }
  if (res == ncclSuccess && a.child) {
    CommCore& child = *a.child;
    child.rank = static_cast<int>(std::find(members.begin(), members.end(), parent.rank) - members.begin());
    child.nranks = static_cast<int>(members.size());
    std::shared_ptr<Mesh> mesh;
    res = BuildChildMesh(*pm, members, child.rank, child.id, a.tag, abort, &mesh);
    if (res == ncclSuccess) {
      Adopt(child, std::move(mesh));
      LatencyDelay(abort);
    }
  }
  if (a.child) a.child->init_state.store(res);
  {
    std::lock_guard<std::mutex> lock(parent.mu);
    parent.child_abort_flag.reset();  // as ncclCommInitRankFunc: unlink the child's abort flag
  }
  Publish(a.newcomm, a.child ? a.child_handle : nullptr);
  return res;
}

ncclResult_t RevokeJob(const std::shared_ptr<CommCore>& comm) {
  // as commRevokeAsync: the streams are synchronized (the in-flight kernels saw the abort flag and
  // exit), the proxy stops, then the abort flags are lowered
  comm->WaitRunning();
  LatencyDelay(AbortCheck());
  comm->SetAbortFlags(0);
  SetAsyncError(*comm, ncclSuccess);
  return ncclSuccess;
}

ncclResult_t DestroySyncJob(const std::shared_ptr<CommCore>& comm) {
  // as commDestroySync: wait for this communicator's work (the emulation's teardown needs no
  // collective with the peers)
  if (comm->init_state.load() == ncclSuccess) comm->WaitPending();
  return ncclSuccess;
}

ncclResult_t ReclaimJob(ncclComm* handle) {
  // as commReclaim: commDestroySync unless finalized, then free everything
  std::shared_ptr<CommCore> comm = handle->core;
  if (!comm->finalize_called.load() && comm->init_state.load() == ncclSuccess) {
    if (comm->Aborted()) {
      comm->WaitRunning();  // aborted: the running items exit; queued ones will skip
    } else {
      comm->WaitPending();
    }
  }
  std::vector<std::shared_ptr<GroupJob>> jobs;
  std::shared_ptr<Mesh> mesh;
  std::shared_ptr<BootstrapRoot> root;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    jobs.swap(comm->group_jobs);
    mesh.swap(comm->mesh);
    root.swap(comm->root);
  }
  for (auto& job : jobs) {
    if (comm->Aborted()) {
      GroupJobAbort(*job);
    } else {
      GroupJobComplete(*job);
    }
  }
  if (mesh) mesh->Shutdown();  // closes the connections, joins the reader
  RetireRoot(root);
  FreeComm(handle);
  return ncclSuccess;
}

}  // namespace gpuemu

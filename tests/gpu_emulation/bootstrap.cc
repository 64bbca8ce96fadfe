#include "tests/gpu_emulation/bootstrap.h"

#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>

#include "tests/gpu_emulation/log.h"

namespace gpuemu {
namespace {

constexpr char kSignature[8] = {'R', 'M', 'E', 'M', 'U', 'I', 'D', '1'};
constexpr int kHelloTimeoutMs = 5000;  // a connection that says nothing this long is dropped

struct RootTable {
  std::mutex mu;
  std::map<uint64_t, std::shared_ptr<BootstrapRoot>> roots;
};

RootTable& Roots() {
  static RootTable* table = new RootTable;  // never freed (see bootstrap.h)
  return *table;
}

}  // namespace

void EncodeId(const IdHandle& h, ncclUniqueId* out) {
  std::memset(out->internal, 0, sizeof out->internal);
  static_assert(sizeof(IdHandle) <= sizeof(out->internal), "the id handle must fit in ncclUniqueId");
  std::memcpy(out->internal, &h, sizeof h);
}

bool DecodeId(const ncclUniqueId& id, IdHandle* out) {
  IdHandle h;
  std::memcpy(&h, id.internal, sizeof h);
  if (std::memcmp(h.signature, kSignature, sizeof kSignature) != 0) return false;
  if (h.root.family != AF_INET && h.root.family != AF_INET6) return false;
  *out = h;
  return true;
}

uint64_t RandomMagic() {
  uint64_t v = 0;
  if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
    v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<uint64_t>(::getpid()) << 32);
  }
  return v;
}

BootstrapRoot::BootstrapRoot(int listen_fd, uint64_t magic)
    : listen_fd_(listen_fd), magic_(magic), thread_([this] { Run(); }) {}

BootstrapRoot::~BootstrapRoot() { StopAndJoin(); }

void BootstrapRoot::StopAndJoin() {
  stop_->store(1);
  std::lock_guard<std::mutex> lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

bool BootstrapRoot::WaitFinished(const AbortCheck& abort) {
  while (!finished_.load()) {
    if (abort.Aborted()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lock(join_mu_);
  if (thread_.joinable()) thread_.join();
  return true;
}

void BootstrapRoot::Run() {
  // as bootstrapRoot (bootstrap.cc): collect every rank's info, then send each the whole table
  const AbortCheck stop(stop_);
  std::vector<int> fds;
  std::vector<PeerInfo> infos;
  int nranks = -1, arrived = 0;
  while (!stop.Aborted()) {
    int fd = -1;
    if (AcceptOne(listen_fd_, stop, 100, &fd) != Io::kOk) continue;
    PeerInfo info;
    if (RecvAll(fd, &info, sizeof info, stop, kHelloTimeoutMs) != Io::kOk || info.magic != magic_) {
      CloseFd(fd);
      continue;
    }
    if (nranks < 0) {
      nranks = info.nranks;
      fds.assign(nranks, -1);
      infos.assign(nranks, PeerInfo{});
    }
    if (info.nranks != nranks || info.rank < 0 || info.rank >= nranks) {
      Warn(info.cuda_dev, "Bootstrap Root : mismatch in rank count from procs %d : %d (rank %d)", nranks, info.nranks,
           info.rank);
      CloseFd(fd);
      continue;
    }
    if (fds[info.rank] >= 0) {
      CloseFd(fds[info.rank]);  // the same rank again: the newer connection wins
    } else {
      ++arrived;
    }
    fds[info.rank] = fd;
    infos[info.rank] = info;
    if (arrived == nranks) {
      for (int r = 0; r < nranks; ++r) {
        (void)SendAll(fds[r], infos.data(), sizeof(PeerInfo) * infos.size(), stop);
        CloseFd(fds[r]);
        fds[r] = -1;
      }
      break;
    }
  }
  for (int fd : fds) CloseFd(fd);
  CloseFd(listen_fd_);
  finished_.store(true);
}

ncclResult_t StartRoot(const WireAddr& ip, uint64_t magic, IdHandle* out) {
  WireAddr bound;
  int fd = ListenOn(ip, &bound);
  if (fd < 0) {
    Warn(-1, "Bootstrap : unable to listen on %s", ToString(ip).c_str());
    return ncclSystemError;
  }
  auto root = std::make_shared<BootstrapRoot>(fd, magic);
  {
    RootTable& t = Roots();
    std::lock_guard<std::mutex> lock(t.mu);
    t.roots[magic] = root;
  }
  IdHandle h;
  std::memcpy(h.signature, kSignature, sizeof kSignature);
  h.magic = magic;
  h.root = bound;
  *out = h;
  return ncclSuccess;
}

std::shared_ptr<BootstrapRoot> FindLocalRoot(uint64_t magic) {
  RootTable& t = Roots();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.roots.find(magic);
  return it == t.roots.end() ? nullptr : it->second;
}

void RetireRoot(const std::shared_ptr<BootstrapRoot>& root) {
  if (!root) return;
  root->StopAndJoin();
  RootTable& t = Roots();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.roots.find(root->magic());
  if (it != t.roots.end() && it->second == root) t.roots.erase(it);
}

void ForgetRoot(const std::shared_ptr<BootstrapRoot>& root) {
  RootTable& t = Roots();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.roots.find(root->magic());
  if (it != t.roots.end() && it->second == root) t.roots.erase(it);
}

void ReapFinishedRoots() {
  std::vector<std::shared_ptr<BootstrapRoot>> done;
  {
    RootTable& t = Roots();
    std::lock_guard<std::mutex> lock(t.mu);
    for (auto it = t.roots.begin(); it != t.roots.end();) {
      if (it->second->Finished()) {
        done.push_back(it->second);
        it = t.roots.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& root : done) root->StopAndJoin();
}

ncclResult_t BootstrapExchange(const IdHandle& id, PeerInfo self, const AbortCheck& abort, int* listen_fd,
                               std::vector<PeerInfo>* table) {
  int root = -1;
  if (ConnectTo(id.root, abort, &root) != Io::kOk) return ncclInternalError;  // aborted
  // listen where the root is reached from: the peers reach this rank the same way
  WireAddr local = LocalAddr(root);
  int lfd = ListenOn(local, &self.addr);
  if (lfd < 0) {
    CloseFd(root);
    Warn(self.cuda_dev, "Bootstrap : unable to listen on %s", ToString(local).c_str());
    return ncclSystemError;
  }
  self.magic = id.magic;
  std::vector<PeerInfo> all(self.nranks);
  Io io = SendAll(root, &self, sizeof self, abort);
  if (io == Io::kOk) io = RecvAll(root, all.data(), sizeof(PeerInfo) * all.size(), abort);
  CloseFd(root);
  if (io != Io::kOk) {
    CloseFd(lfd);
    if (io == Io::kAborted) return ncclInternalError;
    Warn(self.cuda_dev, "Bootstrap : the root at %s closed the connection", ToString(id.root).c_str());
    return ncclRemoteError;
  }
  *listen_fd = lfd;
  *table = std::move(all);
  return ncclSuccess;
}

}  // namespace gpuemu

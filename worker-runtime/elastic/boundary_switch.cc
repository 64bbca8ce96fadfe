#include "worker-runtime/elastic/boundary_switch.h"

#include "api/job_status.h"

namespace ringmaster::elastic {

using namespace std::chrono_literals;

bool OrderlyReason(const api::Membership& next) {
  // The operator's ChangeReason names (operator/controller/membership.h) of changes that kill nobody, and its
  // suspension (job_plan.cc: the empty generation of a suspended job, every member leaving alive).
  for (std::string_view reason :
       {std::string_view("WorkerJoined"), std::string_view("ScaledUp"), std::string_view("ScaledDown"),
        std::string_view("Disrupted"), api::reason::kSuspended})
    if (next.reason == reason) return true;
  return false;
}

bool OrderlyChange(const api::Membership& running, const api::Membership& next) {
  return running.generation > 0 && next.generation == running.generation + 1 && OrderlyReason(next);
}

void BoundarySwitch::Running(SwitchStore store) {
  std::lock_guard lock(mu_);
  store_ = std::move(store);
  client_.reset();
  pending_.store(0);
  step_.store(0);
  begun_.store(false);
}

Status BoundarySwitch::Begin(int64_t generation, int64_t started_step) {
  if (begun_.exchange(true)) return FailedPreconditionError("a step-boundary switch of this build was given up");
  step_.store(0);
  since_.store(std::chrono::steady_clock::now().time_since_epoch().count());
  pending_.store(generation);
  int rank;
  {
    std::lock_guard lock(mu_);
    rank = store_.rank;
  }
  if (rank != 0) return Status::Ok();
  // Two steps on: a member may already have committed the step rank 0 is in; none can be further.
  const int64_t boundary = started_step + 2;
  auto published = Exchange(boundary);  // the key is this generation's and only rank 0 adds to it: 0 + boundary
  if (!published.ok()) return published.status().WithContext("publishing the step boundary");
  step_.store(*published);
  return Status::Ok();
}

void BoundarySwitch::Clear() {
  pending_.store(0);
  step_.store(0);
}

int64_t BoundarySwitch::Step() {
  if (const int64_t known = step_.load(); known != 0 || !pending()) return known;
  auto current = Exchange(0);
  if (current.ok() && *current > 0 && pending()) step_.store(*current);
  return step_.load();
}

std::chrono::steady_clock::duration BoundarySwitch::Age() const {
  return std::chrono::steady_clock::now() -
         std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since_.load()));
}

StatusOr<int64_t> BoundarySwitch::Exchange(int64_t delta) {
  std::lock_guard lock(mu_);
  if (!client_) {
    store::StoreClientOptions o;
    o.host = store_.host;
    o.port = store_.port;
    o.secret = store_.secret;
    o.generation = store_.store_generation;
    o.rank = static_cast<uint32_t>(store_.rank);
    // Asked at step boundaries: a rank 0 that does not answer at once is treated as not having chosen yet.
    o.connect_timeout = 300ms;
    o.io_timeout = 1000ms;
    RINGMASTER_ASSIGN_OR_RETURN(client_, store::StoreClient::Connect(o));
  }
  // One switch per build, and the store's keys are the build's own (its store generation): one key.
  auto value = client_->Add("elastic.switch", delta);
  if (!value.ok()) client_.reset();  // connect again next time
  return value;
}

}  // namespace ringmaster::elastic

#include "kube/leader_election.h"

#include <random>
#include <thread>

#include "base/time_format.h"
#include "kube/api_error.h"

namespace ringmaster::kube {

StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(std::shared_ptr<Client> client, LeaderElectionConfig c) {
  if (c.lease_name.empty() || c.lease_namespace.empty() || c.identity.empty())
    return InvalidArgumentError("leader election needs a lease name, namespace and identity");
  if (!(c.lease_duration > c.renew_deadline && c.renew_deadline > c.retry_period && c.retry_period > Duration::zero()))
    return InvalidArgumentError("leader election needs lease_duration > renew_deadline > retry_period > 0");
  return std::unique_ptr<LeaderElector>(new LeaderElector(std::move(client), std::move(c)));
}

LeaderElector::LeaderElector(std::shared_ptr<Client> client, LeaderElectionConfig config)
    : client_(std::move(client)), config_(std::move(config)) {}

std::string LeaderElector::GetLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

void LeaderElector::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  cv_.notify_all();
}

bool LeaderElector::Sleep(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stopping_; });
}

bool LeaderElector::TryAcquireOrRenew() {
  const auto now_wall = std::chrono::system_clock::now();
  const auto now = std::chrono::steady_clock::now();
  const std::string now_text = FormatRfc3339(now_wall, TimePrecision::kMicros);
  const int64_t duration_s =
      std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  auto leases = resources::Leases();
  auto got = client_->Get(leases, config_.lease_namespace, config_.lease_name);
  if (!got.ok() && !IsNotFound(got.status())) {
    config_.log(LogLevel::kWarning, "leader election: reading lease: " + got.status().ToString());
    return false;
  }
  std::string previous_leader;
  if (!got.ok()) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
                  {"spec",
                   {{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", duration_s},
                    {"acquireTime", now_text},
                    {"renewTime", now_text},
                    {"leaseTransitions", 0}}}};
    auto created = client_->Create(leases, config_.lease_namespace, lease);
    if (!created.ok()) {
      if (!IsAlreadyExists(created.status()))
        config_.log(LogLevel::kWarning, "leader election: creating lease: " + created.status().ToString());
      return false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    observed_spec_ = (*created)["spec"];
    observed_rv_ = ResourceVersionOf(*created);
    observed_time_ = now;
    leader_ = config_.identity;
    return true;
  }
  json spec = (*got).value("spec", json::object());
  std::string holder = spec.value("holderIdentity", "");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (spec != observed_spec_) {
      observed_spec_ = spec;
      observed_time_ = now;
    }
    observed_rv_ = ResourceVersionOf(*got);
    previous_leader = leader_;
    leader_ = holder;
    int64_t their_duration = spec.value("leaseDurationSeconds", duration_s);
    bool expired = now >= observed_time_ + std::chrono::seconds(their_duration);
    if (!holder.empty() && holder != config_.identity && !expired) return false;
  }
  json new_spec = spec;
  new_spec["holderIdentity"] = config_.identity;
  new_spec["leaseDurationSeconds"] = duration_s;
  new_spec["renewTime"] = now_text;
  if (holder != config_.identity) {
    new_spec["acquireTime"] = now_text;
    new_spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  json lease = *got;
  lease["spec"] = new_spec;
  auto updated = client_->Update(leases, config_.lease_namespace, lease);  // carries resourceVersion
  if (!updated.ok()) {
    if (!IsConflict(updated.status()))
      config_.log(LogLevel::kWarning, "leader election: updating lease: " + updated.status().ToString());
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  observed_spec_ = (*updated)["spec"];
  observed_rv_ = ResourceVersionOf(*updated);
  observed_time_ = now;
  leader_ = config_.identity;
  return true;
}

void LeaderElector::Release() {
  auto got = client_->Get(resources::Leases(), config_.lease_namespace, config_.lease_name);
  if (!got.ok()) return;
  json& spec = (*got)["spec"];
  if (spec.value("holderIdentity", "") != config_.identity) return;
  const std::string now_text = FormatRfc3339(std::chrono::system_clock::now(), TimePrecision::kMicros);
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = now_text;
  spec["acquireTime"] = now_text;
  auto updated = client_->Update(resources::Leases(), config_.lease_namespace, *got);
  if (!updated.ok())
    config_.log(LogLevel::kWarning, "leader election: releasing lease: " + updated.status().ToString());
}

void LeaderElector::Run() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  auto jittered = [&](Duration d) {
    std::uniform_real_distribution<double> j(1.0, 1.2);  // client-go's JitterFactor 1.2
    return Duration(static_cast<Duration::rep>(double(d.count()) * j(rng)));
  };
  std::string last_reported;
  auto report_leader = [&] {
    std::string leader = GetLeader();
    if (leader != last_reported) {
      last_reported = leader;
      if (config_.on_new_leader && !leader.empty()) config_.on_new_leader(leader);
    }
  };
  // Acquire.
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    bool acquired = TryAcquireOrRenew();
    report_leader();
    if (acquired) break;
    if (!Sleep(jittered(config_.retry_period))) return;
  }
  leading_ = true;
  config_.log(LogLevel::kInfo, "leader election: " + config_.identity + " acquired lease " + config_.lease_namespace +
                                   "/" + config_.lease_name);
  if (config_.on_started_leading) config_.on_started_leading();
  // Renew.
  auto last_renew = std::chrono::steady_clock::now();
  bool stopped = false;
  while (true) {
    if (!Sleep(config_.retry_period)) {
      stopped = true;
      break;
    }
    if (TryAcquireOrRenew()) {
      last_renew = std::chrono::steady_clock::now();
      continue;
    }
    report_leader();
    if (std::chrono::steady_clock::now() - last_renew >= config_.renew_deadline) break;
  }
  leading_ = false;
  config_.log(LogLevel::kInfo, "leader election: " + config_.identity + (stopped ? " stopping" : " lost the lease"));
  if (stopped && config_.release_on_cancel) Release();
  if (config_.on_stopped_leading) config_.on_stopped_leading();
}

}  // namespace ringmaster::kube

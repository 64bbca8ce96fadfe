// MembershipHistory: every membership a TrainingJob's status shows, recorded through a watch of the test's
// own (an informer: it resumes, or relists on 410 Gone, across an outage as the operator's does), and what
// is wrong with the sequence — a generation that goes back, or one generation published with two worlds.
// For e2e tests that disturb the control plane or the operator mid-change.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/names.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"

namespace ringmaster::testing {

// Every membership a TrainingJob's status shows, as a watch delivers them, and what is wrong with them.
// Thread-safe.
class MembershipHistory {
 public:
  using json = nlohmann::json;

  // Starts watching TrainingJob `job` in `ns` as the admin of `kubeconfig`. Errors: those of loading the
  // kubeconfig.
  static StatusOr<std::unique_ptr<MembershipHistory>> Watch(const std::string& kubeconfig, const std::string& ns,
                                                            const std::string& job) {
    RINGMASTER_ASSIGN_OR_RETURN(auto config, kube::LoadConfig(kubeconfig, "", kube::ProcessEnvironment()));
    RINGMASTER_ASSIGN_OR_RETURN(auto client, kube::NewClient(config));
    return std::make_unique<MembershipHistory>(std::move(client), ns, job);
  }

  MembershipHistory(std::shared_ptr<kube::Client> client, const std::string& ns, const std::string& job)
      : informer_(std::move(client),
                  {std::string(api::kGroup), std::string(api::kVersion), std::string(api::kResource), true},
                  Options(ns, job)) {
    kube::EventHandler handler;
    handler.on_add = [this](const json& obj) { Record(obj); };
    handler.on_update = [this](const json&, const json& obj) { Record(obj); };
    informer_.AddEventHandler(handler);
    informer_.Start();
  }

  // Generations that went back or were published with two different worlds; empty when none.
  std::vector<std::string> Problems() const {
    std::lock_guard lock(mu_);
    return problems_;
  }
  // generation -> its world ("pod/uid@rank, ..."), for messages.
  std::string Describe() const {
    std::lock_guard lock(mu_);
    std::string out;
    for (const auto& [g, world] : worlds_) out += "  generation " + std::to_string(g) + ": " + world + "\n";
    return out;
  }
  int64_t lists() const { return informer_.lists(); }

 private:
  static kube::InformerOptions Options(const std::string& ns, const std::string& job) {
    kube::InformerOptions o;
    o.ns = ns;
    o.field_selector = "metadata.name=" + job;
    o.max_backoff = std::chrono::seconds(1);  // come back quickly after the outage
    return o;
  }

  void Record(const json& job) {
    const json membership = job.value("status", json::object()).value("membership", json::object());
    const int64_t generation = membership.value("generation", int64_t{0});
    if (generation == 0) return;
    std::string world;
    for (const auto& m : membership.value("members", json::array())) {
      world += (world.empty() ? "" : ", ") + m.value("pod", "") + "/" + m.value("uid", "").substr(0, 8) + "@" +
               std::to_string(m.value("rank", -1));
    }
    std::lock_guard lock(mu_);
    if (generation < highest_) {
      problems_.push_back("generation " + std::to_string(generation) + " seen after " + std::to_string(highest_));
    }
    highest_ = std::max(highest_, generation);
    auto [it, inserted] = worlds_.emplace(generation, world);
    if (!inserted && it->second != world) {
      problems_.push_back("generation " + std::to_string(generation) + " published as [" + it->second + "] and as [" +
                          world + "]");
    }
  }

  mutable std::mutex mu_;
  int64_t highest_ = 0;                    // guarded by mu_
  std::map<int64_t, std::string> worlds_;  // guarded by mu_
  std::vector<std::string> problems_;      // guarded by mu_
  kube::Informer informer_;                // last: stopped (its handlers done) before the members above go
};

}  // namespace ringmaster::testing

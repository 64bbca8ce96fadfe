#include "operator/controller/goodput.h"

#include <algorithm>
#include <cmath>

#include "api/job_status.h"
#include "base/time_format.h"
#include "operator/controller/membership.h"

namespace ringmaster::controller {

using Clock = std::chrono::system_clock;

namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Stored figures are kept to the millisecond (the ratio to 1e-4): tidy (the nearest double to a decimal, which
// prints as that decimal), and rounding is idempotent.
double Round(double v, double per_unit = 1e3) { return std::round(v * per_unit) / per_unit; }

bool IsLossReason(const std::string& reason) {
  for (ChangeReason r : {ChangeReason::kWorkerFailed, ChangeReason::kWorkerRemoved, ChangeReason::kNodeLost,
                         ChangeReason::kPeerUnreachable}) {
    if (IsLoss(r) && ReasonName(r) == reason) return true;
  }
  return false;
}

bool IsSuspension(const api::Membership& m) { return m.reason == api::reason::kSuspended && m.world_size() == 0; }

// Below the full world after a failure, the missing part of the stepping time is the reschedule phase; not after
// a change the job asked for (a scale, a disruption), nor before its first failure (a job starting at its minimum).
bool Rescheduling(const api::Membership& generation, int64_t failures) {
  const std::string& r = generation.reason;
  return failures > 0 && r != ReasonName(ChangeReason::kScaledUp) && r != ReasonName(ChangeReason::kScaledDown) &&
         r != ReasonName(ChangeReason::kDisrupted);
}

// The share of the desired world that `world` ranks are, capped at 1 (1 when nothing is desired).
double Weight(int32_t world, int32_t desired) {
  if (desired <= 0) return 1;
  return std::min(1.0, static_cast<double>(world) / desired);
}

// The accounting as it goes: asOf as a time point, the figures in doubles.
struct Ledger {
  api::Goodput g;
  Clock::time_point as_of;

  // Moves asOf forward to `t` (never back); the interval counts as wall time unless `suspended`.
  void Advance(Clock::time_point t, bool suspended = false) {
    if (t <= as_of) return;
    if (!suspended) g.wall_seconds += Seconds(t - as_of);
    as_of = t;
  }
  // The job stepped from asOf to `stop` at `world` of `desired` ranks in `generation`; the missing part is lost to
  // rescheduling when `rescheduling`.
  void Stepped(Clock::time_point stop, int32_t world, int32_t desired, bool rescheduling) {
    if (stop <= as_of) return;
    const double span = Seconds(stop - as_of);
    const double w = Weight(world, desired);
    g.productive_seconds += span * w;
    if (w < 1 && rescheduling) g.lost_seconds.reschedule += span * (1 - w);
    Advance(stop);
  }
  // Whether the job is stepping in `m`, the generation it runs.
  bool SteppingIn(const api::Membership& m) const {
    return m.generation > 0 && m.world_size() > 0 && g.accounted_generation == m.generation;
  }
};

// The earliest time one of the members of `before` that `after` no longer has (same pod and uid) was lost: as
// observed on its pod, else its recentFailures entry; nullopt when none is known.
std::optional<Clock::time_point> LossTime(const GoodputInput& in) {
  std::optional<Clock::time_point> earliest;
  auto consider = [&](Clock::time_point t) {
    if (!earliest || t < *earliest) earliest = t;
  };
  for (const auto& m : in.before.members) {
    if (m.process != 0) continue;  // a pod's processes leave together
    const api::Member* still = in.membership.Find(m.id());
    if (still != nullptr && still->uid == m.uid) continue;
    bool observed = false;
    for (const auto& f : in.observed_failures) {
      if (f.pod != m.pod || (!f.uid.empty() && f.uid != m.uid)) continue;
      consider(f.at);
      observed = true;
    }
    if (observed) continue;
    for (const auto& f : in.recent_failures) {
      if (f.pod != m.pod || (!f.uid.empty() && f.uid != m.uid)) continue;
      if (auto t = ParseRfc3339(f.time)) consider(*t);
    }
  }
  return earliest;
}

// For a Hung generation: the earliest stall among its reporters (observed_failures); nullopt when none is known.
std::optional<Clock::time_point> StallTime(const GoodputInput& in) {
  std::optional<Clock::time_point> earliest;
  for (const auto& f : in.observed_failures)
    if (!earliest || f.at < *earliest) earliest = f.at;
  return earliest;
}

}  // namespace

std::optional<api::Goodput> AccountGoodput(const GoodputInput& in) {
  if (!in.previous && in.membership.generation == 0) return std::nullopt;
  Ledger l;
  if (in.previous) {
    l.g = *in.previous;
    l.as_of = ParseRfc3339(l.g.as_of).value_or(in.now);
  } else {
    l.as_of = ParseRfc3339(in.start_time).value_or(ParseRfc3339(in.membership.changed_at).value_or(in.now));
  }
  const api::Membership& before = in.before;

  // 1. A progress report of a generation not accounted yet (and not newer than the status knows).
  if (const auto& r = in.report; r && r->generation > l.g.accounted_generation && r->generation <= before.generation) {
    const Clock::time_point first_step = ParseRfc3339(r->first_step_at).value_or(in.now);
    if (l.g.accounted_generation > 0) {  // the job's first generation starts it: no change to pay for
      l.g.lost_seconds.rebuild += r->rebuild_seconds;
      l.g.lost_seconds.restore += r->restore_seconds;
      l.g.lost_seconds.replay += static_cast<double>(r->replayed_steps) * r->step_seconds;
    }
    if (!l.g.recovering_since.empty()) {
      if (auto since = ParseRfc3339(l.g.recovering_since); since && first_step >= *since)
        l.g.last_recovery_seconds = Round(Seconds(first_step - *since));
      l.g.recovering_since.clear();
    }
    if (r->generation == before.generation) l.Advance(first_step);  // it steps from then on
    l.g.accounted_generation = r->generation;
  }

  // 2. The desired world changed now (a scale): the time before it counts against the old one.
  if (in.desired_world_before > 0 && in.desired_world_before != in.desired_world && l.SteppingIn(before))
    l.Stepped(std::max(in.now, l.as_of), before.world_size(), in.desired_world_before,
              Rescheduling(before, l.g.failures));

  // 3. A new generation published now: the one before stops stepping (at the failure, for a loss). Waiting for a
  // scale-up's workers is no rescheduling.
  if (in.membership.generation > before.generation) {
    const Clock::time_point changed = ParseRfc3339(in.membership.changed_at).value_or(in.now);
    const bool loss = IsLossReason(in.membership.reason);
    const bool hung = in.membership.reason == api::reason::kHung;  // every member stays; its step was lost
    const Clock::time_point failed = loss   ? std::min(LossTime(in).value_or(changed), changed)
                                     : hung ? std::min(StallTime(in).value_or(changed), changed)
                                            : changed;
    if (IsSuspension(before)) {
      // Resumed: the suspension is no wall time; the resumption (startTime) is where time counts again.
      l.Advance(std::max(ParseRfc3339(in.start_time).value_or(changed), l.as_of), /*suspended=*/true);
    } else if (l.SteppingIn(before)) {
      l.Stepped(std::max(failed, l.as_of), before.world_size(), in.desired_world,
                Rescheduling(before, l.g.failures) && in.membership.reason != ReasonName(ChangeReason::kScaledUp));
    }
    if (loss || hung) {
      ++l.g.failures;
      (hung ? l.g.lost_seconds.hung : l.g.lost_seconds.detect) += Seconds(changed - failed);
      if (l.g.recovering_since.empty()) l.g.recovering_since = FormatRfc3339(failed, TimePrecision::kMillis);
    }
    if (IsSuspension(in.membership)) l.g.recovering_since.clear();  // it resumes later, if ever: no recovery
  }

  // 4. The job finished: its last generation stepped until then.
  if (auto done = ParseRfc3339(in.completion_time); done && *done > l.as_of) {
    const api::Membership& m = in.membership;
    if (l.SteppingIn(m)) l.Stepped(*done, m.world_size(), in.desired_world, Rescheduling(m, l.g.failures));
    l.Advance(*done, IsSuspension(m));
    l.g.recovering_since.clear();
  }

  api::Goodput& g = l.g;
  g.as_of = FormatRfc3339(l.as_of, TimePrecision::kMillis);
  g.productive_seconds = Round(g.productive_seconds);
  g.wall_seconds = Round(g.wall_seconds);
  for (double* v : {&g.lost_seconds.detect, &g.lost_seconds.reschedule, &g.lost_seconds.rebuild,
                    &g.lost_seconds.restore, &g.lost_seconds.replay, &g.lost_seconds.hung}) {
    *v = Round(*v);
  }
  g.ratio = g.wall_seconds > 0 ? Round(std::min(1.0, g.productive_seconds / g.wall_seconds), 1e4) : 0;
  return g;
}

std::optional<double> CompletedRecovery(const std::optional<api::Goodput>& before,
                                        const std::optional<api::Goodput>& after) {
  if (!before || !after || before->recovering_since.empty() || !after->last_recovery_seconds) return std::nullopt;
  if (after->accounted_generation <= before->accounted_generation) return std::nullopt;
  if (after->recovering_since == before->recovering_since) return std::nullopt;
  return after->last_recovery_seconds;
}

std::optional<double> CompletedRecovery(const nlohmann::json& status_before, const nlohmann::json& status_after) {
  auto goodput = [](const nlohmann::json& status) -> std::optional<api::Goodput> {
    if (!status.is_object()) return std::nullopt;
    auto decoded = api::DecodeTrainingJobStatus(status);
    return decoded.ok() ? decoded->goodput : std::nullopt;
  };
  return CompletedRecovery(goodput(status_before), goodput(status_after));
}

LiveFigures LiveGoodput(const api::Goodput& g, int64_t membership_generation, int32_t world_pods, int32_t desired_pods,
                        const std::string& phase, Clock::time_point now) {
  LiveFigures f{g.productive_seconds, g.wall_seconds, 0};
  const auto as_of = ParseRfc3339(g.as_of);
  const bool running =
      phase != api::phase::kSucceeded && phase != api::phase::kFailed && phase != api::phase::kSuspended;
  if (as_of && now > *as_of && running) {
    const double since = Seconds(now - *as_of);
    f.wall_seconds += since;
    const bool stepping = phase == api::phase::kRunning && membership_generation > 0 && world_pods > 0 &&
                          g.accounted_generation == membership_generation;
    if (stepping) f.productive_seconds += since * Weight(world_pods, desired_pods);
  }
  f.ratio = f.wall_seconds > 0 ? std::min(1.0, f.productive_seconds / f.wall_seconds) : 0;
  return f;
}

}  // namespace ringmaster::controller

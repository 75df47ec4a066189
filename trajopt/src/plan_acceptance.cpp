// SPDX-License-Identifier: BSD-3-Clause
#include "plan_acceptance.hpp"

#include <algorithm>
#include <limits>

#include "marionette/common/text.hpp"
#include "marionette/models/input_limits.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/verification.hpp"

namespace marionette::detail {

bool verifyCandidate(const MotionProblem& request, const CollisionModelPtr& collision,
                     Plan& candidate, const OptimizationOptions& options, std::string& why) {
  candidate.limit_violations.clear();
  candidate.goal_sample = -1;
  candidate.goal_distance_min = std::numeric_limits<double>::infinity();
  try {
    verifyPlan(request, collision, candidate);
  } catch (const SimulationError& e) {
    why = std::string("the optimized motion's re-simulation failed: ") + e.what();
    return false;
  }
  // A motion that continues a moving rig: its limits checked across the join, from the rig's
  // last two inputs before it (verifyPlan holds the rig still before the first sample).
  const Eigen::MatrixXd& history = options.rig_history;
  if (history.rows() > 0) {
    const Eigen::Index before = std::min<Eigen::Index>(2, history.rows());
    Eigen::MatrixXd joined(before + candidate.inputs.rows(), candidate.inputs.cols());
    joined.topRows(before) = history.topRows(before).colwise().reverse();
    joined.bottomRows(candidate.inputs.rows()) = candidate.inputs;
    candidate.limit_violations.clear();
    for (LimitViolation v : checkInputLimits(*request.model, joined, candidate.rate_hz, 1e-6,
                                             static_cast<int>(before))) {
      v.sample -= static_cast<int>(before);
      candidate.limit_violations.push_back(v.describe());
    }
  }
  candidate.clearance_margin_m = options.margin_m;
  classifyPlan(request.goal, candidate);
  return true;
}

bool stageWorthy(const MotionProblem& request, const CollisionModel& collision, Plan candidate,
                 double margin_m) {
  if (candidate.outcome != PlanOutcome::Exact) return false;
  try {
    measurePlanQuality(request, collision, candidate, 1.0);
  } catch (const SimulationError&) {
    return false;
  }
  StageThresholds limits;
  limits.min_stage_clearance_m = std::max(limits.min_stage_clearance_m, margin_m);
  return stageShortfalls(candidate, limits).empty();
}

void acceptCandidate(const MotionProblem& request, const CollisionModelPtr& collision,
                     const Plan& plan, Plan candidate, const OptimizationOptions& options,
                     SteadyClock::time_point t0, OptimizedPlan& out) {
  OptimizationReport& report = out.report;
  std::string why;
  const bool verified = verifyCandidate(request, collision, candidate, options, why);
  report.time_s = secondsSince(t0);
  if (!verified) {
    report.message = why;
    return;
  }
  // Ranks: 2 exact and keeping the margin, 1 short of the margin only (approximate, saying so),
  // 0 anything else (the goal missed, a limit broken, a collision: a user's motion, a guess).
  // The candidate replaces a plan of a lower rank whatever their costs, never one of a higher.
  auto meetsAllButTheMargin = [](const Plan& p) {
    return p.collision_free && p.goal_sample >= 0 && p.limit_violations.empty();
  };
  auto rank = [&](const Plan& p, bool meets_margin) {
    if (p.outcome == PlanOutcome::Exact && meets_margin) return 2;
    return p.outcome != PlanOutcome::NotFound && meetsAllButTheMargin(p) ? 1 : 0;
  };
  const int candidate_rank = rank(candidate, candidate.outcome == PlanOutcome::Exact);
  const int given_rank = rank(plan, !(plan.min_stage_clearance_m < options.margin_m));
  if (candidate_rank == 0 || candidate_rank < given_rank) {
    report.message = "the optimized motion is not exact (" + candidate.message +
                     "); the plan is unchanged";
    return;
  }
  const bool only_margin = candidate_rank == 1;
  // Both short of the margin: not one nearer the stage than the plan (the margin is what was
  // asked for; whatever else is better, the plan keeps closer to it).
  if (only_margin && given_rank == 1 &&
      candidate.min_stage_clearance_m < plan.min_stage_clearance_m) {
    report.message = formatted(
        "the optimized motion is short of the margin and nearer the stage (%.4f m) than the "
        "plan (%.4f m); the plan is unchanged",
        candidate.min_stage_clearance_m, plan.min_stage_clearance_m);
    return;
  }
  measurePlanQuality(request, *collision, candidate, options.settle_s);
  candidate.stats.total_time_s = plan.stats.total_time_s + report.time_s;
  if (only_margin) report.message = "could not meet the margin: " + candidate.message;
  try {
    requireFiniteNumbers(candidate);
  } catch (const SimulationError& e) {
    report.message = std::string("the optimized motion is not returned: ") + e.what();
    return;
  }
  out.plan = std::move(candidate);
  report.improved = true;
}

}  // namespace marionette::detail

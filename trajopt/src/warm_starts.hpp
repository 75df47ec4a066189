// SPDX-License-Identifier: BSD-3-Clause
// Where an optimizer starts from: smooth motions near a plan, ranked by a rollout of the exact
// integrator.  At each candidate duration (the plan's own, shorter and longer ones, multiples of
// the shortest comfortable transfer), the plan's motion fitted by the input spline (stretched in
// time), coarser fits of it (its course without its wiggles), and smooth transfers to the plan's
// end inputs and to a rest pose that meets the goal; each rolled out with the settle hold and
// scored by the shooting problem's cost and constraint violation.  Both optimizers start here:
// the shooting problem from the best start's variables, the transcription from its samples.
//
// Contents
//   WarmStart    one candidate motion, scored
//   WarmStarts   the ranked candidates, their problems, the plan's own cost
//   searchWarmStarts
#pragma once

#include <Eigen/Core>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "marionette/common/clock.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "trajectory_problem.hpp"

namespace marionette::detail {

struct WarmStart {
  bool feasible;     // meets the limits and the goal, every sample clear of collision
  double violation;  // else how far from meeting them (within a tenth of their scales: 0.1)
  double cost;       // the shooting problem's total, settle hold included
  TrajectoryProblem* problem;  // the duration's problem (WarmStarts::problems owns it)
  Eigen::VectorXd z;           // its spline's variables
  std::string name;            // "a transfer to a rest pose at the goal", ...
  std::optional<Eigen::VectorXd> end_rest;  // the rest pose's inputs a transfer ends at
  // The motion at the plan's rate (problem->spline().samples() rows of n_k).
  Eigen::MatrixXd inputs() const { return problem->spline().sampleInputs(z); }
};

struct WarmStarts {
  std::vector<std::unique_ptr<TrajectoryProblem>> problems;  // one per duration tried
  // Best first: the nearest to meeting the limits and the goal, then the cheapest; when the
  // first does not meet them outright, the cheapest that does comes second.
  std::vector<WarmStart> ranked;
  std::optional<Eigen::VectorXd> goal_rest;  // inputs of a rest pose at the goal, if found
  // The same drawn back towards the start's inputs as far as the goal allows (a search path's
  // random walk moves every input; this rest pose moves only what the goal needs), if different.
  std::optional<Eigen::VectorXd> goal_rest_near_start;
  // The plan's own motion rolled out at its duration: its cost when before_known (else its fit
  // by the spline's when before_fitted), and why it cannot be (plan_failure) otherwise.
  bool before_known = false, before_fitted = false;
  OptimizationCost before;
  std::string plan_failure;
};

// The candidates for `plan` (answering `request`; `start` its start, resolved as the
// verification resolves it, startOf), the rest pose at the goal searched until goal_search_end.
// Polls the thread's CancelScope (PlanCancelled).
WarmStarts searchWarmStarts(const MotionProblem& request, const CollisionModelPtr& collision,
                            const Plan& plan, const OptimizationOptions& options,
                            const StartState& start, SteadyClock::time_point goal_search_end);
// The plan's start exactly as the verification resolves it: from its first inputs, the request's
// start and the collision model's contacts.
StartState startOf(const MotionProblem& request, const CollisionModel& collision, const Plan& plan);

}  // namespace marionette::detail

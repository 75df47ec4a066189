// SPDX-License-Identifier: BSD-3-Clause
// Where an optimizer starts from: smooth motions near a plan, ranked by a rollout of the exact
// integrator.  At each candidate duration (the plan's own, shorter and longer ones, multiples of
// the shortest comfortable transfer), the plan's motion fitted by the input spline (stretched in
// time), coarser fits of it (its course without its wiggles), and smooth transfers to the plan's
// end inputs and to a rest pose that meets the goal; each rolled out with the settle hold and
// scored by its rollout (rollout_score.hpp): its distance from meeting the limits and the goal,
// then its cost.  The transcription starts from the best one's samples.
//
// Contents
//   PlanMargins  the clearances the transcription's knots keep
//   WarmStart    one candidate motion, scored
//   WarmStarts   the ranked candidates, their scores, the rest poses at the goal
//   searchWarmStarts
#pragma once

#include <Eigen/Core>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "marionette/common/clock.hpp"
#include "marionette/problem/goal_rest_pose.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "rollout_score.hpp"

namespace marionette::detail {

// The clearances the optimization keeps (m): to the stage, half a margin (at least 5 mm) beyond
// the plan's margin, so that the balance of the terms settles clear of it rather than on it; to
// anything, 2 mm, or, solved again where that motion touches, the stage-worthy distance and a
// quarter-centimetre more, so that the re-simulation between knots keeps the stage-worthy
// distance (marionette25's forearm brushed its thigh between knots kept 2 mm apart), no more than
// 0.9 of what the start keeps (the first knot is near it).  (Asked of every motion, the wider one
// cost arm3d's and marionette25's shown kpiece 2 their stage-worthy plans.)
struct PlanMargins {
  double start_clearance_m = 0.0;  // the start's clearance to anything (0: something touches)
  double start_stage_clearance_m = 0.0;  // and to the stage
  double stage_m = 0.0;
  double anything_m = 0.002;
  double stage_worthy_anything_m = 0.002;
};
PlanMargins planMargins(const CollisionModelPtr& collision, const OptimizationOptions& options,
                        const Eigen::VectorXd& start_q, const Eigen::VectorXd& rho0);

struct WarmStart {
  bool feasible;     // meets the limits and the goal, every sample clear of collision
  double violation;  // else how far from meeting them (within a tenth of their scales: 0.1)
  double cost;       // its score's total, settle hold included
  RolloutScore* score;    // the duration's score (WarmStarts::scores owns it)
  Eigen::VectorXd z;           // its spline's variables
  std::string name;            // "a transfer to a rest pose at the goal", ...
  std::optional<Eigen::VectorXd> end_rest;  // the rest pose's inputs a transfer ends at
  bool clear_rest_poses = false;  // its rest poses were found continuous and clear with margin
  // The motion at the plan's rate (score->spline().samples() rows of n_k).
  Eigen::MatrixXd inputs() const { return score->spline().sampleInputs(z); }
};

struct WarmStarts {
  std::vector<std::unique_ptr<RolloutScore>> scores;  // one per duration tried
  // Best first: the nearest to meeting the limits and the goal, then the cheapest; when the
  // first does not meet them outright, the cheapest that does comes second.
  std::vector<WarmStart> ranked;
  std::optional<Eigen::VectorXd> goal_rest;  // inputs of a rest pose at the goal, if found
  // The same drawn back towards the start's inputs as far as the goal allows (a search path's
  // random walk moves every input; this rest pose moves only what the goal needs), if different.
  std::optional<Eigen::VectorXd> goal_rest_near_start;
  PlanMargins margins;  // the start's, computed once for the transcription's solves
  // The nearer of the two with its rest pose (rho empty when neither was found).
  RestVertex nearest_goal_rest;
  // When the rest poses along the transfer to it pass a fold or come near the stage: what the
  // search for a path of rest poses around them found, or why it found none ("" when not run).
  std::string rest_pose_path;
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

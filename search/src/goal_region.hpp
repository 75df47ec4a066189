// SPDX-License-Identifier: BSD-3-Clause
// Internal: the search's goal region.  A state meets it when the goal evaluator says so and
// braking the rig from it to a stop, then holding still kStopHoldSteps steps, stays valid (plans
// end that way, so the verifying re-simulation covers exactly what is checked here).  Joint and
// rest goals offer goal states for goal bias (targets within the tolerance, other joints anywhere
// in their limits, the puppet still); a point goal would need inverse kinematics of a hanging
// puppet, so it offers only the rest states TreeSearchSpace::offerGoalStates found (none unless
// a planner asked for them: PlannerInfo::goal_states).  Where the search hands off to the
// optimizer (TreeSearchProblem::rest_of_inputs_only), a rest-of goal is met by its inputs and a
// pose near its rest pose.
#pragma once

#include <ompl/base/goals/GoalSampleableRegion.h>
#include <ompl/control/SpaceInformation.h>
#include <ompl/util/RandomNumbers.h>

#include <vector>

#include "marionette/models/dynamics.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/search/search_space.hpp"

namespace marionette::detail {

// After braking, plans hold the rig still this many steps: the puppet swings on after the rig
// stops, and a goal state must be safe through that too.
constexpr int kStopHoldSteps = 5;

// Where the search hands off to the optimizer: a rest-of goal's puppet may be this many
// tolerances from its rest pose (the inputs within one).
constexpr double kHandOffBasin = 4.0;

class GoalRegion : public ompl::base::GoalSampleableRegion {
 public:
  GoalRegion(const ompl::control::SpaceInformationPtr& si, ModelPtr model, const GoalSpec& spec,
             double dt_s, std::uint_fast32_t seed, SearchCounters& counters,
             bool rest_of_inputs_only = false);
  ~GoalRegion() override;
  GoalEvaluator::Measure measure(const ompl::base::State* s) const;
  double distanceGoal(const ompl::base::State* s) const override { return measure(s).distance; }
  bool isSatisfied(const ompl::base::State* s, double* distance) const override;
  unsigned int maxSampleCount() const override;
  void sampleGoal(ompl::base::State* s) const override;
  bool brakesSafely(const ompl::base::State* s) const;
  // Point goals: the states sampleGoal offers (each a state of the space, meeting the goal);
  // none until set, as a point goal has no closed form.
  void setGoalStates(std::vector<std::vector<double>> states) { goal_states_ = std::move(states); }

 private:
  ompl::control::SpaceInformation* csi_;
  const Model& model_;
  mutable GoalEvaluator eval_;
  bool inputs_only_;  // a rest-of goal measured by its inputs alone (max |rho - target|)
  StateLayout layout_;
  double dt_s_;
  SearchCounters& counters_;
  mutable ompl::RNG rng_;
  mutable DynamicsData data_;
  mutable State x_;
  mutable Eigen::VectorXd rhodot_;
  mutable ompl::base::State* brake_[2];
  ompl::control::Control* stop_;
  std::vector<std::vector<double>> goal_states_;
};

}  // namespace marionette::detail

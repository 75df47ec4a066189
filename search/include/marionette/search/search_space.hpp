// SPDX-License-Identifier: BSD-3-Clause
// A plan request as an OMPL control-planning problem, exactly as every planner gets it, built-in
// or registered (Johnson & Murphey, "Scalable Variational Integrators for Constrained Mechanical
// Systems in Generalized Coordinates", IEEE T-RO 2009, and their ICRA 2007 planner, §VII).
//
// The state is x = (q_d, p, rho, rho_dot) (state_layout.hpp); a control is a target rig velocity
// held for min..max integration steps; the propagator slews the rig to it at its maximum
// acceleration (rigStep) and steps the variational integrator; a state is valid when it is
// finite (the integrator converged), inside the joint limits and actuator ranges with room to
// brake, and free of collision of links and strings.  The goal region is the request's goal,
// aimed a tenth inside its tolerance, and a state meets it only if braking the rig from it and
// holding still stays valid -- so that the verifying re-simulation of the plan agrees.
//
// The problem and the counters are in search_problem.hpp.
//
// Contents
//   TreeSearchSpace    the SpaceInformation (state space with its metric and seeded samplers,
//                      control space, propagator, validity), the problem definition (start and
//                      goal region), the projection KPIECE, PDST and Syclop grid through; a
//                      path as the rig's motion (braked and held as every plan ends).
#pragma once

#include <ompl/base/ProblemDefinition.h>
#include <ompl/base/ProjectionEvaluator.h>
#include <ompl/control/PathControl.h>
#include <ompl/control/SpaceInformation.h>

#include <cstdint>
#include <memory>

#include "marionette/models/rig_trajectory.hpp"
#include "marionette/search/search_problem.hpp"
#include "marionette/search/state_layout.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

class TreeSearchSpace {
 public:
  // Throws FieldError("goal...") for a goal the model cannot have, FieldError("start") when the
  // start state is in collision or outside the limits.
  explicit TreeSearchSpace(const TreeSearchProblem& problem);
  ~TreeSearchSpace();
  TreeSearchSpace(const TreeSearchSpace&) = delete;
  TreeSearchSpace& operator=(const TreeSearchSpace&) = delete;

  const TreeSearchProblem& problem() const;
  const Model& model() const;
  const StateLayout& layout() const;
  // The state space (RealVectorStateSpace of layout().dim(), its default projection set), the
  // control space (RealVectorControlSpace of n_k rig velocities), the propagator and validity
  // checker, the propagation step and control durations.  searchTree sets it up after the
  // planner is made (as OMPL's SimpleSetup does), under the lock of OMPL's seed.
  //
  // The propagator, validity checker and goal region count into this object's counters, and the
  // samplers draw from its seed sequence: a planner and anything else holding this space
  // information must not outlive the TreeSearchSpace.
  const ompl::control::SpaceInformationPtr& spaceInformation() const;
  // The start state and the goal region (an ompl::base::GoalSampleableRegion: it offers goal
  // states for joint and rest goals, and for point goals those offerGoalStates found).
  const ompl::base::ProblemDefinitionPtr& problemDefinition() const;
  // Goal-variable coordinates (joint goals: 2-3 joints) or the goal point and the puppet's speed
  // (point goals: 4 coordinates); cell sizes set.
  const ompl::base::ProjectionEvaluatorPtr& projection() const;
  const SearchCounters& counters() const;
  // The next seed of the request's sequence: a planner's own samplers seeded from it keep the
  // search a function of the request's seed.
  std::uint_fast32_t nextSeed() const;

  // Point goals: finds up to `count` rest states of the puppet that meet the goal (collision-free,
  // braking safely), from rest poses of inputs drawn from the request's seed (at most 4 x count
  // tries), and offers them as the goal region's samples; returns how many.  Joint and rest goals
  // offer samples already (0).  The search calls it for a planner whose PlannerInfo::goal_states
  // asks (Syclop locates the goal's regions from such states).  Throws PlanCancelled.
  int offerGoalStates(int count);

  // The rig's motion along a path of this space: its controls replayed through the rig model
  // (rigStep) at the integration step, then braked to a stop and held, as every plan ends.
  RigTrajectory rigTrajectory(const ompl::control::PathControl& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace marionette

#pragma GCC visibility pop

// SPDX-License-Identifier: BSD-3-Clause
// Verifying a plan (planMotion's last stage, and the trajectory optimizer's): the re-simulation
// of exactly its inputs at dt = 1 / rate_hz from the request's start, every sample checked for
// collision and clearance, the goal measured, the input limits checked; then the outcome.
#pragma once

#include "marionette/environments/collision.hpp"
#include "marionette/plan/plan.hpp"
#include "marionette/planner/planner.hpp"

namespace marionette::detail {

// Fills plan's prediction (states, tensions, clearances, goal distances, the figures) from
// plan.inputs and plan.rate_hz.  Throws SimulationError when a step fails.
void verifyPlan(const PlanRequest& request, const CollisionModelPtr& collision, Plan& plan);
// Exact when collision-free, within the limits, reaching the goal and (with a clearance margin)
// at least that far from the stage; else approximate, with the first reason in plan.message.
void classifyPlan(const GoalSpec& goal, Plan& plan);

}  // namespace marionette::detail

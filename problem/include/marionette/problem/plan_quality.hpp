// SPDX-License-Identifier: BSD-3-Clause
// A plan's quality as a puppeteer judges a motion (PlanQuality, plan/plan.hpp): how smooth the
// rig's inputs are, whether loaded strings snap taut, how far tensions peak over their static
// loads, whether the puppet hangs still after the end, and how close it comes to things.
//
// Contents
//   measurePlanQuality   re-simulates the plan's inputs and a hold of settle_s after them.
#pragma once

#include "marionette/plan/plan.hpp"
#include "marionette/problem/motion_problem.hpp"

namespace marionette {

// Fills plan.quality from plan.inputs (at plan.rate_hz) and the plan's verified clearances,
// simulating from the request's start as the verification does.  Throws SimulationError when
// the hold cannot be simulated.
void measurePlanQuality(const MotionProblem& problem, Plan& plan, double settle_s = 1.0);

}  // namespace marionette

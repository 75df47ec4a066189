// SPDX-License-Identifier: BSD-3-Clause
// A plan's quality as a puppeteer judges a motion (PlanQuality, plan/plan.hpp): how smooth the
// rig's inputs are, whether loaded strings snap taut, how far tensions peak over their static
// loads, whether the puppet hangs still after the end, and how close it comes to things.
//
// Contents
//   measurePlanQuality   re-simulates the plan's inputs and a hold of settle_s after them.
//   StageThresholds      what a puppeteer stages
//   stageShortfalls      what keeps a measured plan off the stage
#pragma once

#include <string>
#include <vector>

#include "marionette/plan/plan.hpp"
#include "marionette/problem/motion_problem.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// Fills plan.quality from plan.inputs (at plan.rate_hz) and the plan's verified clearances,
// simulating from the request's start as the verification does (touching what `collision`
// lets it touch: CollisionModel::contacts).  Throws SimulationError when the hold cannot be
// simulated.
void measurePlanQuality(const MotionProblem& problem, const CollisionModel& collision, Plan& plan,
                        double settle_s = 1.0);

// A plan a puppeteer could stage: exact (and so re-simulated and verified), this far from the
// stage and from anything, no snap, no string's tension above this multiple of its static load,
// and the puppet this still over the second half of a 1 s hold at the last inputs.
struct StageThresholds {
  double min_stage_clearance_m = 0.02;
  double min_clearance_m = 0.005;
  double max_peak_tension_ratio = 3.0;
  double max_residual_joint_speed_rms = 0.1;  // rad/s (or m/s)
};

// What keeps `plan` off the stage, each in words ("2 snaps", "swing 0.31 rad/s > 0.1"); empty
// when it is stage-worthy.  A plan whose quality was not measured, or not with a 1 s hold, says
// so.
std::vector<std::string> stageShortfalls(const Plan& plan, const StageThresholds& limits = {});

}  // namespace marionette

#pragma GCC visibility pop

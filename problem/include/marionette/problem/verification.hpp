// SPDX-License-Identifier: BSD-3-Clause
// Verifying a plan, whoever made it: the re-simulation of exactly its inputs at dt = 1 / rate_hz
// from the problem's start, every sample checked for collision and clearance, the goal measured,
// the input limits checked; then the outcome.
//
// Contents
//   planHeader()    a Plan with the problem's record (model, scene, goal, start, names, rate).
//   verifyPlan()    fills a plan's prediction from its inputs.
//   classifyPlan()  its outcome from that prediction.
//   verifyMotion()  given inputs as a plan: header, verification, outcome and quality.
#pragma once

#include <Eigen/Core>

#include "marionette/environments/collision.hpp"
#include "marionette/plan/plan.hpp"
#include "marionette/problem/motion_problem.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// Model, scene (the collision model's), goal and start texts, the variable names, the rate.
Plan planHeader(const MotionProblem& problem, const CollisionModel& collision, double rate_hz);

// Fills plan's prediction (states, tensions, clearances, goal distances, the figures) from
// plan.inputs and plan.rate_hz.  Throws SimulationError when a step fails.
void verifyPlan(const MotionProblem& problem, const CollisionModelPtr& collision, Plan& plan);
// Exact when collision-free, within the limits, reaching the goal and (with a clearance margin)
// at least that far from the stage; else approximate, with the first reason in plan.message.
void classifyPlan(const GoalSpec& goal, Plan& plan);

// A plan from given inputs (N x n_k at rate_hz; row 0 is the start's inputs), verified, judged
// and measured exactly as planned motions are: a user's motion as a plan, e.g. for the
// optimizer.  Throws FieldError for bad sizes, rate or goal ("inputs", "rate_hz",
// "goal..."); a motion whose re-simulation fails is not-found, with the reason.
Plan verifyMotion(const MotionProblem& problem, const Eigen::MatrixXd& inputs, double rate_hz);

}  // namespace marionette

#pragma GCC visibility pop

// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/problem/motion_problem.hpp"

#include <cmath>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/plan/goal.hpp"

namespace marionette {

CollisionModelPtr collisionModelOf(const MotionProblem& problem) {
  if (problem.collision) return problem.collision;
  if (!problem.model) throw FieldError("model", "none given");
  return std::make_shared<CollisionModel>(problem.model,
                                          problem.scene ? problem.scene : loadScene("empty"));
}

ResolvedProblem resolveProblem(const MotionProblem& problem, bool start_clear) {
  if (!problem.model) throw FieldError("model", "none given");
  const Model& model = *problem.model;
  ResolvedProblem out;
  out.collision = collisionModelOf(problem);
  out.rho0 = problem.start_inputs.size() ? problem.start_inputs : model.defaultInputs();
  if (out.rho0.size() != model.nk())
    throw FieldError("start_inputs", "expected " + std::to_string(model.nk()) + " values, got " +
                                         std::to_string(out.rho0.size()));
  for (int i = 0; i < model.nk(); ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    if (!std::isfinite(out.rho0[i]) || out.rho0[i] < kv.lower || out.rho0[i] > kv.upper)
      throw FieldError("start_inputs" + fieldKey(kv.name),
                       kv.name + " = " + std::to_string(out.rho0[i]) + " is outside its range");
  }
  GoalEvaluator check(problem.model, problem.goal);  // the goal's names before any search
  out.start = resolveStart(problem.model, out.rho0, problem.start);
  if (start_clear) {
    CollisionChecker checker(out.collision);
    const CollisionResult c = checker.inCollision(model.configuration(out.start.q, out.rho0));
    if (c.in_collision) throw FieldError("start", "in collision (" + c.pair.describe() + ")");
  }
  return out;
}

}  // namespace marionette

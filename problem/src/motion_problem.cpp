// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/problem/motion_problem.hpp"

#include <cmath>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/plan/goal.hpp"

namespace marionette {

CollisionOptions problemCollisionOptions() {
  CollisionOptions options;
  options.touch_contact_surfaces = true;
  return options;
}

CollisionModelPtr collisionModelOf(const MotionProblem& problem) {
  if (problem.collision) return problem.collision;
  if (!problem.model) throw FieldError("model", "none given");
  return std::make_shared<CollisionModel>(
      problem.model, problem.scene ? problem.scene : loadScene("empty"), problemCollisionOptions());
}

void checkGoal(const ModelPtr& model, const GoalSpec& goal, const Scene& scene) {
  GoalEvaluator check(model, goal);  // names, values, rest-of inputs
  if (goal.kind != GoalSpec::Kind::Point || !scene.bounds) return;
  const StageBounds& b = *scene.bounds;
  for (std::size_t i = 0; i < goal.points.size(); ++i) {
    const Eigen::Vector3d& x = goal.points[i].position_m;
    if ((x.array() < b.min_m.array()).any() || (x.array() > b.max_m.array()).any())
      throw FieldError("goal.points[" + std::to_string(i) + "].position_m",
                       "(" + formatNumber(x.x()) + ", " + formatNumber(x.y()) + ", " +
                           formatNumber(x.z()) + ") m is outside the stage '" + scene.name +
                           "' (" + formatNumber(b.min_m.x()) + ".." + formatNumber(b.max_m.x()) +
                           ", " + formatNumber(b.min_m.y()) + ".." + formatNumber(b.max_m.y()) +
                           ", " + formatNumber(b.min_m.z()) + ".." + formatNumber(b.max_m.z()) +
                           ")");
  }
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
  checkGoal(problem.model, problem.goal, out.collision->scene());  // before any search
  out.start = resolveStart(problem.model, out.rho0, problem.start, out.collision->contacts());
  if (start_clear) {
    CollisionChecker checker(out.collision);
    const CollisionResult c = checker.inCollision(model.configuration(out.start.q, out.rho0));
    if (c.in_collision) throw FieldError("start", "in collision (" + c.pair.describe() + ")");
  }
  return out;
}

}  // namespace marionette

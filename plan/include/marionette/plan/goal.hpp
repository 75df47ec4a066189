// SPDX-License-Identifier: BSD-3-Clause
// Planning goals (docs/design.md, planning): a joint-space pose, task-space targets for named
// points, or the rest pose of given inputs; each optionally "at rest".
//
// Contents
//   GoalSpec        what the user asked for (plan/goal_spec.hpp: the goal text, or built in code).
//   GoalEvaluator   resolves names against a model and measures a state: pose error, kinetic
//                   energy, satisfied or not.  One per thread (it keeps kinematics scratch).
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/model.hpp"
#include "marionette/plan/goal_spec.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// Measures states against a goal.  `dt_s` is the integrator step of the momenta it is given.
class GoalEvaluator {
 public:
  // Throws FieldError ("goal.values[\"x\"]", "goal.points[1].point") naming an unknown
  // variable or point, a value outside its limits, or a rest pose that
  // cannot be found.
  GoalEvaluator(ModelPtr model, GoalSpec spec);

  const GoalSpec& spec() const { return spec_; }
  double tolerance() const { return tolerance_; }
  // Target configuration for Joint / RestOf goals: dynamic values (n_d, NaN where free) and, for
  // RestOf, the inputs (n_k).
  const Eigen::VectorXd& targetDynamic() const { return target_q_; }
  const Eigen::VectorXd& targetInputs() const { return target_rho_; }
  // Indices into q_d that the goal fixes (Joint / RestOf).
  const std::vector<int>& goalVariables() const { return goal_vars_; }
  // Point goals: the point indices and the targets in the model's world frame (m).
  const std::vector<int>& goalPoints() const { return point_index_; }
  const std::vector<Eigen::Vector3d>& pointTargetsWorld() const { return point_target_world_; }

  // Pose error (rad or m): max over goal variables of |q - target| (RestOf: the inputs too), or
  // max over targets of the point's distance to it.  q_d: n_d, rho: n_k.
  double poseError(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho);
  // The error as a vector, for least squares on it (rad or m): Point goals 3 per target (point
  // minus target, world frame); Joint goals one per goal variable; RestOf goals n_d + n_k.
  // poseError is a max-norm of its blocks.
  Eigen::VectorXd poseResidual(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho);
  // Kinetic energy (J) of the puppet at q_d with joint velocity qdot (n_d).
  double kineticEnergy(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho,
                       const Eigen::VectorXd& qdot);
  // The same from a VI momentum p (n_d) at step dt_s: v = M^-1 (p - dt/2 dL/dq), exact at rest.
  double kineticEnergyFromMomentum(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho,
                                   const Eigen::VectorXd& p, double dt_s);

  struct Measure {
    double pose_error = 0.0;  // rad or m
    double kinetic_J = 0.0;   // 0 unless the goal is at-rest
    double rig_speed = 0.0;   // max |rho_dot| (0 unless at-rest)
    bool satisfied = false;
    // One number for planners: the pose error, plus the tolerance times how many times the
    // kinetic energy exceeds its bound (at-rest goals).  Satisfied implies distance <= 2 tol.
    double distance = 0.0;
  };
  // Evaluates everything; qdot (n_d) and rho_dot (n_k) matter only for at-rest goals.
  Measure measure(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho,
                  const Eigen::VectorXd& qdot, const Eigen::VectorXd& rho_dot);
  Measure measureFromMomentum(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho,
                              const Eigen::VectorXd& p, const Eigen::VectorXd& rho_dot,
                              double dt_s);

 private:
  Measure finish(double pose_error, double kinetic_J, const Eigen::VectorXd& rho_dot);
  ModelPtr model_;
  GoalSpec spec_;
  double tolerance_;
  Eigen::VectorXd target_q_, target_rho_;
  std::vector<int> goal_vars_;
  std::vector<int> point_index_;
  std::vector<Eigen::Vector3d> point_target_world_;
  DynamicsData data_;
  Eigen::VectorXd q_full_, v_, zero_v_;
};

// a - b for dynamic variable i; for a revolute joint without limits, wrapped to [-pi, pi] (a
// whole turn is the same pose).
double jointDifference(const Model& model, int i, double a, double b);
// max_i |jointDifference(q_a[i], q_b[i])| over all dynamic variables (n_d each).
double maxJointDifference(const Model& model, const Eigen::VectorXd& q_a,
                          const Eigen::VectorXd& q_b);

// Puppet kinetic energy (J) from a VI momentum p (n_d) at step dt_s and configuration q_full
// (n_q): v = M^-1 (p - dt/2 dL/dq), exact at rest (VariationalIntegrator::stateFromVelocity).
double kineticEnergyFromMomentum(const Model& model, DynamicsData& data,
                                 const Eigen::VectorXd& q_full, const Eigen::VectorXd& p,
                                 double dt_s);

// A state's pose in stage coordinates (m) of a named point, for reports.
Eigen::Vector3d pointInStage(const Model& model, DynamicsData& data, const Eigen::VectorXd& q_full,
                             int point);
// Every named point's (model order), from one forward-kinematics pass.
void pointsInStage(const Model& model, DynamicsData& data, const Eigen::VectorXd& q_full,
                   std::vector<Eigen::Vector3d>& out);

}  // namespace marionette

#pragma GCC visibility pop

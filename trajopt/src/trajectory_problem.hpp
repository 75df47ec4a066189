// SPDX-License-Identifier: BSD-3-Clause
// One trajectory-optimization problem at a fixed duration: the variables (input_spline.hpp), the
// objective's terms with their exact gradients, and the constraints with their Jacobian, from a
// rollout of the variational integrator with forward sensitivities X_k = dx_k/dz:
//   X_{k+1} = A_k X_k + B_k dU_{k+1}/dz.
// Tension terms use a string's tension T_j while it is taut and, while it is slack, the
// negative slackness -kappa_j (l_j^2 - |a_j - e_j|^2) / (2 l_j0) (kappa_j = T_ref_j per cm): one
// continuous measure tau_j with a derivative on both sides of the switch, so that the optimizer
// sees how to keep loaded strings taut instead of a flat zero.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "clearance_gradient.hpp"
#include "input_spline.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/plan/goal_spec.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::detail {

struct ProblemSetup {
  ModelPtr model;
  GoalSpec goal;
  State start;                    // x_0 at the plan's step 1 / rate_hz
  double rate_hz = 50.0;          // samples and integrator step
  double duration_s = 1.0;        // the motion (the settle hold comes after)
  int segments = 4;               // spline pieces
  double settle_s = 1.0;
  OptimizationWeights weights;
  Eigen::VectorXd end_reference;  // n_k: inputs whose rest pose sets the end's static tensions
  double goal_fraction = 0.95;    // the goal constraint asks for this share of its tolerance
  double limit_share = 0.97;      // the limit rows ask for this share of each limit
  // With a collision model: at every sample of the motion, clearance to the stage (obstacles
  // and bounds) below margin_m, and to anything (self-collision too) below self_margin_m, is
  // penalized (weights.clearance).
  CollisionModelPtr collision;
  double margin_m = 0.02;
  double self_margin_m = 0.001;
  // Without goal rows (a performance), `goal` only names the end's rest pose.
  bool goal_rows = true;
  // Performances: named points (Model::points indices) follow targets in the model's world
  // frame, a row of 3 per point for each motion sample (spline().samples() rows; NaN: none),
  // weighed by weights.tracking.
  std::vector<int> track_points;
  Eigen::MatrixXd track_targets_m;
  // ... and configuration variables (indices into (q_d, rho): joints, then rig inputs) follow
  // values (a column each, rows as above; NaN: none), an error e weighing as
  // track_variable_scale_m[i] e metres of a point's.
  std::vector<int> track_variables;
  Eigen::MatrixXd track_values;
  std::vector<double> track_variable_scale_m;
  // Inputs (kinematic variable indices) held at the start's value throughout: their variables'
  // bounds are that value (a performance's disabled limbs).
  std::vector<int> held_inputs;
};

// What an evaluation computes: the objective's terms and the constraint rows only (a line
// search's trial point), or also their derivatives: the gradient, the goal rows' Jacobian and the
// Gauss-Newton Hessian (every term is a sum of squares r^2: the sum of 2 dr^T dr).
enum class Evaluation { Value, Derivatives };

class TrajectoryProblem {
 public:
  explicit TrajectoryProblem(const ProblemSetup& setup);

  const InputSpline& spline() const { return spline_; }
  int variables() const { return spline_.variables(); }
  // Limit rows (linear, spline.limitRows) first, then the goal's rows.
  int constraints() const;
  int linearConstraints() const { return static_cast<int>(limits_.lower.size()); }
  void bounds(Eigen::VectorXd& z_lower, Eigen::VectorXd& z_upper, Eigen::VectorXd& g_lower,
              Eigen::VectorXd& g_upper) const;
  const InputSpline::LimitRows& limitRows() const { return limits_; }

  // Rolls out at z (remembered: the same z again costs nothing).  False when a step fails (its
  // single-step solve: a step that needs the integrator's substeps has no linearization), or a
  // value is not finite; failure() says which.  Both levels take the same steps, so their
  // values agree to the last bit.  Polls the thread's CancelScope at every step (PlanCancelled).
  bool evaluate(const Eigen::VectorXd& z, Evaluation level = Evaluation::Derivatives);
  // The value level at sampled inputs that need not be the spline's (spline().samples() rows
  // of n_k): a plan's own motion.  The limit rows are left at zero.
  bool evaluateSamples(const Eigen::MatrixXd& u);
  const std::string& failure() const { return failure_; }
  int rollouts() const { return rollouts_; }  // evaluations that rolled out (not remembered)
  const OptimizationCost& cost() const { return cost_; }
  // How far the evaluated z is from meeting the rows: the largest excess over a row's bound,
  // relative to the bound's scale (the goal's tolerance, the rest energy, a limit's bound).
  double constraintViolation() const;
  double minStageClearance() const { return min_stage_clearance_m_; }  // over the motion (m)
  double minClearance() const { return min_clearance_m_; }  // to anything, over the motion (m)
  double margin() const { return setup_.margin_m; }
  const Eigen::VectorXd& gradient() const { return gradient_; }    // d total / dz
  // The Gauss-Newton Hessian of the total (lower triangle).
  const Eigen::MatrixXd& hessian() const { return hessian_; }
  const Eigen::VectorXd& constraintValues() const { return g_; }  // every row
  // The goal rows' Jacobian, dense.
  const Eigen::MatrixXd& nonlinearJacobian() const { return jacobian_; }
  int goalRows() const { return goal_rows_; }

 private:
  bool rollOut(const Eigen::MatrixXd& u, bool derivatives);
  // Effort and jerk (quadratic in z): into cost_ and gradient_, and their constant Hessian into
  // `hessian` when not null.
  void inputCosts(const Eigen::MatrixXd& u, Eigen::MatrixXd* hessian);
  // hessian_ += c r^T r for a row r over z.
  void addOuter(const Eigen::Ref<const Eigen::RowVectorXd>& r, double c);
  void fillGoalRows(const State& end, const Eigen::MatrixXd& X_end,
                    const Eigen::VectorXd& v_last, const Eigen::MatrixXd& dv_last);
  // The clearance penalty of one motion sample (state x, sensitivities X), from data_'s
  // kinematics.
  void clearanceCost(const State& x, const Eigen::MatrixXd& X);
  // The tracking term of motion sample `sample` (state x, sensitivities X), from data_'s
  // kinematics at x.
  void trackingCost(int sample, const State& x, const Eigen::MatrixXd& X);
  // d(distance)/dq of a nearest pair (CollisionChecker::clearance's indices); zero when the
  // points coincide.

  ProblemSetup setup_;
  InputSpline spline_;
  InputSpline::LimitRows limits_;
  VariationalIntegrator vi_;
  GoalEvaluator goal_;
  DynamicsData data_;
  Eigen::MatrixXd mass_ref_;  // M at the start pose: the fixed metric of the swing terms
  Eigen::MatrixXd mass_ref_factor_;  // L with L L^T = mass_ref_ (lower)
  Eigen::MatrixXd input_hessian_;    // the effort and jerk terms' (constant) Hessian
  double energy_ref_J_ = 1.0;
  std::vector<int> loaded_;   // strings whose tension terms count
  Eigen::VectorXd tension_ref_, tension_floor_, slack_length_;  // n_s
  int goal_rows_ = 0;
  std::unique_ptr<CollisionChecker> checker_;
  std::unique_ptr<ClearanceGradient> clearance_gradient_;
  Eigen::MatrixXd point_jacobian_;  // 3 x n_q scratch

  Eigen::VectorXd z_;
  bool valid_ = false;
  bool derivatives_ = false;  // the valid z's gradient, Jacobian and Hessian are held
  int active_ = 0;            // the step's active prefix of z (spline_.activeVariables)
  int rollouts_ = 0;
  std::string failure_;
  OptimizationCost cost_;
  double min_stage_clearance_m_ = 0.0, min_clearance_m_ = 0.0;
  Eigen::VectorXd gradient_, g_;
  Eigen::MatrixXd hessian_;
  Eigen::MatrixXd jacobian_;
};

}  // namespace marionette::detail

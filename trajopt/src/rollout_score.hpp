// SPDX-License-Identifier: BSD-3-Clause
// The score by which warm starts are ranked (warm_starts.hpp): a candidate motion -- a cubic
// B-spline per rig input (input_spline.hpp) at a fixed duration, or sampled inputs -- rolled out
// on the variational integrator over the motion and a settle hold, its cost summed term by term
// and its distance from meeting the limits and the goal measured.  Values only: the transcription
// (transcription_problem.hpp) is the optimizer; this only says where it should start.
//
// The terms: effort, jerk, swing and settle (kinetic energy over the motion and the hold),
// tension rate (OptimizationWeights' meanings), plus a duration, slack and clearance price of
// their own (a score's, not the caller's: kDurationWeight, kSlackWeight, kClearanceWeight).
// Tension terms use a string's tension T_j while it is taut and, while it is slack, the
// negative slackness -kappa_j (l_j^2 - |a_j - e_j|^2) / (2 l_j0) (kappa_j = T_ref_j per cm): one
// continuous measure tau_j across the switch, so that a motion keeping loaded strings taut
// scores better than one that lets them go.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "input_spline.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/plan/goal_spec.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::detail {

class RolloutScore {
 public:
  // The score's own prices of time, of a loaded string going slack and of coming within the
  // margin (single shooting's default weights, when it was an optimizer: decision 0020).
  static constexpr double kDurationWeight = 1.0;    // per second of motion
  static constexpr double kSlackWeight = 10.0;      // integral of (max(0, floor - tau) / T_ref)^2
  static constexpr double kClearanceWeight = 100.0;  // integral of (max(0, margin - d) / margin)^2
  // The terms of one rollout.
  struct Terms {
    double effort = 0, jerk = 0, swing = 0, settle = 0, tension_rate = 0, slack = 0,
           duration = 0, clearance = 0;
    double total() const {
      return effort + jerk + swing + settle + tension_rate + slack + duration + clearance;
    }
  };
  struct Setup {
    ModelPtr model;
    GoalSpec goal;
    State start;                    // x_0 at the plan's step 1 / rate_hz
    double rate_hz = 50.0;          // samples and integrator step
    double duration_s = 1.0;        // the motion (the settle hold comes after)
    int segments = 4;               // spline pieces
    double settle_s = 1.0;
    OptimizationWeights weights;
    Eigen::VectorXd end_reference;  // n_k: inputs whose rest pose sets the end's static tensions
    double goal_fraction = 0.95;    // the goal rows ask for this share of its tolerance
    double limit_share = 0.97;      // the limit rows ask for this share of each limit
    // With a collision model: at every sample of the motion, clearance to the stage (obstacles
    // and bounds) below margin_m, and to anything (self-collision too) below self_margin_m,
    // is priced.
    CollisionModelPtr collision;
    double margin_m = 0.02;
    double self_margin_m = 0.001;
  };
  explicit RolloutScore(const Setup& setup);

  const InputSpline& spline() const { return spline_; }

  // Rolls out the spline at z (remembered: the same z again costs nothing).  False when a step
  // fails (its single-step solve), or a value is not finite; failure() says which.  Polls the
  // thread's CancelScope at every step (PlanCancelled).
  bool evaluate(const Eigen::VectorXd& z);
  const std::string& failure() const { return failure_; }
  int rollouts() const { return rollouts_; }  // evaluations that rolled out (not remembered)
  const Terms& cost() const { return cost_; }
  // How far the evaluated motion is from meeting the limit and goal rows: the largest excess over
  // a row's bound, relative to the bound's scale (the goal's tolerance, the rest energy, a
  // limit's bound).
  double constraintViolation() const;
  double minStageClearance() const { return min_stage_clearance_m_; }  // over the motion (m)
  double minClearance() const { return min_clearance_m_; }  // to anything, over the motion (m)

 private:
  int rows() const;  // the limit rows, then the goal's
  void rowBounds(Eigen::VectorXd& lower, Eigen::VectorXd& upper) const;
  bool rollOut(const Eigen::MatrixXd& u);
  void inputCosts(const Eigen::MatrixXd& u);  // effort and jerk
  void fillGoalRows(const State& end, const Eigen::VectorXd& v_last);
  void clearanceCost(const State& x);  // one motion sample's

  Setup setup_;
  InputSpline spline_;
  InputSpline::LimitRows limits_;
  VariationalIntegrator vi_;
  GoalEvaluator goal_;
  DynamicsData data_;
  Eigen::MatrixXd mass_ref_;  // M at the start pose: the fixed metric of the swing terms
  double energy_ref_J_ = 1.0;
  std::vector<int> loaded_;   // strings whose tension terms count
  Eigen::VectorXd tension_ref_, tension_floor_, slack_length_;  // n_s
  int goal_rows_ = 0;
  std::unique_ptr<CollisionChecker> checker_;

  Eigen::VectorXd z_;
  bool valid_ = false;
  int rollouts_ = 0;
  std::string failure_;
  Terms cost_;
  double min_stage_clearance_m_ = 0.0, min_clearance_m_ = 0.0;
  Eigen::VectorXd g_;  // the rows' values
};

}  // namespace marionette::detail

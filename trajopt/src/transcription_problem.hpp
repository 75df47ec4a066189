// SPDX-License-Identifier: BSD-3-Clause
// Contact-implicit transcription of the variational integrator (Manchester & Kuindersma,
// "Variational Contact-Implicit Trajectory Optimization", ISRR 2017; Posa, Cantu & Tedrake,
// "A direct method for trajectory optimization of rigid bodies through contact", IJRR 2014):
// the configurations, the rig inputs and the strings' and stops' multipliers at every knot are
// the variables, the discrete Euler-Lagrange equations between knots are constraints
// (discrete_mechanics.hpp), and each unilateral row's complementarity with its multiplier is an
// exact penalty (lambda >= 0 and the slackness s = -g >= 0 as bounds, lambda s in the objective:
// never negative, since an interior point keeps its bounds), so the solver chooses when a string
// goes slack or catches.  Joint stops' slackness is their variable's distance to its bound.
//
// Contacts are rows of the same kind (the integrator's, IntegratorOptions::contacts, those
// contact_rows names: the ones the motion comes near), each with Coulomb friction: its tangential
// impulse beta in the DEL rows (discrete_mechanics.hpp), within the 16-facet cone the
// integrator's step has (kFrictionFacets): at fixed modes a touching contact with friction sticks
// (its slip over the step zero) or slides on a facet f of its cone, as the step's contacts slide:
// its friction on the facet (d_f^T beta = mu lambda; the force on the point is -B beta / dt) and
// its slip along the facet's normal d_f (maximal dissipation on the polygon).
//
// Variables z, knots k = 0..N at the step dt (knot 0 is the start, fixed):
//   x_k = (q_{d,k}, rho_k)  k = 1..N     n_q each
//   lambda_k                k = 0..N-1   n_c each: the force over the step k -> k+1
//   s_k                     k = 0..N-1   n_u each: the strings' and contacts' slackness at
//                                        x_{k+1}, >= 0 (n_u = n_s + n_t)
//   beta_k                  k = 0..N-1   2 n_t: the contacts' friction over the step
//   a_k                     k = 0..N-1   n_k: the rig's second difference at knot k,
//                                        rho_{k+1} - 2 rho_k + rho_{k-1} (its acceleration
//                                        times dt^2), within accel_share of each limit
// Every variable belongs to a knot (x_k, lambda_k, beta_k, a_k to k; s_k to k + 1) and every
// row and cost term couples neighbouring knots only, so that the KKT matrix is block tridiagonal
// by knots (kkt_system.hpp): the jerk is a_k - a_{k-1}, the rest rows chain x_{N-j} = x_{N-j+1}.
// Rows:
//   DEL_k                   k = 0..N-1   n_d: = 0
//   gaps g_j(x_{k+1}) + s_kj  k = 0..N-1 n_u: = 0 (joint stops are bounds on q)
//   slip B_k^T (x(q_{k+1}) - x(q_k))  k = 0..N-1  2 n_t: = 0 where the contact sticks, else free
//   cone mu lambda - d_i^T beta  k = 0..N-1  16 n_t: >= 0
//   sliding (e_f, d_f)^T sigma  k = 0..N-1  2 n_t: = 0 and >= 0 where the contact slides on
//                                        facet f (then its cone's row f = 0), else free
//   rig speed               k = 0..N-1   n_k: within limit_share of each limit
//   second difference       k = 0..N-1   n_k: rho_{k+1} - 2 rho_k + rho_{k-1} - a_k = 0
//   rest                    the last rest_knots knots equal the end's (each its next's): the
//                           puppet hangs still
//   goal                    at x_G (x_N unless the setup says): half a point's squared
//                           distance, or a joint's (and input's) error
//   clearance               k = 1..N     to the stage >= margin_m, to anything >= self_margin_m
//                                        (where a contact touches: to anything the puppet may
//                                        not touch)
// Objective (OptimizationWeights, each term normalized: trajectory_optimization.hpp):
//   rig effort and jerk, the puppet's kinetic energy, the multipliers' rate (tension rate), the
//   complementarity penalty, and a performance's targets (points and variables at the knots).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <memory>
#include <vector>

#include "clearance_gradient.hpp"
#include "discrete_mechanics.hpp"
#include "marionette/control/tracking_gains.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/plan/goal_spec.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "sparse_blocks.hpp"
#include "sparse_nlp.hpp"

namespace marionette::detail {


// The closed loop's cost on the transcription's variables (control/tracking_lqr.hpp's, term for
// term): a receding-horizon controller whose first step is the LQR's where nothing switches.
// With d the deviation from the reference at a knot and u_k = drho_{k+1} (k = 0..N-1):
//   sum_{k=1..N} f_k (position |dq_k|^2 + velocity dp_k^T W_k dp_k + rig |drho_k|^2)
//   + sum_{k=0..N-1} correction |u_k|^2 + correction_rate |u_k - drho_k|^2 / dt^2
//                    + correction_accel |u_k - 2 drho_k + drho_{k-1}|^2 / dt^4
//   + terminal (correction_rate |drho_N|^2 / dt^2 + correction_accel |2 drho_N - drho_{N-1}|^2
//     / dt^4),
// f_k = 1 but f_N = terminal; p_k = D2L_d(q_{k-1}, q_k) is the integrator's momentum at knot k
// (the state the LQR's x holds), W_k = M_k^-T M_k^-1 at the reference.  Not multiplied by dt.
struct StateTracking {
  Eigen::MatrixXd q;    // N+1 rows of n_d: the reference's joints at the knots
  Eigen::MatrixXd p;    // N+1 rows of n_d: its momenta
  Eigen::MatrixXd rho;  // N+3 rows of n_k: its rig inputs at knots -2, -1, 0, ..., N
  std::vector<Eigen::MatrixXd> velocity_metric;  // N+1 of n_d x n_d: W_k
  control::LqrWeights weights;                   // the LQR's (tracking_gains.hpp)
  bool active() const { return q.rows() > 0; }
};

struct TranscriptionSetup {
  ModelPtr model;
  IntegratorOptions integrator;  // dt_s: the knots' spacing; its damping; its contacts
  // The rows of integrator.contacts that are the transcription's contact rows (Contacts' row
  // order); empty: none (the others touch only in the re-simulation).
  std::vector<int> contact_rows;
  State start;                   // x_0
  int intervals = 0;             // N
  int rest_knots = 2;            // x_{N-1}, ..., x_{N-rest_knots} equal x_N
  GoalSpec goal;
  bool goal_rows = true;
  // The knot the goal rows hold at: -1 for x_N, the puppet at rest at the goal; earlier where no
  // rest pose meets the goal (reached on the way, then the motion comes to rest).
  int goal_knot = -1;
  double goal_fraction = 0.9;   // the goal rows ask for this share of its tolerance
  double limit_share = 0.97;    // the rig rows ask for this share of each limit
  // The acceleration rows' share: less when the plan's inputs interpolate the knots linearly at a
  // finer step (a knot's change of speed then happens within one plan step).
  double accel_share = 0.97;
  CollisionModelPtr collision;  // clearance rows when set
  double margin_m = 0.02;
  double self_margin_m = 0.001;
  OptimizationWeights weights;  // (effort, jerk, swing, settle, tension_rate, complementarity,
                                // tracking)
  // Each string's tension bound (N; n_s, or empty for none), as a bound on its multipliers at its
  // length at the start.
  Eigen::VectorXd max_tension_N;
  // The rig's two inputs before the start (rows rho_{-1}, rho_{-2}): its speed and acceleration
  // going in (a receding horizon's window starts mid-motion).  Empty: at rest at the start's.
  Eigen::MatrixXd rig_before;
  // Targets followed at the knots (a performance's): named points (model point indices) and their
  // positions (N+1 rows of 3 per point, world frame; a NaN sample has none), each with its weight
  // (empty: all 1), times its weight at the knot (N+1 rows of one per point; empty: all 1);
  // variables (indices into q: the puppet's, then the rig's) and their values
  // (N+1 rows, one column each; NaN: none), each error times its scale (m per unit: a radian as
  // 0.1 m) and its weight (empty: all 1).
  std::vector<int> track_points;
  Eigen::MatrixXd track_targets_m;
  std::vector<double> track_point_weight;
  Eigen::MatrixXd track_point_knot_weight;
  std::vector<int> track_variables;
  Eigen::MatrixXd track_values;
  std::vector<double> track_variable_scale_m, track_variable_weight;
  // Rig inputs held at the start's value (bounds): a performance's disabled ones.
  std::vector<int> held_inputs;
  // Each rig input's bounds at the knots (N+1 rows of n_k, within its range; knot 0's unused):
  // a closed loop's bound on its corrections.  Empty: its range.
  Eigen::MatrixXd rig_lower, rig_upper;
  // The rig holds still from this knot on (its speed rows 0 there), the puppet's swing weighed by
  // weights.settle: a motion's end inside the window, its last inputs held as a plan holds them.
  // -1: none.
  int hold_from_knot = -1;
  // Joint stops the motion is kept off, as bounds on their variables only (no multiplier, no
  // force: the integrator never engages them either); model->stops are the stops modelled as
  // unilateral rows.
  std::vector<Model::StopRow> stops_held_off;
  // The closed loop's cost (inactive when empty); its terms add to the others'.
  StateTracking state_tracking;
};

// What of the model a guess (configurations: rows of n_d) comes near, for a setup.
// `model` with only the joint stops it comes within `reach` (rad or m) of as unilateral rows; the
// others into held_off (bounds only: a stop never neared would cost a multiplier per knot).
ModelPtr withStopsNear(const ModelPtr& model, const Eigen::MatrixXd& configurations, double reach,
                       std::vector<Model::StopRow>& held_off);
// The rows of `contacts` whose gap comes within reach_m of touching at some knot (its inputs:
// rows of n_k): the transcription's contact rows (the others touch only in the re-simulation).
std::vector<int> contactRowsNear(const ModelPtr& model, const Contacts& contacts,
                                 const Eigen::MatrixXd& configurations,
                                 const Eigen::MatrixXd& inputs, double reach_m);
// The configurations (rows of n_d) of the integrator's rollout of `inputs` (rows of n_k, the
// first the start's) from `start`; a step that fails holds the last.
Eigen::MatrixXd rolloutConfigurations(const ModelPtr& model, const State& start,
                                      const Eigen::MatrixXd& inputs, const IntegratorOptions& io);

class TranscriptionProblem : public SparseNlp {
 public:
  explicit TranscriptionProblem(const TranscriptionSetup& setup);

  int variables() const override { return n_z_; }
  int unilateralRows() const { return nc_; }  // n_c per step: the strings, contacts, stops
  int stringRows() const { return ns_; }   // the first rows of each step's n_c
  int contactRows() const { return nt_; }  // the next
  int constraints() const override { return n_g_; }
  int jacobianNonzeros() const override { return jacobian_.nonzeros(); }
  void bounds(Eigen::VectorXd& z_lower, Eigen::VectorXd& z_upper, Eigen::VectorXd& g_lower,
              Eigen::VectorXd& g_upper) const override;
  // Row and variable scales (each row and variable of order 1 at a meaningful error).
  void scaling(Eigen::VectorXd& z_scale, Eigen::VectorXd& g_scale) const override;
  // The objective's: 1 / its value at a solve's start (scaleObjectiveAt), so that it is O(1) like
  // the rows.
  double objectiveScale() const override { return objective_scale_; }
  void scaleObjectiveAt(const Eigen::VectorXd& z) {
    evaluate(z, false);
    objective_scale_ = 1.0 / std::max(cost_, 1e-3);
  }
  // Each variable's knot: x_k, lambda_k and beta_k at k, the slackness s_k at k + 1 (its rows
  // are x_{k+1}'s).
  void stages(std::vector<int>& stage) const override;
  void jacobianStructure(int* rows, int* cols) const override { jacobian_.structure(rows, cols); }

  // The guess from rig inputs (N+1 rows of n_k, the first the start's): the integrator's
  // rollout of them, its tensions as multipliers, the stops' from the DEL rows.  A step that
  // fails holds the configuration.
  // With `resimulated`, whether every step of the rollout succeeded.
  Eigen::VectorXd initialGuess(const Eigen::MatrixXd& inputs, bool* resimulated = nullptr);
  // The guess from rig inputs and, at each of their rows, the puppet's rest pose (n_d) and its
  // static tensions (n_s): a motion slow enough to be quasi-static, whose only DEL residual is
  // its inertia.  A contact the rest pose reaches (or enters) touches, with a token force (the
  // rest poses hang: standing on the contacts, a path's took seconds a knot).
  Eigen::VectorXd quasiStaticGuess(const Eigen::MatrixXd& inputs, const Eigen::MatrixXd& rest_q,
                                   const Eigen::MatrixXd& tension_N);

  // Everything at z; with derivatives, also the gradient and the Jacobian's values.  False when
  // the cost or a row is not finite.
  bool evaluate(const Eigen::VectorXd& z, bool derivatives) override;
  double cost() const override { return cost_; }
  const Eigen::VectorXd& gradient() const override { return gradient_; }
  const Eigen::VectorXd& rows() const override { return g_; }
  void jacobianValues(double* out) const override { jacobian_.copyValues(out); }

  // The Hessian of the Lagrangian sigma f + y^T g at z (lower triangle), without the dynamics'
  // third derivatives (the DEL rows' curvature in the configurations, the clearance's, and the
  // points' own curvature in a point goal's): exact for the objective, the strings' rows and the
  // constraint forces' coupling of multipliers and configurations -- what complementarity turns
  // on -- and a point goal's J^T J.  Needs evaluate(z, true).
  int hessianNonzeros() const override { return hessian_.nonzeros(); }
  void hessianStructure(int* rows, int* cols) const override { hessian_.structure(rows, cols); }
  void hessian(const Eigen::VectorXd& z, double sigma, const Eigen::VectorXd& y,
               double* values) override;

  // The rig inputs of z (N+1 rows of n_k) and the configurations (N+1 rows of n_q).
  Eigen::MatrixXd inputs(const Eigen::VectorXd& z) const;
  Eigen::MatrixXd configurations(const Eigen::VectorXd& z) const;
  // How far z is from complementarity: the largest min(lambda / lambda_ref, gap / its unit) over
  // the strings, contacts and stops (0 when every multiplier or its gap is 0).
  double complementarityViolation(const Eigen::VectorXd& z);
  // Modes: each unilateral row of each interval (k n_c + c) taut (1: a string's or a contact's
  // slackness or a stop's gap fixed at 0; a contact with friction sticking; kSliding: a contact
  // touching and sliding) or slack (0: its multiplier fixed at 0, and a contact's friction with
  // it), so that complementarity holds
  // exactly and the problem is smooth; the penalty is then zero.  Except on the knots the rest
  // rows make equal to x_N: a taut row there repeats x_N's (two equal rows, a rank-deficient
  // Jacobian that costs the solver most of its iterations), so its gap keeps only its bound, and
  // x_N's row with the penalty make it zero.  Without modes (the default), complementarity is the
  // penalty's, and contacts are frictionless.
  void setModes(std::vector<char> taut);
  const std::vector<char>& modes() const { return taut_; }
  // Taut where z's multiplier is positive (an initial guess's: the integrator's taut set); a
  // touching contact with friction sliding where its slip over the step is over kSlide_m, on the
  // facet its slip faces: mode kSliding + f.
  static constexpr char kSliding = 2;
  static constexpr double kTrack_m = 0.01;  // the targets' unit: a 1 cm error costs 1 per second
  std::vector<char> modesOf(const Eigen::VectorXd& z);

  // Offsets into z.
  int xAt(int k) const { return (k - 1) * nq_; }                      // k = 1..N
  int lambdaAt(int k) const { return setup_.intervals * nq_ + k * nc_; }  // k = 0..N-1
  int slackAt(int k) const { return setup_.intervals * (nq_ + nc_) + k * nu_; }  // k = 0..N-1
  int frictionAt(int k) const {                                                  // k = 0..N-1
    return setup_.intervals * (nq_ + nc_ + nu_) + k * 2 * nt_;
  }
  int accelAt(int k) const {  // k = 0..N-1
    return setup_.intervals * (nq_ + nc_ + nu_ + 2 * nt_) + k * nk_;
  }

 private:
  // Which variables a row or a coupling can involve: a joint couples only with its ancestors and
  // descendants (the Lagrangian on a tree), a string only with its two ends' chains.
  void findPatterns();
  void declareRows();
  void declareHessian();
  void knotConfiguration(const Eigen::VectorXd& z, int k, Eigen::VectorXd& q) const;
  // Whether a contact touches at knot k (1..N): taut on the step that ends or starts there; any
  // contact row at all without modes.
  bool knotTouches(int k) const;
  // Contact t's sliding rows on step k: the facet's tangent and normal (rows) its mode slides on
  // (facet 0 where it does not slide).
  Eigen::Matrix2d slideFrame(int k, int t) const;
  void setStopMultipliers(Eigen::VectorXd& z);
  void setSecondDifferences(Eigen::VectorXd& z) const;  // a_k from z's rig inputs
  // The rig's second difference a_{-1} before the start (rig_before's, or at rest), constant.
  double secondDifferenceBefore(int i) const { return rigAt(0, i) - 2 * rigAt(-1, i) + rigAt(-2, i); }
  void addInputCosts(const Eigen::VectorXd& z, bool derivatives);
  void addSwingAndTensionCosts(const Eigen::VectorXd& z, bool derivatives);
  void addTrackingCosts(bool derivatives);
  // Point i's tracking weight at knot k: its own times its knot's.
  double trackPointWeight(int k, int i) const {
    return (setup_.track_point_weight.empty() ? 1.0 : setup_.track_point_weight[i]) *
           (setup_.track_point_knot_weight.size() == 0 ? 1.0
                                                       : setup_.track_point_knot_weight(k, i));
  }
  // StateTracking's cost (transcription_state_tracking.cpp) and its Gauss-Newton curvature.
  void addStateTrackingCosts(const Eigen::VectorXd& z, bool derivatives);
  void addStateTrackingHessian(double sigma);
  double rigDeviation(int k, int i) const;  // rho_i - its reference at knot k >= -2
  // Adds c to the Hessian's (rho_i at knot a, rho_i at knot b) entry, a >= b >= a - 1 (knot 0
  // and before are fixed: nothing).
  void addRigHessian(int a, int b, int i, double c);
  double swingWeight(int interval) const;  // swing's, or settle's from hold_from_knot on
  // Rig input i at knot k >= -2 (before the start: rig_before's, or the start's).
  double rigAt(int k, int i) const;

  TranscriptionSetup setup_;
  DiscreteMechanics mechanics_;
  GoalEvaluator goal_;
  std::unique_ptr<CollisionChecker> checker_;
  std::unique_ptr<ClearanceGradient> clearance_gradient_;
  DynamicsData data_;
  int nd_, nk_, nq_, ns_, nt_, nu_, nc_, N_;
  int n_z_ = 0, n_g_ = 0;
  // First row of each kind.
  int del_row_ = 0, gap_row_ = 0, slip_row_ = 0, cone_row_ = 0, slide_row_ = 0, speed_row_ = 0,
      accel_row_ = 0, rest_row_ = 0, goal_row_ = 0, clearance_row_ = 0;
  int goal_rows_ = 0, goal_knot_ = 0, clearance_rows_per_knot_ = 0;
  Eigen::MatrixXd mass_ref_;      // n_d x n_d: at the start
  double energy_ref_J_ = 1.0;
  Eigen::VectorXd lambda_ref_;    // n_c
  Eigen::VectorXd string_length_ref_m_;  // n_s: at the start
  Eigen::VectorXd gap_unit_;             // n_c: the complementarity's gap unit, 1 mm of a string's
                              // length (its g / l), 1 mm of a contact's gap, or 1 mm (mrad)
                              // of a stop's variable
  Eigen::VectorXd speed_ref_, jerk_ref_;  // n_k: max_speed and max_accel / 0.1 s (1 if none)
  Eigen::VectorXd rate_scale_;            // n_s: 0.1 s / (dt lambda_ref): the tension rate's
  Eigen::VectorXd mu_;                    // n_t: each contact's Coulomb friction
  Eigen::Matrix2Xd facet_normal_;         // 2 x kFrictionFacets: the cone's facets
  Eigen::VectorXd lower_, upper_, g_lower_, g_upper_;
  std::vector<char> taut_;  // modes (N n_c), or empty

  // Jacobian blocks by row kind (ids into jacobian_).
  struct DelBlocks {
    int previous = -1, here = -1, here_rig = -1, next = -1, force = -1, friction = -1;
  };
  std::vector<DelBlocks> del_blocks_;
  struct SlideBlocks {
    int next = -1, here = -1;
  };
  std::vector<SlideBlocks> slide_blocks_;  // per interval and contact (k n_t + t)
  std::vector<int> gap_blocks_, slip_next_, slip_here_, speed_next_, speed_here_, accel_blocks_[3],
      rest_blocks_, rest_end_blocks_, goal_blocks_, clearance_blocks_;
  Pattern coupled_;                            // n_d x n_d
  std::vector<std::vector<int>> string_vars_;  // per string: the q indices that move it
  std::vector<std::vector<int>> contact_vars_;  // per contact: the q_d indices that move it
  std::vector<int> goal_point_vars_;           // the q indices that move a goal's points
  std::vector<int> track_point_vars_;          // ... and the tracked points
  SparseBlocks jacobian_;
  // Hessian blocks: per knot k = 1..N its (x_k, x_k) block, (x_k, x_{k-1}) (the swing's q_d
  // block, the rig's diagonal), per interval its multipliers' couplings and its second
  // differences' (a_k, a_k) and (a_k, a_{k-1}) diagonals.
  struct HessianBlocks {
    int xx = -1, qq_prev = -1, rho_prev = -1, accel = -1, accel_prev = -1;
    int lambda_x = -1, friction_x = -1, stop_next = -1, lambda_lambda = -1, lambda_prev = -1,
        slack_lambda = -1;
  };
  std::vector<HessianBlocks> hessian_blocks_;  // index k: knot k's x blocks, interval k's others
  SparseBlocks hessian_;

  // Evaluation.
  std::vector<Eigen::VectorXd> q_;  // N+1 of n_q
  std::vector<IntervalTerms> intervals_;
  std::vector<KnotConstraints> knots_;
  std::vector<Eigen::MatrixXd> goal_point_jacobians_;  // 3 x n_q each, point goals
  std::vector<Eigen::MatrixXd> track_jacobians_;       // 3 x n_q, knot k's point i at k P + i
  double cost_ = 0.0, objective_scale_ = 1.0;
  Eigen::VectorXd gradient_, g_;
};

}  // namespace marionette::detail

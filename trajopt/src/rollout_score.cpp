// SPDX-License-Identifier: BSD-3-Clause
#include "rollout_score.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {

namespace {
constexpr double kTimeRef_s = 0.1;         // tension rate and jerk are measured over this
constexpr double kSlackPerRef_m = 0.01;    // 1 cm of slack counts as losing T_ref
constexpr double kLoadedString_N = 0.05;   // strings lighter than this at both ends are left out
constexpr double kFloorShare = 0.3;        // tau below this share of the lighter static load
}  // namespace

RolloutScore::RolloutScore(const Setup& s)
    : setup_(s),
      spline_(*s.model, s.duration_s, s.segments, s.rate_hz, s.start.rho),
      limits_(spline_.limitRows(*s.model, s.limit_share)),
      vi_(s.model, [&] {
        IntegratorOptions o;
        o.dt_s = 1.0 / s.rate_hz;
        o.max_substep_halvings = 0;  // a single solve a step: a motion that needs more scores none
        if (s.collision) o.contacts = s.collision->contacts();  // as the verification steps
        return o;
      }()),
      goal_(s.model, s.goal),
      data_(*s.model) {
  const Model& m = *s.model;
  const int nd = m.nd(), ns = m.nstrings();
  // The swing metric: the mass matrix at the start pose.
  const Eigen::VectorXd q0 = m.configuration(s.start.q, s.start.rho);
  forwardKinematics(m, data_, q0);
  computeLagrangian(m, data_, q0, Eigen::VectorXd::Zero(nd), LagrangianOrder::MassMatrix);
  mass_ref_ = data_.M;
  double total_mass = 0.0;
  for (const Mass& mass : m.masses) total_mass += mass.mass_kg;
  energy_ref_J_ = std::max(1e-9, total_mass * std::max(m.gravity_mps2, 0.1) * 0.01);
  // Static loads at the start and at rest at the end reference.
  // (Standing on what the rollouts touch.)
  const RestPoseOptions standing = standingOn(s.collision ? s.collision->contacts() : nullptr);
  const RestPose at_start = computeRestPose(s.model, s.start.rho, &s.start.q, standing);
  const RestPose at_end = computeRestPose(s.model, s.end_reference, nullptr, standing);
  tension_ref_.setConstant(ns, kLoadedString_N);
  tension_floor_.setZero(ns);
  slack_length_.setOnes(ns);
  computeStrings(m, data_, q0, false);
  for (int j = 0; j < ns; ++j) {
    const double a = at_start.ok ? at_start.tension_N[j] : 0.0;
    const double b = at_end.ok ? at_end.tension_N[j] : a;
    slack_length_[j] = std::max(1e-3, data_.length[j]);
    if (std::max(a, b) < kLoadedString_N) continue;
    loaded_.push_back(j);
    tension_ref_[j] = std::max(a, b);
    // A string that carries less at the end's rest than at the start may unload on the way
    // (a quasi-static transfer of the load is no catch).
    tension_floor_[j] = kFloorShare * std::min(a, b);
  }
  // Goal rows: one per joint (joint and rest-of goals) or per point target, plus at-rest.
  goal_rows_ = goal_.spec().kind == GoalSpec::Kind::Point
                   ? static_cast<int>(goal_.goalPoints().size())
                   : static_cast<int>(goal_.poseResidual(s.start.q, s.start.rho).size());
  if (goal_.spec().at_rest) ++goal_rows_;
  if (s.collision) checker_ = std::make_unique<CollisionChecker>(s.collision);
  cost_ = Terms{};
}

int RolloutScore::rows() const { return static_cast<int>(limits_.lower.size()) + goal_rows_; }

void RolloutScore::rowBounds(Eigen::VectorXd& lower, Eigen::VectorXd& upper) const {
  const int limit_rows = static_cast<int>(limits_.lower.size());
  lower.resize(rows());
  upper.resize(rows());
  lower.head(limit_rows) = limits_.lower;
  upper.head(limit_rows) = limits_.upper;
  const double tol = setup_.goal_fraction * goal_.tolerance();
  int r = limit_rows;
  if (goal_.spec().kind == GoalSpec::Kind::Point) {
    for (std::size_t i = 0; i < goal_.goalPoints().size(); ++i, ++r) {
      lower[r] = -1e20;
      upper[r] = tol;  // |point - target|
    }
  } else {
    const int n = goal_rows_ - (goal_.spec().at_rest ? 1 : 0);
    for (int i = 0; i < n; ++i, ++r) {
      lower[r] = -tol;
      upper[r] = tol;
    }
  }
  if (goal_.spec().at_rest) {
    lower[r] = -1e20;
    upper[r] = 0.3 * goal_.spec().rest_energy_J;
  }
}

double RolloutScore::constraintViolation() const {
  Eigen::VectorXd lower, upper;
  rowBounds(lower, upper);
  const int limit_rows = static_cast<int>(limits_.lower.size());
  double worst = 0.0;
  for (int r = 0; r < rows(); ++r) {
    const double excess = std::max(g_[r] - upper[r], lower[r] - g_[r]);
    if (!(excess > 0)) continue;
    double scale = std::max(std::abs(upper[r]) < 1e19 ? std::abs(upper[r]) : 0.0,
                            std::abs(lower[r]) < 1e19 ? std::abs(lower[r]) : 0.0);
    if (r >= limit_rows) scale = std::max(scale, goal_.tolerance());
    worst = std::max(worst, excess / std::max(scale, 1e-9));
  }
  return worst;
}

void RolloutScore::inputCosts(const Eigen::MatrixXd& u) {
  const Model& m = *setup_.model;
  const double dt = 1.0 / setup_.rate_hz;
  const int n = static_cast<int>(u.rows());
  const OptimizationWeights& w = setup_.weights;
  // sum over samples of c * (sum_a coef_a u_{s+a,j})^2.
  auto difference = [&](int j, int s, const std::vector<double>& coef, double c, double& term) {
    double d = 0.0;
    for (std::size_t a = 0; a < coef.size(); ++a) d += coef[a] * u(s + static_cast<int>(a), j);
    term += c * d * d;
  };
  for (int j = 0; j < m.nk(); ++j) {
    throwIfCancelled("plan optimization");
    const KinematicVariable& kv = m.kinematic[j];
    const double speed_ref = std::isfinite(kv.max_speed) ? kv.max_speed : 1.0;
    const double jerk_ref = (std::isfinite(kv.max_accel) ? kv.max_accel : 10.0) / kTimeRef_s;
    // (du/dt / speed_ref)^2 dt = d^2 / (speed_ref^2 dt).
    for (int s = 0; s + 1 < n; ++s)
      difference(j, s, {-1.0, 1.0}, w.effort / (speed_ref * speed_ref * dt), cost_.effort);
    // (d3u/dt3 / jerk_ref)^2 dt = d^2 / (jerk_ref^2 dt^5).
    for (int s = 0; s + 3 < n; ++s)
      difference(j, s, {-1.0, 3.0, -3.0, 1.0}, w.jerk / (jerk_ref * jerk_ref * std::pow(dt, 5)),
                 cost_.jerk);
  }
}

bool RolloutScore::evaluate(const Eigen::VectorXd& z) {
  if (valid_ && z.size() == z_.size() && z == z_) return true;
  z_ = z;
  if (!rollOut(spline_.sampleInputs(z))) return false;
  g_.head(limits_.lower.size()) = limits_.matrix * z;
  return true;
}

bool RolloutScore::rollOut(const Eigen::MatrixXd& u) {
  valid_ = false;
  ++rollouts_;
  failure_.clear();
  const Model& m = *setup_.model;
  const int ns = m.nstrings();
  const double dt = 1.0 / setup_.rate_hz;
  const OptimizationWeights& w = setup_.weights;
  cost_ = Terms{};
  min_stage_clearance_m_ = std::numeric_limits<double>::infinity();
  min_clearance_m_ = std::numeric_limits<double>::infinity();
  g_.setZero(rows());

  const int motion_steps = spline_.samples() - 1;
  const int steps = motion_steps + static_cast<int>(std::lround(setup_.settle_s * setup_.rate_hz));
  inputCosts(u);
  cost_.duration = kDurationWeight * motion_steps * dt;

  // The input of step k is sample k + 1 (held after the end).
  State x = setup_.start, next = vi_.makeState();
  StepReport report = vi_.makeReport();
  Eigen::VectorXd tau(ns), tau_prev(ns);
  Eigen::VectorXd q_full(m.nq()), v(m.nd()), v_last(m.nd());
  State end;
  for (int k = 0; k < steps; ++k) {
    throwIfCancelled("trajectory optimization");  // valid_ stays false
    const int s = std::min(k + 1, motion_steps);
    const Eigen::VectorXd u_next = u.row(s).transpose();
    const StepStatus st = vi_.step(x, u_next, next, &report);
    if (st != StepStatus::Ok) {
      failure_ = "step " + std::to_string(k + 1) + " (t = " + formatNumber((k + 1) * dt) +
                 " s): " + toString(st);
      return false;
    }
    // Swing: 1/2 v^T M_ref v with v = (q_{k+1} - q_k) / dt, over the motion and the hold.
    v = (next.q - x.q) / dt;
    const double c = (k < motion_steps ? w.swing : w.settle) * dt / energy_ref_J_;
    const Eigen::VectorXd Mv = mass_ref_ * v;
    (k < motion_steps ? cost_.swing : cost_.settle) += c * 0.5 * v.dot(Mv);

    // Tension measure tau_j: the step's tension while taut, -kappa * slackness while slack.
    q_full << next.q, next.rho;
    forwardKinematics(m, data_, q_full);
    computeStrings(m, data_, q_full, false);
    for (int j : loaded_) {
      if (report.taut[j]) {
        tau[j] = report.tension_N[j];
      } else {
        const double kappa = tension_ref_[j] / kSlackPerRef_m / slack_length_[j];
        tau[j] = kappa * data_.h[j];  // h < 0 while slack
      }
      const double below = tension_floor_[j] - tau[j];
      if (below > 0)
        cost_.slack += kSlackWeight * dt / (tension_ref_[j] * tension_ref_[j]) * below * below;
      if (k > 0) {
        const double d = tau[j] - tau_prev[j];
        const double cr = w.tension_rate * kTimeRef_s * kTimeRef_s /
                          (tension_ref_[j] * tension_ref_[j] * dt);
        cost_.tension_rate += cr * d * d;
      }
    }
    std::swap(tau, tau_prev);

    if (checker_ && k < motion_steps) clearanceCost(next);
    std::swap(x, next);
    if (k + 1 == motion_steps) {
      end = x;
      v_last = v;
    }
  }
  if (motion_steps == 0) return false;
  fillGoalRows(end, v_last);
  if (!std::isfinite(cost_.total()) || !g_.allFinite()) {
    failure_ = "a value that is not finite";
    return false;
  }
  valid_ = true;
  return true;
}

void RolloutScore::fillGoalRows(const State& end, const Eigen::VectorXd& v_last) {
  const Model& m = *setup_.model;
  int r = static_cast<int>(limits_.lower.size());
  if (goal_.spec().kind == GoalSpec::Kind::Point) {
    const Eigen::VectorXd q_full = m.configuration(end.q, end.rho);
    forwardKinematics(m, data_, q_full);
    for (std::size_t i = 0; i < goal_.goalPoints().size(); ++i, ++r) {
      const Point& p = m.points[goal_.goalPoints()[i]];
      g_[r] = (pointPosition(data_, p.frame, p.position_m) - goal_.pointTargetsWorld()[i]).norm();
    }
  } else {
    // Joint goals: q_i - target for each goal variable; rest-of: every joint, then every input.
    const Eigen::VectorXd residual = goal_.poseResidual(end.q, end.rho);
    const int n = static_cast<int>(goal_.goalVariables().size()) +
                  (goal_.spec().kind == GoalSpec::Kind::RestOf ? m.nk() : 0);
    for (int i = 0; i < n; ++i, ++r) g_[r] = residual[i];
  }
  if (goal_.spec().at_rest) g_[r] = 0.5 * v_last.dot(mass_ref_ * v_last);
}

void RolloutScore::clearanceCost(const State& x) {
  const Model& m = *setup_.model;
  const Eigen::VectorXd q_full = m.configuration(x.q, x.rho);
  const ClearanceResult c = checker_->clearance(q_full);
  const double dt = 1.0 / setup_.rate_hz;
  // kClearanceWeight dt (max(0, margin - d) / margin)^2 for the stage's nearest pair and for
  // anything's.
  auto price = [&](double d, double margin) {
    if (!(margin > 0) || !(d < margin)) return;
    const double below = margin - d;
    cost_.clearance += kClearanceWeight * dt / (margin * margin) * below * below;
  };
  if (std::isfinite(c.stage_distance_m)) price(c.stage_distance_m, setup_.margin_m);
  const bool self = c.pair.kind == ContactKind::LinkLink || c.pair.kind == ContactKind::StringLink;
  if (self && std::isfinite(c.distance_m)) price(c.distance_m, setup_.self_margin_m);
  min_stage_clearance_m_ = std::min(min_stage_clearance_m_, c.stage_distance_m);
  min_clearance_m_ = std::min(min_clearance_m_, c.distance_m);
}

}  // namespace marionette::detail

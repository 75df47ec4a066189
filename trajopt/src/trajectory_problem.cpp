// SPDX-License-Identifier: BSD-3-Clause
#include "trajectory_problem.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

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

TrajectoryProblem::TrajectoryProblem(const ProblemSetup& s)
    : setup_(s),
      spline_(*s.model, s.duration_s, s.segments, s.rate_hz, s.start.rho),
      limits_(spline_.limitRows(*s.model, s.limit_share)),
      vi_(s.model, [&] {
        IntegratorOptions o;
        o.dt_s = 1.0 / s.rate_hz;
        o.max_substep_halvings = 0;  // a value's step is the linearized one: a single solve
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
  mass_ref_factor_ = Eigen::LLT<Eigen::MatrixXd>(mass_ref_).matrixL();
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
  if (!s.goal_rows) goal_rows_ = 0;
  if (!s.track_points.empty() &&
      (s.track_targets_m.rows() != spline_.samples() ||
       s.track_targets_m.cols() != 3 * static_cast<Eigen::Index>(s.track_points.size())))
    throw std::invalid_argument("track_targets_m: one row of 3 per point for each sample");
  if (!s.track_variables.empty() &&
      (s.track_values.rows() != spline_.samples() ||
       s.track_values.cols() != static_cast<Eigen::Index>(s.track_variables.size()) ||
       s.track_variable_scale_m.size() != s.track_variables.size()))
    throw std::invalid_argument("track_values: one column per variable, a row for each sample");
  if (s.collision) {
    checker_ = std::make_unique<CollisionChecker>(s.collision);
    clearance_gradient_ = std::make_unique<ClearanceGradient>(s.model, s.collision);
  }
  point_jacobian_.resize(3, m.nq());
  // Effort and jerk are quadratic in z: their Hessian once.
  const int nz = variables();
  gradient_.setZero(nz);
  input_hessian_.setZero(nz, nz);
  inputCosts(spline_.sampleInputs(Eigen::VectorXd::Zero(nz)), &input_hessian_);
  cost_ = OptimizationCost{};
}

void TrajectoryProblem::addOuter(const Eigen::Ref<const Eigen::RowVectorXd>& r, double c) {
  hessian_.topLeftCorner(active_, active_)
      .selfadjointView<Eigen::Lower>()
      .rankUpdate(r.head(active_).transpose(), c);
}

int TrajectoryProblem::constraints() const { return linearConstraints() + goal_rows_; }

void TrajectoryProblem::bounds(Eigen::VectorXd& z_lower, Eigen::VectorXd& z_upper,
                               Eigen::VectorXd& g_lower, Eigen::VectorXd& g_upper) const {
  const Model& m = *setup_.model;
  z_lower.resize(variables());
  z_upper.resize(variables());
  for (int j = 0; j < m.nk(); ++j) {
    // A hair inside the range: interior-point solvers relax their bounds by ~1e-8.
    const KinematicVariable& kv = m.kinematic[j];
    const double inset = 1e-6 * (kv.upper - kv.lower);
    for (int f = 0; f < spline_.freePerInput(); ++f) {
      z_lower[spline_.variable(j, f)] = kv.lower + inset;
      z_upper[spline_.variable(j, f)] = kv.upper - inset;
    }
  }
  for (int j : setup_.held_inputs)
    for (int f = 0; f < spline_.freePerInput(); ++f)
      z_lower[spline_.variable(j, f)] = z_upper[spline_.variable(j, f)] = setup_.start.rho[j];
  g_lower.resize(constraints());
  g_upper.resize(constraints());
  g_lower.head(linearConstraints()) = limits_.lower;
  g_upper.head(linearConstraints()) = limits_.upper;
  if (!setup_.goal_rows) return;
  const double tol = setup_.goal_fraction * goal_.tolerance();
  int r = linearConstraints();
  if (goal_.spec().kind == GoalSpec::Kind::Point) {
    for (std::size_t i = 0; i < goal_.goalPoints().size(); ++i, ++r) {
      g_lower[r] = -1e20;
      g_upper[r] = tol;  // |point - target|
    }
  } else {
    const int n = goal_rows_ - (goal_.spec().at_rest ? 1 : 0);
    for (int i = 0; i < n; ++i, ++r) {
      g_lower[r] = -tol;
      g_upper[r] = tol;
    }
  }
  if (goal_.spec().at_rest) {
    g_lower[r] = -1e20;
    g_upper[r] = 0.3 * goal_.spec().rest_energy_J;
    ++r;
  }
}

double TrajectoryProblem::constraintViolation() const {
  Eigen::VectorXd z_lower, z_upper, lower, upper;
  bounds(z_lower, z_upper, lower, upper);
  double worst = 0.0;
  for (int r = 0; r < constraints(); ++r) {
    const double excess = std::max(g_[r] - upper[r], lower[r] - g_[r]);
    if (!(excess > 0)) continue;
    double scale = std::max(std::abs(upper[r]) < 1e19 ? std::abs(upper[r]) : 0.0,
                            std::abs(lower[r]) < 1e19 ? std::abs(lower[r]) : 0.0);
    if (r >= linearConstraints()) scale = std::max(scale, goal_.tolerance());
    worst = std::max(worst, excess / std::max(scale, 1e-9));
  }
  return worst;
}

void TrajectoryProblem::inputCosts(const Eigen::MatrixXd& u, Eigen::MatrixXd* hessian) {
  const Model& m = *setup_.model;
  const double dt = 1.0 / setup_.rate_hz;
  const int n = static_cast<int>(u.rows());
  const OptimizationWeights& w = setup_.weights;
  // sum over samples of c * (sum_a coef_a u_{s+a,j})^2: value, gradient and Hessian.
  std::vector<double> dd(spline_.freePerInput());  // d(difference)/d(input j's variables)
  auto difference = [&](int j, int s, const std::vector<double>& coef, double c, double& term) {
    double d = 0.0;
    for (std::size_t a = 0; a < coef.size(); ++a) d += coef[a] * u(s + static_cast<int>(a), j);
    term += c * d * d;
    std::fill(dd.begin(), dd.end(), 0.0);
    for (std::size_t a = 0; a < coef.size(); ++a)
      for (const auto& [f, weight] : spline_.sampleWeights(s + static_cast<int>(a)))
        dd[f] += coef[a] * weight;
    for (int f = 0; f < spline_.freePerInput(); ++f) {
      if (dd[f] == 0.0) continue;
      gradient_[spline_.variable(j, f)] += 2.0 * c * d * dd[f];
      if (hessian)
        for (int g = 0; g <= f; ++g)
          (*hessian)(spline_.variable(j, f), spline_.variable(j, g)) += 2.0 * c * dd[f] * dd[g];
    }
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

bool TrajectoryProblem::evaluate(const Eigen::VectorXd& z, Evaluation level) {
  const bool derivatives = level == Evaluation::Derivatives;
  if (valid_ && z.size() == z_.size() && z == z_ && (derivatives_ || !derivatives)) return true;
  z_ = z;
  if (!rollOut(spline_.sampleInputs(z), derivatives)) return false;
  g_.head(linearConstraints()) = limits_.matrix * z;
  return true;
}

bool TrajectoryProblem::evaluateSamples(const Eigen::MatrixXd& u) {
  z_.resize(0);  // no z: the next evaluate rolls out again
  if (u.rows() != spline_.samples() || u.cols() != setup_.model->nk()) {
    valid_ = false;
    failure_ = "the samples are not the spline's";
    return false;
  }
  return rollOut(u, false);
}

bool TrajectoryProblem::rollOut(const Eigen::MatrixXd& u, bool derivatives) {
  valid_ = false;
  derivatives_ = derivatives;
  ++rollouts_;
  failure_.clear();
  const Model& m = *setup_.model;
  const int nd = m.nd(), nk = m.nk(), ns = m.nstrings(), nx = 2 * nd + nk;
  const int nz = derivatives ? variables() : 0;  // no sensitivities for a value
  const double dt = 1.0 / setup_.rate_hz;
  const OptimizationWeights& w = setup_.weights;
  cost_ = OptimizationCost{};
  min_stage_clearance_m_ = std::numeric_limits<double>::infinity();
  min_clearance_m_ = std::numeric_limits<double>::infinity();
  gradient_.setZero(variables());
  g_.setZero(constraints());
  jacobian_.setZero(goal_rows_, nz);

  const int motion_steps = spline_.samples() - 1;
  const int steps = motion_steps + static_cast<int>(std::lround(setup_.settle_s * setup_.rate_hz));
  inputCosts(u, nullptr);
  if (derivatives) hessian_ = input_hessian_;
  cost_.duration = w.duration * motion_steps * dt;

  // Rolls out with X_k = dx_k/dz; the input of step k is sample k + 1 (held after the end).
  State x = setup_.start;
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(nx, nz), X_next = X;
  StepLinearization lin;
  lin.next = vi_.makeState();
  lin.report = vi_.makeReport();
  Eigen::VectorXd tau(ns), tau_prev(ns);
  // Sensitivities to the variables the motion so far does not depend on stay 0: every product
  // below is taken over the active prefix of z only (a = spline_.activeVariables(sample)).
  Eigen::MatrixXd dtau = Eigen::MatrixXd::Zero(ns, nz), dtau_prev = dtau;
  Eigen::VectorXd q_full(m.nq()), v(nd), v_last(nd);
  Eigen::MatrixXd dv = Eigen::MatrixXd::Zero(nd, nz), dv_last(nd, nz);
  State end;
  Eigen::MatrixXd X_end;
  for (int k = 0; k < steps; ++k) {
    throwIfCancelled("trajectory optimization");  // valid_ stays false
    const int s = std::min(k + 1, motion_steps);
    const Eigen::VectorXd u_next = u.row(s).transpose();
    // The same single-step solve either way (vi_ has no substep fallback).
    const StepStatus st = derivatives ? vi_.linearizeStep(x, u_next, lin)
                                      : vi_.step(x, u_next, lin.next, &lin.report);
    if (st != StepStatus::Ok) {
      failure_ = "step " + std::to_string(k + 1) + " (t = " + formatNumber((k + 1) * dt) +
                 " s): " + toString(st);
      return false;
    }
    const int a = derivatives ? spline_.activeVariables(s) : 0;
    active_ = a;
    if (derivatives) {
      X_next.leftCols(a).noalias() = lin.A * X.leftCols(a);
      for (int j = 0; j < nk; ++j)
        for (const auto& [f, weight] : spline_.sampleWeights(s))
          X_next.col(spline_.variable(j, f)) += weight * lin.B.col(j);
    }

    // Swing: 1/2 v^T M_ref v with v = (q_{k+1} - q_k) / dt, over the motion and the hold.
    v = (lin.next.q - x.q) / dt;
    const double c = (k < motion_steps ? w.swing : w.settle) * dt / energy_ref_J_;
    const Eigen::VectorXd Mv = mass_ref_ * v;
    (k < motion_steps ? cost_.swing : cost_.settle) += c * 0.5 * v.dot(Mv);
    if (derivatives) {
      dv.leftCols(a) = (X_next.topLeftCorner(nd, a) - X.topLeftCorner(nd, a)) / dt;
      gradient_.head(a).noalias() += c * (dv.leftCols(a).transpose() * Mv);
      // Gauss-Newton: c dv^T M dv = c (L^T dv)^T (L^T dv).
      const Eigen::MatrixXd W = mass_ref_factor_.transpose() * dv.leftCols(a);
      hessian_.topLeftCorner(a, a).selfadjointView<Eigen::Lower>().rankUpdate(W.transpose(), c);
    }

    // Tension measure tau_j: the step's tension while taut, -kappa * slackness while slack.
    q_full << lin.next.q, lin.next.rho;
    forwardKinematics(m, data_, q_full);
    computeStrings(m, data_, q_full, false);
    for (int j : loaded_) {
      if (lin.report.taut[j]) {
        tau[j] = lin.report.tension_N[j];
        if (derivatives) {
          dtau.row(j).head(a).noalias() = lin.tension_x.row(j) * X.leftCols(a);
          for (int i = 0; i < nk; ++i)
            if (lin.tension_u(j, i) != 0.0)
              for (const auto& [f, weight] : spline_.sampleWeights(s))
                dtau(j, spline_.variable(i, f)) += weight * lin.tension_u(j, i);
        }
      } else {
        const double kappa = tension_ref_[j] / kSlackPerRef_m / slack_length_[j];
        tau[j] = kappa * data_.h[j];  // h < 0 while slack
        if (derivatives) {
          dtau.row(j).head(a).noalias() =
              kappa * data_.Dh.row(j).head(nd) * X_next.topLeftCorner(nd, a);
          dtau.row(j).head(a).noalias() +=
              kappa * data_.Dh.row(j).tail(nk) * X_next.bottomLeftCorner(nk, a);
        }
      }
      const double below = tension_floor_[j] - tau[j];
      if (below > 0) {
        const double cs = w.slack * dt / (tension_ref_[j] * tension_ref_[j]);
        cost_.slack += cs * below * below;
        if (derivatives) {
          gradient_.head(a).noalias() -= 2.0 * cs * below * dtau.row(j).head(a).transpose();
          addOuter(dtau.row(j), 2.0 * cs);
        }
      }
      if (k > 0) {
        const double d = tau[j] - tau_prev[j];
        const double cr = w.tension_rate * kTimeRef_s * kTimeRef_s /
                          (tension_ref_[j] * tension_ref_[j] * dt);
        cost_.tension_rate += cr * d * d;
        if (derivatives) {
          gradient_.head(a).noalias() +=
              2.0 * cr * d * (dtau.row(j).head(a) - dtau_prev.row(j).head(a)).transpose();
          addOuter(dtau.row(j) - dtau_prev.row(j), 2.0 * cr);
        }
      }
    }
    std::swap(tau, tau_prev);
    std::swap(dtau, dtau_prev);

    if (checker_ && k < motion_steps) clearanceCost(lin.next, X_next);
    // (data_ still holds q_full's kinematics: the clearance query keeps its own.)
    if ((!setup_.track_points.empty() || !setup_.track_variables.empty()) && k < motion_steps)
      trackingCost(k + 1, lin.next, X_next);

    std::swap(X, X_next);
    x = lin.next;
    if (k + 1 == motion_steps) {
      end = x;
      X_end = X;
      v_last = v;
      dv_last = dv;
    }
  }
  if (motion_steps == 0) return false;
  if (setup_.goal_rows) fillGoalRows(end, X_end, v_last, dv_last);
  // A number that is not finite (a solver probing far out) is a failed evaluation, never a
  // value the solver takes.
  if (!std::isfinite(cost_.total()) || !gradient_.allFinite() || !g_.allFinite() ||
      !jacobian_.allFinite()) {
    failure_ = "a value that is not finite";
    return false;
  }
  valid_ = true;
  return true;
}

void TrajectoryProblem::fillGoalRows(const State& end, const Eigen::MatrixXd& X_end,
                                     const Eigen::VectorXd& v_last,
                                     const Eigen::MatrixXd& dv_last) {
  const Model& m = *setup_.model;
  const int nd = m.nd(), nk = m.nk(), nz = derivatives_ ? variables() : 0;
  const int r0 = linearConstraints();
  // d(q_full)/dz at the end: the q_d rows and the rho rows of X.
  Eigen::MatrixXd dq(m.nq(), nz);
  dq.topRows(nd) = X_end.topRows(nd);
  dq.bottomRows(nk) = X_end.bottomRows(nk);
  int r = 0;
  if (goal_.spec().kind == GoalSpec::Kind::Point) {
    const Eigen::VectorXd q_full = m.configuration(end.q, end.rho);
    forwardKinematics(m, data_, q_full);
    Eigen::MatrixXd J(3, m.nq());
    for (std::size_t i = 0; i < goal_.goalPoints().size(); ++i, ++r) {
      const Point& p = m.points[goal_.goalPoints()[i]];
      const Eigen::Vector3d e =
          pointPosition(data_, p.frame, p.position_m) - goal_.pointTargetsWorld()[i];
      pointJacobian(m, data_, p.frame, p.position_m, J);
      // The distance itself (well scaled; its gradient is undefined only on the target, where
      // the row is met by a tolerance's margin).
      const double d = e.norm();
      g_[r0 + r] = d;
      if (d > 1e-12) jacobian_.row(r).noalias() = (e / d).transpose() * J * dq;
    }
  } else {
    // Joint goals: q_i - target for each goal variable; rest-of: every joint, then every input.
    const Eigen::VectorXd residual = goal_.poseResidual(end.q, end.rho);
    const std::vector<int>& vars = goal_.goalVariables();
    for (int i = 0; i < static_cast<int>(vars.size()); ++i, ++r) {
      g_[r0 + r] = residual[i];
      jacobian_.row(r) = dq.row(vars[i]);
    }
    if (goal_.spec().kind == GoalSpec::Kind::RestOf)
      for (int i = 0; i < nk; ++i, ++r) {
        g_[r0 + r] = residual[static_cast<int>(vars.size()) + i];
        jacobian_.row(r) = dq.row(nd + i);
      }
  }
  if (goal_.spec().at_rest) {
    const Eigen::VectorXd Mv = mass_ref_ * v_last;
    g_[r0 + r] = 0.5 * v_last.dot(Mv);
    jacobian_.row(r).noalias() = (dv_last.transpose() * Mv).transpose();
  }
}

void TrajectoryProblem::trackingCost(int sample, const State& x, const Eigen::MatrixXd& X) {
  const Model& m = *setup_.model;
  const int nd = m.nd(), nk = m.nk();
  constexpr double kTrackRef_m = 0.01;
  const double c = setup_.weights.tracking / (setup_.rate_hz * kTrackRef_m * kTrackRef_m);
  for (std::size_t i = 0; i < setup_.track_points.size(); ++i) {
    const Eigen::Vector3d target =
        setup_.track_targets_m.block<1, 3>(sample, 3 * static_cast<Eigen::Index>(i)).transpose();
    if (!target.allFinite()) continue;
    const Point& p = m.points[setup_.track_points[i]];
    const Eigen::Vector3d e = pointPosition(data_, p.frame, p.position_m) - target;
    cost_.tracking += c * e.squaredNorm();
    if (!derivatives_) continue;
    pointJacobian(m, data_, p.frame, p.position_m, point_jacobian_);
    Eigen::MatrixXd de = point_jacobian_.leftCols(nd) * X.topLeftCorner(nd, active_);
    de.noalias() += point_jacobian_.rightCols(nk) * X.bottomLeftCorner(nk, active_);
    gradient_.head(active_).noalias() += 2.0 * c * (de.transpose() * e);
    hessian_.topLeftCorner(active_, active_)
        .selfadjointView<Eigen::Lower>()
        .rankUpdate(de.transpose(), 2.0 * c);
  }
  // Variables: their state rows (joints, the first nd of x; inputs, its last nk).
  for (std::size_t i = 0; i < setup_.track_variables.size(); ++i) {
    const double target = setup_.track_values(sample, static_cast<Eigen::Index>(i));
    if (std::isnan(target)) continue;
    const int v = setup_.track_variables[i];
    const double w = setup_.track_variable_scale_m[i];
    const double e = w * ((v < nd ? x.q[v] : x.rho[v - nd]) - target);
    cost_.tracking += c * e * e;
    if (!derivatives_) continue;
    const int row = v < nd ? v : static_cast<int>(X.rows()) - nk + (v - nd);
    const Eigen::RowVectorXd de = w * X.row(row).head(active_);
    gradient_.head(active_).noalias() += 2.0 * c * e * de.transpose();
    hessian_.topLeftCorner(active_, active_)
        .selfadjointView<Eigen::Lower>()
        .rankUpdate(de.transpose(), 2.0 * c);
  }
}

void TrajectoryProblem::clearanceCost(const State& x, const Eigen::MatrixXd& X) {
  const Model& m = *setup_.model;
  const int nd = m.nd(), nk = m.nk();
  const Eigen::VectorXd q_full = m.configuration(x.q, x.rho);
  const ClearanceResult c = checker_->clearance(q_full);  // data_ holds q_full's kinematics
  const double dt = 1.0 / setup_.rate_hz;
  // w dt (max(0, margin - d) / margin)^2 for the stage's nearest pair and for anything's.
  auto penalize = [&](double d, double margin, ContactKind kind, int first, int second,
                      const Eigen::Vector3d& p1, const Eigen::Vector3d& p2) {
    if (!(margin > 0) || !(d < margin)) return;
    const double c0 = setup_.weights.clearance * dt / (margin * margin);
    const double below = margin - d;
    cost_.clearance += c0 * below * below;
    if (!derivatives_) return;
    const Eigen::RowVectorXd dd = (*clearance_gradient_)(data_, kind, first, second, p1, p2);
    Eigen::RowVectorXd dd_dz = dd.head(nd) * X.topLeftCorner(nd, active_);
    dd_dz.noalias() += dd.tail(nk) * X.bottomLeftCorner(nk, active_);
    gradient_.head(active_).noalias() -= 2.0 * c0 * below * dd_dz.transpose();
    addOuter(dd_dz, 2.0 * c0);
  };
  if (std::isfinite(c.stage_distance_m))
    penalize(c.stage_distance_m, setup_.margin_m, c.stage_pair.kind, c.stage_first_index, -1,
             c.stage_point_first_m, c.stage_point_second_m);
  const bool self = c.pair.kind == ContactKind::LinkLink || c.pair.kind == ContactKind::StringLink;
  if (self && std::isfinite(c.distance_m))
    penalize(c.distance_m, setup_.self_margin_m, c.pair.kind, c.first_index, c.second_index,
             c.point_first_m, c.point_second_m);
  min_stage_clearance_m_ = std::min(min_stage_clearance_m_, c.stage_distance_m);
  min_clearance_m_ = std::min(min_clearance_m_, c.distance_m);
}

}  // namespace marionette::detail

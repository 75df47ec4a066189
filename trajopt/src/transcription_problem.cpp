// SPDX-License-Identifier: BSD-3-Clause
#include "transcription_problem.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {
namespace {

constexpr double kInf = 1e20;          // Ipopt's "no bound"
constexpr double kGapRef = 1e-3;       // the complementarity's gap unit (m or rad)
constexpr double kRateRef_s = 0.1;     // the tension rate's and the jerk's time unit

double finiteOr(double v, double fallback) { return std::isfinite(v) ? v : fallback; }

}  // namespace

TranscriptionProblem::TranscriptionProblem(const TranscriptionSetup& s)
    : setup_(s),
      mechanics_(s.model, s.integrator),
      goal_(s.model, s.goal),
      data_(*s.model),
      nd_(s.model->nd()),
      nk_(s.model->nk()),
      nq_(s.model->nq()),
      ns_(s.model->nstrings()),
      nc_(mechanics_.constraintRows()),
      N_(s.intervals) {
  const Model& m = *s.model;
  const double dt = s.integrator.dt_s;
  if (N_ < s.rest_knots + 2) throw std::invalid_argument("transcription: too few intervals");
  if (s.goal_knot > N_ || s.goal_knot == 0 || s.goal_knot < -1)
    throw std::invalid_argument("transcription: the goal knot is not one of the motion's");
  goal_knot_ = s.goal_knot < 0 ? N_ : s.goal_knot;
  if (s.collision) {
    checker_ = std::make_unique<CollisionChecker>(s.collision);
    clearance_gradient_ = std::make_unique<ClearanceGradient>(s.model, s.collision);
  }
  // References at the start: the mass matrix, the strings' lengths, an energy and the static
  // load of each string (its rest tension at the start's inputs, at least a tenth of the
  // largest), as multipliers over one step.
  const Eigen::VectorXd q0 = m.configuration(s.start.q, s.start.rho);
  forwardKinematics(m, data_, q0);
  computeLagrangian(m, data_, q0, Eigen::VectorXd::Zero(nd_), LagrangianOrder::MassMatrix);
  mass_ref_ = data_.M;
  computeStrings(m, data_, q0, false);
  string_length_ref_m_ = data_.length.cwiseMax(1e-3);
  double total_mass = 0.0;
  for (const Mass& mass : m.masses) total_mass += mass.mass_kg;
  const double weight_N = total_mass * std::max(m.gravity_mps2, 0.1);
  energy_ref_J_ = std::max(1e-9, weight_N * 0.01);
  lambda_ref_.setConstant(nc_, dt * weight_N * 0.05);  // stops: a torque of the weight at 5 cm
  if (ns_ > 0) {
    const RestPose rest = computeRestPose(s.model, s.start.rho);
    Eigen::VectorXd load = rest.ok ? rest.tension_N : Eigen::VectorXd::Constant(ns_, weight_N);
    load = load.cwiseMax(std::max(0.1 * load.maxCoeff(), 1e-6));
    for (int j = 0; j < ns_; ++j)
      lambda_ref_[j] = DiscreteMechanics::multiplier(load[j], string_length_ref_m_[j], dt);
  }
  findPatterns();
  gap_unit_.setConstant(nc_, kGapRef);
  gap_unit_.head(ns_) = kGapRef * string_length_ref_m_;
  speed_ref_.resize(nk_);
  jerk_ref_.resize(nk_);
  for (int i = 0; i < nk_; ++i) {
    speed_ref_[i] = finiteOr(m.kinematic[i].max_speed, 1.0);
    jerk_ref_[i] = std::isfinite(m.kinematic[i].max_accel) ? m.kinematic[i].max_accel / kRateRef_s
                                                            : 1.0;
  }
  rate_scale_ = (kRateRef_s / dt) * lambda_ref_.head(ns_).cwiseInverse();
  declareRows();
  declareHessian();
  q_.assign(N_ + 1, Eigen::VectorXd::Zero(nq_));
  intervals_.resize(N_);
  knots_.resize(N_ + 1);
  gradient_.setZero(n_z_);
  g_.setZero(n_g_);
}

void TranscriptionProblem::findPatterns() {
  const Model& m = *setup_.model;
  coupled_ = Pattern::Constant(nd_, nd_, false);
  for (int j = 0; j < nd_; ++j)
    for (int a : m.dynamic_ancestors[j]) coupled_(a, j) = coupled_(j, a) = true;
  auto chain = [&](int frame) {
    return frame >= 0 ? m.frame_variable_chain[frame] : std::vector<int>{};
  };
  string_vars_.assign(ns_, {});
  for (int j = 0; j < ns_; ++j) {
    const String& str = m.strings[j];
    std::vector<int>& vars = string_vars_[j];
    vars = chain(str.puppet_frame);
    for (int v : chain(str.rig_frame)) vars.push_back(v);
    if (str.length_variable >= 0) vars.push_back(str.length_variable);
  }
  goal_point_vars_.clear();
  if (goal_.spec().kind == GoalSpec::Kind::Point)
    for (int point : goal_.goalPoints())
      for (int v : chain(m.points[point].frame)) goal_point_vars_.push_back(v);
}

void TranscriptionProblem::declareRows() {
  const Model& m = *setup_.model;
  const double dt = setup_.integrator.dt_s;
  const int R = setup_.rest_knots;
  n_z_ = N_ * (nq_ + nc_ + ns_);
  del_row_ = 0;
  string_row_ = del_row_ + N_ * nd_;
  speed_row_ = string_row_ + N_ * ns_;
  accel_row_ = speed_row_ + N_ * nk_;
  rest_row_ = accel_row_ + N_ * nk_;
  goal_row_ = rest_row_ + R * nq_;
  if (setup_.goal_rows) {
    goal_rows_ = goal_.spec().kind == GoalSpec::Kind::Point
                     ? static_cast<int>(goal_.goalPoints().size())
                     : static_cast<int>(goal_.goalVariables().size()) +
                           (goal_.spec().kind == GoalSpec::Kind::RestOf ? nk_ : 0);
  }
  clearance_row_ = goal_row_ + goal_rows_;
  clearance_rows_per_knot_ = checker_ ? 2 : 0;
  n_g_ = clearance_row_ + N_ * clearance_rows_per_knot_;

  // The Jacobian's structure; linear blocks get their constant values here.
  // A string's force couples the dynamic variables on its chains with each other and with its
  // rig variables; its row, every variable on them.
  Pattern here = coupled_, here_rig = Pattern::Constant(nd_, nk_, false);
  Pattern force = Pattern::Constant(nd_, nc_, false), strings = Pattern::Constant(ns_, nq_, false);
  for (int j = 0; j < ns_; ++j)
    for (int a : string_vars_[j]) {
      strings(j, a) = true;
      if (a < nd_) force(a, j) = true;
      for (int b : string_vars_[j])
        if (a < nd_) (b < nd_ ? here(a, b) : here_rig(a, b - nd_)) = true;
    }
  for (int r = 0; r < nc_ - ns_; ++r) force(m.stops[r].variable, ns_ + r) = true;
  del_blocks_.assign(N_, {});
  for (int k = 0; k < N_; ++k) {
    DelBlocks& b = del_blocks_[k];
    const int row = del_row_ + k * nd_;
    if (k >= 2) b.previous = jacobian_.dense(row, xAt(k - 1), coupled_);
    if (k >= 1) b.here = jacobian_.dense(row, xAt(k), here);
    if (k >= 1 && nk_ > 0 && ns_ > 0) b.here_rig = jacobian_.dense(row, xAt(k) + nd_, here_rig);
    b.next = jacobian_.dense(row, xAt(k + 1), coupled_);
    if (nc_ > 0) b.force = jacobian_.dense(row, lambdaAt(k), force);
  }
  for (int k = 0; k < N_ && ns_ > 0; ++k) {
    string_blocks_.push_back(jacobian_.dense(string_row_ + k * ns_, xAt(k + 1), strings));
    jacobian_.values(jacobian_.diagonal(string_row_ + k * ns_, slackAt(k), ns_)).setOnes();
  }
  for (int k = 0; k < N_ && nk_ > 0; ++k) {
    jacobian_.values(jacobian_.diagonal(speed_row_ + k * nk_, xAt(k + 1) + nd_, nk_)).setOnes();
    if (k >= 1)
      jacobian_.values(jacobian_.diagonal(speed_row_ + k * nk_, xAt(k) + nd_, nk_))
          .setConstant(-1);
    const int row = accel_row_ + k * nk_;
    jacobian_.values(jacobian_.diagonal(row, xAt(k + 1) + nd_, nk_)).setOnes();
    if (k >= 1) jacobian_.values(jacobian_.diagonal(row, xAt(k) + nd_, nk_)).setConstant(-2);
    if (k >= 2) jacobian_.values(jacobian_.diagonal(row, xAt(k - 1) + nd_, nk_)).setOnes();
  }
  for (int i = 1; i <= R; ++i) {
    const int row = rest_row_ + (i - 1) * nq_;
    jacobian_.values(jacobian_.diagonal(row, xAt(N_ - i), nq_)).setOnes();
    jacobian_.values(jacobian_.diagonal(row, xAt(N_), nq_)).setConstant(-1);
  }
  if (goal_rows_ > 0)
    goal_blocks_.push_back(jacobian_.dense(goal_row_, xAt(goal_knot_), goal_rows_, nq_));
  for (int k = 1; k <= N_ && clearance_rows_per_knot_ > 0; ++k)
    clearance_blocks_.push_back(jacobian_.dense(
        clearance_row_ + (k - 1) * clearance_rows_per_knot_, xAt(k), clearance_rows_per_knot_,
        nq_));

  // Bounds.
  lower_.setConstant(n_z_, -kInf);
  upper_.setConstant(n_z_, kInf);
  for (int k = 1; k <= N_; ++k) {
    for (const auto& stops : {std::cref(m.stops), std::cref(setup_.stops_held_off)})
      for (const Model::StopRow& stop : stops.get())
        (stop.sign > 0 ? upper_ : lower_)[xAt(k) + stop.variable] = stop.bound;
    for (int i = 0; i < nk_; ++i) {
      lower_[xAt(k) + nd_ + i] = finiteOr(m.kinematic[i].lower, -kInf);
      upper_[xAt(k) + nd_ + i] = finiteOr(m.kinematic[i].upper, kInf);
    }
  }
  lower_.tail(N_ * (nc_ + ns_)).setZero();  // multipliers and slackness
  for (int j = 0; j < setup_.max_tension_N.size() && j < ns_; ++j)
    for (int k = 0; k < N_; ++k)
      upper_[lambdaAt(k) + j] =
          DiscreteMechanics::multiplier(setup_.max_tension_N[j], string_length_ref_m_[j], dt);
  g_lower_.setZero(n_g_);
  g_upper_.setZero(n_g_);
  const double share = setup_.limit_share;
  for (int k = 0; k < N_; ++k)
    for (int i = 0; i < nk_; ++i) {
      const double v = share * m.kinematic[i].max_speed * dt;
      const double a = setup_.accel_share * m.kinematic[i].max_accel * dt * dt;
      g_lower_[speed_row_ + k * nk_ + i] = -finiteOr(v, kInf);
      g_upper_[speed_row_ + k * nk_ + i] = finiteOr(v, kInf);
      g_lower_[accel_row_ + k * nk_ + i] = -finiteOr(a, kInf);
      g_upper_[accel_row_ + k * nk_ + i] = finiteOr(a, kInf);
    }
  const double tol = setup_.goal_fraction * goal_.tolerance();
  for (int r = 0; r < goal_rows_; ++r) {
    const bool point = goal_.spec().kind == GoalSpec::Kind::Point;
    g_lower_[goal_row_ + r] = point ? -kInf : -tol;
    g_upper_[goal_row_ + r] = point ? 0.5 * tol * tol : tol;
  }
  for (int k = 0; k < N_ * clearance_rows_per_knot_; k += 2) {
    g_lower_[clearance_row_ + k] = setup_.margin_m;
    g_lower_[clearance_row_ + k + 1] = setup_.self_margin_m;
    g_upper_[clearance_row_ + k] = g_upper_[clearance_row_ + k + 1] = kInf;
  }
}

void TranscriptionProblem::bounds(Eigen::VectorXd& z_lower, Eigen::VectorXd& z_upper,
                                  Eigen::VectorXd& g_lower, Eigen::VectorXd& g_upper) const {
  z_lower = lower_;
  z_upper = upper_;
  g_lower = g_lower_;
  g_upper = g_upper_;
  if (taut_.empty()) return;
  // The knots the rest rows make equal to x_N: a taut row there would repeat x_N's (the same
  // equation twice, a rank-deficient Jacobian), so its slackness keeps only its bound >= 0.
  const int rest_from = N_ - setup_.rest_knots;
  for (int k = 0; k < N_; ++k)
    for (int c = 0; c < nc_; ++c) {
      if (taut_[k * nc_ + c] && k + 1 >= rest_from && k + 1 < N_) continue;
      if (!taut_[k * nc_ + c]) {
        z_upper[lambdaAt(k) + c] = 0.0;
      } else if (c < ns_) {
        z_upper[slackAt(k) + c] = 0.0;
      } else {
        const Model::StopRow& stop = setup_.model->stops[c - ns_];
        z_lower[xAt(k + 1) + stop.variable] = z_upper[xAt(k + 1) + stop.variable] = stop.bound;
      }
    }
}

void TranscriptionProblem::setModes(std::vector<char> taut) {
  if (!taut.empty() && taut.size() != static_cast<std::size_t>(N_ * nc_))
    throw std::invalid_argument("TranscriptionProblem::setModes: N n_c modes");
  taut_ = std::move(taut);
}

std::vector<char> TranscriptionProblem::modesOf(const Eigen::VectorXd& z) const {
  std::vector<char> taut(N_ * nc_);
  for (int k = 0; k < N_; ++k)
    for (int c = 0; c < nc_; ++c) taut[k * nc_ + c] = z[lambdaAt(k) + c] > 0;
  return taut;
}

void TranscriptionProblem::scaling(Eigen::VectorXd& z_scale, Eigen::VectorXd& g_scale) const {
  const Model& m = *setup_.model;
  const double dt = setup_.integrator.dt_s;
  z_scale.setOnes(n_z_);
  for (int k = 0; k < N_; ++k)
    z_scale.segment(lambdaAt(k), nc_) = lambda_ref_.cwiseInverse();
  for (int k = 0; k < N_; ++k)
    z_scale.segment(slackAt(k), ns_) = string_length_ref_m_.cwiseInverse();
  g_scale.setOnes(n_g_);
  // A DEL row's error as the configuration error that makes it (M dq / dt).
  for (int k = 0; k < N_; ++k)
    for (int i = 0; i < nd_; ++i)
      g_scale[del_row_ + k * nd_ + i] = dt / std::max(mass_ref_(i, i), 1e-12);
  for (int k = 0; k < N_; ++k)
    g_scale.segment(string_row_ + k * ns_, ns_) = string_length_ref_m_.cwiseInverse();
  for (int k = 0; k < N_; ++k)
    for (int i = 0; i < nk_; ++i) {
      g_scale[speed_row_ + k * nk_ + i] = 1.0 / finiteOr(m.kinematic[i].max_speed * dt, 1.0);
      g_scale[accel_row_ + k * nk_ + i] = 1.0 / finiteOr(m.kinematic[i].max_accel * dt * dt, 1.0);
    }
  const bool point = goal_.spec().kind == GoalSpec::Kind::Point;
  g_scale.segment(goal_row_, goal_rows_)
      .setConstant(point ? 1.0 / std::pow(goal_.tolerance(), 2) : 1.0 / goal_.tolerance());
  if (clearance_rows_per_knot_ > 0)
    g_scale.segment(clearance_row_, N_ * clearance_rows_per_knot_)
        .setConstant(1.0 / std::max(setup_.margin_m, 1e-3));
}

void TranscriptionProblem::knotConfiguration(const Eigen::VectorXd& z, int k,
                                             Eigen::VectorXd& q) const {
  if (k == 0)
    q << setup_.start.q, setup_.start.rho;
  else
    q = z.segment(xAt(k), nq_);
}

Eigen::MatrixXd TranscriptionProblem::configurations(const Eigen::VectorXd& z) const {
  Eigen::MatrixXd out(N_ + 1, nq_);
  Eigen::VectorXd q(nq_);
  for (int k = 0; k <= N_; ++k) {
    knotConfiguration(z, k, q);
    out.row(k) = q.transpose();
  }
  return out;
}

Eigen::MatrixXd TranscriptionProblem::inputs(const Eigen::VectorXd& z) const {
  return configurations(z).rightCols(nk_);
}

Eigen::VectorXd TranscriptionProblem::initialGuess(const Eigen::MatrixXd& inputs) {
  const double dt = setup_.integrator.dt_s;
  VariationalIntegrator vi(setup_.model, setup_.integrator);
  State x = setup_.start, next = vi.makeState();
  StepReport report = vi.makeReport();
  Eigen::VectorXd z = Eigen::VectorXd::Zero(n_z_);
  KnotConstraints here;  // at knot k: its spans for step k's multipliers
  Eigen::VectorXd q(nq_);
  knotConfiguration(z, 0, q);
  mechanics_.knot(q, nullptr, here);
  for (int k = 0; k < N_; ++k) {
    const Eigen::VectorXd u = inputs.row(std::min<Eigen::Index>(k + 1, inputs.rows() - 1));
    if (vi.step(x, u, next, &report) == StepStatus::Ok) {
      for (int j = 0; j < ns_; ++j)
        z[lambdaAt(k) + j] = DiscreteMechanics::multiplier(report.tension_N[j], here.span_m[j], dt);
      x = next;
    } else {
      x.rho = u;  // held where it was
    }
    z.segment(xAt(k + 1), nq_) << x.q, x.rho;
    knotConfiguration(z, k + 1, q);
    mechanics_.knot(q, nullptr, here);
    z.segment(slackAt(k), ns_) = (-here.g.head(ns_)).cwiseMax(0.0);
  }
  setStopMultipliers(z);
  return z;
}

Eigen::VectorXd TranscriptionProblem::quasiStaticGuess(const Eigen::MatrixXd& inputs,
                                                       const Eigen::MatrixXd& rest_q,
                                                       const Eigen::MatrixXd& tension_N) {
  const double dt = setup_.integrator.dt_s;
  Eigen::VectorXd z = Eigen::VectorXd::Zero(n_z_);
  KnotConstraints here;
  Eigen::VectorXd q(nq_);
  knotConfiguration(z, 0, q);
  mechanics_.knot(q, nullptr, here);
  for (int k = 0; k < N_; ++k) {
    const Eigen::Index row = std::min<Eigen::Index>(k + 1, inputs.rows() - 1);
    for (int j = 0; j < ns_; ++j)
      z[lambdaAt(k) + j] =
          DiscreteMechanics::multiplier(tension_N(row, j), here.span_m[j], dt);
    z.segment(xAt(k + 1), nq_) << rest_q.row(row).transpose(), inputs.row(row).transpose();
    knotConfiguration(z, k + 1, q);
    mechanics_.knot(q, nullptr, here);
    z.segment(slackAt(k), ns_) = (-here.g.head(ns_)).cwiseMax(0.0);
  }
  setStopMultipliers(z);
  return z;
}

void TranscriptionProblem::setStopMultipliers(Eigen::VectorXd& z) {
  // The stops' multipliers: what their variables' DEL rows still need (>= 0) at the stops the
  // next knot rests on.
  const double dt = setup_.integrator.dt_s;
  KnotConstraints here;
  Eigen::VectorXd q(nq_);
  IntervalTerms before, after;
  KnotConstraints next_knot;
  Eigen::VectorXd q_prev(nq_), q_next(nq_);
  for (int k = 0; k < N_ && nc_ > ns_; ++k) {
    knotConfiguration(z, k, q);
    knotConfiguration(z, k + 1, q_next);
    mechanics_.interval(q, q_next, dt, after, false);
    mechanics_.knot(q, nullptr, here);
    mechanics_.knot(q_next, nullptr, next_knot);
    Eigen::VectorXd residual = setup_.start.p + after.D1;
    if (k > 0) {
      knotConfiguration(z, k - 1, q_prev);
      mechanics_.interval(q_prev, q, dt, before, false);
      residual = before.D2 + after.D1;
    }
    residual -= here.G.topRows(ns_).leftCols(nd_).transpose() * z.segment(lambdaAt(k), ns_);
    for (int r = 0; r < nc_ - ns_; ++r) {
      const Model::StopRow& stop = setup_.model->stops[r];
      if (next_knot.g[ns_ + r] < -1e-9) continue;
      z[lambdaAt(k) + ns_ + r] = std::max(0.0, residual[stop.variable] * stop.sign);
    }
  }
}

}  // namespace marionette::detail

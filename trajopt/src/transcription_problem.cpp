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
constexpr double kSlide_m = 1e-4;      // a touching contact slipping more over a step slides

double finiteOr(double v, double fallback) { return std::isfinite(v) ? v : fallback; }

}  // namespace

TranscriptionProblem::TranscriptionProblem(const TranscriptionSetup& s)
    : setup_(s),
      mechanics_(s.model, s.integrator, s.contact_rows),
      goal_(s.model, s.goal),
      data_(*s.model),
      nd_(s.model->nd()),
      nk_(s.model->nk()),
      nq_(s.model->nq()),
      ns_(s.model->nstrings()),
      nt_(mechanics_.contactRows()),
      nu_(ns_ + nt_),
      nc_(mechanics_.constraintRows()),
      N_(s.intervals) {
  const Model& m = *s.model;
  const double dt = s.integrator.dt_s;
  if (N_ < s.rest_knots + 2) throw std::invalid_argument("transcription: too few intervals");
  if (s.goal_knot > N_ || s.goal_knot == 0 || s.goal_knot < -1)
    throw std::invalid_argument("transcription: the goal knot is not one of the motion's");
  goal_knot_ = s.goal_knot < 0 ? N_ : s.goal_knot;
  const auto P = static_cast<Eigen::Index>(s.track_points.size()),
             V = static_cast<Eigen::Index>(s.track_variables.size());
  if ((P > 0 && (s.track_targets_m.rows() != N_ + 1 || s.track_targets_m.cols() != 3 * P ||
                 (!s.track_point_weight.empty() &&
                  static_cast<Eigen::Index>(s.track_point_weight.size()) != P) ||
                 (s.track_point_knot_weight.size() > 0 &&
                  (s.track_point_knot_weight.rows() != N_ + 1 ||
                   s.track_point_knot_weight.cols() != P ||
                   !(s.track_point_knot_weight.array() >= 0).all())))) ||
      (V > 0 && (s.track_values.rows() != N_ + 1 || s.track_values.cols() != V ||
                 static_cast<Eigen::Index>(s.track_variable_scale_m.size()) != V ||
                 (!s.track_variable_weight.empty() &&
                  static_cast<Eigen::Index>(s.track_variable_weight.size()) != V))))
    throw std::invalid_argument("transcription: targets do not fit the knots");
  for (int v : s.track_variables)
    if (v < 0 || v >= nq_) throw std::invalid_argument("transcription: no such tracked variable");
  for (int i : s.held_inputs)
    if (i < 0 || i >= nk_) throw std::invalid_argument("transcription: no such held input");
  if (s.rig_lower.size() + s.rig_upper.size() > 0 &&
      (s.rig_lower.rows() != N_ + 1 || s.rig_lower.cols() != nk_ || s.rig_upper.rows() != N_ + 1 ||
       s.rig_upper.cols() != nk_ || !(s.rig_lower.array() <= s.rig_upper.array()).all()))
    throw std::invalid_argument("transcription: the rig's bounds do not fit the knots");
  if (s.rig_before.size() > 0 && (s.rig_before.rows() != 2 || s.rig_before.cols() != nk_))
    throw std::invalid_argument("transcription: rig_before needs two rows of the rig's inputs");
  const StateTracking& st = s.state_tracking;
  if (st.active()) {
    bool fits = st.q.rows() == N_ + 1 && st.q.cols() == nd_ && st.p.rows() == N_ + 1 &&
                st.p.cols() == nd_ && st.rho.rows() == N_ + 3 && st.rho.cols() == nk_ &&
                static_cast<int>(st.velocity_metric.size()) == N_ + 1;
    for (const Eigen::MatrixXd& W : st.velocity_metric)
      fits = fits && W.rows() == nd_ && W.cols() == nd_;
    if (!fits)
      throw std::invalid_argument("transcription: the state tracking does not fit the knots");
  }
  track_jacobians_.assign((N_ + 1) * P, Eigen::MatrixXd::Zero(3, nq_));
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
  lambda_ref_.segment(ns_, nt_).setConstant(dt * weight_N);  // contacts: the weight on one
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
  mu_.resize(nt_);
  for (int t = 0; t < nt_; ++t) mu_[t] = mechanics_.friction(t);
  facet_normal_.resize(2, kFrictionFacets);
  for (int i = 0; i < kFrictionFacets; ++i) {
    const double a = 2.0 * M_PI * i / kFrictionFacets;
    facet_normal_.col(i) << std::cos(a), std::sin(a);
  }
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
  // A contact's point on its frame's chain (a segment row's capsule's), and the body it touches on
  // its own (the stage's: none).
  contact_vars_.assign(nt_, {});
  const Contacts* contacts = setup_.integrator.contacts.get();
  for (int t = 0; t < nt_; ++t) {
    const int row = mechanics_.contactRow(t), surface_rows = contacts->surfaceRows();
    std::vector<int>& vars = contact_vars_[t];
    if (row < surface_rows) {
      vars = chain(contacts->points[row % contacts->points.size()].frame);
    } else {
      const SelfContact& pair = contacts->self[row - surface_rows];
      vars = chain(pair.segment >= 0 ? contacts->bodies[pair.segment].frame
                                     : contacts->points[pair.point].frame);
      for (int v : chain(contacts->bodies[pair.body].frame)) vars.push_back(v);
    }
    vars.erase(std::remove_if(vars.begin(), vars.end(), [&](int v) { return v >= nd_; }),
               vars.end());
    std::sort(vars.begin(), vars.end());
    vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  }
  goal_point_vars_.clear();
  if (goal_.spec().kind == GoalSpec::Kind::Point)
    for (int point : goal_.goalPoints())
      for (int v : chain(m.points[point].frame)) goal_point_vars_.push_back(v);
  track_point_vars_.clear();
  for (int point : setup_.track_points)
    for (int v : chain(m.points[point].frame)) track_point_vars_.push_back(v);
}

void TranscriptionProblem::declareRows() {
  const Model& m = *setup_.model;
  const double dt = setup_.integrator.dt_s;
  const int R = setup_.rest_knots;
  n_z_ = N_ * (nq_ + nc_ + nu_ + 2 * nt_ + nk_);
  del_row_ = 0;
  gap_row_ = del_row_ + N_ * nd_;
  slip_row_ = gap_row_ + N_ * nu_;
  cone_row_ = slip_row_ + N_ * 2 * nt_;
  slide_row_ = cone_row_ + N_ * nt_ * kFrictionFacets;
  speed_row_ = slide_row_ + N_ * 2 * nt_;
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
  // rig variables; its row, every variable on them.  A contact's likewise (its normal and its
  // friction force), on the dynamic variables that move its point and its body.
  Pattern here = coupled_, here_rig = Pattern::Constant(nd_, nk_, false);
  Pattern force = Pattern::Constant(nd_, nc_, false), gaps = Pattern::Constant(nu_, nq_, false);
  Pattern friction = Pattern::Constant(nd_, 2 * nt_, false);
  Pattern slips = Pattern::Constant(2 * nt_, nq_, false);
  for (int j = 0; j < ns_; ++j)
    for (int a : string_vars_[j]) {
      gaps(j, a) = true;
      if (a < nd_) force(a, j) = true;
      for (int b : string_vars_[j])
        if (a < nd_) (b < nd_ ? here(a, b) : here_rig(a, b - nd_)) = true;
    }
  for (int t = 0; t < nt_; ++t)
    for (int a : contact_vars_[t]) {
      gaps(ns_ + t, a) = force(a, ns_ + t) = true;
      friction(a, 2 * t) = friction(a, 2 * t + 1) = slips(2 * t, a) = slips(2 * t + 1, a) = true;
      for (int b : contact_vars_[t]) here(a, b) = true;
    }
  for (int r = 0; r < nc_ - nu_; ++r) force(m.stops[r].variable, nu_ + r) = true;
  del_blocks_.assign(N_, {});
  for (int k = 0; k < N_; ++k) {
    DelBlocks& b = del_blocks_[k];
    const int row = del_row_ + k * nd_;
    if (k >= 2) b.previous = jacobian_.dense(row, xAt(k - 1), coupled_);
    if (k >= 1) b.here = jacobian_.dense(row, xAt(k), here);
    if (k >= 1 && nk_ > 0 && ns_ > 0) b.here_rig = jacobian_.dense(row, xAt(k) + nd_, here_rig);
    b.next = jacobian_.dense(row, xAt(k + 1), coupled_);
    if (nc_ > 0) b.force = jacobian_.dense(row, lambdaAt(k), force);
    if (nt_ > 0) b.friction = jacobian_.dense(row, frictionAt(k), friction);
  }
  for (int k = 0; k < N_ && nu_ > 0; ++k) {
    gap_blocks_.push_back(jacobian_.dense(gap_row_ + k * nu_, xAt(k + 1), gaps));
    jacobian_.values(jacobian_.diagonal(gap_row_ + k * nu_, slackAt(k), nu_)).setOnes();
  }
  // A contact's slip: its point at both ends of the step; its cone: mu lambda - d_i^T beta.
  for (int k = 0; k < N_ && nt_ > 0; ++k) {
    slip_next_.push_back(jacobian_.dense(slip_row_ + k * 2 * nt_, xAt(k + 1), slips));
    if (k >= 1) slip_here_.push_back(jacobian_.dense(slip_row_ + k * 2 * nt_, xAt(k), slips));
    for (int t = 0; t < nt_; ++t) {
      const int row = cone_row_ + (k * nt_ + t) * kFrictionFacets;
      jacobian_.values(jacobian_.dense(row, lambdaAt(k) + ns_ + t, kFrictionFacets, 1))
          .setConstant(mu_[t]);
      jacobian_.values(jacobian_.dense(row, frictionAt(k) + 2 * t, kFrictionFacets, 2)) =
          -facet_normal_.transpose();
    }
  }
  // Sliding: the slip turned to a facet's frame.
  slide_blocks_.assign(N_ * nt_, {});
  for (int k = 0; k < N_; ++k)
    for (int t = 0; t < nt_; ++t) {
      SlideBlocks& b = slide_blocks_[k * nt_ + t];
      const int row = slide_row_ + k * 2 * nt_ + 2 * t;
      b.next = jacobian_.dense(row, xAt(k + 1), slips.middleRows(2 * t, 2));
      if (k >= 1) b.here = jacobian_.dense(row, xAt(k), slips.middleRows(2 * t, 2));
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
    jacobian_.values(jacobian_.diagonal(row, accelAt(k), nk_)).setConstant(-1);
  }
  for (int i = 1; i <= R; ++i) {
    const int row = rest_row_ + (i - 1) * nq_;
    jacobian_.values(jacobian_.diagonal(row, xAt(N_ - i), nq_)).setOnes();
    jacobian_.values(jacobian_.diagonal(row, xAt(N_ - i + 1), nq_)).setConstant(-1);
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
      if (setup_.rig_lower.size() == 0) continue;
      lower_[xAt(k) + nd_ + i] = std::max(lower_[xAt(k) + nd_ + i], setup_.rig_lower(k, i));
      upper_[xAt(k) + nd_ + i] = std::min(upper_[xAt(k) + nd_ + i], setup_.rig_upper(k, i));
    }
  }
  for (int k = 1; k <= N_; ++k)
    for (int i : setup_.held_inputs)
      lower_[xAt(k) + nd_ + i] = upper_[xAt(k) + nd_ + i] = setup_.start.rho[i];
  lower_.segment(lambdaAt(0), N_ * (nc_ + nu_)).setZero();  // multipliers and slackness
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
      const bool held = setup_.hold_from_knot >= 0 && k >= setup_.hold_from_knot;
      g_lower_[speed_row_ + k * nk_ + i] = held ? 0.0 : -finiteOr(v, kInf);
      g_upper_[speed_row_ + k * nk_ + i] = held ? 0.0 : finiteOr(v, kInf);
      lower_[accelAt(k) + i] = -finiteOr(a, kInf);
      upper_[accelAt(k) + i] = finiteOr(a, kInf);
    }
  const double tol = setup_.goal_fraction * goal_.tolerance();
  for (int r = 0; r < goal_rows_; ++r) {
    const bool point = goal_.spec().kind == GoalSpec::Kind::Point;
    g_lower_[goal_row_ + r] = point ? -kInf : -tol;
    g_upper_[goal_row_ + r] = point ? 0.5 * tol * tol : tol;
  }
  // Slips and sliding free (bounds: the modes'), cones >= 0.
  for (int row : {slip_row_, slide_row_}) {
    g_lower_.segment(row, N_ * 2 * nt_).setConstant(-kInf);
    g_upper_.segment(row, N_ * 2 * nt_).setConstant(kInf);
  }
  g_upper_.segment(cone_row_, N_ * nt_ * kFrictionFacets).setConstant(kInf);
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
  if (taut_.empty()) {  // (frictionless: a friction force with no slip rows would be a motor)
    z_lower.segment(frictionAt(0), N_ * 2 * nt_).setZero();
    z_upper.segment(frictionAt(0), N_ * 2 * nt_).setZero();
    return;
  }
  // The knots the rest rows make equal to x_N: a taut row there would repeat x_N's (the same
  // equation twice, a rank-deficient Jacobian), so its slackness keeps only its bound >= 0; a
  // contact's slip over a step between two of them is zero with them.
  const int rest_from = N_ - setup_.rest_knots;
  for (int k = 0; k < N_; ++k)
    for (int c = 0; c < nc_; ++c) {
      if (taut_[k * nc_ + c] && k + 1 >= rest_from && k + 1 < N_) continue;
      if (!taut_[k * nc_ + c]) {
        z_upper[lambdaAt(k) + c] = 0.0;
      } else if (c < nu_) {
        z_upper[slackAt(k) + c] = 0.0;
      } else {
        const Model::StopRow& stop = setup_.model->stops[c - nu_];
        z_lower[xAt(k + 1) + stop.variable] = z_upper[xAt(k + 1) + stop.variable] = stop.bound;
      }
    }
  for (int k = 0; k < rest_from && k < N_; ++k)
    for (int t = 0; t < nt_; ++t) {
      const char mode = taut_[k * nc_ + ns_ + t];
      if (!mode || mu_[t] == 0.0) continue;
      if (mode < kSliding) {
        g_lower.segment(slip_row_ + k * 2 * nt_ + 2 * t, 2).setZero();
        g_upper.segment(slip_row_ + k * 2 * nt_ + 2 * t, 2).setZero();
        continue;
      }
      // On facet f: the slip along d_f (its e_f part zero, its d_f part >= 0), the friction on it.
      const int row = slide_row_ + k * 2 * nt_ + 2 * t;
      g_lower.segment(row, 2).setZero();
      g_upper[row] = 0.0;
      g_upper[cone_row_ + (k * nt_ + t) * kFrictionFacets + mode - kSliding] = 0.0;
    }
}

void TranscriptionProblem::setModes(std::vector<char> taut) {
  if (!taut.empty() && taut.size() != static_cast<std::size_t>(N_ * nc_))
    throw std::invalid_argument("TranscriptionProblem::setModes: N n_c modes");
  taut_ = std::move(taut);
}

std::vector<char> TranscriptionProblem::modesOf(const Eigen::VectorXd& z) {
  std::vector<char> taut(N_ * nc_);
  for (int k = 0; k < N_; ++k)
    for (int c = 0; c < nc_; ++c) taut[k * nc_ + c] = z[lambdaAt(k) + c] > 0;
  if (nt_ == 0) return taut;
  evaluate(z, false);
  for (int k = 0; k < N_; ++k)
    for (int t = 0; t < nt_; ++t)
      if (taut[k * nc_ + ns_ + t] && mu_[t] > 0.0) {
        const Eigen::Vector2d slip = g_.segment(slip_row_ + k * 2 * nt_ + 2 * t, 2);
        if (slip.norm() <= kSlide_m) continue;
        Eigen::Index facet = 0;
        (facet_normal_.transpose() * slip).maxCoeff(&facet);
        taut[k * nc_ + ns_ + t] = static_cast<char>(kSliding + facet);
      }
  return taut;
}

Eigen::Matrix2d TranscriptionProblem::slideFrame(int k, int t) const {
  const char mode = taut_.empty() ? 0 : taut_[k * nc_ + ns_ + t];
  const Eigen::Vector2d d = facet_normal_.col(mode >= kSliding ? mode - kSliding : 0);
  Eigen::Matrix2d R;
  R << -d[1], d[0], d[0], d[1];
  return R;
}

void TranscriptionProblem::stages(std::vector<int>& stage) const {
  stage.assign(n_z_, 0);
  for (int k = 1; k <= N_; ++k)
    std::fill(stage.begin() + xAt(k), stage.begin() + xAt(k) + nq_, k);
  for (int k = 0; k < N_; ++k) {
    std::fill(stage.begin() + lambdaAt(k), stage.begin() + lambdaAt(k) + nc_, k);
    std::fill(stage.begin() + slackAt(k), stage.begin() + slackAt(k) + nu_, k + 1);
    std::fill(stage.begin() + frictionAt(k), stage.begin() + frictionAt(k) + 2 * nt_, k);
    std::fill(stage.begin() + accelAt(k), stage.begin() + accelAt(k) + nk_, k);
  }
}

void TranscriptionProblem::scaling(Eigen::VectorXd& z_scale, Eigen::VectorXd& g_scale) const {
  const Model& m = *setup_.model;
  const double dt = setup_.integrator.dt_s;
  z_scale.setOnes(n_z_);
  for (int k = 0; k < N_; ++k)
    z_scale.segment(lambdaAt(k), nc_) = lambda_ref_.cwiseInverse();
  for (int k = 0; k < N_; ++k) {
    z_scale.segment(slackAt(k), ns_) = string_length_ref_m_.cwiseInverse();
    for (int t = 0; t < nt_; ++t)
      z_scale.segment(frictionAt(k) + 2 * t, 2).setConstant(1.0 / lambda_ref_[ns_ + t]);
  }
  g_scale.setOnes(n_g_);
  // A DEL row's error as the configuration error that makes it (M dq / dt).
  for (int k = 0; k < N_; ++k)
    for (int i = 0; i < nd_; ++i)
      g_scale[del_row_ + k * nd_ + i] = dt / std::max(mass_ref_(i, i), 1e-12);
  for (int k = 0; k < N_; ++k) {
    g_scale.segment(gap_row_ + k * nu_, ns_) = string_length_ref_m_.cwiseInverse();
    for (int t = 0; t < nt_; ++t)
      g_scale.segment(cone_row_ + (k * nt_ + t) * kFrictionFacets, kFrictionFacets)
          .setConstant(1.0 / lambda_ref_[ns_ + t]);
  }
  for (int k = 0; k < N_; ++k)
    for (int i = 0; i < nk_; ++i) {
      g_scale[speed_row_ + k * nk_ + i] = 1.0 / finiteOr(m.kinematic[i].max_speed * dt, 1.0);
      g_scale[accel_row_ + k * nk_ + i] = 1.0 / finiteOr(m.kinematic[i].max_accel * dt * dt, 1.0);
      z_scale[accelAt(k) + i] = g_scale[accel_row_ + k * nk_ + i];
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

bool TranscriptionProblem::knotTouches(int k) const {
  if (nt_ == 0) return false;
  if (taut_.empty()) return true;
  for (int step : {k - 1, k})
    for (int t = 0; step < N_ && t < nt_; ++t)
      if (taut_[step * nc_ + ns_ + t]) return true;
  return false;
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

}  // namespace marionette::detail

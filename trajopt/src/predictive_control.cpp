// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/trajopt/predictive_control.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "horizon_window.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette {
namespace {
constexpr double kMaxHorizon_s = 10.0;
constexpr int kMaxIterations = 1000;
constexpr double kLimitShare = 0.97;  // of the rig's limits, as the plans' windows ask
}  // namespace

void checkPredictiveOptions(const PredictiveOptions& o, double plan_s) {
  if (!(o.horizon_s > 0 && o.horizon_s <= kMaxHorizon_s))
    throw FieldError("horizon_s", "must be in (0, " + formatNumber(kMaxHorizon_s) + "] s, got " +
                                      formatNumber(o.horizon_s));
  if (o.horizon_s > plan_s + 1e-9)
    throw FieldError("horizon_s", formatNumber(o.horizon_s) + " s is longer than the plan (" +
                                      formatNumber(plan_s, 4) + " s)");
  if (!(o.point_weight >= 0 && o.point_weight <= control::kMaxLqrWeight))
    throw FieldError("point_weight", "must be in [0, " + formatNumber(control::kMaxLqrWeight) +
                                         "], got " + formatNumber(o.point_weight));
  if (!(o.max_correction > 0))
    throw FieldError("max_correction",
                     "must be > 0 (m or rad), got " + formatNumber(o.max_correction));
  if (o.iterations < 1 || o.iterations > kMaxIterations)
    throw FieldError("iterations", "must be in [1, " + std::to_string(kMaxIterations) + "], got " +
                                       std::to_string(o.iterations));
  try {
    control::checkLqrWeights(o.weights);
  } catch (const FieldError& e) {
    throw FieldError("weights." + e.field(), e.problem());
  }
}

struct PredictiveController::Impl {
  ModelPtr model;
  std::vector<State> reference;
  double rate_hz;
  PredictiveOptions options;
  int H;
  IntegratorOptions io;
  std::vector<Eigen::MatrixXd> velocity_metric;  // per sample: M^-T M^-1 at the reference
  Eigen::MatrixXd points_m;  // per sample: every named point's target (3 per point)
  int S = 0;                 // the plan's samples (the reference may go on past them)
  detail::StringLoads loads;
  mutable std::unique_ptr<VariationalIntegrator> vi;
};

PredictiveController::PredictiveController(ModelPtr model, std::vector<State> reference,
                                           double rate_hz, PredictiveOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (reference.size() < 3) throw FieldError("reference", "needs at least 3 samples");
  if (!(rate_hz > 0) || !std::isfinite(rate_hz)) throw FieldError("rate_hz", "must be > 0");
  checkPredictiveOptions(options, static_cast<double>(reference.size() - 1) / rate_hz);
  Impl& d = *impl_;
  const Model& m = *model;
  for (int j : options.held)
    if (j < 0 || j >= m.nk()) throw FieldError("held", "no rig input " + std::to_string(j));
  d.model = std::move(model);
  d.reference = std::move(reference);
  d.S = static_cast<int>(d.reference.size());
  d.rate_hz = rate_hz;
  d.options = options;
  d.H = std::max(2, static_cast<int>(std::lround(options.horizon_s * rate_hz)));
  d.io.dt_s = 1.0 / rate_hz;
  const auto P = static_cast<Eigen::Index>(m.points.size());
  if (options.point_targets_m.size() > 0 &&
      (options.point_targets_m.rows() != d.S || options.point_targets_m.cols() != 3 * P ||
       !options.point_targets_m.allFinite()))
    throw FieldError("point_targets_m",
                     "needs " + std::to_string(d.S) + " finite rows of 3 per named point");
  // Past the plan's end, the reference goes on as the plan does: its last inputs held.
  if (options.hold_after_end) {
    VariationalIntegrator vi(d.model, d.io);
    for (int k = 0; k < d.H; ++k) {
      State next = vi.makeState();
      if (vi.step(d.reference.back(), d.reference.back().rho, next) != StepStatus::Ok) break;
      d.reference.push_back(next);
    }
  }
  DynamicsData data(m);
  Eigen::MatrixXd own_points(static_cast<Eigen::Index>(d.reference.size()), 3 * P);
  for (std::size_t k = 0; k < d.reference.size(); ++k) {
    const State& x = d.reference[k];
    const Eigen::VectorXd q = m.configuration(x.q, x.rho);
    forwardKinematics(m, data, q);
    for (Eigen::Index p = 0; p < P; ++p) {
      const Point& point = m.points[static_cast<std::size_t>(p)];
      own_points.block<1, 3>(static_cast<Eigen::Index>(k), 3 * p) =
          pointPosition(data, point.frame, point.position_m).transpose();
    }
    computeLagrangian(m, data, q, Eigen::VectorXd::Zero(m.nd()), LagrangianOrder::MassMatrix);
    const Eigen::MatrixXd Minv = data.M.llt().solve(Eigen::MatrixXd::Identity(m.nd(), m.nd()));
    d.velocity_metric.push_back(Minv.transpose() * Minv);
  }
  if (options.point_weight > 0) {
    d.points_m = own_points;
    // Given targets over the plan; past its end, the plan's last plus how the reference moves on.
    if (options.point_targets_m.size() > 0) {
      d.points_m.topRows(d.S) = options.point_targets_m;
      for (Eigen::Index k = d.S; k < own_points.rows(); ++k)
        d.points_m.row(k) =
            options.point_targets_m.row(d.S - 1) + own_points.row(k) - own_points.row(d.S - 1);
    }
  }
  d.loads = detail::stringLoads(d.model, d.reference.front().rho);
  d.vi = std::make_unique<VariationalIntegrator>(d.model, d.io);
}

PredictiveController::~PredictiveController() = default;
PredictiveController::PredictiveController(PredictiveController&&) noexcept = default;

int PredictiveController::samples() const {
  return impl_->S;
}
int PredictiveController::horizonSteps() const {
  return impl_->H;
}
const PredictiveOptions& PredictiveController::options() const {
  return impl_->options;
}

PredictiveSolve PredictiveController::solve(int i, const State& x, const Eigen::MatrixXd& before,
                                            const Eigen::MatrixXd& warm) const {
  const Impl& d = *impl_;
  const Model& m = *d.model;
  const int nk = m.nk(), nd = m.nd(), S = samples();
  if (i < 0 || i >= S - 1) throw std::invalid_argument("predictive control: no such sample");
  if (before.rows() != 2 || before.cols() != nk || (warm.size() > 0 && warm.cols() != nk))
    throw std::invalid_argument("predictive control: the rig's rows do not fit the model");
  // The window: H steps; where the plan ends sooner (knot `end`), fewer, or with hold_after_end
  // as many, the rig holding its last inputs after the end and the reference going on under them.
  const int end = S - 1 - i;
  const int H = d.options.hold_after_end ? d.H : std::min(d.H, end);
  const double dt = d.io.dt_s;
  VariationalIntegrator& vi = *d.vi;
  const int R = static_cast<int>(d.reference.size());  // (past S with hold_after_end)
  auto ref = [&](int k) -> const State& { return d.reference[std::clamp(k, 0, R - 1)]; };
  auto holdAfterEnd = [&](Eigen::MatrixXd& rows) {
    for (int k = end + 1; k <= H; ++k) rows.row(k) = rows.row(end);
  };

  // The warm start: the last solution where it reaches, then the reference's inputs, moved into
  // the rig's limits from where it is.
  Eigen::MatrixXd guess(H + 1, nk);
  for (int k = 0; k <= H; ++k) {
    if (k < warm.rows())
      guess.row(k) = warm.row(k);
    else
      guess.row(k) = ref(i + k).rho.transpose();
  }
  guess.row(0) = x.rho.transpose();
  for (int j : d.options.held)
    for (int k = 1; k <= H; ++k) guess(k, j) = ref(i + k).rho[j];
  // What the rig may do: within its limits, still after the plan's end.
  auto admissible = [&](Eigen::MatrixXd& inputs) {
    detail::clampToRigLimits(m, before, i, S, dt, kLimitShare, inputs);
    holdAfterEnd(inputs);
  };
  admissible(guess);
  PredictiveSolve out;
  out.inputs = guess;
  // (A window of fewer than 2 steps, the plan's last: the warm start's inputs.)
  if (H < 2) {
    out.failed = !detail::resimulates(vi, x, guess);
    return out;
  }

  detail::TranscriptionSetup setup;
  setup.model = d.model;
  setup.integrator = d.io;
  setup.start = x;
  setup.intervals = H;
  // Every input within max_correction of the reference (and the warm start: a window always has
  // a feasible start), a held one on it.
  if (std::isfinite(d.options.max_correction) || !d.options.held.empty()) {
    setup.rig_lower.resize(H + 1, nk);
    setup.rig_upper.resize(H + 1, nk);
    for (int k = 0; k <= H; ++k) {
      const Eigen::RowVectorXd r = ref(i + k).rho.transpose();
      setup.rig_lower.row(k) = (r.array() - d.options.max_correction).min(guess.row(k).array());
      setup.rig_upper.row(k) = (r.array() + d.options.max_correction).max(guess.row(k).array());
      for (int j : d.options.held) setup.rig_lower(k, j) = setup.rig_upper(k, j) = r[j];
    }
  }
  // The LQR's terms (StateTracking) and the points': none of the plans' effort, jerk, swing or
  // tension rate.
  setup.weights.effort = setup.weights.jerk = setup.weights.swing = 0;
  setup.weights.tension_rate = setup.weights.tracking = setup.weights.settle = 0;
  if (d.points_m.size() > 0) {
    setup.weights.tracking = d.options.point_weight;
    for (int p = 0; p < static_cast<int>(m.points.size()); ++p) setup.track_points.push_back(p);
    setup.track_targets_m.resize(H + 1, d.points_m.cols());
    for (int k = 0; k <= H; ++k)
      setup.track_targets_m.row(k) = d.points_m.row(std::min(i + k, R - 1));
  }
  setup.rig_before = before;
  if (end < H) setup.hold_from_knot = end;  // (the rig's speed rows 0 from there)
  detail::StateTracking& t = setup.state_tracking;
  t.q.resize(H + 1, nd);
  t.p.resize(H + 1, nd);
  t.rho.resize(H + 3, nk);
  for (int k = -2; k <= H; ++k) {
    const State& r = ref(i + k);
    t.rho.row(k + 2) = r.rho.transpose();
    if (k < 0) continue;
    t.q.row(k) = r.q.transpose();
    t.p.row(k) = r.p.transpose();
    t.velocity_metric.push_back(
        d.velocity_metric[static_cast<std::size_t>(std::min(i + k, R - 1))]);
  }
  // (The LQR's terminal factor where the window ends at the plan's end, its last state's cost; a
  // window ending before it weighs its last state as a step's times the same factor.)
  t.weights = d.options.weights;
  const detail::WindowSolve solve =
      detail::solveWindow(setup, guess, d.loads, vi, d.options.iterations,
                          detail::NlpSolver::kInteriorPoint, 2, admissible);
  out.iterations = solve.iterations;
  out.inputs = solve.inputs;
  out.cost = solve.cost;
  out.warm_cost = solve.warm_cost;
  out.failed = !solve.solved;
  out.kept_warm = solve.solved && solve.kept_warm;
  out.step_share = solve.step_share;
  if (!std::isfinite(out.cost)) out.failed = true;
  return out;
}

}  // namespace marionette

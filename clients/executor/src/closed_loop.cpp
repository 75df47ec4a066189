// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/executor/closed_loop.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "predictive_feedback.hpp"

namespace marionette::executor {

namespace {
constexpr double kNegligible = 1e-9;  // m or rad
constexpr double kMaxBound = 10.0;    // m or rad: max_correction and max_deviation at most
constexpr std::size_t kRecentSeqs = 256;  // MEA SEQs remembered to tell a repeat
// A plan's predicted states within this of the loop's re-simulation of its inputs (m or rad) are
// its motion, and the loop's re-simulation is the reference.  (The CMU walk's performance plan
// differs by 1.4e-4 from 6 s on; the plans' verification re-simulates with the stage's contacts,
// the loop without.)
constexpr double kSameMotion = 1e-3;

double millisecondsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
}  // namespace

namespace {
// A calibrated model is the plan's puppet: the same joints, inputs and points, by name.
void checkSamePuppet(const Model& plan, const Model& calibrated) {
  if (itemNames(plan.dynamic) != itemNames(calibrated.dynamic) ||
      itemNames(plan.kinematic) != itemNames(calibrated.kinematic) ||
      itemNames(plan.points) != itemNames(calibrated.points))
    throw FieldError("calibrated", "'" + calibrated.name +
                                       "' does not have the joints, inputs and points of '" +
                                       plan.name + "'");
}
// Every named point where the plan predicts it, per row of `rows` (its inputs): 3 per point.
Eigen::MatrixXd planPoints(const Playback& perf, const Eigen::MatrixXd& rows) {
  const Model& pm = *perf.model;
  DynamicsData data(pm);
  Eigen::MatrixXd out(rows.rows(), 3 * static_cast<Eigen::Index>(pm.points.size()));
  for (Eigen::Index k = 0; k < rows.rows(); ++k) {
    forwardKinematics(
        pm, data, pm.configuration(perf.predicted_q.row(k).transpose(), rows.row(k).transpose()));
    for (std::size_t p = 0; p < pm.points.size(); ++p)
      out.block<1, 3>(k, 3 * static_cast<Eigen::Index>(p)) =
          pointPosition(data, pm.points[p].frame, pm.points[p].position_m).transpose();
  }
  return out;
}
}  // namespace

const char* toString(Feedback f) {
  return f == Feedback::Predictive ? "mpc" : "lqr";
}

void checkClosedLoopOptions(const ClosedLoopOptions& o) {
  for (const auto& [field, value] : {std::make_pair("max_correction", o.max_correction),
                                      std::make_pair("max_deviation", o.max_deviation)})
    if (!(value > 0 && value <= kMaxBound))
      throw FieldError(field, "must be in (0, " + formatNumber(kMaxBound) + "] (m or rad), got " +
                                  formatNumber(value));
  if (!(o.max_point_deviation_m >= 0 && o.max_point_deviation_m <= kMaxBound))
    throw FieldError("max_point_deviation_m", "must be in [0, " + formatNumber(kMaxBound) +
                                                  "] m, got " +
                                                  formatNumber(o.max_point_deviation_m));
  try {
    control::checkLqrWeights(o.weights);
  } catch (const FieldError& e) {
    throw FieldError("weights." + e.field(), e.problem());
  }
  try {
    control::checkEstimatorOptions(o.estimator);
  } catch (const FieldError& e) {
    throw FieldError("estimator." + e.field(), e.problem());
  }
  if (o.feedback == Feedback::Predictive) {
    if (!(o.solve_lead_s > 0 && o.solve_lead_s <= 1))
      throw FieldError("solve_lead_s", "must be in (0, 1] s, got " + formatNumber(o.solve_lead_s));
    if (!(o.solve_period_s > 0 && o.solve_period_s <= 1))
      throw FieldError("solve_period_s",
                       "must be in (0, 1] s, got " + formatNumber(o.solve_period_s));
    try {  // (the horizon against the plan: when the plan is known)
      checkPredictiveOptions(o.predictive, INFINITY);
    } catch (const FieldError& e) {
      throw FieldError("predictive." + e.field(), e.problem());
    }
  }
}

ClosedLoopOptions predictiveDefaults() {
  ClosedLoopOptions o;
  o.feedback = Feedback::Predictive;
  o.weights.position = 0.0;
  o.weights.velocity = 0.0;
  o.weights.rig = 0.1;
  o.weights.correction = 0.1;
  o.weights.correction_rate = 0.01;
  o.weights.correction_accel = 0.001;
  o.predictive.point_weight = 10.0;
  o.predictive.iterations = 10;
  o.predictive.hold_after_end = true;
  o.solve_lead_s = 0.24;
  o.solve_period_s = 0.14;
  o.max_correction = 0.1;
  o.max_deviation = 3.2;
  o.max_point_deviation_m = 0.2;
  return o;
}

ClosedLoop::~ClosedLoop() = default;

const PredictiveStats* ClosedLoop::predictiveStats() const {
  return predictive_ ? &predictive_->stats() : nullptr;
}

int ClosedLoop::solveLeadTicks() const {
  return predictive_ ? predictive_->leadTicks() : 0;
}

int ClosedLoop::solvePeriodTicks() const {
  return predictive_ ? predictive_->periodTicks() : 0;
}

ClosedLoop::ClosedLoop(const Playback& perf, const Stream& stream, const Sensing& sensing,
                       const std::vector<std::string>& held, ClosedLoopOptions options)
    : model_(options.calibrated ? options.calibrated : perf.model),
      options_(std::move(options)),
      sensing_(sensing),
      rate_hz_(stream.rate_hz) {
  const Model& m = *model_;
  if (options_.calibrated) checkSamePuppet(*perf.model, m);
  if (perf.predicted_q.rows() == 0)
    throw std::invalid_argument(perf.source + ": feedback needs a plan file (its predicted states)");
  if (stream.rate_hz != perf.rate_hz || stream.play_rows != perf.predicted_q.rows())
    throw std::invalid_argument("feedback plays a plan at its own rate and speed (" +
                                formatted("%g", perf.rate_hz) + " Hz, rate scale 1)");
  checkClosedLoopOptions(options_);
  const double dt = 1.0 / rate_hz_;
  // The plan re-simulated from rest at its first sample, linearized step by step: the reference
  // (q, p, rho) and the gains' A_k, B_k.
  const Eigen::MatrixXd rows = stream.rows.middleRows(stream.play_begin, stream.play_rows);
  // The linearization holds A_k and B_k for every sample, as the gains' does: the same bound.
  const double nx = 2.0 * m.nd() + m.nk();
  if (static_cast<double>(rows.rows()) * nx * (nx + m.nk()) > control::kMaxGainsValues)
    throw std::invalid_argument(perf.source + ": " + std::to_string(rows.rows()) +
                                " samples of a " + formatNumber(nx) +
                                "-dimensional state: too long a plan for feedback at its rate");
  IntegratorOptions io;
  io.dt_s = dt;
  VariationalIntegrator vi(model_, io);
  // At rest at the plan's first sample: its predicted state, or on the calibrated puppet the rest
  // pose next to it.
  Eigen::VectorXd q0 = perf.predicted_q.row(0).transpose();
  if (options_.calibrated) {
    // Next to where the calibration left the puppet, when the run starts there (no ramp).
    const bool at_start = options_.start_q.size() == m.nd() &&
                          (stream.rows.row(0) - rows.row(0)).cwiseAbs().maxCoeff() < 1e-9;
    if (at_start) q0 = options_.start_q;
    const RestPose rest = computeRestPose(model_, rows.row(0).transpose(), &q0);
    if (!rest.ok)
      throw std::invalid_argument(perf.source +
                                  ": the calibrated puppet has no rest pose at the "
                                  "plan's start (" +
                                  rest.message + ")");
    q0 = rest.q;
  }
  const State start =
      vi.stateFromVelocity(q0, Eigen::VectorXd::Zero(m.nd()), rows.row(0).transpose());
  // The LQR's gains need every step's linearization; the MPC only the motion (a step that needs
  // substeps has none, and the integrator takes it all the same).
  control::TrajectoryLinearization lin;
  if (options_.feedback == Feedback::Predictive) {
    lin.dt_s = dt;
    lin.x = {start};
    State next = vi.makeState();
    for (Eigen::Index k = 1; k < rows.rows(); ++k) {
      if (vi.step(lin.x.back(), rows.row(k).transpose(), next) != StepStatus::Ok)
        throw SimulationError(static_cast<int>(k), static_cast<double>(k) * dt,
                              "the plan's step cannot be re-simulated");
      lin.x.push_back(next);
    }
  } else {
    lin = control::linearizeTrajectory(model_, rows, start, io);
  }
  // The plan's predicted states are its inputs re-simulated on its own model.
  std::vector<Eigen::VectorXd> resimulated;
  if (options_.calibrated) {
    VariationalIntegrator own(perf.model, io);
    State x = own.stateFromVelocity(perf.predicted_q.row(0).transpose(),
                                    Eigen::VectorXd::Zero(m.nd()), rows.row(0).transpose());
    resimulated.push_back(x.q);
    for (Eigen::Index i = 1; i < rows.rows(); ++i) {
      State next = x;
      if (own.step(x, rows.row(i).transpose(), next) != StepStatus::Ok) break;
      x = next;
      resimulated.push_back(x.q);
    }
  } else {
    for (const State& x : lin.x) resimulated.push_back(x.q);
  }
  double worst = resimulated.size() == static_cast<std::size_t>(rows.rows()) ? 0.0 : INFINITY;
  long first_off = resimulated.size() == static_cast<std::size_t>(rows.rows())
                       ? -1
                       : static_cast<long>(resimulated.size());
  for (std::size_t i = 0; i < resimulated.size(); ++i) {
    const double off =
        (resimulated[i] - perf.predicted_q.row(static_cast<Eigen::Index>(i)).transpose())
            .cwiseAbs()
            .maxCoeff();
    worst = std::max(worst, off);
    if (off > kSameMotion && first_off < 0) first_off = static_cast<long>(i);
  }
  if (worst > kSameMotion)
    throw std::invalid_argument(
        perf.source +
        ": the plan's predicted states are not its inputs re-simulated from rest at its first "
        "sample (off by " +
        formatted("%.3g, from sample %ld, t = %.2f s", worst, first_off, first_off / rate_hz_) +
        "); feedback needs that reference");
  reference_ = lin.x;
  taut_ = lin.taut;
  if (options_.max_point_deviation_m > 0) plan_points_m_ = planPoints(perf, rows);
  held_.assign(m.nk(), 0);
  for (const std::string& h : held)
    for (int j = 0; j < m.nk(); ++j) held_[j] |= m.kinematic[j].name == h;
  if (options_.feedback == Feedback::Predictive) {
    // The MPC plans what the clamps let through: the weights', the correction's bound, the held
    // inputs on the plan.
    options_.predictive.weights = options_.weights;
    options_.predictive.max_correction = options_.max_correction;
    options_.predictive.held.clear();
    for (int j = 0; j < m.nk(); ++j)
      if (held_[j]) options_.predictive.held.push_back(j);
    // The points' targets: the plan's predicted points (on the calibrated puppet, not its
    // re-simulation's).
    if (options_.predictive.point_weight > 0)
      options_.predictive.point_targets_m = planPoints(perf, rows);
    predictive_ = std::make_unique<PredictiveFeedback>(
        model_, lin.x, rate_hz_, options_.predictive,
        static_cast<int>(std::ceil(options_.solve_lead_s * rate_hz_ - 1e-9)),
        static_cast<int>(std::ceil(options_.solve_period_s * rate_hz_ - 1e-9)));
  }
  const control::TrackingGains& planned = perf.gains;
  // The plan's gains were taken on its own model: not the calibrated puppet's.
  if (predictive_) {
    // (No gains: the MPC's cost is the weights'.)
  } else if (!planned.empty() && planned.weights == options_.weights && !options_.calibrated) {
    const bool fits = planned.K.size() + 1 == lin.x.size() &&
                      std::abs(planned.dt_s - dt) < 1e-12 * dt &&
                      std::all_of(planned.K.begin(), planned.K.end(), [&](const auto& K) {
                        return K.rows() == m.nk() && K.cols() == 2 * m.nd() + 2 * m.nk();
                      });
    if (!fits)
      throw std::invalid_argument(perf.source + ": gains: do not fit the plan (" +
                                  std::to_string(planned.K.size()) + " gains for " +
                                  std::to_string(lin.x.size()) + " samples)");
    for (std::size_t k = 0; k < planned.K.size(); ++k)
      if (!planned.K[k].allFinite())
        throw std::invalid_argument(perf.source + ": gains: gain " + std::to_string(k) +
                                    " is not finite");
    gains_ = planned;
    gains_from_plan_ = true;
  } else {
    gains_ = control::computeTrackingGains(model_, lin, options_.weights);
  }

  options_.estimator.dt_s = dt;
  estimator_ = std::make_unique<control::Estimator>(
      model_, std::make_shared<control::MeasurementModel>(model_, sensing_.spec()),
      options_.estimator);
  const Eigen::VectorXd rho0 = stream.rows.row(0).transpose();
  Eigen::VectorXd rest_q;
  if (options_.start_q.size()) {
    if (options_.start_q.size() != m.nd() || !options_.start_q.allFinite())
      throw FieldError("start_q", "needs " + std::to_string(m.nd()) + " finite values");
    rest_q = options_.start_q;
  } else {
    rest_q = resolveStart(model_, rho0, StartSpec{}).q;
  }
  estimator_->reset(rest_q, Eigen::VectorXd::Zero(m.nd()), rho0);
  predictor_ = std::make_unique<VariationalIntegrator>(model_, io);
  dyn_scratch_ = std::make_unique<DynamicsData>(m);
  last_sent_ = rho0;
  before_last_sent_ = rho0;
  stats_.cycle_ms.reserve(static_cast<std::size_t>(stream.rows.rows()));
}

void ClosedLoop::fuseMeasurements(RigDriver& rig) {
  inbox_.clear();
  rig.pollMeasurements(inbox_, &stats_.corrupt);
  const double max_age_s = sensing_.latency_s + 2.0 / rate_hz_;
  for (const MeasurementFrame& f : inbox_) {
    ++stats_.measurements;
    // The rig numbers its frames 1, 2, 3, ...: a SEQ among the last ones received is the same
    // frame again (a datagram duplicated), never fused twice.  (An older frame that is not a
    // repeat, reordered or replayed, is refused by its stamp: late.)
    if (std::find(recent_seqs_.begin(), recent_seqs_.end(), f.seq) != recent_seqs_.end()) {
      ++stats_.repeated;
      continue;
    }
    if (recent_seqs_.size() == kRecentSeqs) recent_seqs_.pop_front();
    recent_seqs_.push_back(f.seq);
    // Compared as a time first: a stamp far ahead (1e300 s) has no tick in a long.
    const double stamp_s = f.stamp_s - clock_offset_s_;  // since this run's first frame
    const double at_tick = stamp_s * rate_hz_;
    const double age_s = std::chrono::duration<double>(f.received - first_sent_).count() - stamp_s;
    if (at_tick >= static_cast<double>(estimator_->tick()) + 0.5) {
      ++stats_.ahead;
    } else if (age_s > max_age_s ||
               estimator_->update(std::lround(at_tick), f.values) !=
                   control::Estimator::Fusion::Used) {
      ++stats_.late;
    } else {
      ++stats_.fused;
    }
  }
}

bool ClosedLoop::beforeSend(RigDriver& rig, long tick, Phase phase, int sample,
                            const Eigen::VectorXd& row, Eigen::VectorXd& values, std::string& why) {
  const Clock::time_point start = Clock::now();
  frame_clamps_.clear();
  const bool go = correctFrame(rig, tick, phase, sample, row, values, why);
  before_ms_ = millisecondsSince(start);
  return go;
}

bool ClosedLoop::correctFrame(RigDriver& rig, long tick, Phase phase, int sample,
                              const Eigen::VectorXd& row, Eigen::VectorXd& values,
                              std::string& why) {
  if (first_tick_ < 0) {
    first_tick_ = tick;
    first_sent_ = rig.now();
    if (predictive_ && rig.simulatedClock()) predictive_->waitForSolves();
    // On the frames' period grid: the rig's ticks are whole periods from its first frame.
    if (options_.rig_clock_start)
      clock_offset_s_ =
          std::round(
              std::chrono::duration<double>(first_sent_ - *options_.rig_clock_start).count() *
              rate_hz_) /
          rate_hz_;
  }
  rig_tick_ = tick - first_tick_;
  // Missed ticks: the rig held its input over them.
  while (estimator_->tick() < rig_tick_ - 1) estimator_->predict(last_sent_);
  fuseMeasurements(rig);
  if (rig_tick_ >= 1) {
    if (static_cast<long>(estimates_.size()) < rig_tick_)
      estimates_.resize(static_cast<std::size_t>(rig_tick_),
                        Eigen::VectorXd::Constant(model_->nd(), NAN));
    estimates_[static_cast<std::size_t>(rig_tick_ - 1)] = estimator_->q();
  }
  values = row;
  if (phase != Phase::Play || sample < 1 || !options_.correct) return true;

  const std::size_t i = static_cast<std::size_t>(sample - 1);
  const State& x = estimator_->viState();
  const State& ref = reference_[i];
  // A filter that overflowed (its noise options, a measurement it could not explain) has
  // nothing to say: never a correction from it, and NaN compares as within every bound.
  if (!x.q.allFinite() || !x.p.allFinite() || !estimator_->covariance().allFinite()) {
    why = formatted("the estimate is not finite at play sample %d (t = %.2f s): the filter "
                    "diverged",
                    sample - 1, (sample - 1) / rate_hz_);
    return false;
  }
  Eigen::Index worst = 0;
  const double deviation = (x.q - ref.q).cwiseAbs().maxCoeff(&worst);
  if (deviation > options_.max_deviation) {
    why = formatted("the estimated '%s' is %.3g from the plan at play sample %d (t = %.2f s), "
                    "beyond the bound %.3g",
                    model_->dynamic[static_cast<std::size_t>(worst)].name.c_str(), deviation,
                    sample - 1, (sample - 1) / rate_hz_, options_.max_deviation);
    return false;
  }
  if (plan_points_m_.size() > 0) {
    forwardKinematics(*model_, *dyn_scratch_, model_->configuration(x.q, x.rho));
    for (std::size_t p = 0; p < model_->points.size(); ++p) {
      const Point& point = model_->points[p];
      const Eigen::Vector3d planned =
          plan_points_m_.block<1, 3>(static_cast<Eigen::Index>(i), 3 * static_cast<Eigen::Index>(p))
              .transpose();
      const double off =
          (pointPosition(*dyn_scratch_, point.frame, point.position_m) - planned).norm();
      if (off > options_.max_point_deviation_m) {
        why = formatted(
            "the estimated point '%s' is %.3g m from the plan at play sample %d (t = "
            "%.2f s), beyond the bound %.3g m",
            point.name.c_str(), off, sample - 1, (sample - 1) / rate_hz_,
            options_.max_point_deviation_m);
        return false;
      }
    }
  }
  const int nk = model_->nk();
  // The rig's deviation a step earlier (before the plan's first step it stood on the plan).
  Eigen::VectorXd previous_rig = Eigen::VectorXd::Zero(nk);
  if (i >= 1)
    previous_rig = before_last_sent_ - reference_[i - 1].rho;
  if (predictive_)
    values = predictive_->setpoints(static_cast<int>(i));
  else
    values += gains_.correction(
        i, control::feasibleDeviation(*model_, *dyn_scratch_, x, ref, taut_[i]), previous_rig);
  if (!values.allFinite()) {
    why = formatted("the correction at play sample %d (t = %.2f s) is not finite (the gains "
                    "or the estimate overflowed); it was not sent",
                    sample - 1, (sample - 1) / rate_hz_);
    return false;
  }
  // Corrections below a nanometre or nanoradian are rounding (the wire carries 9 digits): a
  // puppet on its plan gets the plan's rows exactly.
  for (int j = 0; j < nk; ++j)
    if (held_[j] || std::abs(values[j] - row[j]) < kNegligible) values[j] = row[j];
  clamp(row, values, rig_tick_);
  stats_.max_correction = std::max(stats_.max_correction, (values - row).cwiseAbs().maxCoeff());
  if (predictive_) predictive_->sent(static_cast<int>(i), x, before_last_sent_, last_sent_, values);
  if (options_.collides) {
    State next = x;
    if (predictor_->step(x, values, next) == StepStatus::Ok) {
      std::string what;
      if (options_.collides(model_->configuration(next.q, next.rho), what)) {
        why = formatted("the estimate says the puppet will touch %s at play sample %d (t = %.2f s)",
                        what.c_str(), sample, sample / rate_hz_);
        return false;
      }
    }
  }
  return true;
}

void ClosedLoop::clamp(const Eigen::VectorXd& row, Eigen::VectorXd& u, long tick) {
  // The last two frames (before the run: the rig at rest at the stream's first row, as
  // validateStream takes it), so that the speed and acceleration the rig sees stay in bounds
  // from the first frame on; execute() checks every frame against the same limits.
  const double dt = 1.0 / rate_hz_;
  for (int j = 0; j < model_->nk(); ++j) {
    const KinematicVariable& kv = model_->kinematic[j];
    const double centre = 2 * last_sent_[j] - before_last_sent_[j];
    double lo = std::max({kv.lower, last_sent_[j] - kv.max_speed * dt,
                          centre - kv.max_accel * dt * dt});
    double hi = std::min({kv.upper, last_sent_[j] + kv.max_speed * dt,
                          centre + kv.max_accel * dt * dt});
    // Cannot happen after frames within the limits; execute() refuses what breaks them.
    if (lo > hi) lo = hi = std::min(std::max(row[j], kv.lower), kv.upper);
    const double want = u[j];
    // A value on a limit may sit a rounding error outside it (well within execute()'s
    // tolerance): kept as it is.
    const double tol = kNegligible * (1 + std::abs(want));
    if (want >= lo - tol && want <= hi + tol && std::abs(want - row[j]) <= options_.max_correction)
      continue;
    // Within the limits first, then as near the plan as the correction bound allows.
    double v = std::min(std::max(want, lo), hi);
    const double clo = std::max(lo, row[j] - options_.max_correction);
    const double chi = std::min(hi, row[j] + options_.max_correction);
    if (clo <= chi)
      v = std::min(std::max(v, clo), chi);
    else  // the limits keep the rig out of the bound this tick: as near the plan as they allow
      v = std::min(std::max(row[j], lo), hi);
    if (v != want) {
      ++stats_.clamped;
      frame_clamps_.push_back(formatted("%s corrected to %.6g, clamped to %.6g at tick %ld",
                                        kv.name.c_str(), want, v, tick));
    }
    u[j] = v;
  }
}

void ClosedLoop::runEnded() {
  if (predictive_) predictive_->stop();
}

void ClosedLoop::afterSend(const Eigen::VectorXd& values) {
  const Clock::time_point t = Clock::now();
  if (rig_tick_ >= 1) estimator_->predict(values);
  before_last_sent_ = last_sent_;
  last_sent_ = values;
  stats_.cycle_ms.push_back(before_ms_ + millisecondsSince(t));
}

}  // namespace marionette::executor

// SPDX-License-Identifier: BSD-3-Clause
// RigDriver's shared wait, and sim:, the simulated rig (the integrator as the puppet, optional
// sensing with noise and latency).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <termios.h>
#include <unistd.h>

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "marionette/common/text.hpp"
#include "marionette/executor/rig.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette::executor {

void RigDriver::awaitReply(Clock::time_point until) {
  std::this_thread::sleep_until(until);
}

void RigDriver::sleepUntil(Clock::time_point t, const std::atomic<bool>* stop) {
  // On CLOCK_MONOTONIC (std::chrono::steady_clock's clock on Linux).
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR)
    if (stop && stop->load()) return;
}

void RigDriver::pollMeasurements(std::vector<MeasurementFrame>&, long*) {}

// ---- sim: ----------------------------------------------------------------------------------

namespace {
IntegratorOptions simOptions(double rate_hz, double damping_scale) {
  if (!(rate_hz > 0) || !std::isfinite(rate_hz))
    throw std::invalid_argument("sim: the send rate must be > 0 Hz");
  IntegratorOptions o;
  o.dt_s = 1.0 / rate_hz;
  o.damping_scale = damping_scale;
  return o;
}

// The truth must be the same puppet and rig by name: the executor streams the model's inputs to
// it and its sensors measure the model's points.
const SimTruth& checkedTruth(const ModelPtr& model, SimTruth& t) {
  if (!t.truth) t.truth = model;
  const Model& a = *model;
  const Model& b = *t.truth;
  if (itemNames(a.kinematic) != itemNames(b.kinematic) ||
      itemNames(a.dynamic) != itemNames(b.dynamic))
    throw std::invalid_argument("sim: truth: '" + b.name + "' (" + b.source_file +
                                ") does not have the joints and rig inputs of '" + a.name + "'");
  for (const std::string& p : t.sensing.markers)
    if (b.pointIndex(p) < 0)
      throw std::invalid_argument("sim: truth: '" + b.name + "' has no point '" + p + "'");
  if (!(t.noise >= 0) || !std::isfinite(t.noise))
    throw std::invalid_argument("sim: noise must be >= 0");
  return t;
}

std::string vector3Text(const Eigen::Vector3d& v) {
  return formatted("(%.4g, %.4g, %.4g)", v.x(), v.y(), v.z());
}

// Why a push's impulse does not give its point the velocity asked for ("" when it does).
std::string pushShortfall(const SimTruth::Push& push, const Eigen::Vector3d& given) {
  if ((given - push.point_delta_mps).norm() <= 1e-6 * (1.0 + push.point_delta_mps.norm()))
    return "";
  return "'" + push.point + "' cannot take the velocity " + vector3Text(push.point_delta_mps) +
         " m/s: its joints give it " + vector3Text(given);
}
}  // namespace

Eigen::VectorXd pointImpulse(const Model& m, const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho,
                             int point, const Eigen::Vector3d& dv_mps, Eigen::Vector3d& given) {
  DynamicsData d(m);
  const Eigen::VectorXd q = m.configuration(q_d, rho);
  forwardKinematics(m, d, q);
  computeLagrangian(m, d, q, Eigen::VectorXd::Zero(m.nd()), LagrangianOrder::MassMatrix);
  Eigen::MatrixXd J(3, m.nq());
  pointJacobian(m, d, m.points[point].frame, m.points[point].position_m, J);
  const Eigen::MatrixXd Jd = J.leftCols(m.nd());
  const Eigen::MatrixXd mobility = Jd * d.M.ldlt().solve(Jd.transpose());  // J M^-1 J^T
  const Eigen::Vector3d f = mobility.completeOrthogonalDecomposition().solve(dv_mps);
  given = mobility * f;
  return Jd.transpose() * f;
}

SimRig::SimRig(ModelPtr model, double rate_hz, double damping_scale,
               const Eigen::VectorXd& start_inputs)
    : SimRig(std::move(model), rate_hz, SimTruth{nullptr, damping_scale, {}, 0.0, 1, {}, false},
             start_inputs) {}

SimRig::SimRig(ModelPtr model, double rate_hz, SimTruth truth,
               const Eigen::VectorXd& start_inputs)
    : model_(std::move(model)),
      truth_(checkedTruth(model_, truth)),
      period_s_(1.0 / rate_hz),
      vi_(truth_.truth, simOptions(rate_hz, truth_.damping_scale)),
      rng_(truth_.seed) {
  const Eigen::VectorXd rho0 = start_inputs.size() ? start_inputs : truth_.truth->defaultInputs();
  if (rho0.size() != model_->nk())
    throw std::invalid_argument("sim: start inputs need " + std::to_string(model_->nk()) +
                                " values");
  const StartState start = resolveStart(truth_.truth, rho0, StartSpec{});
  state_ = vi_.stateFromVelocity(start.q, start.qdot, rho0);
  next_ = state_;
  if (truth_.sensing.declared()) {
    if (!(truth_.sensing.rate_hz > 0)) throw std::invalid_argument("sim: rate must be > 0 Hz");
    measurement_ =
        std::make_unique<control::MeasurementModel>(truth_.truth, truth_.sensing.spec());
    truth_data_ = std::make_unique<DynamicsData>(*truth_.truth);
  }
  std::stable_sort(
      truth_.pushes.begin(), truth_.pushes.end(),
      [](const SimTruth::Push& a, const SimTruth::Push& b) { return a.at_s < b.at_s; });
  const Model& m = *truth_.truth;
  for (const SimTruth::Push& p : truth_.pushes) {
    if (!(p.at_s >= 0) || !std::isfinite(p.at_s))
      throw std::invalid_argument("sim: push: its time must be a finite number >= 0 s");
    push_points_.push_back(p.point.empty() ? -1 : m.pointIndex(p.point));
    if (p.point.empty()) {
      if (!m.isDynamic(p.joint))
        throw std::invalid_argument("sim: a push must act on a joint or a point");
      continue;
    }
    if (push_points_.back() < 0)
      throw std::invalid_argument("sim: push: '" + p.point + "' is not a point of '" + m.name +
                                  "'");
    if (!p.point_delta_mps.allFinite())
      throw std::invalid_argument("sim: push: its velocity must be finite");
    // A velocity the point cannot take (out of a planar model's plane) is refused, not dropped.
    Eigen::Vector3d given;
    pointImpulse(m, state_.q, rho0, push_points_.back(), p.point_delta_mps, given);
    if (const std::string why = pushShortfall(p, given); !why.empty())
      throw std::invalid_argument("sim: push: " + why);
  }
}

void SimRig::stepTo(const Eigen::VectorXd& rho_next) {
  const StepStatus st = vi_.step(state_, rho_next, next_);
  if (st != StepStatus::Ok)
    throw LinkError("sim: the simulated puppet failed a step at t = " +
                    std::to_string(tick_ * period_s_) + " s (" + toString(st) + ")");
  std::swap(state_, next_);
  ++tick_;
  // A push: the velocity jumps by dv, so the momentum by M dv (p = dL/dv + dt/2 dL/dq).
  while (pushes_done_ < truth_.pushes.size() && !std::isnan(push_origin_s_) &&
         push_origin_s_ + truth_.pushes[pushes_done_].at_s <= tick_ * period_s_ + 1e-9) {
    const int point = push_points_[pushes_done_];
    const SimTruth::Push& p = truth_.pushes[pushes_done_++];
    if (point >= 0) {
      // (Checked at the start; a pose where the point lost a direction fails the run here.)
      Eigen::Vector3d given;
      state_.p +=
          pointImpulse(*truth_.truth, state_.q, state_.rho, point, p.point_delta_mps, given);
      if (const std::string why = pushShortfall(p, given); !why.empty())
        throw LinkError("sim: push at " + formatNumber(p.at_s) + " s: " + why);
      continue;
    }
    Eigen::VectorXd dv = Eigen::VectorXd::Zero(model_->nd());
    dv[p.joint] = p.delta_velocity;
    DynamicsData d(*truth_.truth);
    const Eigen::VectorXd q = truth_.truth->configuration(state_.q, state_.rho);
    forwardKinematics(*truth_.truth, d, q);
    computeLagrangian(*truth_.truth, d, q, dv, LagrangianOrder::MassMatrix);
    state_.p += d.M * dv;
  }
  q_history_.push_back(state_.q);
  measure();
}

void SimRig::measure() {
  if (!measurement_) return;
  const double t = tick_ * period_s_;
  if (t + 1e-9 < next_measurement_s_) return;
  while (next_measurement_s_ <= t + 1e-9) next_measurement_s_ += 1.0 / truth_.sensing.rate_hz;
  MeasurementFrame f;
  f.seq = ++measurement_seq_;
  f.stamp_s = t;
  measurement_->evaluate(*truth_data_, truth_.truth->configuration(state_.q, state_.rho),
                         f.values);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (Eigen::Index i = 0; i < f.values.size(); ++i) f.values[i] += truth_.noise * noise(rng_);
  in_flight_.emplace_back(
      t0_ + std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double>(t + truth_.sensing.latency_s)),
      f);
}

Clock::time_point SimRig::now() const {
  return truth_.simulated_clock ? simulated_now_ : Clock::now();
}

void SimRig::sleepUntil(Clock::time_point t, const std::atomic<bool>* stop) {
  if (!truth_.simulated_clock) return RigDriver::sleepUntil(t, stop);
  simulated_now_ = std::max(simulated_now_, t);
}

void SimRig::awaitReply(Clock::time_point until) {
  // Replies are queued as the frames arrive: nothing comes in while waiting.
  if (!truth_.simulated_clock) return RigDriver::awaitReply(until);
  sleepUntil(until, nullptr);
}

void SimRig::send(std::uint32_t seq, const Eigen::VectorXd& values) {
  if (values.size() != model_->nk()) throw std::invalid_argument("sim: wrong number of values");
  const auto now = this->now();
  if (!started_) {
    // The first frame sets the inputs at the rig's time 0 (the executor starts from what
    // readSetpoints said, so this moves nothing).
    started_ = true;
    t0_ = now;
    state_.rho = values;
    q_history_.push_back(state_.q);
    measure();
  } else {
    const long target = std::max(
        tick_ + 1, std::lround(std::chrono::duration<double>(now - t0_).count() / period_s_));
    const Eigen::VectorXd held = state_.rho;
    while (tick_ + 1 < target) stepTo(held);  // periods without a frame: the input held
    if (in_run_ && std::isnan(push_origin_s_)) push_origin_s_ = target * period_s_;  // its first
    stepTo(values);
  }
  frame_ticks_.push_back(tick_);
  pending_.push_back({AckEvent::Kind::Ack, seq, "", now});
}

void SimRig::markPreparation() {
  in_run_ = false;
  push_origin_s_ = NAN;
}

void SimRig::markRunStart() {
  frame_ticks_.clear();
  in_run_ = true;
  // Set by the next frame; before any, the rig's time 0 is the run's.
  push_origin_s_ = started_ ? NAN : 0.0;
}

void SimRig::poll(std::vector<AckEvent>& out) {
  for (AckEvent& e : pending_) {
    e.received = now();  // delivered now, as a rig's ack read off the line would be
    out.push_back(e);
  }
  pending_.clear();
}

void SimRig::pollMeasurements(std::vector<MeasurementFrame>& out, long*) {
  // Taken in time order, each delivered its latency later: the due times are in order too.
  const auto now = this->now();
  std::size_t delivered = 0;
  while (delivered < in_flight_.size() && in_flight_[delivered].first <= now) {
    MeasurementFrame& f = in_flight_[delivered++].second;
    f.received = now;
    out.push_back(std::move(f));
  }
  in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<long>(delivered));
}

}  // namespace marionette::executor

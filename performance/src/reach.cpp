// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/performance/reach.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/common/text.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette {
namespace {

// The radical inverse of i in base b: the Halton sequence's coordinate (Halton, "On the
// efficiency of certain quasi-random sequences of points in evaluating multi-dimensional
// integrals", Numerische Mathematik 2, 1960).
double radicalInverse(long i, int base) {
  double result = 0.0, f = 1.0 / base;
  for (; i > 0; i /= base, f /= base) result += f * static_cast<double>(i % base);
  return result;
}

int nthPrime(int n) {  // n >= 0: 2, 3, 5, ...
  int count = -1;
  for (int k = 2;; ++k) {
    bool prime = true;
    for (int d = 2; d * d <= k && prime; ++d) prime = k % d != 0;
    if (prime && ++count == n) return k;
  }
}

void checkReachOptions(const ReachOptions& o) {
  auto within = [](const char* field, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi))
      throw FieldError(field, "must be in [" + formatNumber(lo) + ", " + formatNumber(hi) +
                                  "], got " + formatNumber(v));
  };
  within("options.poses", o.poses, 1, 100000);
  within("options.swings", o.swings, 0, 10000);
  within("options.skip", o.skip, 0, 1e9);
  within("options.hold_s", o.hold_s, 0, 10);
  within("options.dt_s", o.dt_s, 0.001, 0.1);
}

// The smoothstep's duration from a to b within every input's speed and acceleration limits: its
// peak speed is 1.5 |b - a| / T and its peak acceleration 6 |b - a| / T^2.
double swingDuration(const Model& m, const Eigen::VectorXd& a, const Eigen::VectorXd& b,
                     double dt_s) {
  double T = 2 * dt_s;
  for (int j = 0; j < m.nk(); ++j) {
    const double d = std::abs(b[j] - a[j]);
    const KinematicVariable& v = m.kinematic[j];
    if (std::isfinite(v.max_speed) && v.max_speed > 0) T = std::max(T, 1.5 * d / v.max_speed);
    if (std::isfinite(v.max_accel) && v.max_accel > 0)
      T = std::max(T, std::sqrt(6 * d / v.max_accel));
  }
  return std::ceil(T / dt_s) * dt_s;
}

}  // namespace

Reach computeReach(const CollisionModelPtr& collision, const std::vector<std::string>& names,
                   const ReachOptions& o, const CancelFn& cancelled) {
  const CancelScope scope(cancelled);
  if (!collision) throw FieldError("model", "none given");
  checkReachOptions(o);
  const ModelPtr model = collision->modelPtr();
  const Model& m = *model;
  if (names.empty()) throw FieldError("points", "no point asked for");
  std::vector<int> points;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const int p = m.pointIndex(names[i]);
    if (p < 0)
      throw FieldError("points[" + std::to_string(i) + "]",
                       "model " + m.name + " has no point '" + names[i] + "'");
    points.push_back(p);
  }
  const RestPoseOptions standing = standingOn(collision->contacts());
  DynamicsData data(m);
  auto stagePoint = [&](int p) {
    return Eigen::Vector3d(m.stage_pose *
                           pointPosition(data, m.points[p].frame, m.points[p].position_m));
  };

  Reach out;
  out.points.resize(points.size());
  const RestPose rest = computeRestPose(model, m.defaultInputs(), nullptr, standing);
  if (!rest.ok)
    throw FieldError("model",
                     m.name + " has no rest pose at its default inputs (" + rest.message + ")");
  forwardKinematics(m, data, m.configuration(rest.q, m.defaultInputs()));
  for (std::size_t i = 0; i < points.size(); ++i) {
    out.points[i].point = names[i];
    out.points[i].rest_m = stagePoint(points[i]);
  }

  // Held: rest poses of inputs spread over their box.
  CollisionChecker checker(collision);
  std::vector<Eigen::VectorXd> held_inputs;
  std::vector<std::vector<Eigen::Vector3d>> held(points.size()), swung(points.size());
  std::vector<int> primes;
  for (int j = 0; j < m.nk(); ++j) primes.push_back(nthPrime(j));
  for (int i = 0; i < o.poses; ++i) {
    throwIfCancelled("reach");
    Eigen::VectorXd rho(m.nk());
    for (int j = 0; j < m.nk(); ++j) {
      const KinematicVariable& v = m.kinematic[j];
      rho[j] = v.lower + (v.upper - v.lower) * radicalInverse(i + 1L + o.skip, primes[j]);
    }
    ++out.poses_tried;
    const RestPose pose = computeRestPose(model, rho, &rest.q, standing);
    if (!pose.ok) {
      ++out.no_rest_pose;
      continue;
    }
    const Eigen::VectorXd q = m.configuration(pose.q, rho);
    if (checker.inCollision(q).in_collision) {
      ++out.in_collision;
      continue;
    }
    ++out.poses_held;
    held_inputs.push_back(rho);
    forwardKinematics(m, data, q);
    for (std::size_t k = 0; k < points.size(); ++k) held[k].push_back(stagePoint(points[k]));
  }

  // Swung: from one held pose to another as fast as the limits let the rig, then held.  Their
  // samples, counted before any is simulated, within kMaxSwungSamples.
  const int n_held = static_cast<int>(held_inputs.size());
  double swung_samples = 0;
  for (int s = 0; n_held >= 2 && s < o.swings; ++s) {
    const double T = swingDuration(m, held_inputs[s % n_held],
                                   held_inputs[(s + n_held / 2) % n_held], o.dt_s);
    swung_samples += std::round((T + o.hold_s) / o.dt_s) + 1;
  }
  if (!(swung_samples <= ReachOptions::kMaxSwungSamples))
    throw FieldError("options.swings",
                     std::to_string(o.swings) + " swings at a " + formatNumber(o.dt_s) +
                         " s step would hold " + formatNumber(swung_samples) +
                         " samples a point, at most " +
                         formatNumber(ReachOptions::kMaxSwungSamples) +
                         ": ask for fewer swings or a larger step (slow inputs swing long)");
  for (int s = 0; n_held >= 2 && s < o.swings; ++s) {
    throwIfCancelled("reach");
    const Eigen::VectorXd& a = held_inputs[s % n_held];
    const Eigen::VectorXd& b = held_inputs[(s + n_held / 2) % n_held];
    const double T = swingDuration(m, a, b, o.dt_s);
    InputSchedule schedule = InputSchedule::constant(m);
    const int rows = static_cast<int>(std::lround(T / o.dt_s));
    schedule.values.resize(rows + 1, m.nk());
    for (int r = 0; r <= rows; ++r) {
      if (r % 4096 == 0) throwIfCancelled("reach");
      const double x = static_cast<double>(r) / rows, smooth = x * x * (3 - 2 * x);
      schedule.times_s.push_back(r * o.dt_s);
      schedule.values.row(r) = (a + smooth * (b - a)).transpose();
    }
    SimulationOptions so;
    so.dt_s = o.dt_s;
    so.duration_s = T + o.hold_s;
    so.energy_every_row = false;
    so.contacts = collision->contacts();
    ++out.swings_tried;
    try {
      simulate(model, schedule, so, [&](const SimulationRow& row) {
        forwardKinematics(m, data, m.configuration(*row.q, *row.rho));
        for (std::size_t k = 0; k < points.size(); ++k) swung[k].push_back(stagePoint(points[k]));
        return true;
      });
    } catch (const SimulationError&) {
      ++out.swings_failed;
    } catch (const FieldError&) {  // its start has no rest pose from the integrator's settling
      ++out.swings_failed;
    }
  }

  auto cloud = [](const std::vector<Eigen::Vector3d>& list, Eigen::Matrix3Xd& into,
                  Eigen::Vector3d& lo, Eigen::Vector3d& hi) {
    into.resize(3, static_cast<Eigen::Index>(list.size()));
    for (std::size_t c = 0; c < list.size(); ++c) into.col(static_cast<Eigen::Index>(c)) = list[c];
    const double nan = std::numeric_limits<double>::quiet_NaN();
    lo = list.empty() ? Eigen::Vector3d::Constant(nan) : Eigen::Vector3d(into.rowwise().minCoeff());
    hi = list.empty() ? Eigen::Vector3d::Constant(nan) : Eigen::Vector3d(into.rowwise().maxCoeff());
  };
  for (std::size_t k = 0; k < points.size(); ++k) {
    PointReach& r = out.points[k];
    cloud(held[k], r.held_m, r.held_min_m, r.held_max_m);
    cloud(swung[k], r.swung_m, r.swung_min_m, r.swung_max_m);
  }
  return out;
}

}  // namespace marionette

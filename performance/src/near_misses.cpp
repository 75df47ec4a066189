// SPDX-License-Identifier: BSD-3-Clause
#include "near_misses.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "marionette/models/simulation.hpp"

namespace marionette::detail {

Eigen::MatrixXd trackingErrors(const TargetMotion& targets,
                               const std::vector<std::string>& point_names,
                               const Eigen::MatrixXd& points_m) {
  const int S = targets.frames(), P = static_cast<int>(targets.points.size());
  if (points_m.rows() < S) throw std::invalid_argument("trackingErrors: too few samples");
  Eigen::MatrixXd errors(S, P);
  for (int p = 0; p < P; ++p) {
    const auto found = std::find(point_names.begin(), point_names.end(), targets.points[p]);
    if (found == point_names.end())
      throw std::invalid_argument("trackingErrors: no predicted point " + targets.points[p]);
    const auto column = 3 * (found - point_names.begin());
    for (int s = 0; s < S; ++s) {
      const Eigen::Vector3d target = targets.position(s, p);
      errors(s, p) = target.allFinite()
                         ? (points_m.block<1, 3>(s, column).transpose() - target).norm()
                         : std::numeric_limits<double>::quiet_NaN();
    }
  }
  return errors;
}

int samplesOff(const Eigen::MatrixXd& errors_m, double tolerance_m) {
  int n = 0;
  for (Eigen::Index i = 0; i < errors_m.size(); ++i) n += errors_m.data()[i] > tolerance_m;
  return n;
}

bool reweightNearMisses(const Eigen::MatrixXd& errors_m, double tolerance_m, double rate_hz,
                        Eigen::Ref<Eigen::MatrixXd> weights) {
  if (weights.rows() != errors_m.rows() || weights.cols() != errors_m.cols())
    throw std::invalid_argument("reweightNearMisses: the weights do not fit the errors");
  double worst = 0.0;  // (NaN, no target, compares false)
  for (Eigen::Index i = 0; i < errors_m.size(); ++i)
    worst = std::max(worst, std::isnan(errors_m.data()[i]) ? 0.0 : errors_m.data()[i]);
  if (!(worst > tolerance_m) || worst > kNearMiss * tolerance_m) return false;
  const auto S = errors_m.rows();
  const auto spread = static_cast<Eigen::Index>(std::lround(kSpread_s * rate_hz));
  const double aim_m = kAim * tolerance_m;
  for (Eigen::Index p = 0; p < errors_m.cols(); ++p)
    for (Eigen::Index s = 0; s < S; ++s) {
      double e = 0.0;
      for (Eigen::Index j = std::max<Eigen::Index>(0, s - spread);
           j <= std::min(S - 1, s + spread); ++j)
        if (!std::isnan(errors_m(j, p))) e = std::max(e, errors_m(j, p));
      if (e > aim_m) weights(s, p) *= (e / aim_m) * (e / aim_m);
    }
  return true;
}

int solveNearMissesAgain(HorizonTracking setup, int points, double tolerance_m,
                         const std::function<JudgedPass(const Eigen::MatrixXd&)>& judge,
                         const std::function<void()>& stop_if_cancelled, JudgedPass first,
                         HorizonTrackingResult& horizon) {
  int kept_pass = 0;
  try {
    JudgedPass best = std::move(first), latest = best;
    Eigen::MatrixXd weight = Eigen::MatrixXd::Ones(
        horizon.inputs.rows(), static_cast<Eigen::Index>(setup.track_points.size()));
    Eigen::MatrixXd best_weight = weight;
    for (int pass = 1; pass <= kNearMissPasses && best.off > 0; ++pass) {
      if (kept_pass != pass - 1)  // (the last pass not kept)
        weight = (best_weight.array() * weight.array()).sqrt().matrix();
      else if (!reweightNearMisses(latest.errors_m, tolerance_m, setup.rate_hz,
                                   weight.leftCols(points)))
        break;
      setup.track_sample_weight = weight;
      HorizonTrackingResult again = trackOverHorizon(setup);
      stop_if_cancelled();
      if (again.stopped_at >= 0) break;
      latest = judge(again.inputs);
      if (latest.off < best.off && latest.snaps <= best.snaps &&
          latest.peak_tension_ratio <= std::max(3.0, best.peak_tension_ratio) &&
          (latest.exact || !best.exact)) {
        best = latest;
        best_weight = weight;
        horizon = std::move(again);
        kept_pass = pass;
      }
    }
  } catch (const SimulationError&) {
    // (a pass that cannot be re-simulated is not kept; the best before it stands)
  }
  return kept_pass;
}

}  // namespace marionette::detail

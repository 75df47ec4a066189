// SPDX-License-Identifier: BSD-3-Clause
#include "near_misses.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

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

}  // namespace marionette::detail

// SPDX-License-Identifier: BSD-3-Clause
#include "performance_tracking.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace marionette::detail {

std::vector<UnreachableSpan> spansOff(
    const std::vector<std::string>& names, const Eigen::MatrixXd& points_m, double rate_hz,
    const TargetMotion& targets, double tolerance_m,
    const std::function<std::string(int point, int sample)>& reason) {
  std::vector<UnreachableSpan> out;
  for (int p = 0; p < static_cast<int>(targets.points.size()); ++p) {
    const auto it = std::find(names.begin(), names.end(), targets.points[p]);
    if (it == names.end()) continue;
    const int col = 3 * static_cast<int>(it - names.begin());
    int begin = -1, worst = -1;
    double worst_m = 0.0;
    const int n = std::min(targets.frames(), static_cast<int>(points_m.rows()));
    for (int s = 0; s <= n; ++s) {
      double e = 0.0;
      if (s < n) {
        const Eigen::Vector3d target = targets.position(s, p);
        if (target.allFinite()) e = (points_m.block<1, 3>(s, col).transpose() - target).norm();
      }
      if (e > tolerance_m) {
        if (begin < 0) {
          begin = s;
          worst_m = 0.0;
        }
        if (e > worst_m) {
          worst_m = e;
          worst = s;
        }
      } else if (begin >= 0) {
        out.push_back(
            {targets.points[p], begin / rate_hz, (s - 1) / rate_hz, worst_m, reason(p, worst)});
        begin = -1;
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const UnreachableSpan& a, const UnreachableSpan& b) {
    return std::tie(a.from_s, a.point) < std::tie(b.from_s, b.point);
  });
  return out;
}

double variableScale_m(const Model& m, int variable) {
  for (const Frame& f : m.frames)
    if (f.type == JointType::Rotate && f.variable == variable) return kRadianWeight_m;
  return 1.0;
}

std::vector<PointTracking> variableTracking(const Model& m, const Plan& plan,
                                            const TargetMotion& targets) {
  if (targets.variables.empty()) return {};
  std::vector<std::string> names;
  for (const DynamicVariable& v : m.dynamic) names.push_back(v.name);
  for (const KinematicVariable& v : m.kinematic) names.push_back(v.name);
  Eigen::MatrixXd values(plan.samples(), m.nd() + m.nk());
  values << plan.predicted.states.topRows(plan.samples()), plan.inputs;
  return measureVariableTracking(targets, names, values, plan.rate_hz);
}

std::vector<PointTracking> untargetedExcursions(const Plan& plan,
                                                const std::vector<std::string>& targeted) {
  std::vector<PointTracking> out;
  const Eigen::MatrixXd& points_m = plan.predicted.points_m;
  if (points_m.rows() == 0) return out;
  for (std::size_t p = 0; p < plan.predicted.point_names.size(); ++p) {
    const std::string& name = plan.predicted.point_names[p];
    if (std::find(targeted.begin(), targeted.end(), name) != targeted.end()) continue;
    const auto track = points_m.middleCols<3>(3 * static_cast<Eigen::Index>(p));
    PointTracking t;
    t.point = name;
    double sum = 0.0;
    for (Eigen::Index s = 0; s < track.rows(); ++s) {
      const double d = (track.row(s) - track.row(0)).norm();
      sum += d * d;
      if (d > t.max_m) {
        t.max_m = d;
        t.max_at_s = static_cast<double>(s) / plan.rate_hz;
      }
    }
    t.rms_m = std::sqrt(sum / static_cast<double>(track.rows()));
    out.push_back(std::move(t));
  }
  return out;
}

double rmsTotal(const std::vector<PointTracking>& t) {
  double sum = 0.0;
  for (const PointTracking& p : t) sum += p.rms_m * p.rms_m;
  return std::sqrt(sum / std::max<std::size_t>(1, t.size()));
}

}  // namespace marionette::detail

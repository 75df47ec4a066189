// SPDX-License-Identifier: BSD-3-Clause
// Target tracks: sampling at a uniform rate, and a plan's error against them.
#include "marionette/plan/targets.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "marionette/models/field_error.hpp"

namespace marionette {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One column's known values (t_i, v_i) evaluated at t: linear, or a cubic Hermite spline with
// Catmull-Rom tangents (v_{i+1} - v_{i-1}) / (t_{i+1} - t_{i-1}) inside and zero at both ends
// (a keyframed motion starts and ends at rest).  Held outside [t_0, t_last].
class Track {
 public:
  Track(const std::vector<double>& times, const Eigen::VectorXd& column, bool smooth)
      : smooth_(smooth) {
    for (int i = 0; i < column.size(); ++i)
      if (!std::isnan(column[i])) {
        t_.push_back(times[i]);
        v_.push_back(column[i]);
      }
    slope_.assign(t_.size(), 0.0);
    for (std::size_t i = 1; i + 1 < t_.size(); ++i)
      slope_[i] = (v_[i + 1] - v_[i - 1]) / (t_[i + 1] - t_[i - 1]);
  }

  double operator()(double t) const {
    if (t_.empty()) return kNaN;
    if (t <= t_.front()) return v_.front();
    if (t >= t_.back()) return v_.back();
    const std::size_t i = std::upper_bound(t_.begin(), t_.end(), t) - t_.begin() - 1;
    const double h = t_[i + 1] - t_[i], s = (t - t_[i]) / h;
    if (!smooth_) return (1 - s) * v_[i] + s * v_[i + 1];
    const double s2 = s * s, s3 = s2 * s;
    return (2 * s3 - 3 * s2 + 1) * v_[i] + (s3 - 2 * s2 + s) * h * slope_[i] +
           (-2 * s3 + 3 * s2) * v_[i + 1] + (s3 - s2) * h * slope_[i + 1];
  }

 private:
  bool smooth_;
  std::vector<double> t_, v_, slope_;
};

Eigen::MatrixXd sampleColumns(const std::vector<double>& times, const Eigen::MatrixXd& m,
                              bool smooth, double t0, double rate_hz, int n) {
  Eigen::MatrixXd out(n, m.cols());
  for (int c = 0; c < m.cols(); ++c) {
    const Track track(times, m.col(c), smooth);
    for (int i = 0; i < n; ++i) out(i, c) = track(t0 + i / rate_hz);
  }
  return out;
}

// A filled motion's columns: linear between its frames, NaN where either frame has none.
Eigen::MatrixXd sampleFilled(const std::vector<double>& times, const Eigen::MatrixXd& m, double t0,
                             double rate_hz, int n) {
  Eigen::MatrixXd out(n, m.cols());
  for (int i = 0; i < n; ++i) {
    const double t = t0 + i / rate_hz;
    const auto it = std::upper_bound(times.begin(), times.end(), t);
    const Eigen::Index b = std::min<Eigen::Index>(it - times.begin(), m.rows() - 1),
                       a = std::max<Eigen::Index>(b - 1, 0);
    const double s = b == a ? 0.0 : std::clamp((t - times[a]) / (times[b] - times[a]), 0.0, 1.0);
    // (0 * NaN is NaN: between a frame with a target and one without, none; at a frame, its own.)
    if (s == 0.0)
      out.row(i) = m.row(a);
    else if (s == 1.0)
      out.row(i) = m.row(b);
    else
      out.row(i) = (1 - s) * m.row(a) + s * m.row(b);
  }
  return out;
}

}  // namespace

int TargetMotion::pointIndex(const std::string& name) const {
  const auto it = std::find(points.begin(), points.end(), name);
  return it == points.end() ? -1 : static_cast<int>(it - points.begin());
}

TargetMotion sampleTargets(const TargetMotion& motion, double rate_hz) {
  TargetMotion out;
  out.source = motion.source;
  out.points = motion.points;
  out.variables = motion.variables;
  out.smooth = false;  // dense now
  out.filled = motion.filled;
  const double samples = motion.duration_s() * rate_hz;
  if (!(rate_hz > 0 && samples <= kMaxTargetSamples))
    throw FieldError("targets", "sampling " + std::to_string(motion.duration_s()) + " s at " +
                                    std::to_string(rate_hz) + " Hz: more than 10^7 samples");
  const int n = static_cast<int>(std::lround(samples)) + 1;
  out.times_s.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out.times_s.push_back(i / rate_hz);
  const double t0 = motion.start_s();
  if (motion.filled && motion.frames() > 0) {
    out.positions_m = sampleFilled(motion.times_s, motion.positions_m, t0, rate_hz, n);
    out.values = sampleFilled(motion.times_s, motion.values, t0, rate_hz, n);
    return out;
  }
  out.positions_m = sampleColumns(motion.times_s, motion.positions_m, motion.smooth, t0, rate_hz, n);
  out.values = sampleColumns(motion.times_s, motion.values, motion.smooth, t0, rate_hz, n);
  return out;
}

TargetMotion fillGaps(const TargetMotion& motion) {
  TargetMotion out = motion;
  for (Eigen::MatrixXd* columns : {&out.positions_m, &out.values})
    for (Eigen::Index c = 0; c < columns->cols(); ++c) {
      const Track track(motion.times_s, columns->col(c), motion.smooth);
      for (int f = 0; f < motion.frames(); ++f) (*columns)(f, c) = track(motion.times_s[f]);
    }
  return out;
}

namespace {

// Each target's error over the first n samples: `error(target, i)` is NaN where it has none.
// Targets with no sample are left out.
template <class Error>
std::vector<PointTracking> measureEach(const std::vector<std::string>& targets,
                                       const std::vector<std::string>& names, int n, double rate_hz,
                                       Error error) {
  std::vector<PointTracking> out;
  for (std::size_t k = 0; k < targets.size(); ++k) {
    const auto it = std::find(names.begin(), names.end(), targets[k]);
    if (it == names.end()) continue;
    const int column = static_cast<int>(it - names.begin());
    PointTracking t;
    t.point = targets[k];
    double sum2 = 0.0;
    int count = 0;
    for (int i = 0; i < n; ++i) {
      const double e = error(static_cast<int>(k), column, i);
      if (std::isnan(e)) continue;
      sum2 += e * e;
      ++count;
      if (e > t.max_m) {
        t.max_m = e;
        t.max_at_s = i / rate_hz;
      }
    }
    if (count == 0) continue;
    t.rms_m = std::sqrt(sum2 / count);
    out.push_back(t);
  }
  return out;
}

}  // namespace

std::vector<PointTracking> measureVariableTracking(const TargetMotion& targets,
                                                   const std::vector<std::string>& names,
                                                   const Eigen::MatrixXd& values, double rate_hz) {
  const int n = std::min<int>(targets.frames(), static_cast<int>(values.rows()));
  return measureEach(targets.variables, names, n, rate_hz, [&](int v, int column, int i) {
    return std::abs(values(i, column) - targets.values(i, v));  // NaN without a target
  });
}

std::vector<PointTracking> measureTracking(const TargetMotion& targets,
                                           const std::vector<std::string>& point_names,
                                           const Eigen::MatrixXd& points_m, double rate_hz) {
  const int n = std::min<int>(targets.frames(), static_cast<int>(points_m.rows()));
  return measureEach(targets.points, point_names, n, rate_hz, [&](int p, int column, int i) {
    const Eigen::Vector3d target = targets.position(i, p);
    return target.allFinite() ? (points_m.block<1, 3>(i, 3 * column).transpose() - target).norm()
                              : std::numeric_limits<double>::quiet_NaN();
  });
}

}  // namespace marionette

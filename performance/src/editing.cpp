// Editing target tracks (editing.hpp).
#include "marionette/performance/editing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kBlendRate_hz = 30.0;

// The row of `m` (linear between frames) at time t within [start, end].
Eigen::RowVectorXd rowAt(const std::vector<double>& times, const Eigen::MatrixXd& m, double t) {
  if (m.cols() == 0) return Eigen::RowVectorXd(0);
  const auto it = std::upper_bound(times.begin(), times.end(), t);
  if (it == times.begin()) return m.row(0);
  if (it == times.end()) return m.row(m.rows() - 1);
  const int i = static_cast<int>(it - times.begin()) - 1;
  const double s = (t - times[i]) / (times[i + 1] - times[i]);
  return (1 - s) * m.row(i) + s * m.row(i + 1);
}

// `from` re-expressed over the names `names` (NaN for the names it lacks).
Eigen::MatrixXd columnsFor(const std::vector<std::string>& from_names, const Eigen::MatrixXd& from,
                           const std::vector<std::string>& names, int width) {
  Eigen::MatrixXd out = Eigen::MatrixXd::Constant(from.rows(), width * names.size(), kNaN);
  for (std::size_t i = 0; i < from_names.size(); ++i) {
    const int j = static_cast<int>(std::find(names.begin(), names.end(), from_names[i]) - names.begin());
    out.middleCols(width * j, width) = from.middleCols(width * static_cast<int>(i), width);
  }
  return out;
}

std::vector<std::string> unionOf(std::vector<std::string> a, const std::vector<std::string>& b) {
  for (const auto& n : b)
    if (std::find(a.begin(), a.end(), n) == a.end()) a.push_back(n);
  return a;
}

void append(TargetMotion& out, double t, const Eigen::RowVectorXd& positions,
            const Eigen::RowVectorXd& values) {
  const Eigen::Index r = out.positions_m.rows();
  out.positions_m.conservativeResize(r + 1, Eigen::NoChange);
  out.values.conservativeResize(r + 1, Eigen::NoChange);
  out.positions_m.row(r) = positions;
  out.values.row(r) = values;
  out.times_s.push_back(t);
}

// The last known value of each column (NaN if none), scanning from the end or the start.
Eigen::RowVectorXd lastKnown(const Eigen::MatrixXd& m, bool from_end) {
  Eigen::RowVectorXd out = Eigen::RowVectorXd::Constant(m.cols(), kNaN);
  for (Eigen::Index c = 0; c < m.cols(); ++c)
    for (Eigen::Index k = 0; k < m.rows(); ++k) {
      const Eigen::Index r = from_end ? m.rows() - 1 - k : k;
      if (!std::isnan(m(r, c))) {
        out[c] = m(r, c);
        break;
      }
    }
  return out;
}

}  // namespace

TargetMotion sliceTargets(const TargetMotion& m, double from_s, double to_s) {
  const double t0 = m.start_s(), t1 = m.times_s.empty() ? 0.0 : m.times_s.back();
  if (!std::isfinite(from_s) || from_s < 0)
    throw FieldError("from_s", "must be a time >= 0 s, got " + formatNumber(from_s));
  if (!(to_s > from_s))
    throw FieldError("to_s", "must be after from_s (" + formatNumber(from_s) + " s)");
  if (!(t0 + from_s < t1))
    throw FieldError("from_s", formatNumber(from_s) + " s is past the clip's end (" +
                                   formatNumber(t1 - t0) + " s)");
  const double a = t0 + from_s, b = std::min(t1, t0 + to_s);
  TargetMotion out = m;
  out.times_s.clear();
  out.positions_m.resize(0, m.positions_m.cols());
  out.values.resize(0, m.values.cols());
  append(out, 0.0, rowAt(m.times_s, m.positions_m, a), rowAt(m.times_s, m.values, a));
  for (int f = 0; f < m.frames(); ++f)
    if (m.times_s[f] > a + 1e-9 && m.times_s[f] < b - 1e-9)
      append(out, m.times_s[f] - a, m.positions_m.row(f), m.values.row(f));
  append(out, b - a, rowAt(m.times_s, m.positions_m, b), rowAt(m.times_s, m.values, b));
  return out;
}

TargetMotion scaleTime(const TargetMotion& m, double speed) {
  if (!(speed >= 0.05 && speed <= 20))
    throw FieldError("speed", "must be in [0.05, 20], got " + formatNumber(speed));
  TargetMotion out = m;
  for (double& t : out.times_s) t = (t - m.start_s()) / speed;
  return out;
}

TargetMotion concatenateTargets(const TargetMotion& first, const TargetMotion& second,
                                double blend_s) {
  if (!(blend_s > 0 && blend_s <= 60))
    throw FieldError("blend_s", "must be in (0, 60] s, got " + formatNumber(blend_s));
  TargetMotion out;
  out.source = first.source + " + " + second.source;
  out.points = unionOf(first.points, second.points);
  out.variables = unionOf(first.variables, second.variables);
  out.smooth = false;
  const int np = 3 * static_cast<int>(out.points.size());
  const int nv = static_cast<int>(out.variables.size());
  // Both dense on the union's columns (a smooth track sampled so that the blend stays smooth).
  auto dense = [&](const TargetMotion& m) {
    const TargetMotion s = m.smooth ? sampleTargets(m, kBlendRate_hz) : m;
    TargetMotion d = s;
    d.positions_m = columnsFor(s.points, s.positions_m, out.points, 3);
    d.values = columnsFor(s.variables, s.values, out.variables, 1);
    for (double& t : d.times_s) t -= s.start_s();
    return d;
  };
  const TargetMotion a = dense(first), b = dense(second);
  out.positions_m.resize(0, np);
  out.values.resize(0, nv);
  for (int f = 0; f < a.frames(); ++f) append(out, a.times_s[f], a.positions_m.row(f), a.values.row(f));
  // The blend: from the first's last known values to the second's first, smoothstep in time.
  const double end = a.times_s.back();
  const Eigen::RowVectorXd p0 = lastKnown(a.positions_m, true), p1 = lastKnown(b.positions_m, false);
  const Eigen::RowVectorXd v0 = lastKnown(a.values, true), v1 = lastKnown(b.values, false);
  const int steps = std::max(2, static_cast<int>(std::ceil(blend_s * kBlendRate_hz)));
  for (int k = 1; k < steps; ++k) {
    const double s = static_cast<double>(k) / steps, w = s * s * (3 - 2 * s);
    append(out, end + s * blend_s, (1 - w) * p0 + w * p1, (1 - w) * v0 + w * v1);
  }
  for (int f = 0; f < b.frames(); ++f)
    append(out, end + blend_s + b.times_s[f], b.positions_m.row(f), b.values.row(f));
  return out;
}

TargetMotion loopTargets(const TargetMotion& m, int times, double return_s) {
  if (times < 1 || times > 1000)
    throw FieldError("loop", "must be from 1 to 1000 repetitions, got " + std::to_string(times));
  TargetMotion out = m;
  for (int i = 1; i < times; ++i) out = concatenateTargets(out, m, return_s);
  if (times > 1) out.source = m.source + " x" + std::to_string(times);
  return out;
}

std::vector<int> limbInputs(const Model& model, const std::string& name) {
  const int nd = model.nd();
  if (const int v = model.variableIndex(name); v >= nd) return {v - nd};
  const int s = model.stringIndex(name);
  return s < 0 ? std::vector<int>{} : model.stringInputs(s);
}

}  // namespace marionette

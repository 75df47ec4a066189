// SPDX-License-Identifier: BSD-3-Clause
// Editing target tracks (editing.hpp).
#include "marionette/performance/editing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
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

// A motion's rows written in order into matrices sized once (a row-by-row resize made a 3,600 s
// clip's 108,000 rows quadratic).
struct RowWriter {
  TargetMotion& out;
  Eigen::Index next = 0;
  RowWriter(TargetMotion& motion, Eigen::Index rows) : out(motion) {
    out.times_s.clear();
    out.times_s.reserve(static_cast<std::size_t>(rows));
    out.positions_m.resize(rows, out.positions_m.cols());
    out.values.resize(rows, out.values.cols());
  }
  void add(double t, const Eigen::Ref<const Eigen::RowVectorXd>& positions,
           const Eigen::Ref<const Eigen::RowVectorXd>& values) {
    // (A matrix without columns has no storage to take a row of.)
    if (out.positions_m.cols() > 0) out.positions_m.row(next) = positions;
    if (out.values.cols() > 0) out.values.row(next) = values;
    out.times_s.push_back(t);
    ++next;
  }
  // Frame f of `m` at time t (m's columns are the output's).
  void addFrame(double t, const TargetMotion& m, int f) {
    if (out.positions_m.cols() > 0) out.positions_m.row(next) = m.positions_m.row(f);
    if (out.values.cols() > 0) out.values.row(next) = m.values.row(f);
    out.times_s.push_back(t);
    ++next;
  }
  // The rows not written are dropped.
  void finish() {
    out.positions_m.conservativeResize(next, Eigen::NoChange);
    out.values.conservativeResize(next, Eigen::NoChange);
  }
};

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
  RowWriter rows(out, m.frames() + 2);
  rows.add(0.0, rowAt(m.times_s, m.positions_m, a), rowAt(m.times_s, m.values, a));
  for (int f = 0; f < m.frames(); ++f)
    if (m.times_s[f] > a + 1e-9 && m.times_s[f] < b - 1e-9)
      rows.addFrame(m.times_s[f] - a, m, f);
  rows.add(b - a, rowAt(m.times_s, m.positions_m, b), rowAt(m.times_s, m.values, b));
  rows.finish();
  return out;
}

TargetMotion scaleTime(const TargetMotion& m, double speed) {
  if (!(speed >= 0.05 && speed <= 20))
    throw FieldError("speed", "must be in [0.05, 20], got " + formatNumber(speed));
  TargetMotion out = m;
  for (double& t : out.times_s) t = (t - m.start_s()) / speed;
  return out;
}

TargetMotion joinTargets(const std::vector<const TargetMotion*>& parts, double blend_s) {
  if (!(blend_s > 0 && blend_s <= 60))
    throw FieldError("blend_s", "must be in (0, 60] s, got " + formatNumber(blend_s));
  if (parts.empty()) throw FieldError("clips", "nothing to join");
  TargetMotion out;
  out.smooth = false;
  out.filled = true;
  for (const TargetMotion* m : parts) {
    out.source += (out.source.empty() ? "" : " + ") + m->source;
    out.points = unionOf(out.points, m->points);
    out.variables = unionOf(out.variables, m->variables);
  }
  const int np = 3 * static_cast<int>(out.points.size());
  const int nv = static_cast<int>(out.variables.size());
  // Each part dense on the union's columns, once however often it is played (a smooth track
  // sampled so that the blend stays smooth; a dense one at its own frames), its own gaps filled
  // within it and the columns it lacks NaN -- no target in its span -- its times from 0.
  std::map<const TargetMotion*, TargetMotion> dense;
  Eigen::Index total = 0;
  for (const TargetMotion* m : parts) {
    throwIfCancelled("joining clips");
    auto [it, added] = dense.try_emplace(m);
    if (added) {
      const TargetMotion sampled =
          m->smooth || m->filled ? sampleTargets(*m, kBlendRate_hz) : fillGaps(*m);
      TargetMotion& d = it->second;
      d.times_s = sampled.times_s;
      for (double& t : d.times_s) t -= sampled.start_s();
      d.positions_m = columnsFor(sampled.points, sampled.positions_m, out.points, 3);
      d.values = columnsFor(sampled.variables, sampled.values, out.variables, 1);
    }
    total += it->second.frames();
  }
  // Between parts: from the one's last known values to the next's first, smoothstep in time.
  const int steps = std::max(2, static_cast<int>(std::ceil(blend_s * kBlendRate_hz)));
  total += static_cast<Eigen::Index>(parts.size() - 1) * (steps - 1);
  out.positions_m.resize(0, np);
  out.values.resize(0, nv);
  RowWriter rows(out, total);
  double offset_s = 0.0;
  const TargetMotion* previous = nullptr;
  for (const TargetMotion* part : parts) {
    throwIfCancelled("joining clips");
    const TargetMotion& d = dense.at(part);
    if (previous) {
      const TargetMotion& a = dense.at(previous);
      const double end = offset_s;
      const Eigen::RowVectorXd p0 = lastKnown(a.positions_m, true),
                               p1 = lastKnown(d.positions_m, false);
      const Eigen::RowVectorXd v0 = lastKnown(a.values, true), v1 = lastKnown(d.values, false);
      for (int k = 1; k < steps; ++k) {
        const double s = static_cast<double>(k) / steps, w = s * s * (3 - 2 * s);
        rows.add(end + s * blend_s, (1 - w) * p0 + w * p1, (1 - w) * v0 + w * v1);
      }
      offset_s = end + blend_s;
    }
    for (int f = 0; f < d.frames(); ++f)
      rows.addFrame(offset_s + d.times_s[f], d, f);
    offset_s += d.times_s.back();
    previous = part;
  }
  rows.finish();
  return out;
}

TargetMotion concatenateTargets(const TargetMotion& first, const TargetMotion& second,
                                double blend_s) {
  return joinTargets({&first, &second}, blend_s);
}

TargetMotion loopTargets(const TargetMotion& m, int times, double return_s) {
  if (times < 1 || times > 1000)
    throw FieldError("loop", "must be from 1 to 1000 repetitions, got " + std::to_string(times));
  if (times == 1) return m;
  TargetMotion out = joinTargets(std::vector<const TargetMotion*>(times, &m), return_s);
  out.source = m.source + " x" + std::to_string(times);
  return out;
}

std::vector<int> limbInputs(const Model& model, const std::string& name) {
  const int nd = model.nd();
  if (const int v = model.variableIndex(name); v >= nd) return {v - nd};
  const int s = model.stringIndex(name);
  return s < 0 ? std::vector<int>{} : model.stringInputs(s);
}

}  // namespace marionette

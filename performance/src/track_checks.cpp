// SPDX-License-Identifier: BSD-3-Clause
#include "track_checks.hpp"

#include <cmath>

#include "marionette/common/text.hpp"
#include "marionette/performance/performance_error.hpp"

namespace marionette::detail {

void checkTracks(const TargetMotion& m, const std::function<int(int)>& line_of) {
  const std::string& source = m.source;
  if (m.frames() < 2)
    throw PerformanceFileError(source, 0, "frames", "needs at least two frames (a motion), got " +
                                                        std::to_string(m.frames()));
  for (int f = 0; f < m.frames(); ++f) {
    if (f > 0 && !(m.times_s[f] > m.times_s[f - 1]))
      throw PerformanceFileError(source, line_of(f), "t",
                                 "times must increase (" + formatNumber(m.times_s[f]) +
                                     " s after " + formatNumber(m.times_s[f - 1]) + " s)");
    for (Eigen::Index c = 0; c < m.positions_m.cols(); ++c)
      if (std::abs(m.positions_m(f, c)) > 100.0)
        throw PerformanceFileError(source, line_of(f),
                                   m.points[static_cast<std::size_t>(c / 3)] + "_" +
                                       static_cast<char>('x' + c % 3),
                                   "farther than 100 m from the stage's origin");
  }
  if (m.duration_s() > kMaxClip_s)
    throw PerformanceFileError(source, 0, "t", "longer than an hour");
  const double values = static_cast<double>(m.frames()) *
                        static_cast<double>(m.positions_m.cols() + m.values.cols());
  if (values > kMaxClipValues)
    throw PerformanceFileError(source, 0, "frames",
                               "too many values (" + formatNumber(values, 6) + ", at most " +
                                   formatNumber(kMaxClipValues) + ")");
  for (std::size_t p = 0; p < m.points.size(); ++p)
    if (!m.positions_m.middleCols(3 * static_cast<Eigen::Index>(p), 3).array().isFinite().any())
      throw PerformanceFileError(source, 0, m.points[p], "no frame gives this point");
}

std::string knownPoints(const Model& model) {
  std::string list;
  for (const Point& p : model.points) list += (list.empty() ? "" : ", ") + p.name;
  return " (its points: " + list + ")";
}

}  // namespace marionette::detail

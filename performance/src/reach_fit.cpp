// SPDX-License-Identifier: BSD-3-Clause
#include "reach_fit.hpp"

#include <algorithm>
#include <cmath>

#include "marionette/common/text.hpp"

namespace marionette::detail {

std::string ReachFit::describe(const Eigen::Vector3d& clip_mean_m) const {
  if (!fitted) return "";
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  for (int a = 0; a < 3; ++a)
    if (scale[a] < 0.995) add(formatted("%c x%.2f", "xyz"[a], scale[a]));
  // Where the clip's mean lands, against where it was.
  const Eigen::Array3d shift = offset_m + (scale - 1.0) * clip_mean_m.array();
  static const char* kMore[3] = {"forward", "to the left", "higher"};
  static const char* kLess[3] = {"back", "to the right", "lower"};
  for (int a = 0; a < 3; ++a)
    if (std::abs(shift[a]) >= 0.005)
      add(formatted("%.1f cm %s", 100 * std::abs(shift[a]), shift[a] > 0 ? kMore[a] : kLess[a]));
  return out.empty() ? "as the clip" : out;
}

std::vector<ReachFit> fitIntoReach(const TargetMotion& keys, const Eigen::MatrixXd& held_m,
                                   double tolerance_m) {
  std::vector<ReachFit> fits(keys.points.size());
  for (std::size_t p = 0; p < keys.points.size(); ++p) {
    const int col = 3 * static_cast<int>(p);
    std::vector<int> rows;
    double worst_m = 0.0;
    for (int f = 0; f < keys.frames(); ++f) {
      const Eigen::Vector3d clip = keys.position(f, static_cast<int>(p));
      const Eigen::Vector3d held = held_m.block<1, 3>(f, col).transpose();
      if (!clip.allFinite() || !held.allFinite()) continue;
      rows.push_back(f);
      worst_m = std::max(worst_m, (held - clip).norm());
    }
    ReachFit& fit = fits[p];
    if (rows.empty() || worst_m <= tolerance_m) continue;
    // Anchored at the first frame, where the puppet starts: fitted(t_0) = held(t_0).
    fit.fitted = true;
    const int first = rows.front();
    double clip_square = 0, kept_square = 0;
    for (int f : rows)
      fit.clip_motion_m = std::max(fit.clip_motion_m, (keys.position(f, static_cast<int>(p)) -
                                                       keys.position(first, static_cast<int>(p)))
                                                          .norm());
    for (int a = 0; a < 3; ++a) {
      const double c0 = keys.positions_m(first, col + a), h0 = held_m(first, col + a);
      double cov = 0, var = 0;
      for (int f : rows) {
        const double c = keys.positions_m(f, col + a) - c0;
        cov += c * (held_m(f, col + a) - h0);
        var += c * c;
      }
      // Along an axis the clip does not move (to 0.1 mm rms), only the anchor is fitted.
      const double s =
          var > static_cast<double>(rows.size()) * 1e-8 ? std::clamp(cov / var, 0.0, 1.0) : 1.0;
      fit.scale[a] = s;
      fit.offset_m[a] = h0 - s * c0;
      clip_square += var;
      kept_square += s * s * var;
    }
    fit.kept = clip_square > 0 ? std::sqrt(kept_square / clip_square) : 1.0;
  }
  return fits;
}

TargetMotion applyReachFit(const TargetMotion& motion, const std::vector<ReachFit>& fits) {
  TargetMotion out = motion;
  for (std::size_t p = 0; p < fits.size(); ++p) {
    if (!fits[p].fitted) continue;
    for (int a = 0; a < 3; ++a) {
      auto column = out.positions_m.col(3 * static_cast<Eigen::Index>(p) + a).array();
      column = fits[p].offset_m[a] + fits[p].scale[a] * column;  // NaN stays NaN
    }
  }
  return out;
}

}  // namespace marionette::detail

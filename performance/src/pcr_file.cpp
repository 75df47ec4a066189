// SPDX-License-Identifier: BSD-3-Clause
// Egger's PuppetCopter performance file (.pcr; Egger 2013, App. B.1): tab-separated columns
//   0 time (s); 1-3 the copter's recorded position; 4 its yaw; 5-7 its trajectory;
//   8-10 the puppet body's position; 11 the puppet's yaw (eq. 3.1);
//   12-14 left leg, 15-17 right leg, 18-20 left arm, 21-23 right arm, 24-26 head (m);
//   27 a flying flag; 28 a colour (both optional here).
// The body and limb columns are in the motion-capture frame M; eqs. 3.2-3.4 turn each limb
// into the puppet frame P at W_O, the floor below the platform's origin, which is the model's
// world origin's foot in the stage.  The copter's columns are not the puppet's: read, not used.
#include <cmath>

#include "marionette/common/text.hpp"
#include "marionette/performance/sources.hpp"
#include "rest_points.hpp"
#include "table_text.hpp"
#include "track_checks.hpp"

namespace marionette {

namespace pcr {

double puppetYaw(const Eigen::Vector3d& left_m, const Eigen::Vector3d& right_m) {
  return std::atan2(right_m.y() - left_m.y(), right_m.x() - left_m.x()) + M_PI / 2;
}

Eigen::Matrix3d rotationPM(double yaw) {
  const double c = std::cos(yaw), s = std::sin(yaw);
  Eigen::Matrix3d A;
  A << c, s, 0, -s, c, 0, 0, 0, 1;
  return A;
}

Eigen::Vector3d toPuppetFrame(const Eigen::Vector3d& point_m, const Eigen::Vector3d& body_m,
                              double yaw, double z_body_m) {
  return rotationPM(yaw) * (point_m - body_m) + Eigen::Vector3d(0, 0, z_body_m);
}

double copterYaw(const Eigen::Vector3d& left_m, const Eigen::Vector3d& right_m, double yaw0) {
  return std::atan2(right_m.x() - left_m.x(), right_m.y() - left_m.y()) - yaw0;
}

}  // namespace pcr

namespace {
// The limbs' columns and the model's points at their string attachments (Egger's markers sit
// where the strings are attached: §3.1).
struct Limb {
  const char* column_name;
  int first_column;
  const char* point;
};
constexpr Limb kLimbs[] = {{"left leg", 12, "leg_l_front"}, {"right leg", 15, "leg_r_front"},
                           {"left arm", 18, "hand_l"},      {"right arm", 21, "hand_r"},
                           {"head", 24, "head_top"}};
}  // namespace

TargetMotion readPcr(const ModelPtr& model, const std::string& text, const std::string& source) {
  for (const Limb& limb : kLimbs)
    if (model->pointIndex(limb.point) < 0 || model->frameIndex("body") < 0)
      throw PerformanceFileError(source, 0, "model",
                                 std::string("the .pcr format is PuppetCopter's (Egger 2013): "
                                             "model ") +
                                     model->name + " has no point '" + limb.point +
                                     "' or frame 'body'");
  // z_body: the body origin B0's height above the floor at rest; W_O: the floor below O.
  const detail::RestPoints rest = detail::restPoints(model);
  const double z_body = rest.frame_origins_m(2, model->frameIndex("body"));
  const Eigen::Vector3d w_o(model->stage_pose.translation().x(),
                            model->stage_pose.translation().y(), 0.0);
  const std::vector<detail::TableLine> rows = detail::splitTable(text, '\t');
  TargetMotion out;
  out.source = source;
  for (const Limb& limb : kLimbs) out.points.push_back(limb.point);
  out.positions_m.resize(static_cast<Eigen::Index>(rows.size()), 3 * 5);
  out.values.resize(static_cast<Eigen::Index>(rows.size()), 0);
  const auto column = [](int c, const char* what) {
    return "column " + std::to_string(c) + " (" + what + ")";
  };
  for (std::size_t f = 0; f < rows.size(); ++f) {
    const detail::TableLine& row = rows[f];
    if (row.cells.size() < 27 || row.cells.size() > 29)
      throw PerformanceFileError(source, row.line, "line",
                                 std::to_string(row.cells.size()) +
                                     " tab-separated columns; a .pcr line has 27 to 29");
    out.times_s.push_back(detail::tableNumber(row, 0, source, column(0, "time")));
    Eigen::Vector3d body;
    for (int a = 0; a < 3; ++a)
      body[a] = detail::tableNumber(row, 8 + a, source, column(8 + a, "body position"));
    const double yaw = detail::tableNumber(row, 11, source, column(11, "puppet yaw"));
    for (int i = 1; i <= 7; ++i) detail::tableNumber(row, i, source, column(i, "copter"));
    for (std::size_t l = 0; l < std::size(kLimbs); ++l) {
      Eigen::Vector3d r;
      for (int a = 0; a < 3; ++a)
        r[a] = detail::tableNumber(row, kLimbs[l].first_column + a, source,
                                   column(kLimbs[l].first_column + a, kLimbs[l].column_name));
      out.positions_m.block<1, 3>(static_cast<Eigen::Index>(f), 3 * static_cast<Eigen::Index>(l)) =
          (w_o + pcr::toPuppetFrame(r, body, yaw, z_body)).transpose();
    }
  }
  detail::checkTracks(out, [&](int frame) { return rows[frame].line; });
  return out;
}

}  // namespace marionette

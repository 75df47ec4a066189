// SPDX-License-Identifier: BSD-3-Clause
// The sources of a performance (docs/performance.md): each reads a clip's text into target
// tracks for a model's named points, in stage coordinates.  A file that cannot be read throws
// PerformanceFileError ("file:line: field: problem").
//
// Contents
//   readMarkerCsv    "t,<point>_x,<point>_y,<point>_z,...": marker tracks as a motion-capture
//                    system exports them, already in stage coordinates.
//   readPcr          Egger's PuppetCopter performance file (.pcr), converted by his eqs. 3.1-3.4.
//   readKeyframes    YAML keyframes: times with point targets (absolute, or offsets from the
//                    point's rest position) and joint or input values, interpolated smoothly.
//   readBvhPerformance   a BVH clip retargeted by a map (retarget.hpp).
//   PcrConversion    eqs. 3.1-3.5 of Egger 2013, §3.1, one function each.
#pragma once

#include <Eigen/Core>
#include <string>

#include "marionette/models/model.hpp"
#include "marionette/performance/performance_error.hpp"
#include "marionette/performance/retarget.hpp"
#include "marionette/plan/targets.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

TargetMotion readMarkerCsv(const ModelPtr& model, const std::string& text,
                           const std::string& source);
TargetMotion readPcr(const ModelPtr& model, const std::string& text, const std::string& source);
TargetMotion readKeyframes(const ModelPtr& model, const std::string& text,
                           const std::string& source);
TargetMotion readBvhPerformance(const ModelPtr& model, const std::string& text,
                                const std::string& source, const RetargetMap& map);

// Egger, "Simulation and Animation of a Robotic Puppet", BSc thesis, ETH Zurich, 2013, §3.1:
// from the motion-capture frame M (z up) to the puppet frame P at W_O, the floor below the
// platform's origin O.
namespace pcr {
// Eq. 3.1: the puppet's yaw from its shoulder markers, atan2(dy, dx) + pi/2 with
// (dx, dy) = right - left (atan2 where the thesis writes arctan(dy/dx): the same angle, in the
// right quadrant).
double puppetYaw(const Eigen::Vector3d& left_m, const Eigen::Vector3d& right_m);
// Eq. 3.3: A_PM(yaw) = [[cos, sin, 0], [-sin, cos, 0], [0, 0, 1]].
Eigen::Matrix3d rotationPM(double yaw);
// Eqs. 3.2 and 3.4: a tracked point in P at W_O, A_PM (r_M - r_M,B0) + (0, 0, z_body).
Eigen::Vector3d toPuppetFrame(const Eigen::Vector3d& point_m, const Eigen::Vector3d& body_m,
                              double yaw, double z_body_m);
// Eq. 3.5: the control bar's yaw from its markers, atan2(x_r - x_l, y_r - y_l) - yaw0.
double copterYaw(const Eigen::Vector3d& left_m, const Eigen::Vector3d& right_m, double yaw0);
}  // namespace pcr

}  // namespace marionette

#pragma GCC visibility pop

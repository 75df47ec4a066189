// SPDX-License-Identifier: BSD-3-Clause
// What a performance asks of the puppet (docs/performance.md): target tracks for named points
// in stage coordinates, and target values for joints or rig inputs, over time; and how well a
// plan followed them.  Plain data, as the rest of the plan library: the formats that produce
// target tracks are the performance library's, the step that follows them the planner's.
//
// Contents
//   TargetMotion      named point tracks and variable tracks, frames at increasing times.
//   sampleTargets     the tracks at a uniform rate (linear or Catmull-Rom interpolation).
//   PointTracking     one point's error between its target and the puppet (rms, max, when).
//   UnreachableSpan   a point the puppet cannot follow for a while, and why.
//   TargetTracking    the errors after the kinematic step and after the dynamics step, and the
//                     fitted targets' distance from the clip's (retargeting into reach).
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// The longest performance planned (s): a show's scene, bounded so that a request's samples stay
// within memory.
constexpr double kMaxPerformance_s = 600.0;
// The most samples sampleTargets makes (a last line: its callers bound far below it).
constexpr double kMaxTargetSamples = 1e7;

struct TargetMotion {
  std::string source;               // where it came from, for messages ("walk.bvh", ...)
  std::vector<double> times_s;      // F frames, strictly increasing
  std::vector<std::string> points;  // the model's named points
  Eigen::MatrixXd positions_m;      // F x 3P: x, y, z of each point (stage coordinates); NaN:
                                    // no target at that frame (interpolated from its neighbours)
  std::vector<std::string> variables;  // dynamic or kinematic variables by name (keyframes)
  Eigen::MatrixXd values;              // F x V (rad or m); NaN: none at that frame
  // Keyframes are few and far apart: interpolated by Catmull-Rom splines (C1, through every
  // key).  Dense tracks (motion capture) are interpolated linearly.
  bool smooth = false;
  // Joined clips (editing.hpp): every column filled within each clip that has it, so a NaN is
  // no target there (a clip without that point, or a blend into or out of one) -- not a gap to
  // interpolate across.
  bool filled = false;

  int frames() const { return static_cast<int>(times_s.size()); }
  double start_s() const { return times_s.empty() ? 0.0 : times_s.front(); }
  double duration_s() const { return times_s.empty() ? 0.0 : times_s.back() - times_s.front(); }
  int pointIndex(const std::string& name) const;  // -1 if absent
  Eigen::Vector3d position(int frame, int point) const {
    return positions_m.block<1, 3>(frame, 3 * point).transpose();
  }
};

// The tracks at t_n = start_s + n / rate_hz, n = 0 .. round(duration_s * rate_hz): rows of the
// result are those samples (times_s re-based to 0); FieldError("targets") beyond
// kMaxTargetSamples.  A point's or variable's gaps (NaN) are
// interpolated between the frames that have it and held before its first and after its last;
// one that no frame has stays NaN.  A filled motion's NaN stays NaN (linear between frames that
// both have it).
TargetMotion sampleTargets(const TargetMotion& motion, double rate_hz);
// The same motion at its own frames with each column's gaps filled by sampleTargets' rule.
TargetMotion fillGaps(const TargetMotion& motion);

struct PointTracking {
  std::string point;
  double rms_m = 0.0;  // over the samples that have a target
  double max_m = 0.0;
  double max_at_s = 0.0;
};

struct UnreachableSpan {
  std::string point;
  double from_s = 0.0, to_s = 0.0;
  double worst_m = 0.0;  // the largest error over the span
  std::string reason;    // "out of reach", "inside an obstacle", "faster than the rig", ...
};

struct TargetTracking {
  std::vector<PointTracking> kinematic;  // after the kinematic step alone, re-simulated
  std::vector<PointTracking> dynamic;    // after the dynamics step, re-simulated
  std::vector<UnreachableSpan> unreachable;
  // Retargeting into reach: each target point's fitted track against its clip's (the plan's
  // targets are the fitted ones), and the spans where the fit gave up more than the tolerance,
  // with how it was fitted.
  std::vector<PointTracking> retarget;
  std::vector<UnreachableSpan> retarget_spans;
  // Keyframes' joint and input targets against the plan's motion (its predicted joints, its
  // inputs): `point` names the variable, the errors are in its unit (rad or m, not _m).
  std::vector<PointTracking> variables;
  // Every named point without a target: how far it strays from where it hangs at the start
  // (max_m, at max_at_s; rms_m over the motion), the hold after it included.
  std::vector<PointTracking> untargeted;
  bool empty() const {
    return kinematic.empty() && dynamic.empty() && unreachable.empty() && retarget.empty() &&
           retarget_spans.empty() && variables.empty() && untargeted.empty();
  }
};

// Each target point's error against `points_m` (the puppet's points, N x 3P' named by
// `point_names`; rows at rate_hz), over the samples where `targets` (sampled at the same rate,
// as many rows or more) has one.
std::vector<PointTracking> measureTracking(const TargetMotion& targets,
                                           const std::vector<std::string>& point_names,
                                           const Eigen::MatrixXd& points_m, double rate_hz);
// Each target variable's error against `values` (N x V', columns named by `names`; rows at
// rate_hz), over the samples where `targets` has one; in the variable's unit.
std::vector<PointTracking> measureVariableTracking(const TargetMotion& targets,
                                                   const std::vector<std::string>& names,
                                                   const Eigen::MatrixXd& values, double rate_hz);

}  // namespace marionette

#pragma GCC visibility pop

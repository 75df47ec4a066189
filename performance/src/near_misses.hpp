// SPDX-License-Identifier: BSD-3-Clause
// Targets missed by a little, weighed more where they are missed: the dynamics step's windows
// minimize the targets' squared error, and a performance is judged on its largest (every target
// within the tolerance over the whole clip).  Where a motion misses a target by less than the
// tolerance again, the samples around each miss weigh more and the windows are solved again --
// Lawson's reweighted least squares toward the largest error (C. L. Lawson, "Contributions to
// the Theory of Linear Least Maximum Approximation", PhD thesis, UCLA, 1961), weights only ever
// raised, and only near the misses.
//
// Contents
//   trackingErrors      each target point's distance from its target, per sample.
//   samplesOff          how many (sample, point) pairs miss the tolerance.
//   reweightNearMisses  the weights raised around the misses, when every miss is near.
//   solveNearMissesAgain  the passes: the windows solved again with those weights, the best kept.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "marionette/plan/targets.hpp"
#include "marionette/trajopt/horizon_tracking.hpp"

namespace marionette::detail {

// S x P: |point - target| (m) at each of `targets`' samples (NaN where it has none), the points
// found by name among `point_names` (the plan's predicted points, S' x 3 per name, S' >= S).
Eigen::MatrixXd trackingErrors(const TargetMotion& targets,
                               const std::vector<std::string>& point_names,
                               const Eigen::MatrixXd& points_m);

int samplesOff(const Eigen::MatrixXd& errors_m, double tolerance_m);

// A near miss: some error over the tolerance, none over kNearMiss times it (a farther one is out
// of reach, retargeting's, not the weights').  Then each weight is multiplied by
// (e / (kAim tolerance))^2 where e, the largest error within kSpread_s of the sample, is over
// kAim tolerance, and true is returned; otherwise `weights` (S x P) is unchanged and false.
constexpr double kNearMiss = 2.0;
constexpr double kAim = 0.8;
constexpr double kSpread_s = 0.1;
bool reweightNearMisses(const Eigen::MatrixXd& errors_m, double tolerance_m, double rate_hz,
                        Eigen::Ref<Eigen::MatrixXd> weights);

// A pass's motion as the passes compare them (its plan re-simulated and measured).
struct JudgedPass {
  Eigen::MatrixXd errors_m;  // trackingErrors
  int off = 0;               // samplesOff
  int snaps = 0;
  double peak_tension_ratio = 0.0;
  bool exact = false;
};

// Up to kNearMissPasses passes of `setup`'s windows (its first `points` tracked points the
// targets', the rest calm points, weighed as they are), each from the last kept pass's misses
// (reweightNearMisses), halfway back (geometrically) to its weights after a pass not kept.  A
// pass is kept when it misses fewer samples than the best so far, snaps no more, pulls no harder
// (beyond x3) and is exact if that one is; `horizon` (the first pass's result, `first` it judged)
// then becomes it.  The pass kept (0: none); a pass a deadline stopped, or whose motion cannot be
// re-simulated, ends them.  `judge` re-simulates and measures a motion.
constexpr int kNearMissPasses = 3;
int solveNearMissesAgain(HorizonTracking setup, int points, double tolerance_m,
                         const std::function<JudgedPass(const Eigen::MatrixXd&)>& judge,
                         const std::function<void()>& stop_if_cancelled, JudgedPass first,
                         HorizonTrackingResult& horizon);

}  // namespace marionette::detail

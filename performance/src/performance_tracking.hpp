// SPDX-License-Identifier: BSD-3-Clause
// How a performance's motion is measured against its targets (plan_performance.hpp): the spans a
// point is off its target, keyframed variables' errors, the weight of a variable's error.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "marionette/models/model.hpp"
#include "marionette/plan/plan.hpp"
#include "marionette/plan/targets.hpp"

namespace marionette::detail {

// Each target point's spans of samples where `points_m`'s (rows at rate_hz, named by `names`)
// is farther than `tolerance_m` from its target, with the reason at the span's worst sample.
std::vector<UnreachableSpan> spansOff(
    const std::vector<std::string>& names, const Eigen::MatrixXd& points_m, double rate_hz,
    const TargetMotion& targets, double tolerance_m,
    const std::function<std::string(int point, int sample)>& reason);

// What an error of a variable (rad or m) weighs as, in metres of a point's: a radian as 10 cm (the
// kinematic step's weight), a metre as a metre.
constexpr double kRadianWeight_m = 0.1;
double variableScale_m(const Model& m, int variable);

// Each keyframed variable's error over the plan: joints against its predicted states, inputs
// against its inputs.
std::vector<PointTracking> variableTracking(const Model& m, const Plan& plan,
                                            const TargetMotion& targets);

// Every named point of `plan.predicted` not among `targeted`: how far it strays from its first
// sample (max_m at max_at_s, rms_m over the samples).
std::vector<PointTracking> untargetedExcursions(const Plan& plan,
                                                const std::vector<std::string>& targeted);

// The root mean square of the points' rms errors.
double rmsTotal(const std::vector<PointTracking>& t);

}  // namespace marionette::detail

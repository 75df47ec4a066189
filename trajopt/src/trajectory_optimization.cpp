// SPDX-License-Identifier: BSD-3-Clause
// optimizePlan: the options checked, the plan's size bounded, then the transcription
// (transcription_optimization.hpp).
#include "marionette/trajopt/trajectory_optimization.hpp"

#include <algorithm>
#include <cmath>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "transcription_optimization.hpp"

namespace marionette {

void checkOptimizationOptions(const OptimizationOptions& o) {
  auto positive = [](const char* field, double v) {
    if (!(v > 0) || !std::isfinite(v))
      throw FieldError(field, "must be a finite number > 0, got " + formatNumber(v));
  };
  if (!(o.settle_s >= 0) || !std::isfinite(o.settle_s) || o.settle_s > 10)
    throw FieldError("optimization.settle_s", "must be in [0, 10] s, got " +
                                                   formatNumber(o.settle_s));
  if (!(o.time_limit_s >= 0) || !std::isfinite(o.time_limit_s))
    throw FieldError("optimization.time_limit_s",
                     "must be a finite number >= 0 (0: no deadline), got " +
                         formatNumber(o.time_limit_s));
  if (!(o.margin_m >= 0) || !std::isfinite(o.margin_m) || o.margin_m > 1.0)
    throw FieldError("optimization.margin_m", "must be in [0, 1] m, got " +
                                                   formatNumber(o.margin_m));
  positive("optimization.knots_per_s", o.knots_per_s);
  if (o.max_iterations < 1 || o.max_iterations > 10000)
    throw FieldError("optimization.max_iterations",
                     "must be in [1, 10000], got " + std::to_string(o.max_iterations));
  OptimizationWeights w = o.weights;
  for (const std::string& name : OptimizationWeights::names()) {
    const double v = *w.byName(name);
    if (!(v >= 0) || !std::isfinite(v))
      throw FieldError("optimization.weights" + fieldKey(name),
                       name + " must be a finite number >= 0, got " + formatNumber(v));
  }
}

std::string optimizerName(const OptimizationOptions& o) {
  return o.solver == OptimizationSolver::Ipopt ? "ipopt" : "interior-point";
}

bool parseOptimizer(const std::string& name, OptimizationOptions& out) {
  const OptimizationOptions defaults;
  if (name.empty() || name == "transcription") {
    out.solver = defaults.solver;
  } else if (name == "interior-point" || name == "ipopt") {
    out.solver = name == "ipopt" ? OptimizationSolver::Ipopt : OptimizationSolver::InteriorPoint;
  } else {
    return false;
  }
  return true;
}


std::string optimizationTooLarge(double duration_s, double rate_hz, double knots_per_s) {
  using L = OptimizationLimits;
  const double samples = std::round(duration_s * rate_hz) + 1;
  const double segments = std::max(3.0, std::round(duration_s * knots_per_s));
  if (!(samples <= L::kSamples))
    return formatNumber(samples) + " samples (at most " + formatNumber(L::kSamples) + ")";
  if (!(samples * (segments + 3) <= L::kBasisEntries))
    return formatNumber(samples) + " samples x " + formatNumber(segments + 3) +
           " control points (at most " + formatNumber(L::kBasisEntries) + ")";
  return {};
}

OptimizedPlan optimizePlan(const MotionProblem& request, const Plan& plan,
                           const OptimizationOptions& options, const ProgressFn& progress,
                           const CancelFn& cancelled) {
  const auto t0 = SteadyClock::now();
  const CancelScope scope(cancelled);
  checkOptimizationOptions(options);
  if (!request.model) throw FieldError("model", "none given");
  OptimizedPlan out{plan, {}};
  OptimizationReport& report = out.report;
  if (plan.samples() < 2) {
    report.message = "nothing to optimize: the plan has no motion";
    return out;
  }
  const std::string too_large =
      optimizationTooLarge(plan.duration_s(), plan.rate_hz, options.knots_per_s);
  if (!too_large.empty()) {
    report.message = "the plan is too long to optimize (" + too_large + ")";
    return out;
  }
  const CollisionModelPtr collision = collisionModelOf(request);
  detail::transcribePlan(request, collision, plan, options, t0, progress, cancelled, out);
  return out;
}

}  // namespace marionette

// SPDX-License-Identifier: BSD-3-Clause
// The one way a plan request goes through the library, for the server, the CLI and the
// benchmark alike: planMotion; then, when asked and a plan was found (exact or approximate),
// optimizePlan; then, when asked, the feedback gains along the plan that is returned.
//
// Contents
//   PipelineOptions  whether to optimize (and how), whether to compute gains (and with what).
//   PipelineResult   the plan as found, what optimizing it returned, why gains are missing.
//   runPipeline()
#pragma once

#include <optional>
#include <string>

#include "marionette/control/tracking_lqr.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct PipelineOptions {
  std::optional<OptimizationOptions> optimization;  // set: a plan found is then optimized
  std::optional<control::LqrWeights> gains;         // set: the feedback gains along the plan
};

struct PipelineResult {
  Plan plan;                               // as planMotion found and verified it
  std::optional<OptimizedPlan> optimized;  // when optimization was tried (timed on its own)
  std::string no_gains;  // gains were asked for and not computed: why ("" otherwise)
  // What the caller gets: the optimized plan when optimization was tried, else the plan; with
  // the gains when they were asked for and could be computed.
  const Plan& result() const { return optimized ? optimized->plan : plan; }
};

// Whether the pipeline optimizes `plan` when asked: any motion found, exact or approximate (a
// path that misses the goal is a warm start like any other).
inline bool optimizable(const Plan& plan) {
  return plan.outcome != PlanOutcome::NotFound && plan.samples() > 1;
}

// Throws what planMotion, optimizePlan and the gains' weights check throw (FieldError,
// PlanCancelled); a plan whose gains cannot be computed (a linearization that fails, a plan too
// long for them) is returned without them, with the reason in no_gains.
PipelineResult runPipeline(const PlanRequest& request, const PipelineOptions& options,
                           const ProgressFn& progress = {}, const CancelFn& cancelled = {});

}  // namespace marionette

#pragma GCC visibility pop

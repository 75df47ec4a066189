// SPDX-License-Identifier: BSD-3-Clause
// optimizePlan: the plan's motion fitted by the input spline, improved by Ipopt on the shooting
// problem, then verified exactly as planMotion verifies; the plan comes back unchanged unless
// the result is exact and cheaper.
#include "marionette/trajopt/trajectory_optimization.hpp"

#include <IpIpoptApplication.hpp>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/verification.hpp"
#include "ipopt_solver.hpp"
#include "plan_acceptance.hpp"
#include "transcription_optimization.hpp"
#include "trajectory_nlp.hpp"
#include "trajectory_problem.hpp"
#include "warm_starts.hpp"

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
  if (o.method == OptimizationMethod::Shooting) return "shooting";
  return o.solver == OptimizationSolver::Ipopt ? "ipopt" : "interior-point";
}

bool parseOptimizer(const std::string& name, OptimizationOptions& out) {
  const OptimizationOptions defaults;
  if (name == "shooting") {
    out.method = OptimizationMethod::Shooting;
  } else if (name.empty() || name == "transcription") {
    out.method = OptimizationMethod::Transcription;
    out.solver = defaults.solver;
  } else if (name == "interior-point" || name == "ipopt") {
    out.method = OptimizationMethod::Transcription;
    out.solver = name == "ipopt" ? OptimizationSolver::Ipopt : OptimizationSolver::InteriorPoint;
  } else {
    return false;
  }
  return true;
}


std::string optimizationTooLarge(int inputs, double duration_s, double rate_hz,
                                 double knots_per_s) {
  using L = OptimizationLimits;
  const double samples = std::round(duration_s * rate_hz) + 1;
  const double segments = std::max(3.0, std::round(duration_s * knots_per_s));
  const double variables = inputs * (segments - 2);
  if (!(samples <= L::kSamples))
    return formatNumber(samples) + " samples (at most " + formatNumber(L::kSamples) + ")";
  if (!(variables <= L::kVariables))
    return formatNumber(variables) + " spline variables (at most " +
           formatNumber(L::kVariables) + ")";
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
  const std::string too_large = optimizationTooLarge(request.model->nk(), plan.duration_s(),
                                                     plan.rate_hz, options.knots_per_s);
  if (!too_large.empty()) {
    report.message = "the plan is too long to optimize (" + too_large + ")";
    return out;
  }
  const CollisionModelPtr collision = collisionModelOf(request);
  if (options.method == OptimizationMethod::Transcription) {
    detail::transcribePlan(request, collision, plan, options, t0, cancelled, out);
    return out;
  }
  // Single shooting is paced by its time budget: the caller's deadline, else kShootingBudget_s.
  // The budget is a CancelScope of its own: it stops the work wherever it is (a rest pose,
  // a rollout's step), not only between the solver's iterations; the verification of what was
  // found comes after it.
  constexpr double kShootingBudget_s = 20.0;
  const double time_limit_s = options.time_limit_s > 0 ? options.time_limit_s : kShootingBudget_s;
  const auto budget_end = t0 + std::chrono::duration_cast<SteadyClock::duration>(
                                   std::chrono::duration<double>(time_limit_s));
  std::optional<CancelScope> budget;
  budget.emplace([budget_end] { return SteadyClock::now() >= budget_end; });
  report.method = "ipopt single shooting (Gauss-Newton Hessian), cubic B-spline inputs";
  std::vector<std::unique_ptr<detail::TrajectoryProblem>> problems;
  detail::TrajectoryProblem* chosen = nullptr;
  Eigen::VectorXd best;
  int status = 0;
  try {
    // The candidate starts, the rest pose at the goal searched within a share of the budget.
    const auto goal_search_end =
        t0 + std::chrono::duration_cast<SteadyClock::duration>(
                 std::chrono::duration<double>(0.25 * time_limit_s));
    detail::WarmStarts warm = detail::searchWarmStarts(
        request, collision, plan, options, detail::startOf(request, *collision, plan),
        goal_search_end);
    problems = std::move(warm.problems);
    const std::vector<detail::WarmStart>& starts = warm.ranked;
    if (warm.before_known) report.before = warm.before;
    if (warm.before_fitted)
      report.message = "the plan's motion cannot be rolled out in single steps (" +
                       warm.plan_failure + "); the cost before is its fit's by the spline";
    if (starts.empty()) {
      report.time_s = secondsSince(t0);
      report.message = "neither the plan's motion (" + warm.plan_failure +
                       ") nor a smoother motion to the goal can be rolled out in single steps; "
                       "the plan is unchanged";
      return out;
    }
    if (!warm.before_known) {
      starts.front().problem->evaluate(starts.front().z, detail::Evaluation::Value);
      report.before = starts.front().problem->cost();
      report.message = "neither the plan's motion nor its fit by the spline can be rolled out in "
                       "single steps (" + warm.plan_failure + "); the cost before is the start's";
    }
    // Within the budget, verification included: another iteration only if it and the
    // verification (less than an iteration: two value rollouts) fit, timed by the last one.
    // A start from which the solver has met nothing by half the time left when it began gives way
    // to the next.
    double last_call_s = secondsSince(t0), attempt_until_s = time_limit_s;
    const detail::TrajectoryNlp* attempt = nullptr;
    auto keepGoing = [&](const detail::TrajectoryNlp::Progress& p) {
      if (cancelled && cancelled()) return false;
      const double now_s = secondsSince(t0), iteration_s = now_s - last_call_s;
      last_call_s = now_s;
      if (attempt && attempt->best().size() == 0 && now_s > attempt_until_s) return false;
      if (progress) {
        PlanProgress e;
        e.phase = "optimize";
        e.elapsed_s = secondsSince(t0);
        e.iteration = p.iteration;
        e.cost = p.cost;
        e.constraint_violation = p.constraint_violation;
        progress(e);
      }
      return now_s + 2.0 * iteration_s < time_limit_s;
    };
    // From the best start; from the next ones while the solver finds no motion that meets the
    // limits and the goal and there is time left.
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const detail::WarmStart& start_point = starts[i];
      const double now_s = secondsSince(t0);
      if (chosen && now_s >= time_limit_s) break;
      attempt_until_s = i + 1 < starts.size() ? now_s + 0.5 * (time_limit_s - now_s)
                                              : time_limit_s;
      chosen = start_point.problem;
      std::ostringstream m;
      m << "ipopt single shooting (Gauss-Newton Hessian), cubic B-spline inputs, "
        << chosen->spline().segments() << " segments over "
        << formatNumber(chosen->spline().duration_s()) << " s, from " << start_point.name;
      report.method = m.str();
      Ipopt::SmartPtr<detail::TrajectoryNlp> nlp =
          new detail::TrajectoryNlp(*chosen, start_point.z, keepGoing);
      attempt = GetRawPtr(nlp);
      const Ipopt::ApplicationReturnStatus solved = detail::solveInTurn(
          detail::trajectorySolver(options.max_iterations, start_point.cost), nlp);
      if (solved == Ipopt::Invalid_Option) {
        report.message = "the solver could not start (its options)";
        return out;
      }
      status = static_cast<int>(solved);
      if (cancelled && cancelled()) throw PlanCancelled("plan optimization");
      report.iterations += nlp->iterations();
      best = nlp->best();
      if (best.size() > 0) break;
    }
  } catch (const PlanCancelled&) {
    const bool budget_spent = SteadyClock::now() >= budget_end;
    budget.reset();
    if (!budget_spent) throw;               // the caller's cancel
    throwIfCancelled("plan optimization");  // and the caller's, should it have come too
    for (const auto& p : problems) report.evaluations += p->rollouts();
    report.time_s = secondsSince(t0);
    report.message = "the time limit (" + formatNumber(time_limit_s) +
                     " s) ran out before a motion that meets the limits and the goal was found";
    return out;
  }
  budget.reset();
  throwIfCancelled("plan optimization");
  for (const auto& p : problems) report.evaluations += p->rollouts();
  if (best.size() == 0) {
    report.time_s = secondsSince(t0);
    report.message = "no motion met the limits and the goal (solver status " +
                     std::to_string(status) + ")";
    if (report.time_s >= time_limit_s)
      report.message += " before the time limit (" + formatNumber(time_limit_s) +
                        " s) ran out";
    return out;
  }
  chosen->evaluate(best, detail::Evaluation::Value);  // its cost: no derivatives past the budget
  report.after = chosen->cost();

  // The candidate, verified as every plan is.
  Plan candidate = plan;
  candidate.inputs = chosen->spline().sampleInputs(best);
  detail::acceptCandidate(request, collision, plan, std::move(candidate), options, t0, out);
  return out;
}

}  // namespace marionette

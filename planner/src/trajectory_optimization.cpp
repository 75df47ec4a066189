// optimizePlan: the plan's motion fitted by the input spline, improved by Ipopt on the shooting
// problem, then verified exactly as planMotion verifies; the plan comes back unchanged unless
// the result is exact and cheaper.
#include "marionette/planner/trajectory_optimization.hpp"

#include <IpIpoptApplication.hpp>
#include <cmath>
#include <sstream>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/planner/plan_quality.hpp"
#include "plan_verification.hpp"
#include "trajectory_nlp.hpp"
#include "trajectory_problem.hpp"

namespace marionette {

void checkOptimizationOptions(const OptimizationOptions& o) {
  auto positive = [](const char* field, double v) {
    if (!(v > 0) || !std::isfinite(v))
      throw FieldError(field, "must be a finite number > 0, got " + formatNumber(v));
  };
  if (!(o.settle_s >= 0) || !std::isfinite(o.settle_s) || o.settle_s > 10)
    throw FieldError("optimization.settle_s", "must be in [0, 10] s, got " +
                                                   formatNumber(o.settle_s));
  positive("optimization.time_limit_s", o.time_limit_s);
  if (!(o.margin_m >= 0) || !std::isfinite(o.margin_m) || o.margin_m > 1.0)
    throw FieldError("optimization.margin_m", "must be in [0, 1] m, got " +
                                                   formatNumber(o.margin_m));
  positive("optimization.knots_per_s", o.knots_per_s);
  if (o.max_iterations < 1)
    throw FieldError("optimization.max_iterations", "must be at least 1");
  OptimizationWeights w = o.weights;
  for (const std::string& name : OptimizationWeights::names()) {
    const double v = *w.byName(name);
    if (!(v >= 0) || !std::isfinite(v))
      throw FieldError("optimization.weights" + fieldKey(name),
                       name + " must be a finite number >= 0, got " + formatNumber(v));
  }
}

OptimizedPlan optimizePlan(const PlanRequest& request, const Plan& plan,
                           const OptimizationOptions& options, const ProgressFn& progress,
                           const CancelFn& cancelled) {
  const auto t0 = SteadyClock::now();
  checkOptimizationOptions(options);
  if (!request.model) throw FieldError("model", "none given");
  const ModelPtr& model = request.model;
  OptimizedPlan out{plan, {}};
  OptimizationReport& report = out.report;
  if (plan.samples() < 2) {
    report.message = "nothing to optimize: the plan has no motion";
    return out;
  }
  CollisionModelPtr collision = request.collision;
  if (!collision) {
    ScenePtr scene = request.scene ? request.scene : loadScene("empty");
    collision = std::make_shared<CollisionModel>(model, scene);
  }

  // The start, exactly as the verification resolves it.
  const Eigen::VectorXd rho0 = plan.inputs.row(0).transpose();
  const StartState start = resolveStart(model, rho0, request.start);
  IntegratorOptions io;
  io.dt_s = 1.0 / plan.rate_hz;
  VariationalIntegrator vi(model, io);

  detail::ProblemSetup setup;
  setup.model = model;
  setup.goal = request.goal;
  setup.start = vi.stateFromVelocity(start.q, start.qdot, rho0);
  setup.rate_hz = plan.rate_hz;
  setup.duration_s = plan.duration_s();
  setup.segments = std::max(3, static_cast<int>(std::lround(setup.duration_s *
                                                            options.knots_per_s)));
  setup.settle_s = options.settle_s;
  setup.weights = options.weights;
  setup.end_reference = plan.inputs.row(plan.samples() - 1).transpose();
  setup.collision = collision;
  // The penalty starts half a margin (at least 5 mm) farther out, so that the balance of the
  // terms settles clear of the margin rather than on it.
  setup.margin_m = options.margin_m > 0 ? options.margin_m + std::max(0.005, 0.5 * options.margin_m)
                                        : 0.0;
  detail::TrajectoryProblem problem(setup);
  {
    std::ostringstream m;
    m << "ipopt single shooting (Gauss-Newton Hessian), cubic B-spline inputs, " << setup.segments
      << " segments";
    report.method = m.str();
  }
  // The plan's motion fitted by the spline is what the optimization must beat.  It starts from
  // the cheapest of that fit, coarser fits (the motion's course without its wiggles) and a
  // smooth transfer to the plan's end inputs, of those that can be rolled out in single steps
  // (the linearization's).  When the fit cannot be, the start's cost is the one to beat.
  const detail::InputSpline& spline = problem.spline();
  const Eigen::VectorXd fitted = spline.fit(plan.inputs);
  const bool fit_rolls_out = problem.evaluate(fitted, detail::Evaluation::Value);
  const std::string fit_failure = problem.failure();
  std::vector<Eigen::VectorXd> starts = {fitted};
  for (int segments : {3, spline.segments() / 2})
    starts.push_back(spline.smoothedFit(plan.inputs, segments));
  starts.push_back(spline.transfer(plan.inputs.row(plan.samples() - 1).transpose()));
  Eigen::VectorXd z0;
  double start_cost = std::numeric_limits<double>::infinity();
  for (const Eigen::VectorXd& z : starts)
    if (problem.evaluate(z, detail::Evaluation::Value) && problem.cost().total() < start_cost) {
      z0 = z;
      start_cost = problem.cost().total();
      if (!fit_rolls_out) report.before = problem.cost();
    }
  if (fit_rolls_out && problem.evaluate(fitted, detail::Evaluation::Value))
    report.before = problem.cost();
  if (z0.size() == 0) {
    report.time_s = secondsSince(t0);
    report.message = "neither the plan's motion, fitted by the spline (" + fit_failure +
                     "), nor a smoother version of it can be rolled out in single steps; the "
                     "plan is unchanged";
    return out;
  }
  if (!fit_rolls_out)
    report.message = "the plan's motion, fitted by the spline, cannot be rolled out in single "
                     "steps (" + fit_failure + "); the cost before is its smoothed start's";
  auto keepGoing = [&](const detail::TrajectoryNlp::Progress& p) {
    if (cancelled && cancelled()) return false;
    if (progress) {
      PlanProgress e;
      e.phase = "optimize";
      e.elapsed_s = secondsSince(t0);
      e.iteration = p.iteration;
      e.cost = p.cost;
      e.constraint_violation = p.constraint_violation;
      progress(e);
    }
    return secondsSince(t0) < options.time_limit_s;
  };
  Ipopt::SmartPtr<detail::TrajectoryNlp> nlp = new detail::TrajectoryNlp(problem, z0, keepGoing);
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = IpoptApplicationFactory();
  app->Options()->SetIntegerValue("print_level", 0);
  app->Options()->SetStringValue("sb", "yes");
  // The Hessian is the objective's Gauss-Newton one (TrajectoryNlp::eval_h).
  app->Options()->SetStringValue("mu_strategy", "adaptive");
  app->Options()->SetIntegerValue("max_iter", options.max_iterations);
  app->Options()->SetNumericValue("tol", 1e-6);
  app->Options()->SetNumericValue("acceptable_tol", 1e-3);
  // The objective in units of the starting motion's: O(1) like the constraints' rows.
  if (start_cost > 0) app->Options()->SetNumericValue("obj_scaling_factor", 1.0 / start_cost);
  if (app->Initialize() != Ipopt::Solve_Succeeded) {
    report.message = "the solver could not start";
    return out;
  }
  const Ipopt::ApplicationReturnStatus status = app->OptimizeTNLP(nlp);
  if (cancelled && cancelled()) throw PlanCancelled("plan optimization");
  report.iterations = nlp->iterations();
  report.evaluations = problem.rollouts();

  if (nlp->best().size() == 0) {
    report.time_s = secondsSince(t0);
    report.message = "no motion met the limits and the goal (solver status " +
                     std::to_string(static_cast<int>(status)) + ")";
    return out;
  }
  problem.evaluate(nlp->best());
  report.after = problem.cost();

  // The candidate, verified as every plan is.
  Plan candidate = plan;
  candidate.inputs = problem.spline().sampleInputs(nlp->best());
  candidate.limit_violations.clear();
  candidate.goal_sample = -1;
  candidate.goal_distance_min = std::numeric_limits<double>::infinity();
  try {
    detail::verifyPlan(request, collision, candidate);
  } catch (const SimulationError& e) {
    report.time_s = secondsSince(t0);
    report.message = std::string("the optimized motion's re-simulation failed: ") + e.what();
    return out;
  }
  candidate.clearance_margin_m = options.margin_m;
  detail::classifyPlan(request.goal, candidate);
  report.time_s = secondsSince(t0);
  // Short of the margin only: the best verified plan when the plan given is short of it too
  // (approximate, saying so); else the plan given, which keeps it.
  const bool only_margin = candidate.outcome == PlanOutcome::Approximate &&
                           candidate.collision_free && candidate.goal_sample >= 0 &&
                           candidate.limit_violations.empty();
  const bool given_meets_margin = !(plan.min_stage_clearance_m < options.margin_m);
  if (candidate.outcome != PlanOutcome::Exact && !(only_margin && !given_meets_margin)) {
    report.message = "the optimized motion is not exact (" + candidate.message +
                     "); the plan is unchanged";
    return out;
  }
  // Cheaper by at least 1 % (and by more than rounding): else not worth changing the plan.
  if (!(report.after.total() < 0.99 * report.before.total() - 1e-12)) {
    report.message = "no motion 1 % cheaper found (cost " + formatNumber(report.before.total()) +
                     " -> " + formatNumber(report.after.total()) + "); the plan is unchanged";
    return out;
  }
  measurePlanQuality(request, candidate, options.settle_s);
  candidate.stats.total_time_s = plan.stats.total_time_s + report.time_s;
  if (only_margin) report.message = "could not meet the margin: " + candidate.message;
  out.plan = std::move(candidate);
  report.improved = true;
  return out;
}

}  // namespace marionette

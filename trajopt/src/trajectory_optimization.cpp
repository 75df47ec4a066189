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
#include "marionette/models/rig_trajectory.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/goal_rest_pose.hpp"
#include "marionette/problem/verification.hpp"
#include "ipopt_solver.hpp"
#include "plan_acceptance.hpp"
#include "transcription_optimization.hpp"
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

const char* toString(OptimizationMethod m) {
  return m == OptimizationMethod::Transcription ? "transcription" : "shooting";
}

bool parseOptimizationMethod(const std::string& name, OptimizationMethod& out) {
  if (name.empty() || name == "shooting")
    out = OptimizationMethod::Shooting;
  else if (name == "transcription")
    out = OptimizationMethod::Transcription;
  else
    return false;
  return true;
}

namespace {

// `samples` stretched (or compressed) in time to `rows` rows, linearly interpolated.
Eigen::MatrixXd stretched(const Eigen::MatrixXd& samples, int rows) {
  const int n = static_cast<int>(samples.rows());
  if (rows == n || n < 2) return samples;
  Eigen::MatrixXd out(rows, samples.cols());
  for (int r = 0; r < rows; ++r) {
    const double x = rows > 1 ? r * (n - 1.0) / (rows - 1.0) : 0.0;
    const int i = std::min(static_cast<int>(x), n - 2);
    const double w = x - i;
    out.row(r) = (1 - w) * samples.row(i) + w * samples.row(i + 1);
  }
  return out;
}

// The durations the search for a start tries: the plan's own first, shorter and longer ones,
// and multiples of the shortest comfortable transfer's (1.25 x the limits' bound), on the sample
// grid, none shorter than that transfer or 0.2 s.
std::vector<double> candidateDurations(const Model& model, double plan_duration_s, double rate_hz,
                                       const Eigen::VectorXd& rho0, const Eigen::VectorXd& rho_end,
                                       const std::optional<Eigen::VectorXd>& goal_rest) {
  const double dt = 1.0 / rate_hz;
  double shortest = moveDuration(model, rho0, rho_end, dt, 1.0);
  if (goal_rest)
    shortest = std::max(shortest, moveDuration(model, rho0, *goal_rest, dt, 1.0));
  shortest = std::max(0.2, 1.25 * shortest);
  std::vector<double> out = {plan_duration_s};
  auto add = [&](double T) {
    T = std::lround(T * rate_hz) / rate_hz;
    if (T < shortest - 0.5 / rate_hz) return;
    for (double d : out)
      if (std::abs(d - T) < 0.5 / rate_hz) return;
    out.push_back(T);
  };
  for (double f : {0.5, 0.75, 1.25, 1.5}) add(f * plan_duration_s);
  for (double f : {1.0, 1.5, 2.0, 3.0}) add(f * shortest);
  return out;
}

// The inputs of a collision-free rest pose that meets the goal (within half its tolerance),
// by damped Gauss-Newton on the rest pose's inputs (the roadmap's goal search) from the rest
// poses of the plan's inputs where it first reaches the goal, where it ends, and at its start;
// nullopt when none is found by the deadline.
std::optional<Eigen::VectorXd> restInputsAtGoal(const MotionProblem& request,
                                                const CollisionModelPtr& collision,
                                                const Plan& plan, const StartState& start,
                                                SteadyClock::time_point deadline) {
  CollisionChecker checker(collision);
  GoalEvaluator goal(request.model, request.goal);
  const double aim = 0.5 * goal.tolerance();
  const auto in_time = [&] { return SteadyClock::now() < deadline; };
  std::vector<std::pair<Eigen::VectorXd, const Eigen::VectorXd*>> froms;
  if (plan.goal_sample >= 0 && plan.goal_sample < plan.samples())
    froms.emplace_back(plan.inputs.row(plan.goal_sample).transpose(), nullptr);
  froms.emplace_back(plan.inputs.row(plan.samples() - 1).transpose(), nullptr);
  froms.emplace_back(plan.inputs.row(0).transpose(), &start.q);
  for (const auto& [rho, guess] : froms) {
    if (!in_time()) break;
    const auto from = restVertex(request.model, checker, rho, guess);
    if (!from) continue;
    if (goal.poseError(from->q, from->rho) <= aim) return from->rho;
    if (const auto v = descendToGoal(request.model, checker, goal, *from, aim, in_time))
      return v->rho;
    std::mt19937_64 rng(plan.seed ? plan.seed : 1);
    const auto found = randomDescent(request.model, checker, goal, *from, aim, rng,
                                              in_time);
    if (found) return found->rho;
  }
  return std::nullopt;
}

}  // namespace

OptimizedPlan optimizePlan(const MotionProblem& request, const Plan& plan,
                           const OptimizationOptions& options, const ProgressFn& progress,
                           const CancelFn& cancelled) {
  const auto t0 = SteadyClock::now();
  const CancelScope scope(cancelled);
  checkOptimizationOptions(options);
  if (!request.model) throw FieldError("model", "none given");
  const ModelPtr& model = request.model;
  OptimizedPlan out{plan, {}};
  OptimizationReport& report = out.report;
  if (plan.samples() < 2) {
    report.message = "nothing to optimize: the plan has no motion";
    return out;
  }
  const CollisionModelPtr collision = collisionModelOf(request);
  if (options.method == OptimizationMethod::Transcription) {
    detail::transcribePlan(request, collision, plan, options, t0, cancelled, out);
    return out;
  }
  // The time budget is a CancelScope of its own: it stops the work wherever it is (a rest pose,
  // a rollout's step), not only between the solver's iterations; the verification of what was
  // found comes after it.
  const auto budget_end = t0 + std::chrono::duration_cast<SteadyClock::duration>(
                                   std::chrono::duration<double>(options.time_limit_s));
  std::optional<CancelScope> budget;
  budget.emplace([budget_end] { return SteadyClock::now() >= budget_end; });
  report.method = "ipopt single shooting (Gauss-Newton Hessian), cubic B-spline inputs";
  std::vector<std::unique_ptr<detail::TrajectoryProblem>> problems;
  detail::TrajectoryProblem* chosen = nullptr;
  Eigen::VectorXd best;
  int status = 0;
  try {
    // The start, exactly as the verification resolves it.
    const Eigen::VectorXd rho0 = plan.inputs.row(0).transpose();
    const StartState start = resolveStart(model, rho0, request.start);
    IntegratorOptions io;
    io.dt_s = 1.0 / plan.rate_hz;
    VariationalIntegrator vi(model, io);

    // A rest pose that meets the goal: the end's static tensions (the tension terms' reference)
    // and the end of the transfer starts.  Searched from the rest poses of the plan's inputs where
    // it reaches the goal, where it ends, and at its start, within a share of the time budget.
    const Eigen::VectorXd rho_end = plan.inputs.row(plan.samples() - 1).transpose();
    const auto goal_search_end =
        t0 + std::chrono::duration_cast<SteadyClock::duration>(
                 std::chrono::duration<double>(0.25 * options.time_limit_s));
    const std::optional<Eigen::VectorXd> goal_rest =
        restInputsAtGoal(request, collision, plan, start, goal_search_end);

    detail::ProblemSetup setup;
    setup.model = model;
    setup.goal = request.goal;
    setup.start = vi.stateFromVelocity(start.q, start.qdot, rho0);
    setup.rate_hz = plan.rate_hz;
    setup.settle_s = options.settle_s;
    setup.weights = options.weights;
    setup.end_reference = goal_rest ? *goal_rest : rho_end;
    setup.collision = collision;
    // The penalty starts half a margin (at least 5 mm) farther out, so that the balance of the
    // terms settles clear of the margin rather than on it.
    setup.margin_m = options.margin_m > 0
                         ? options.margin_m + std::max(0.005, 0.5 * options.margin_m)
                         : 0.0;
    auto problemOf = [&](double duration_s, double knots_per_s) {
      detail::ProblemSetup s = setup;
      s.duration_s = duration_s;
      s.segments = std::max(3, static_cast<int>(std::lround(duration_s * knots_per_s)));
      return std::make_unique<detail::TrajectoryProblem>(s);
    };

    // The plan's own motion is what the optimization must beat; when it cannot be rolled out in
    // single steps (the linearization's), its fit by the spline, or else the best start.
    const double plan_duration_s = plan.duration_s();
    std::unique_ptr<detail::TrajectoryProblem> problem =
        problemOf(plan_duration_s, options.knots_per_s);
    bool before_known = problem->evaluateSamples(plan.inputs);
    const std::string plan_failure = problem->failure();
    if (before_known) report.before = problem->cost();
    if (!before_known &&
        problem->evaluate(problem->spline().fit(plan.inputs), detail::Evaluation::Value)) {
      report.before = problem->cost();
      before_known = true;
      report.message = "the plan's motion cannot be rolled out in single steps (" + plan_failure +
                       "); the cost before is its fit's by the spline";
    }

    // The duration is a variable of the search for a start: at each candidate duration, the
    // plan's motion fitted (stretched in time), coarser fits of it (its course without its
    // wiggles) and smooth transfers to the plan's end inputs and to the goal's rest pose, of those
    // that can be rolled out in single steps (the linearization's).  Ipopt then shapes the inputs
    // at the duration of the best start: the nearest to meeting the limits and the goal, then the
    // cheapest (the duration's own term included).
    const std::vector<double> durations =
        candidateDurations(*model, plan_duration_s, plan.rate_hz, rho0, rho_end, goal_rest);
    struct Start {
      bool feasible;     // meets the limits and the goal, every sample clear of collision
      double violation;  // else how far from meeting them (within a tenth of their scales: 0.1)
      double cost;
      detail::TrajectoryProblem* problem;
      Eigen::VectorXd z;
      std::string name;
    };
    std::vector<Start> starts;
    auto addStart = [&](detail::TrajectoryProblem& at, Eigen::VectorXd z, const std::string& name) {
      if (!at.evaluate(z, detail::Evaluation::Value)) return;
      const double violation = at.constraintViolation();
      starts.push_back({violation == 0 && at.minClearance() > 0, std::max(0.1, violation),
                        at.cost().total(), &at, std::move(z), name});
    };
    for (double duration_s : durations) {
      if (duration_s == plan_duration_s)
        problems.push_back(std::move(problem));
      else
        problems.push_back(problemOf(duration_s, options.knots_per_s));
      detail::TrajectoryProblem& at = *problems.back();
      const detail::InputSpline& spline = at.spline();
      const Eigen::MatrixXd motion = stretched(plan.inputs, spline.samples());
      std::vector<std::pair<std::string, Eigen::VectorXd>> tries = {
          {"the plan's motion", spline.fit(motion)}};
      for (int segments : {3, spline.segments() / 2})
        tries.emplace_back("the plan's motion smoothed", spline.smoothedFit(motion, segments));
      tries.emplace_back("a transfer to the plan's end inputs", spline.transfer(rho_end));
      if (goal_rest)
        tries.emplace_back("a transfer to a rest pose at the goal", spline.transfer(*goal_rest));
      for (auto& [name, z] : tries) addStart(at, std::move(z), name);
    }
    // A plan that reaches its goal swinging loses it in those fits (arm3d behind the pillars):
    // when no start meets everything, the plan's own motion up to where it first meets a goal it
    // need not rest at, through a spline that follows it (a segment per two samples).  The
    // solver's best point can then be no worse than that.
    if (std::none_of(starts.begin(), starts.end(), [](const Start& a) { return a.feasible; })) {
      const Eigen::MatrixXd reach = !request.goal.at_rest && plan.goal_sample > 0
                                        ? Eigen::MatrixXd(plan.inputs.topRows(plan.goal_sample + 1))
                                        : plan.inputs;
      problems.push_back(problemOf((reach.rows() - 1) / plan.rate_hz, 0.5 * plan.rate_hz));
      detail::TrajectoryProblem& fine = *problems.back();
      addStart(fine, fine.spline().fit(reach), "the plan's motion, finely fitted");
    }
    // The nearest to meeting the limits and the goal first, then the cheapest; then, if that one
    // does not meet them outright, the cheapest that does (from it the solver's best point is at
    // least as good), should the first lead nowhere.
    std::sort(starts.begin(), starts.end(), [](const Start& a, const Start& b) {
      return std::make_pair(a.violation, a.cost) < std::make_pair(b.violation, b.cost);
    });
    const auto feasible = std::find_if(starts.begin(), starts.end(),
                                       [](const Start& a) { return a.feasible; });
    if (feasible != starts.end() && feasible - starts.begin() > 1)
      std::rotate(starts.begin() + 1, feasible, feasible + 1);
    if (starts.empty()) {
      report.time_s = secondsSince(t0);
      report.message = "neither the plan's motion (" + plan_failure +
                       ") nor a smoother motion to the goal can be rolled out in single steps; "
                       "the plan is unchanged";
      return out;
    }
    if (!before_known) {
      starts.front().problem->evaluate(starts.front().z, detail::Evaluation::Value);
      report.before = starts.front().problem->cost();
      report.message = "neither the plan's motion nor its fit by the spline can be rolled out in "
                       "single steps (" + plan_failure + "); the cost before is the start's";
    }
    // Within the budget, verification included: another iteration only if it and the
    // verification (less than an iteration: two value rollouts) fit, timed by the last one.
    // A start from which the solver has met nothing by half the time left when it began gives way
    // to the next.
    double last_call_s = secondsSince(t0), attempt_until_s = options.time_limit_s;
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
      return now_s + 2.0 * iteration_s < options.time_limit_s;
    };
    // From the best start; from the next ones while the solver finds no motion that meets the
    // limits and the goal and there is time left.
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const Start& start_point = starts[i];
      const double now_s = secondsSince(t0);
      if (chosen && now_s >= options.time_limit_s) break;
      attempt_until_s = i + 1 < starts.size() ? now_s + 0.5 * (options.time_limit_s - now_s)
                                              : options.time_limit_s;
      chosen = start_point.problem;
      std::ostringstream m;
      m << "ipopt single shooting (Gauss-Newton Hessian), cubic B-spline inputs, "
        << chosen->spline().segments() << " segments over "
        << formatNumber(chosen->spline().duration_s()) << " s, from " << start_point.name;
      report.method = m.str();
      Ipopt::SmartPtr<detail::TrajectoryNlp> nlp =
          new detail::TrajectoryNlp(*chosen, start_point.z, keepGoing);
      attempt = GetRawPtr(nlp);
      Ipopt::SmartPtr<Ipopt::IpoptApplication> app =
          detail::trajectorySolver(options.max_iterations, start_point.cost);
      if (app->Initialize() != Ipopt::Solve_Succeeded) {
        report.message = "the solver could not start";
        return out;
      }
      status = static_cast<int>(app->OptimizeTNLP(nlp));
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
    report.message = "the time limit (" + formatNumber(options.time_limit_s) +
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
    if (report.time_s >= options.time_limit_s)
      report.message += " before the time limit (" + formatNumber(options.time_limit_s) +
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

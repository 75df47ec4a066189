// SPDX-License-Identifier: BSD-3-Clause
#include "transcription_optimization.hpp"

#include <IpIpoptApplication.hpp>
#include <cmath>
#include <sstream>

#include "ipopt_solver.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/simulation.hpp"
#include "plan_acceptance.hpp"
#include "transcription_nlp.hpp"
#include "transcription_problem.hpp"

namespace marionette::detail {

void transcribePlan(const MotionProblem& request, const CollisionModelPtr& collision,
                    const Plan& plan, const OptimizationOptions& options,
                    SteadyClock::time_point t0, const CancelFn& cancelled, OptimizedPlan& out) {
  OptimizationReport& report = out.report;
  const ModelPtr& model = request.model;
  const double dt = 1.0 / plan.rate_hz;
  const Eigen::VectorXd rho0 = plan.inputs.row(0).transpose();
  const StartState start = resolveStart(model, rho0, request.start);

  TranscriptionSetup setup;
  setup.model = model;
  setup.integrator.dt_s = dt;
  VariationalIntegrator vi(model, setup.integrator);
  setup.start = vi.stateFromVelocity(start.q, start.qdot, rho0);
  // The plan's motion, then its last inputs held for the settle time: the puppet must be at rest
  // by the end.
  const int hold = std::max(setup.rest_knots + 2,
                            static_cast<int>(std::lround(options.settle_s * plan.rate_hz)));
  setup.intervals = plan.samples() - 1 + hold;
  setup.goal = request.goal;
  setup.collision = collision;
  // Rows half a margin (at least 5 mm) farther out than the margin the plan must keep, so that
  // the re-simulation's difference from the solver's motion does not take it below.
  setup.margin_m =
      options.margin_m > 0 ? options.margin_m + std::max(0.005, 0.5 * options.margin_m) : 0.0;
  setup.self_margin_m = 0.002;
  // The caller's weights, relative to the shooting problem's defaults, scale the
  // transcription's own.
  const OptimizationWeights defaults;
  setup.weights.effort *= options.weights.effort / defaults.effort;
  setup.weights.jerk *= options.weights.jerk / defaults.jerk;
  setup.weights.swing *= options.weights.swing / defaults.swing;
  setup.weights.tension_rate *= options.weights.tension_rate / defaults.tension_rate;
  Eigen::MatrixXd guess(setup.intervals + 1, model->nk());
  for (int k = 0; k <= setup.intervals; ++k)
    guess.row(k) = plan.inputs.row(std::min(k, plan.samples() - 1));

  TranscriptionProblem problem(setup);
  bool capped = false;
  auto keep_going = [&](int) {
    if (cancelled && cancelled()) return false;
    capped = secondsSince(t0) >= options.time_limit_s;
    return !capped;
  };
  std::ostringstream method;
  method << "ipopt contact-implicit transcription of the variational integrator, "
         << setup.intervals << " steps of " << formatNumber(dt) << " s, from the plan's motion";
  report.method = method.str();
  // The penalty is exact above a weight the solution's multipliers set: while a solution is not
  // complementary (a string pulling while slack), the weight is raised tenfold and the solve
  // continues from it, within the one iteration budget.
  Eigen::VectorXd z = problem.initialGuess(guess);
  Ipopt::ApplicationReturnStatus status = Ipopt::Solve_Succeeded;
  bool solved = false;
  double violation = 0.0;
  for (int round = 0; round < 3; ++round) {
    const int left = options.max_iterations - report.iterations;
    if (left <= 0 || capped) break;
    Ipopt::SmartPtr<TranscriptionNlp> nlp = new TranscriptionNlp(problem, z, keep_going);
    Ipopt::SmartPtr<Ipopt::IpoptApplication> app = transcriptionSolver(left);
    if (app->Initialize() != Ipopt::Solve_Succeeded) {
      report.message = "the solver could not start";
      return;
    }
    status = app->OptimizeTNLP(nlp);
    if (cancelled && cancelled()) throw PlanCancelled("plan optimization");
    report.iterations += nlp->iterations();
    if (nlp->solution().size() == 0) break;
    z = nlp->solution();
    solved = true;
    violation = problem.complementarityViolation(z);
    if (violation <= 1e-6 || status != Ipopt::Solve_Succeeded) break;
    problem.setComplementarityWeight(10 * problem.complementarityWeight());
  }
  if (!solved) {
    report.time_s = secondsSince(t0);
    report.message = "the solver ended without a motion (status " +
                     std::to_string(static_cast<int>(status)) + ")";
    return;
  }
  Plan candidate = plan;
  candidate.inputs = problem.inputs(z);
  acceptCandidate(request, collision, plan, std::move(candidate), options, t0, out, false);
  std::string how;
  if (capped)
    how = "the wall-clock cap (" + formatNumber(options.time_limit_s) + " s) stopped the solver";
  else if (status == Ipopt::Maximum_Iterations_Exceeded ||
           report.iterations >= options.max_iterations)
    how = "the solver used its " + std::to_string(options.max_iterations) + " iterations";
  else if (status != Ipopt::Solve_Succeeded)
    how = "the solver stopped (status " + std::to_string(static_cast<int>(status)) + ")";
  else if (violation > 1e-6)
    how = "the solution is not complementary (" + formatNumber(violation) +
          ") at the largest penalty weight";
  if (!how.empty())
    report.message = how + " after " + std::to_string(report.iterations) + " iterations" +
                     (report.message.empty() ? "" : "; " + report.message);
}

}  // namespace marionette::detail

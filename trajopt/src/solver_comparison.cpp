// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/trajopt/solver_comparison.hpp"

#include "marionette/common/clock.hpp"
#include "nlp_solve.hpp"
#include "transcription_optimization.hpp"

namespace marionette {

SolverComparison compareSolvers(const MotionProblem& request, const Plan& plan,
                                const OptimizationOptions& options, bool ipopt_first) {
  checkOptimizationOptions(options);
  const CollisionModelPtr collision = collisionModelOf(request);
  const StartState start = detail::startOf(request, *collision, plan);
  const detail::WarmStarts warm = detail::searchWarmStarts(
      request, collision, plan, options, start, SteadyClock::time_point::max());
  detail::PreparedTranscription prepared = detail::prepareTranscription(
      request, collision, plan, options, warm, start, detail::coarseKnotFactor(plan.rate_hz));
  detail::TranscriptionProblem& problem = *prepared.problem;
  SolverComparison out;
  out.variables = problem.variables();
  out.constraints = problem.constraints();
  out.knots = static_cast<int>(problem.inputs(prepared.z0).rows());
  out.method = prepared.method;
  for (int r = 0; r < 2; ++r) {
    const bool ipopt = (r == 0) == ipopt_first;
    const auto t0 = SteadyClock::now();
    const detail::InteriorPointResult solved = detail::solveNlp(
        problem, prepared.z0, options.max_iterations,
        ipopt ? detail::NlpSolver::kIpopt : detail::NlpSolver::kInteriorPoint);
    SolverRun run;
    run.time_s = secondsSince(t0);
    run.solver = ipopt ? "ipopt" : "interior-point";
    run.status = detail::describe(solved.status);
    run.iterations = solved.iterations;
    run.objective = solved.objective;
    run.violation = solved.primal_infeasibility;
    run.factorizations = solved.factorizations;
    run.solves = solved.solves;
    run.factorization_s = solved.factorization_s;
    run.solve_s = solved.solve_s;
    run.evaluation_s = solved.evaluation_s;
    out.runs.push_back(run);
  }
  return out;
}

}  // namespace marionette

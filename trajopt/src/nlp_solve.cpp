// SPDX-License-Identifier: BSD-3-Clause
#include "nlp_solve.hpp"

#include "ipopt_nlp.hpp"
#include "ipopt_solver.hpp"

namespace marionette::detail {

InteriorPointResult solveNlp(SparseNlp& nlp, const Eigen::VectorXd& start, int max_iterations,
                             NlpSolver solver, const KeepGoing& keep_going) {
  if (solver == NlpSolver::kInteriorPoint) {
    InteriorPointOptions options;
    options.max_iterations = max_iterations;
    return solveInteriorPoint(nlp, start, options, keep_going);
  }
  Ipopt::SmartPtr<IpoptNlp> adapter = new IpoptNlp(nlp, start, keep_going);
  const Ipopt::ApplicationReturnStatus status =
      solveInTurn(transcriptionSolver(max_iterations), adapter);
  InteriorPointResult out;
  out.iterations = adapter->iterations();
  out.z = adapter->solution();
  out.lambda = adapter->multipliers();
  switch (status) {
    case Ipopt::Solve_Succeeded: out.status = InteriorPointStatus::kConverged; break;
    case Ipopt::Maximum_Iterations_Exceeded: out.status = InteriorPointStatus::kIterationLimit; break;
    case Ipopt::User_Requested_Stop: out.status = InteriorPointStatus::kStopped; break;
    case Ipopt::Restoration_Failed:
    case Ipopt::Search_Direction_Becomes_Too_Small:
      out.status = InteriorPointStatus::kLineSearchFailed;
      break;
    case Ipopt::Invalid_Number_Detected: out.status = InteriorPointStatus::kEvaluationFailed; break;
    default: out.status = InteriorPointStatus::kNumericalTrouble; break;
  }
  if (out.z.size() > 0 && nlp.evaluate(out.z, false)) {
    out.objective = nlp.cost();
    double worst = 0.0;
    Eigen::VectorXd zl, zu, gl, gu;
    nlp.bounds(zl, zu, gl, gu);
    const Eigen::VectorXd& g = nlp.rows();
    for (Eigen::Index r = 0; r < g.size(); ++r) worst = std::max({worst, gl[r] - g[r], g[r] - gu[r]});
    out.primal_infeasibility = worst;
  }
  return out;
}

}  // namespace marionette::detail

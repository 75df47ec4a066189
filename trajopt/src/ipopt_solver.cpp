// SPDX-License-Identifier: BSD-3-Clause
#include "ipopt_solver.hpp"

namespace marionette::detail {

Ipopt::SmartPtr<Ipopt::IpoptApplication> quietIpopt() {
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = IpoptApplicationFactory();
  app->Options()->SetIntegerValue("print_level", 0);
  app->Options()->SetStringValue("sb", "yes");
  return app;
}

Ipopt::SmartPtr<Ipopt::IpoptApplication> trajectorySolver(int max_iterations, double start_cost) {
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = quietIpopt();
  // The Hessian is the objective's Gauss-Newton one (TrajectoryNlp::eval_h).
  app->Options()->SetStringValue("mu_strategy", "adaptive");
  app->Options()->SetIntegerValue("max_iter", max_iterations);
  app->Options()->SetNumericValue("tol", 1e-6);
  app->Options()->SetNumericValue("acceptable_tol", 1e-3);
  if (start_cost > 0) app->Options()->SetNumericValue("obj_scaling_factor", 1.0 / start_cost);
  return app;
}

Ipopt::SmartPtr<Ipopt::IpoptApplication> transcriptionSolver(int max_iterations) {
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = quietIpopt();
  Ipopt::OptionsList& o = *app->Options();
  o.SetStringValue("nlp_scaling_method", "user-scaling");
  o.SetStringValue("mu_strategy", "adaptive");
  o.SetIntegerValue("max_iter", max_iterations);
  o.SetNumericValue("tol", 1e-8);
  o.SetIntegerValue("acceptable_iter", 0);  // converged, or out of iterations
  o.SetNumericValue("constr_viol_tol", 1e-9);
  o.SetNumericValue("compl_inf_tol", 1e-9);
  // AMD: as fast as METIS here with OpenBLAS, and the same iterates on every run; MUMPS's METIS
  // ordering changed them from one run to the next (docs/decisions/0011).
  o.SetIntegerValue("mumps_pivot_order", 0);
  return app;
}

}  // namespace marionette::detail

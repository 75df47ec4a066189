// SPDX-License-Identifier: BSD-3-Clause
#include "ipopt_solver.hpp"

#include <chrono>
#include <mutex>

#include "marionette/models/cancel.hpp"

namespace marionette::detail {

Ipopt::ApplicationReturnStatus solveInTurn(Ipopt::SmartPtr<Ipopt::IpoptApplication> app,
                                           const Ipopt::SmartPtr<Ipopt::TNLP>& nlp) {
  static std::recursive_timed_mutex turn_mutex;  // (a solve inside a solve keeps its turn)
  std::unique_lock<std::recursive_timed_mutex> turn(turn_mutex, std::defer_lock);
  while (!turn.try_lock_for(std::chrono::milliseconds(20))) throwIfCancelled("optimization");
  // Declared after the turn, so released (with its MUMPS instance) before the turn ends, on a
  // throw too.
  Ipopt::SmartPtr<Ipopt::IpoptApplication> own = app;
  app = nullptr;
  const Ipopt::ApplicationReturnStatus started = own->Initialize();
  if (started != Ipopt::Solve_Succeeded) return started;
  return own->OptimizeTNLP(nlp);
}

Ipopt::SmartPtr<Ipopt::IpoptApplication> quietIpopt() {
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = IpoptApplicationFactory();
  app->Options()->SetIntegerValue("print_level", 0);
  app->Options()->SetStringValue("sb", "yes");
  // MUMPS's working space at 10 % over its estimate rather than Ipopt's default of 1000 %:
  // allocating and clearing the larger one, anew for every factorization, took a third of its
  // time on PuppetCopter's transcription and half on marionette25's, in system calls.  A
  // factorization short of space is redone with twice as much (Ipopt's MUMPS interface): the
  // iterates are the same.
  app->Options()->SetIntegerValue("mumps_mem_percent", 10);
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

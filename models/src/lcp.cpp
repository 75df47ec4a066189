// SPDX-License-Identifier: BSD-3-Clause
#include "lcp.hpp"

#include <LCP_Solvers.h>
#include <LinearComplementarityProblem.h>
#include <NumericsMatrix.h>
#include <SolverOptions.h>
#include <lcp_cst.h>

#include <memory>

#include "marionette/models/cancel.hpp"

namespace marionette {

bool solveLcpByLemke(const Eigen::MatrixXd& M, const Eigen::VectorXd& q, Eigen::VectorXd& z,
                     Eigen::VectorXd& w) {
  const int n = static_cast<int>(q.size());
  z.setZero(n);
  w.setZero(n);
  if (n == 0) return true;
  if (n > kMaxLcpUnknowns) return false;
  throwIfCancelled("contact modes");  // (Lemke's pivots cannot be interrupted)
  // Siconos takes non-const column-major data and does not own it.
  Eigen::MatrixXd matrix = M;
  Eigen::VectorXd vector = q;
  NumericsMatrix* numerics = NM_create_from_data(NM_DENSE, n, n, matrix.data());
  std::unique_ptr<SolverOptions, void (*)(SolverOptions*)> options(
      solver_options_create(SICONOS_LCP_LEMKE), [](SolverOptions* o) { solver_options_delete(o); });
  // Lemke's method ends within 2^n pivots in theory; in practice within a few n.
  options->iparam[SICONOS_IPARAM_MAX_ITER] = 50 * n + 100;
  LinearComplementarityProblem problem;
  problem.size = n;
  problem.M = numerics;
  problem.q = vector.data();
  int info = -1;
  lcp_lexicolemke(&problem, z.data(), w.data(), &info, options.get());
  numerics->matrix0 = nullptr;  // (the data is matrix's)
  NM_free(numerics);
  return info == 0 && z.allFinite() && w.allFinite();
}

}  // namespace marionette

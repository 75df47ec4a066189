// SPDX-License-Identifier: BSD-3-Clause
// A linear complementarity problem, w = M z + q, z >= 0, w >= 0, z^T w = 0, solved by Lemke's
// complementary pivoting with lexicographic ordering (degenerate problems too: Cottle, Pang &
// Stone, "The Linear Complementarity Problem", Academic Press 1992, sec. 4.4), from Siconos'
// numerics library (lcp_lexicolemke).  Lemke's method finds a solution whenever M is
// copositive-plus and the problem feasible, which the linearized contact step with a
// polyhedral friction cone is (Stewart & Trinkle, IJNME 1996).  Allocates: a fallback, not
// the step's path.
#pragma once

#include <Eigen/Core>

namespace marionette {

// The largest problem solved: Siconos' tableau is 2 n (n + 1) doubles, allocated unchecked, and
// its pivots cannot be interrupted (~34 MB and well under a second at this size; marionette25's
// forearm on a thigh with nine rows near makes 169 unknowns).  A larger one is refused (false)
// before anything is allocated: the step then takes its substeps, or fails as not converged.
constexpr int kMaxLcpUnknowns = 1024;

// Solves the problem (at most kMaxLcpUnknowns unknowns, else false); false if Lemke's method ends on a secondary ray or its pivot budget
// (z and w then unspecified).  M is n x n, q n; z and w are resized to n.
bool solveLcpByLemke(const Eigen::MatrixXd& M, const Eigen::VectorXd& q, Eigen::VectorXd& z,
                     Eigen::VectorXd& w);

}  // namespace marionette

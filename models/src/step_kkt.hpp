// SPDX-License-Identifier: BSD-3-Clause
// The linear system of one Newton iteration of the integrator step (private to the models
// library):
//     [ J11    J12 ] [dq]   [r1]        J12 = -G1^T (constraints), J1^T T (friction), 0
//     [ J21    D   ] [dl] = [r2]        J21 =  G2, T^T J2, 0;  D the multipliers' own terms
// J11 (n_d x n_d) with the joint tree's pattern, G1 and G2 (m x n_d) the gradients of the m taut
// constraints at q_k and q_{k+1}, D zero for strings and stops (contacts: their regularisation and
// the friction cone's rows).  Solved by the tree factorisation of J11 (TreeLu: E J11 = R) and
// the m x m Schur complement S = J21 J11^-1 J12 - D = (R^-T J21^T)^T (E J12) - D: a
// constraint's gradient lives on the joints above its string's puppet end (a path from the
// root), and E and R^-T keep it there, so S costs a few hundred multiply-adds.  A pivoting dense
// LU of the whole system is the fallback when J11 has an unsafe pivot, and the reference
// (IntegratorOptions::tree_factorization false).  Allocates nothing after construction, but for the
// dense fallback's first factorisation at each m.  S is factorised by Gaussian elimination with
// partial pivoting (Golub & Van Loan, "Matrix Computations", 4th ed., Johns Hopkins 2013,
// Alg. 3.4.1) in place.
#pragma once

#include <Eigen/Core>
#include <Eigen/LU>
#include <vector>

#include "tree_lu.hpp"

namespace marionette {

class StepKkt {
 public:
  StepKkt(const Model& model, int m_max);

  // Factorises the leading (n_d + m) square block of `system`, laid out as above (kept by
  // reference until the next factor()).  With dense, by the pivoting dense LU only.
  void factor(const Eigen::MatrixXd& system, int m, bool dense);
  // Refactorises with the multipliers' blocks (J12, J21, D) of `system` for a new taut set of m
  // rows, keeping the last factor()'s J11 (a chord: the Lagrangian block of an earlier iterate);
  // false (nothing done) if that one was not by the tree.
  bool refactorConstraints(const Eigen::MatrixXd& system, int m);
  // sol <- system^-1 rhs for the last factor() (both of size n_d + m).
  void solve(const Eigen::Ref<const Eigen::VectorXd>& rhs, Eigen::Ref<Eigen::VectorXd> sol);

 private:
  void factorSchur(const Eigen::MatrixXd& system, int m);  // S and its LU (the tree's J11)

  int nd_, m_ = 0;
  bool tree_ok_ = false;
  TreeLu tree_;
  Eigen::MatrixXd W1_, W2_;       // n_d x m_max: E J12 and R^-T J21^T
  Eigen::VectorXd tmp_, tmp_nd_;  // m_max, n_d
  const Eigen::MatrixXd* system_ = nullptr;
  // S's LU with partial pivoting in place in the leading m x m block (one buffer for every m:
  // per-m matrices cost O(m_max^3) memory, ~10 ms to make with a floor's contact rows), its row
  // interchanges in pivot_.
  Eigen::MatrixXd schur_;                                       // m_max x m_max
  std::vector<int> pivot_;                                      // m_max
  std::vector<Eigen::PartialPivLU<Eigen::MatrixXd>> dense_lu_;  // per m, sized at first use
};

}  // namespace marionette

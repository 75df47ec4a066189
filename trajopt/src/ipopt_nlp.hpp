// SPDX-License-Identifier: BSD-3-Clause
// A SparseNlp (sparse_nlp.hpp) as Ipopt's nonlinear program: sparse Jacobian, the Lagrangian's
// Hessian as the problem gives it, the problem's own row, variable and objective scales: the
// cross-check of the interior point (interior_point.hpp) in the tests and the solver behind an
// option.  Budgets are counted in iterations; `keep_going`, asked once per iteration with the
// iterate's objective and infeasibility, may stop the solve (converged for the caller's purposes,
// a deadline the caller set or a cancel: the caller says which).  A cancel (the thread's
// CancelScope) also throws PlanCancelled out of the next evaluation: Ipopt catches it and ends
// (NonIpopt_Exception_Thrown) after the factorization under way, not an iteration later, whose
// inertia corrections can factorize the KKT matrix several times more.
#pragma once

#include <IpTNLP.hpp>

#include "sparse_nlp.hpp"

namespace marionette::detail {

class IpoptNlp : public Ipopt::TNLP {
 public:
  IpoptNlp(SparseNlp& problem, Eigen::VectorXd start, KeepGoing keep_going);

  const Eigen::VectorXd& solution() const { return solution_; }
  const Eigen::VectorXd& multipliers() const { return multipliers_; }  // the rows' (lambda)
  // The last point evaluated with derivatives: within keep_going, the current iterate.
  const Eigen::VectorXd& iterate() const { return iterate_; }
  int iterations() const { return iterations_; }
  Ipopt::SolverReturn status() const { return status_; }

  bool get_nlp_info(Ipopt::Index& n, Ipopt::Index& m, Ipopt::Index& nnz_jac_g,
                    Ipopt::Index& nnz_h_lag, IndexStyleEnum& index_style) override;
  bool get_bounds_info(Ipopt::Index n, Ipopt::Number* x_l, Ipopt::Number* x_u, Ipopt::Index m,
                       Ipopt::Number* g_l, Ipopt::Number* g_u) override;
  bool get_starting_point(Ipopt::Index n, bool init_x, Ipopt::Number* x, bool init_z,
                          Ipopt::Number* z_L, Ipopt::Number* z_U, Ipopt::Index m,
                          bool init_lambda, Ipopt::Number* lambda) override;
  bool get_scaling_parameters(Ipopt::Number& obj_scaling, bool& use_x_scaling, Ipopt::Index n,
                              Ipopt::Number* x_scaling, bool& use_g_scaling, Ipopt::Index m,
                              Ipopt::Number* g_scaling) override;
  bool eval_f(Ipopt::Index n, const Ipopt::Number* x, bool new_x,
              Ipopt::Number& obj_value) override;
  bool eval_grad_f(Ipopt::Index n, const Ipopt::Number* x, bool new_x,
                   Ipopt::Number* grad_f) override;
  bool eval_g(Ipopt::Index n, const Ipopt::Number* x, bool new_x, Ipopt::Index m,
              Ipopt::Number* g) override;
  bool eval_jac_g(Ipopt::Index n, const Ipopt::Number* x, bool new_x, Ipopt::Index m,
                  Ipopt::Index nele_jac, Ipopt::Index* iRow, Ipopt::Index* jCol,
                  Ipopt::Number* values) override;
  bool eval_h(Ipopt::Index n, const Ipopt::Number* x, bool new_x, Ipopt::Number obj_factor,
              Ipopt::Index m, const Ipopt::Number* lambda, bool new_lambda,
              Ipopt::Index nele_hess, Ipopt::Index* iRow, Ipopt::Index* jCol,
              Ipopt::Number* values) override;
  bool intermediate_callback(Ipopt::AlgorithmMode mode, Ipopt::Index iter,
                             Ipopt::Number obj_value, Ipopt::Number inf_pr,
                             Ipopt::Number inf_du, Ipopt::Number mu, Ipopt::Number d_norm,
                             Ipopt::Number regularization_size, Ipopt::Number alpha_du,
                             Ipopt::Number alpha_pr, Ipopt::Index ls_trials,
                             const Ipopt::IpoptData* ip_data,
                             Ipopt::IpoptCalculatedQuantities* ip_cq) override;
  void finalize_solution(Ipopt::SolverReturn status, Ipopt::Index n, const Ipopt::Number* x,
                         const Ipopt::Number* z_L, const Ipopt::Number* z_U, Ipopt::Index m,
                         const Ipopt::Number* g, const Ipopt::Number* lambda,
                         Ipopt::Number obj_value, const Ipopt::IpoptData* ip_data,
                         Ipopt::IpoptCalculatedQuantities* ip_cq) override;

 private:
  // Evaluates at x unless it is the point last evaluated at this level.
  bool at(const Ipopt::Number* x, Ipopt::Index n, bool derivatives);

  SparseNlp& problem_;
  Eigen::VectorXd start_, solution_, multipliers_, last_x_, iterate_;
  bool last_derivatives_ = false, evaluated_ = false;
  KeepGoing keep_going_;
  int iterations_ = 0;
  Ipopt::SolverReturn status_ = Ipopt::UNASSIGNED;
};

}  // namespace marionette::detail

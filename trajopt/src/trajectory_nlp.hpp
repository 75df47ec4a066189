// SPDX-License-Identifier: BSD-3-Clause
// The trajectory problem as Ipopt's nonlinear program, with the objective's Gauss-Newton Hessian
// as the Lagrangian's (the goal rows' curvature left out: Ipopt's inertia correction and line
// search make up for it).  Remembers the best feasible point it was asked to evaluate, since an
// interior-point iterate need not end on the best one, and stops when told to or out of time, or
// when the thread's CancelScope says stop (an evaluation it cuts short fails; the caller then
// asks the scope).
#pragma once

#include <IpTNLP.hpp>
#include <chrono>
#include <functional>

#include "trajectory_problem.hpp"

namespace marionette::detail {

class TrajectoryNlp : public Ipopt::TNLP {
 public:
  struct Progress {
    int iteration = 0;
    double cost = 0.0;
    double constraint_violation = 0.0;
  };
  // keep_going: asked once per iteration; false stops the solve.
  TrajectoryNlp(TrajectoryProblem& problem, Eigen::VectorXd start,
                std::function<bool(const Progress&)> keep_going);

  // The best feasible point evaluated (limits and goal rows within `feasibility` of their
  // bounds, every sample clear of collision; one that keeps the stage margin first, then the
  // cheapest), and its cost; empty when none was.
  const Eigen::VectorXd& best() const { return best_z_; }
  double bestCost() const { return best_cost_; }
  int iterations() const { return iterations_; }

  bool get_nlp_info(Ipopt::Index& n, Ipopt::Index& m, Ipopt::Index& nnz_jac_g,
                    Ipopt::Index& nnz_h_lag, IndexStyleEnum& index_style) override;
  bool get_bounds_info(Ipopt::Index n, Ipopt::Number* x_l, Ipopt::Number* x_u, Ipopt::Index m,
                       Ipopt::Number* g_l, Ipopt::Number* g_u) override;
  bool get_starting_point(Ipopt::Index n, bool init_x, Ipopt::Number* x, bool init_z,
                          Ipopt::Number* z_L, Ipopt::Number* z_U, Ipopt::Index m,
                          bool init_lambda, Ipopt::Number* lambda) override;
  bool eval_f(Ipopt::Index n, const Ipopt::Number* x, bool new_x,
              Ipopt::Number& obj_value) override;
  bool eval_grad_f(Ipopt::Index n, const Ipopt::Number* x, bool new_x,
                   Ipopt::Number* grad_f) override;
  bool eval_g(Ipopt::Index n, const Ipopt::Number* x, bool new_x, Ipopt::Index m,
              Ipopt::Number* g) override;
  bool eval_h(Ipopt::Index n, const Ipopt::Number* x, bool new_x, Ipopt::Number obj_factor,
              Ipopt::Index m, const Ipopt::Number* lambda, bool new_lambda,
              Ipopt::Index nele_hess, Ipopt::Index* iRow, Ipopt::Index* jCol,
              Ipopt::Number* values) override;
  bool eval_jac_g(Ipopt::Index n, const Ipopt::Number* x, bool new_x, Ipopt::Index m,
                  Ipopt::Index nele_jac, Ipopt::Index* iRow, Ipopt::Index* jCol,
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
  bool at(const Ipopt::Number* x, Ipopt::Index n, Evaluation level);

  TrajectoryProblem& problem_;
  Eigen::VectorXd start_, z_lower_, z_upper_, g_lower_, g_upper_;
  std::function<bool(const Progress&)> keep_going_;
  Eigen::VectorXd best_z_;
  double best_cost_ = 0.0;
  bool best_meets_margin_ = false;
  int iterations_ = 0;
};

}  // namespace marionette::detail

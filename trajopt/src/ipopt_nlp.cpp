// SPDX-License-Identifier: BSD-3-Clause
#include "ipopt_nlp.hpp"

#include <IpIpoptCalculatedQuantities.hpp>

#include <algorithm>
#include <cmath>

#include "marionette/models/cancel.hpp"

namespace marionette::detail {

IpoptNlp::IpoptNlp(SparseNlp& problem, Eigen::VectorXd start,
                                   KeepGoing keep_going)
    : problem_(problem), start_(std::move(start)), keep_going_(std::move(keep_going)) {}

bool IpoptNlp::at(const Ipopt::Number* x, Ipopt::Index n, bool derivatives) {
  throwIfCancelled("plan optimization");
  const Eigen::Map<const Eigen::VectorXd> z(x, n);
  if (derivatives) iterate_ = z;
  if (evaluated_ && (last_derivatives_ || !derivatives) && z == last_x_) return true;
  last_x_ = z;
  last_derivatives_ = derivatives;
  evaluated_ = problem_.evaluate(last_x_, derivatives);
  return evaluated_;
}

bool IpoptNlp::get_nlp_info(Ipopt::Index& n, Ipopt::Index& m, Ipopt::Index& nnz_jac_g,
                                    Ipopt::Index& nnz_h_lag, IndexStyleEnum& index_style) {
  n = problem_.variables();
  m = problem_.constraints();
  nnz_jac_g = problem_.jacobianNonzeros();
  nnz_h_lag = problem_.hessianNonzeros();
  index_style = C_STYLE;
  return true;
}

bool IpoptNlp::get_bounds_info(Ipopt::Index n, Ipopt::Number* x_l, Ipopt::Number* x_u,
                                       Ipopt::Index m, Ipopt::Number* g_l, Ipopt::Number* g_u) {
  Eigen::VectorXd zl, zu, gl, gu;
  problem_.bounds(zl, zu, gl, gu);
  std::copy(zl.data(), zl.data() + n, x_l);
  std::copy(zu.data(), zu.data() + n, x_u);
  std::copy(gl.data(), gl.data() + m, g_l);
  std::copy(gu.data(), gu.data() + m, g_u);
  return true;
}

bool IpoptNlp::get_starting_point(Ipopt::Index n, bool, Ipopt::Number* x, bool,
                                          Ipopt::Number*, Ipopt::Number*, Ipopt::Index, bool,
                                          Ipopt::Number*) {
  std::copy(start_.data(), start_.data() + n, x);
  return true;
}

bool IpoptNlp::get_scaling_parameters(Ipopt::Number& obj_scaling, bool& use_x_scaling,
                                              Ipopt::Index n, Ipopt::Number* x_scaling,
                                              bool& use_g_scaling, Ipopt::Index m,
                                              Ipopt::Number* g_scaling) {
  Eigen::VectorXd zs, gs;
  problem_.scaling(zs, gs);
  obj_scaling = problem_.objectiveScale();
  use_x_scaling = use_g_scaling = true;
  std::copy(zs.data(), zs.data() + n, x_scaling);
  std::copy(gs.data(), gs.data() + m, g_scaling);
  return true;
}

bool IpoptNlp::eval_f(Ipopt::Index n, const Ipopt::Number* x, bool,
                              Ipopt::Number& obj_value) {
  if (!at(x, n, false)) return false;
  obj_value = problem_.cost();
  return true;
}

bool IpoptNlp::eval_grad_f(Ipopt::Index n, const Ipopt::Number* x, bool,
                                   Ipopt::Number* grad_f) {
  if (!at(x, n, true)) return false;
  std::copy(problem_.gradient().data(), problem_.gradient().data() + n, grad_f);
  return true;
}

bool IpoptNlp::eval_g(Ipopt::Index n, const Ipopt::Number* x, bool, Ipopt::Index m,
                              Ipopt::Number* g) {
  if (!at(x, n, false)) return false;
  std::copy(problem_.rows().data(), problem_.rows().data() + m, g);
  return true;
}

bool IpoptNlp::eval_jac_g(Ipopt::Index n, const Ipopt::Number* x, bool, Ipopt::Index,
                                  Ipopt::Index, Ipopt::Index* iRow, Ipopt::Index* jCol,
                                  Ipopt::Number* values) {
  if (!values) {
    problem_.jacobianStructure(iRow, jCol);
    return true;
  }
  if (!at(x, n, true)) return false;
  problem_.jacobianValues(values);
  return true;
}

bool IpoptNlp::eval_h(Ipopt::Index n, const Ipopt::Number* x, bool,
                              Ipopt::Number obj_factor, Ipopt::Index m,
                              const Ipopt::Number* lambda, bool, Ipopt::Index,
                              Ipopt::Index* iRow, Ipopt::Index* jCol, Ipopt::Number* values) {
  if (!values) {
    problem_.hessianStructure(iRow, jCol);
    return true;
  }
  if (!at(x, n, true)) return false;
  problem_.hessian(last_x_, obj_factor, Eigen::Map<const Eigen::VectorXd>(lambda, m), values);
  return true;
}

bool IpoptNlp::intermediate_callback(Ipopt::AlgorithmMode mode, Ipopt::Index iter,
                                             Ipopt::Number obj_value, Ipopt::Number inf_pr,
                                             Ipopt::Number, Ipopt::Number mu, Ipopt::Number,
                                             Ipopt::Number, Ipopt::Number, Ipopt::Number,
                                             Ipopt::Index, const Ipopt::IpoptData*,
                                             Ipopt::IpoptCalculatedQuantities* cq) {
  iterations_ = iter;
  // The original rows' violation, in their own units (Ipopt's inf_pr is its scaled problem's).
  const double violation =
      cq ? cq->unscaled_curr_nlp_constraint_violation(Ipopt::NORM_MAX) : inf_pr;
  return !keep_going_ ||
         keep_going_({iter, obj_value, violation, mu, mode == Ipopt::RestorationPhaseMode, &iterate_});
}

void IpoptNlp::finalize_solution(Ipopt::SolverReturn status, Ipopt::Index n,
                                         const Ipopt::Number* x, const Ipopt::Number*,
                                         const Ipopt::Number*, Ipopt::Index m,
                                         const Ipopt::Number*, const Ipopt::Number* lambda,
                                         Ipopt::Number, const Ipopt::IpoptData*,
                                         Ipopt::IpoptCalculatedQuantities*) {
  status_ = status;
  solution_ = Eigen::Map<const Eigen::VectorXd>(x, n);
  multipliers_ = Eigen::Map<const Eigen::VectorXd>(lambda, m);
}

}  // namespace marionette::detail

// SPDX-License-Identifier: BSD-3-Clause
#include "trajectory_nlp.hpp"

#include <algorithm>
#include <cmath>

namespace marionette::detail {

using Ipopt::Index;
using Ipopt::Number;
using LimitMatrix = Eigen::SparseMatrix<double, Eigen::RowMajor>;

TrajectoryNlp::TrajectoryNlp(TrajectoryProblem& problem, Eigen::VectorXd start,
                             std::function<bool(const Progress&)> keep_going)
    : problem_(problem), start_(std::move(start)), keep_going_(std::move(keep_going)) {
  problem_.bounds(z_lower_, z_upper_, g_lower_, g_upper_);
  start_ = start_.cwiseMax(z_lower_).cwiseMin(z_upper_);
}

bool TrajectoryNlp::at(const Number* x, Index n, Evaluation level) {
  const Eigen::Map<const Eigen::VectorXd> z(x, n);
  // Told to stop: every evaluation fails at once (one of a long performance sets up tens of MB
  // before its first step), so that the solver gives up within its line search.
  if (cancelRequested()) return false;
  bool ok = false;
  try {
    ok = problem_.evaluate(z, level);
  } catch (const PlanCancelled&) {
    // Never thrown through Ipopt: the evaluation fails and the next iteration's callback stops
    // the solve; the caller asks the scope again.
    return false;
  }
  if (!ok) return false;
  // Feasible: every row within its bounds, up to rounding of the linear rows.
  const Eigen::VectorXd& g = problem_.constraintValues();
  bool feasible = true;
  for (Index i = 0; i < g.size() && feasible; ++i) {
    // (rounding of the linear rows; the "no bound" 1e20s do not count)
    const double lo = g_lower_[i] > -1e19 ? g_lower_[i] : 0.0;
    const double hi = g_upper_[i] < 1e19 ? g_upper_[i] : 0.0;
    const double slack = 1e-9 * std::max({1.0, std::abs(lo), std::abs(hi)});
    feasible = g[i] >= g_lower_[i] - slack && g[i] <= g_upper_[i] + slack;
  }
  // Its samples clear of collision too (the clearance is a penalty, not a row); one that keeps
  // the margin beats one that does not.
  feasible = feasible && problem_.minClearance() > 0;
  const double cost = problem_.cost().total();
  const bool margin = !(problem_.minStageClearance() < problem_.margin());
  if (feasible && (best_z_.size() == 0 || margin > best_meets_margin_ ||
                   (margin == best_meets_margin_ && cost < best_cost_))) {
    best_z_ = z;
    best_cost_ = cost;
    best_meets_margin_ = margin;
  }
  return true;
}

bool TrajectoryNlp::get_nlp_info(Index& n, Index& m, Index& nnz_jac_g, Index& nnz_h_lag,
                                 IndexStyleEnum& index_style) {
  n = problem_.variables();
  m = problem_.constraints();
  nnz_jac_g = static_cast<Index>(problem_.limitRows().matrix.nonZeros()) +
              (m - problem_.linearConstraints()) * n;
  nnz_h_lag = n * (n + 1) / 2;  // dense lower triangle
  index_style = C_STYLE;
  return true;
}

bool TrajectoryNlp::get_bounds_info(Index n, Number* x_l, Number* x_u, Index m, Number* g_l,
                                    Number* g_u) {
  std::copy_n(z_lower_.data(), n, x_l);
  std::copy_n(z_upper_.data(), n, x_u);
  std::copy_n(g_lower_.data(), m, g_l);
  std::copy_n(g_upper_.data(), m, g_u);
  return true;
}

bool TrajectoryNlp::get_starting_point(Index n, bool init_x, Number* x, bool, Number*, Number*,
                                       Index, bool, Number*) {
  if (init_x) std::copy_n(start_.data(), n, x);
  // The start competes for best like every point (the solver first moves it off its bounds).
  at(start_.data(), n, Evaluation::Value);
  return true;
}

bool TrajectoryNlp::eval_f(Index n, const Number* x, bool, Number& obj_value) {
  if (!at(x, n, Evaluation::Value)) return false;
  obj_value = problem_.cost().total();
  return true;
}

bool TrajectoryNlp::eval_grad_f(Index n, const Number* x, bool, Number* grad_f) {
  if (!at(x, n, Evaluation::Derivatives)) return false;
  std::copy_n(problem_.gradient().data(), n, grad_f);
  return true;
}

bool TrajectoryNlp::eval_g(Index n, const Number* x, bool, Index m, Number* g) {
  if (!at(x, n, Evaluation::Value)) return false;
  std::copy_n(problem_.constraintValues().data(), m, g);
  return true;
}

bool TrajectoryNlp::eval_jac_g(Index n, const Number* x, bool, Index m, Index, Index* iRow,
                               Index* jCol, Number* values) {
  const auto& limits = problem_.limitRows().matrix;
  const Index linear = problem_.linearConstraints();
  if (values == nullptr) {  // the structure: the limit rows' entries, then dense goal rows
    Index e = 0;
    for (Index r = 0; r < limits.outerSize(); ++r)
      for (LimitMatrix::InnerIterator it(limits, r); it; ++it, ++e) {
        iRow[e] = r;
        jCol[e] = static_cast<Index>(it.col());
      }
    for (Index r = linear; r < m; ++r)
      for (Index c = 0; c < n; ++c, ++e) {
        iRow[e] = r;
        jCol[e] = c;
      }
    return true;
  }
  if (!at(x, n, Evaluation::Derivatives)) return false;
  Index e = 0;
  for (Index r = 0; r < limits.outerSize(); ++r)
    for (LimitMatrix::InnerIterator it(limits, r); it; ++it) values[e++] = it.value();
  const Eigen::MatrixXd& J = problem_.nonlinearJacobian();
  for (Index r = 0; r < J.rows(); ++r)
    for (Index c = 0; c < n; ++c) values[e++] = J(r, c);
  return true;
}

bool TrajectoryNlp::eval_h(Index n, const Number* x, bool, Number obj_factor, Index,
                           const Number*, bool, Index, Index* iRow, Index* jCol,
                           Number* values) {
  if (values == nullptr) {
    Index e = 0;
    for (Index r = 0; r < n; ++r)
      for (Index c = 0; c <= r; ++c, ++e) {
        iRow[e] = r;
        jCol[e] = c;
      }
    return true;
  }
  if (!at(x, n, Evaluation::Derivatives)) return false;
  const Eigen::MatrixXd& H = problem_.hessian();
  Index e = 0;
  for (Index r = 0; r < n; ++r)
    for (Index c = 0; c <= r; ++c) values[e++] = obj_factor * H(r, c);
  return true;
}

bool TrajectoryNlp::intermediate_callback(Ipopt::AlgorithmMode, Index iter, Number obj_value,
                                          Number inf_pr, Number, Number, Number, Number, Number,
                                          Number, Index, const Ipopt::IpoptData*,
                                          Ipopt::IpoptCalculatedQuantities*) {
  iterations_ = iter;
  if (cancelRequested()) return false;
  return !keep_going_ || keep_going_(Progress{iter, obj_value, inf_pr});
}

void TrajectoryNlp::finalize_solution(Ipopt::SolverReturn, Index n, const Number* x,
                                      const Number*, const Number*, Index, const Number*,
                                      const Number*, Number, const Ipopt::IpoptData*,
                                      Ipopt::IpoptCalculatedQuantities*) {
  at(x, n, Evaluation::Value);  // the final point competes for best like every other
}

}  // namespace marionette::detail

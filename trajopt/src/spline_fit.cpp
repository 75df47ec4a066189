// SPDX-License-Identifier: BSD-3-Clause
#include "spline_fit.hpp"

#include "marionette/trajopt/rig_motion_fit.hpp"

#include "ipopt_solver.hpp"

#include <IpIpoptApplication.hpp>
#include <IpTNLP.hpp>
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "marionette/models/cancel.hpp"

namespace marionette::detail {
namespace {

using Ipopt::Index;
using Ipopt::Number;

// min sum_{n,j} (u_nj(z) - y_nj)^2 / range_j^2 subject to the limit rows and the input ranges.
// u_nj(z) = u0_nj + sum_f W_nf z_{j,f}: the same weights W for every input.
class SplineFitQp : public Ipopt::TNLP {
 public:
  SplineFitQp(const InputSpline& spline, const Model& model, const Eigen::MatrixXd& y,
              double share)
      : spline_(spline), nk_(model.nk()), nf_(spline.freePerInput()),
        limits_(spline.limitRows(model, share)) {
    const int n = spline.samples();
    W_.setZero(n, nf_);
    for (int s = 0; s < n; ++s)
      for (const auto& [f, w] : spline.sampleWeights(s)) W_(s, f) = w;
    offset_ = spline.sampleInputs(Eigen::VectorXd::Zero(spline.variables())) - y;
    inv_range2_.resize(nk_);
    z_lower_.resize(spline.variables());
    z_upper_.resize(spline.variables());
    for (int j = 0; j < nk_; ++j) {
      const KinematicVariable& kv = model.kinematic[j];
      const double range = std::max(kv.upper - kv.lower, 1e-9);
      inv_range2_[j] = 1.0 / (range * range);
      const double inset = 1e-6 * range;
      for (int f = 0; f < nf_; ++f) {
        z_lower_[spline.variable(j, f)] = kv.lower + inset;
        z_upper_[spline.variable(j, f)] = kv.upper - inset;
      }
    }
    WtW_ = W_.transpose() * W_;
    start_ = spline.fit(y).cwiseMax(z_lower_).cwiseMin(z_upper_);
  }

  const Eigen::VectorXd& solution() const { return solution_; }

  bool get_nlp_info(Index& n, Index& m, Index& nnz_jac_g, Index& nnz_h_lag,
                    IndexStyleEnum& index_style) override {
    n = spline_.variables();
    m = static_cast<Index>(limits_.lower.size());
    nnz_jac_g = static_cast<Index>(limits_.matrix.nonZeros());
    nnz_h_lag = nk_ * nf_ * (nf_ + 1) / 2;
    index_style = C_STYLE;
    return true;
  }
  bool get_bounds_info(Index n, Number* x_l, Number* x_u, Index m, Number* g_l,
                       Number* g_u) override {
    std::copy_n(z_lower_.data(), n, x_l);
    std::copy_n(z_upper_.data(), n, x_u);
    std::copy_n(limits_.lower.data(), m, g_l);
    std::copy_n(limits_.upper.data(), m, g_u);
    return true;
  }
  bool get_starting_point(Index n, bool init_x, Number* x, bool, Number*, Number*, Index, bool,
                          Number*) override {
    if (init_x) std::copy_n(start_.data(), n, x);
    return true;
  }
  // The residuals R (samples x n_k) at x.
  Eigen::MatrixXd residuals(const Number* x) const {
    Eigen::MatrixXd Z(nf_, nk_);
    for (int j = 0; j < nk_; ++j)
      for (int f = 0; f < nf_; ++f) Z(f, j) = x[spline_.variable(j, f)];
    return offset_ + W_ * Z;
  }
  bool eval_f(Index, const Number* x, bool, Number& f) override {
    const Eigen::MatrixXd R = residuals(x);
    f = 0;
    for (int j = 0; j < nk_; ++j) f += R.col(j).squaredNorm() * inv_range2_[j];
    return true;
  }
  bool eval_grad_f(Index, const Number* x, bool, Number* g) override {
    const Eigen::MatrixXd G = 2.0 * W_.transpose() * residuals(x);
    for (int j = 0; j < nk_; ++j)
      for (int f = 0; f < nf_; ++f) g[spline_.variable(j, f)] = G(f, j) * inv_range2_[j];
    return true;
  }
  bool eval_g(Index n, const Number* x, bool, Index, Number* g) override {
    Eigen::Map<Eigen::VectorXd>(g, limits_.lower.size()) =
        limits_.matrix * Eigen::Map<const Eigen::VectorXd>(x, n);
    return true;
  }
  bool eval_jac_g(Index, const Number*, bool, Index, Index, Index* iRow, Index* jCol,
                  Number* values) override {
    Index k = 0;
    for (int r = 0; r < limits_.matrix.outerSize(); ++r)
      for (Eigen::SparseMatrix<double, Eigen::RowMajor>::InnerIterator it(limits_.matrix, r); it;
           ++it, ++k) {
        if (values)
          values[k] = it.value();
        else {
          iRow[k] = r;
          jCol[k] = static_cast<Index>(it.col());
        }
      }
    return true;
  }
  bool eval_h(Index, const Number*, bool, Number obj_factor, Index, const Number*, bool, Index,
              Index* iRow, Index* jCol, Number* values) override {
    Index k = 0;
    for (int j = 0; j < nk_; ++j)
      for (int f = 0; f < nf_; ++f)
        for (int g = 0; g <= f; ++g, ++k) {
          if (values)
            values[k] = obj_factor * 2.0 * WtW_(f, g) * inv_range2_[j];
          else {
            iRow[k] = spline_.variable(j, f);
            jCol[k] = spline_.variable(j, g);
          }
        }
    return true;
  }
  // A long performance's fit (thousands of variables) stops when the thread's scope says so.
  bool intermediate_callback(Ipopt::AlgorithmMode, Index, Number, Number, Number, Number, Number,
                             Number, Number, Number, Index, const Ipopt::IpoptData*,
                             Ipopt::IpoptCalculatedQuantities*) override {
    return !cancelRequested();
  }
  void finalize_solution(Ipopt::SolverReturn, Index n, const Number* x, const Number*,
                         const Number*, Index, const Number*, const Number*, Number,
                         const Ipopt::IpoptData*, Ipopt::IpoptCalculatedQuantities*) override {
    solution_ = Eigen::Map<const Eigen::VectorXd>(x, n);
  }

 private:
  const InputSpline& spline_;
  int nk_, nf_;
  InputSpline::LimitRows limits_;
  Eigen::MatrixXd W_, WtW_, offset_;
  Eigen::VectorXd inv_range2_, z_lower_, z_upper_, start_, solution_;
};

}  // namespace

Eigen::VectorXd fitWithinLimits(const InputSpline& spline, const Model& model,
                                const Eigen::MatrixXd& samples, double share, bool* converged) {
  Ipopt::SmartPtr<SplineFitQp> qp = new SplineFitQp(spline, model, samples, share);
  const auto solver = [] {
    Ipopt::SmartPtr<Ipopt::IpoptApplication> app = quietIpopt();
    app->Options()->SetStringValue("hessian_constant", "yes");
    app->Options()->SetStringValue("jac_c_constant", "yes");
    app->Options()->SetStringValue("jac_d_constant", "yes");
    app->Options()->SetNumericValue("tol", 1e-9);
    app->Options()->SetIntegerValue("max_iter", 500);
    return app;
  };
  const Ipopt::ApplicationReturnStatus status = solveInTurn(solver(), qp);
  throwIfCancelled("spline fit");
  if (converged)
    *converged = status == Ipopt::Solve_Succeeded || status == Ipopt::Solved_To_Acceptable_Level;
  if (qp->solution().size() != spline.variables()) return spline.fit(samples);
  return qp->solution();
}

}  // namespace marionette::detail

namespace marionette {

RigMotionFit fitRigMotion(const Model& model, const Eigen::VectorXd& start,
                          const Eigen::MatrixXd& wanted, double rate_hz, int segments,
                          double share) {
  if (wanted.rows() < 2 || wanted.cols() != model.nk() || start.size() != model.nk())
    throw std::invalid_argument("rig motion fit: the wanted inputs do not fit the model's rig");
  if (!(share > 0 && share <= 1)) throw std::invalid_argument("rig motion fit: share");
  const double duration_s = static_cast<double>(wanted.rows() - 1) / rate_hz;
  const detail::InputSpline spline(model, duration_s, segments, rate_hz, start);
  RigMotionFit out;
  out.inputs = spline.sampleInputs(
      detail::fitWithinLimits(spline, model, wanted, share, &out.converged));
  out.unconstrained = spline.sampleInputs(spline.fit(wanted));
  return out;
}

}  // namespace marionette

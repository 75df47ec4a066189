// SPDX-License-Identifier: BSD-3-Clause
#include "spline_fit.hpp"

#include "marionette/trajopt/rig_motion_fit.hpp"

#include <Eigen/SparseCore>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "marionette/models/cancel.hpp"
#include "nlp_solve.hpp"

namespace marionette::detail {
namespace {

constexpr int kFitIterations = 500;

// min sum_{n,j} (u_nj(z) - y_nj)^2 / range_j^2 subject to the limit rows and the input ranges.
// u_nj(z) = u0_nj + sum_f W_nf z_{j,f}: the same weights W for every input.  The variables of
// free point f are stage f: the limit rows join neighbouring points and W^T W is banded (each
// sample weighs the few points around it), so the interior point factors it by stages.
class SplineFitQp : public SparseNlp {
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
    limits_.matrix.makeCompressed();  // (its values in the structure's order)
    WtW_ = W_.transpose() * W_;
    for (int f = 0; f < nf_; ++f)
      for (int g = 0; g <= f; ++g)
        if (WtW_(f, g) != 0.0) band_.push_back({f, g});
    start_ = spline.fit(y).cwiseMax(z_lower_).cwiseMin(z_upper_);
  }
  const Eigen::VectorXd& start() const { return start_; }

  int variables() const override { return spline_.variables(); }
  int constraints() const override { return static_cast<int>(limits_.lower.size()); }
  void bounds(Eigen::VectorXd& z_lower, Eigen::VectorXd& z_upper, Eigen::VectorXd& g_lower,
              Eigen::VectorXd& g_upper) const override {
    z_lower = z_lower_;
    z_upper = z_upper_;
    g_lower = limits_.lower;
    g_upper = limits_.upper;
  }
  void stages(std::vector<int>& stage) const override {
    stage.resize(spline_.variables());
    for (int j = 0; j < nk_; ++j)
      for (int f = 0; f < nf_; ++f) stage[spline_.variable(j, f)] = f;
  }
  int jacobianNonzeros() const override { return static_cast<int>(limits_.matrix.nonZeros()); }
  void jacobianStructure(int* rows, int* cols) const override {
    int k = 0;
    for (int r = 0; r < limits_.matrix.outerSize(); ++r)
      for (RowMajor::InnerIterator it(limits_.matrix, r); it; ++it, ++k) {
        rows[k] = r;
        cols[k] = static_cast<int>(it.col());
      }
  }
  int hessianNonzeros() const override { return nk_ * static_cast<int>(band_.size()); }
  void hessianStructure(int* rows, int* cols) const override {
    int k = 0;
    for (int j = 0; j < nk_; ++j)
      for (const auto& [f, g] : band_) {
        rows[k] = spline_.variable(j, f);
        cols[k++] = spline_.variable(j, g);
      }
  }
  bool evaluate(const Eigen::VectorXd& z, bool) override {
    Eigen::MatrixXd Z(nf_, nk_);
    for (int j = 0; j < nk_; ++j)
      for (int f = 0; f < nf_; ++f) Z(f, j) = z[spline_.variable(j, f)];
    const Eigen::MatrixXd R = offset_ + W_ * Z;  // the residuals, samples x n_k
    const Eigen::MatrixXd G = 2.0 * W_.transpose() * R;
    cost_ = 0.0;
    gradient_.resize(z.size());
    for (int j = 0; j < nk_; ++j) {
      cost_ += R.col(j).squaredNorm() * inv_range2_[j];
      for (int f = 0; f < nf_; ++f) gradient_[spline_.variable(j, f)] = G(f, j) * inv_range2_[j];
    }
    rows_ = limits_.matrix * z;
    return std::isfinite(cost_) && gradient_.allFinite() && rows_.allFinite();
  }
  double cost() const override { return cost_; }
  const Eigen::VectorXd& gradient() const override { return gradient_; }
  const Eigen::VectorXd& rows() const override { return rows_; }
  void jacobianValues(double* values) const override {
    std::copy_n(limits_.matrix.valuePtr(), limits_.matrix.nonZeros(), values);
  }
  void hessian(const Eigen::VectorXd&, double sigma, const Eigen::VectorXd&,
               double* values) override {
    int k = 0;
    for (int j = 0; j < nk_; ++j)
      for (const auto& [f, g] : band_) values[k++] = sigma * 2.0 * WtW_(f, g) * inv_range2_[j];
  }

 private:
  using RowMajor = Eigen::SparseMatrix<double, Eigen::RowMajor>;
  const InputSpline& spline_;
  int nk_, nf_;
  InputSpline::LimitRows limits_;
  Eigen::MatrixXd W_, WtW_, offset_;
  std::vector<std::pair<int, int>> band_;  // W^T W's nonzeros, f >= g
  Eigen::VectorXd inv_range2_, z_lower_, z_upper_, start_;
  double cost_ = 0.0;
  Eigen::VectorXd gradient_, rows_;
};

}  // namespace

Eigen::VectorXd fitWithinLimits(const InputSpline& spline, const Model& model,
                                const Eigen::MatrixXd& samples, double share, bool* converged,
                                NlpSolver solver) {
  SplineFitQp qp(spline, model, samples, share);
  // A long performance's fit (thousands of variables) stops when the thread's scope says so.
  const InteriorPointResult result = solveNlp(
      qp, qp.start(), kFitIterations, solver,
      [](const SolveProgress&) { return !cancelRequested(); });
  throwIfCancelled("spline fit");
  if (converged) *converged = result.status == InteriorPointStatus::kConverged;
  if (result.z.size() != spline.variables()) return spline.fit(samples);
  return result.z;
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

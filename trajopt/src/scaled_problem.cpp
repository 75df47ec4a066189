// SPDX-License-Identifier: BSD-3-Clause
#include "scaled_problem.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace marionette::detail {
namespace {

double relaxedLower(double bound) { return bound - ScaledProblem::kBoundRelax * std::max(1.0, std::abs(bound)); }
double relaxedUpper(double bound) { return bound + ScaledProblem::kBoundRelax * std::max(1.0, std::abs(bound)); }

// Entry i of `out` bounded by (lower, upper) times scale, relaxed; none where infinite.
void setBounds(Bounds& out, int i, double lower, double upper, double scale) {
  if (lower > -SparseNlp::kInfinity) {
    out.has_lower[i] = 1;
    out.lower[i] = relaxedLower(scale * lower);
  }
  if (upper < SparseNlp::kInfinity) {
    out.has_upper[i] = 1;
    out.upper[i] = relaxedUpper(scale * upper);
  }
}

Bounds unbounded(int n) {
  Bounds out;
  out.lower.setZero(n);
  out.upper.setZero(n);
  out.has_lower.assign(n, 0);
  out.has_upper.assign(n, 0);
  return out;
}

}  // namespace

int Bounds::count() const {
  int n = 0;
  for (std::size_t i = 0; i < has_lower.size(); ++i) n += has_lower[i] + has_upper[i];
  return n;
}

ScaledProblem::ScaledProblem(SparseNlp& nlp)
    : nlp_(nlp), n_all_(nlp.variables()), m_all_(nlp.constraints()) {
  Eigen::VectorXd z_lower, z_upper;
  nlp.bounds(z_lower, z_upper, g_lower_, g_upper_);
  nlp.scaling(z_scale_, g_scale_);
  objective_scale_ = nlp.objectiveScale();
  if (z_lower.size() != n_all_ || z_upper.size() != n_all_ || g_lower_.size() != m_all_ ||
      g_upper_.size() != m_all_ || z_scale_.size() != n_all_ || g_scale_.size() != m_all_)
    throw std::invalid_argument("interior point: the problem's bounds or scales do not fit it");
  if (!(objective_scale_ > 0) || !(z_scale_.array() > 0).all() || !(g_scale_.array() > 0).all())
    throw std::invalid_argument("interior point: a scale that is not positive");
  std::vector<int> all_stages;
  nlp.stages(all_stages);

  const double inf = SparseNlp::kInfinity;
  fixed_point_ = Eigen::VectorXd::Zero(n_all_);
  std::vector<int> free_index(n_all_, -1);
  for (int j = 0; j < n_all_; ++j) {
    if (z_lower[j] > z_upper[j])
      throw std::invalid_argument("interior point: variable " + std::to_string(j) +
                                  " has its lower bound above its upper");
    if (z_lower[j] == z_upper[j]) {
      fixed_point_[j] = z_lower[j];
      continue;
    }
    free_index[j] = static_cast<int>(free_.size());
    free_.push_back(j);
  }
  n_ = static_cast<int>(free_.size());
  x_bounds_ = unbounded(n_);
  stages_.resize(n_);
  for (int i = 0; i < n_; ++i) {
    const int j = free_[i];
    stages_[i] = all_stages.empty() ? 0 : all_stages[j];
    setBounds(x_bounds_, i, z_lower[j], z_upper[j], z_scale_[j]);
  }
  std::vector<int> row_kind(m_all_, -1), row_index(m_all_, -1);  // 0 equality, 1 inequality
  for (int r = 0; r < m_all_; ++r) {
    if (g_lower_[r] > g_upper_[r])
      throw std::invalid_argument("interior point: row " + std::to_string(r) +
                                  " has its lower bound above its upper");
    if (g_lower_[r] == g_upper_[r]) {
      row_kind[r] = 0;
      row_index[r] = static_cast<int>(equality_rows_.size());
      equality_rows_.push_back(r);
    } else if (g_lower_[r] > -inf || g_upper_[r] < inf) {
      row_kind[r] = 1;
      row_index[r] = static_cast<int>(inequality_rows_.size());
      inequality_rows_.push_back(r);
    }
  }
  m_e_ = static_cast<int>(equality_rows_.size());
  m_i_ = static_cast<int>(inequality_rows_.size());
  s_bounds_ = unbounded(m_i_);
  for (int k = 0; k < m_i_; ++k) {
    const int r = inequality_rows_[k];
    setBounds(s_bounds_, k, g_lower_[r], g_upper_[r], g_scale_[r]);
  }

  const int nnz_j = nlp.jacobianNonzeros(), nnz_h = nlp.hessianNonzeros();
  std::vector<int> rows(nnz_j), cols(nnz_j);
  nlp.jacobianStructure(rows.data(), cols.data());
  jac_entry_scale_.assign(nnz_j, 0.0);
  for (int e = 0; e < nnz_j; ++e) {
    const int r = rows[e], j = cols[e];
    if (r < 0 || r >= m_all_ || j < 0 || j >= n_all_)
      throw std::invalid_argument("interior point: a Jacobian entry outside the problem");
    jac_entry_scale_[e] = g_scale_[r] / z_scale_[j];
    if (free_index[j] < 0 || row_kind[r] < 0) continue;
    (row_kind[r] == 0 ? eq_entries_ : ineq_entries_).push_back({row_index[r], free_index[j], e});
  }
  hess_rows_.resize(nnz_h);
  hess_cols_.resize(nnz_h);
  nlp.hessianStructure(hess_rows_.data(), hess_cols_.data());
  hess_entry_scale_.assign(nnz_h, 0.0);
  for (int e = 0; e < nnz_h; ++e) {
    const int a = hess_rows_[e], b = hess_cols_[e];
    if (a < 0 || a >= n_all_ || b < 0 || b >= n_all_)
      throw std::invalid_argument("interior point: a Hessian entry outside the problem");
    hess_entry_scale_[e] = 1.0 / (z_scale_[a] * z_scale_[b]);
    if (free_index[a] >= 0 && free_index[b] >= 0)
      hess_entries_.push_back({free_index[a], free_index[b], e});
  }
  raw_jac_.assign(nnz_j, 0.0);
  jac_.assign(nnz_j, 0.0);
  raw_hess_.assign(nnz_h, 0.0);
  hess_.assign(nnz_h, 0.0);
  zero_hess_.assign(std::max(nnz_h, 1), 0.0);
  c_.setZero(m_e_);
  d_.setZero(m_i_);
  grad_.setZero(n_);
  y_full_.setZero(m_all_);
}

Eigen::VectorXd ScaledProblem::scaledFrom(const Eigen::VectorXd& z) const {
  Eigen::VectorXd x(n_);
  for (int i = 0; i < n_; ++i) x[i] = z_scale_[free_[i]] * z[free_[i]];
  return x;
}

Eigen::VectorXd ScaledProblem::pointOf(const Eigen::VectorXd& x) const {
  Eigen::VectorXd z = fixed_point_;
  for (int i = 0; i < n_; ++i) z[free_[i]] = x[i] / z_scale_[free_[i]];
  return z;
}

bool ScaledProblem::evaluate(const Eigen::VectorXd& x, bool derivatives) {
  z_ = pointOf(x);
  if (!nlp_.evaluate(z_, derivatives)) return false;
  f_ = objective_scale_ * nlp_.cost();
  const Eigen::VectorXd& g = nlp_.rows();
  for (int k = 0; k < m_e_; ++k) {
    const int r = equality_rows_[k];
    c_[k] = g_scale_[r] * (g[r] - g_lower_[r]);
  }
  for (int k = 0; k < m_i_; ++k) d_[k] = g_scale_[inequality_rows_[k]] * g[inequality_rows_[k]];
  bool finite = std::isfinite(f_) && c_.allFinite() && d_.allFinite();
  if (derivatives) {
    const Eigen::VectorXd& gradient = nlp_.gradient();
    for (int i = 0; i < n_; ++i)
      grad_[i] = objective_scale_ * gradient[free_[i]] / z_scale_[free_[i]];
    nlp_.jacobianValues(raw_jac_.data());
    for (std::size_t e = 0; e < jac_.size(); ++e) jac_[e] = jac_entry_scale_[e] * raw_jac_[e];
    finite = finite && grad_.allFinite();
    for (double v : jac_) finite = finite && std::isfinite(v);
  }
  return finite;
}

const double* ScaledProblem::hessian(double sigma, const Eigen::VectorXd& y_c,
                                     const Eigen::VectorXd& y_d) {
  y_full_.setZero();
  for (int k = 0; k < m_e_; ++k) y_full_[equality_rows_[k]] = g_scale_[equality_rows_[k]] * y_c[k];
  for (int k = 0; k < m_i_; ++k)
    y_full_[inequality_rows_[k]] = g_scale_[inequality_rows_[k]] * y_d[k];
  nlp_.hessian(z_, sigma * objective_scale_, y_full_, raw_hess_.data());
  for (std::size_t e = 0; e < hess_.size(); ++e) hess_[e] = hess_entry_scale_[e] * raw_hess_[e];
  return hess_.data();
}

Eigen::VectorXd ScaledProblem::transposedProduct(const Eigen::VectorXd& y_c,
                                                 const Eigen::VectorXd& y_d) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(n_);
  for (const auto& e : eq_entries_) out[e.col] += jac_[e.source] * y_c[e.row];
  for (const auto& e : ineq_entries_) out[e.col] += jac_[e.source] * y_d[e.row];
  return out;
}

Eigen::VectorXd ScaledProblem::equalityProduct(const Eigen::VectorXd& v) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(m_e_);
  for (const auto& e : eq_entries_) out[e.row] += jac_[e.source] * v[e.col];
  return out;
}

Eigen::VectorXd ScaledProblem::inequalityProduct(const Eigen::VectorXd& v) const {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(m_i_);
  for (const auto& e : ineq_entries_) out[e.row] += jac_[e.source] * v[e.col];
  return out;
}

double ScaledProblem::unscaledViolation() const {
  double worst = 0.0;
  for (int k = 0; k < m_e_; ++k) worst = std::max(worst, std::abs(c_[k]) / g_scale_[equality_rows_[k]]);
  for (int k = 0; k < m_i_; ++k) {
    const double scale = g_scale_[inequality_rows_[k]];
    if (s_bounds_.has_lower[k]) worst = std::max(worst, (s_bounds_.lower[k] - d_[k]) / scale);
    if (s_bounds_.has_upper[k]) worst = std::max(worst, (d_[k] - s_bounds_.upper[k]) / scale);
  }
  return worst;
}

Eigen::VectorXd ScaledProblem::rowMultipliers(const Eigen::VectorXd& y_c,
                                              const Eigen::VectorXd& y_d) const {
  Eigen::VectorXd lambda = Eigen::VectorXd::Zero(m_all_);
  for (int k = 0; k < m_e_; ++k)
    lambda[equality_rows_[k]] = g_scale_[equality_rows_[k]] * y_c[k] / objective_scale_;
  for (int k = 0; k < m_i_; ++k)
    lambda[inequality_rows_[k]] = g_scale_[inequality_rows_[k]] * y_d[k] / objective_scale_;
  return lambda;
}

}  // namespace marionette::detail

// SPDX-License-Identifier: BSD-3-Clause
#include "kkt_system.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace marionette::detail {
namespace {

constexpr double kZeroPivot = 1e-30;
constexpr int kRefinements = 2;
// A solve's residual (relative to its right-hand side, at least 1) below which refinement stops,
// and above which, refined, factors without pivoting are replaced by pivoted ones.
constexpr double kRefinedResidual = 1e-10, kAcceptedResidual = 1e-8;

// Each position's stage when the variables' stages are grouped by `group` (stage / group), or
// false where a row or coupling would still span more than neighbouring stages.
bool assignStages(const std::vector<int>& variable_stage, int equalities,
                  const std::vector<KktSystem::Entry>& equality_jacobian,
                  const std::vector<KktSystem::Entry>& inequality_jacobian,
                  const std::vector<KktSystem::Entry>& hessian, int inequalities, int group,
                  std::vector<int>& stage) {
  const int n = static_cast<int>(variable_stage.size());
  stage.assign(n + equalities, 0);
  for (int i = 0; i < n; ++i) stage[i] = variable_stage[i] / group;
  const int unset = std::numeric_limits<int>::max();
  std::vector<int> lo(equalities, unset), hi(equalities, -1);
  for (const auto& e : equality_jacobian) {
    lo[e.row] = std::min(lo[e.row], stage[e.col]);
    hi[e.row] = std::max(hi[e.row], stage[e.col]);
  }
  for (int r = 0; r < equalities; ++r) {
    if (hi[r] < 0) continue;  // (a row of fixed variables only: stage 0)
    if (hi[r] - lo[r] > 2) return false;
    stage[n + r] = (lo[r] + hi[r] + 1) / 2;
  }
  std::vector<int> ilo(inequalities, unset), ihi(inequalities, -1);
  for (const auto& e : inequality_jacobian) {
    ilo[e.row] = std::min(ilo[e.row], stage[e.col]);
    ihi[e.row] = std::max(ihi[e.row], stage[e.col]);
  }
  for (int r = 0; r < inequalities; ++r)
    if (ihi[r] - ilo[r] > 1) return false;
  for (const auto& e : hessian)
    if (std::abs(stage[e.row] - stage[e.col]) > 1) return false;
  return true;
}

}  // namespace

KktSystem::KktSystem(const std::vector<int>& variable_stage, int equalities, int inequalities,
                     const std::vector<Entry>& equality_jacobian,
                     const std::vector<Entry>& inequality_jacobian,
                     const std::vector<Entry>& hessian)
    : n_(static_cast<int>(variable_stage.size())), m_(equalities) {
  for (int s : variable_stage)
    if (s < 0) throw std::invalid_argument("kkt system: a negative stage");
  std::vector<int> stage;
  int group = 1;
  while (!assignStages(variable_stage, equalities, equality_jacobian, inequality_jacobian, hessian,
                       inequalities, group, stage))
    ++group;  // (ends: grouped past the last stage, everything is one stage)
  // Stages without a position dropped, the rest numbered in order.
  std::vector<int> used(stage.begin(), stage.end());
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  const int M = std::max<int>(1, static_cast<int>(used.size()));
  std::vector<int> sizes(M, 0);
  stage_of_.resize(stage.size());
  local_of_.resize(stage.size());
  for (std::size_t p = 0; p < stage.size(); ++p) {
    stage_of_[p] = static_cast<int>(std::lower_bound(used.begin(), used.end(), stage[p]) -
                                     used.begin());
    local_of_[p] = sizes[stage_of_[p]]++;  // variables first (positions 0..n-1), then rows
  }

  // The couplings between neighbouring stages: rows of the later, columns of the earlier.
  std::vector<std::vector<char>> row_coupled(M), column_coupled(M);
  for (int k = 0; k < M; ++k) {
    row_coupled[k].assign(sizes[k], 0);
    if (k > 0) column_coupled[k].assign(sizes[k - 1], 0);
  }
  auto couple = [&](int a, int b) {
    if (stage_of_[a] < stage_of_[b]) std::swap(a, b);
    if (stage_of_[a] == stage_of_[b]) return;
    row_coupled[stage_of_[a]][local_of_[a]] = 1;
    column_coupled[stage_of_[a]][local_of_[b]] = 1;
  };
  for (const auto& e : hessian) couple(e.row, e.col);
  for (const auto& e : equality_jacobian) couple(n_ + e.row, e.col);
  std::vector<std::vector<int>> by_row(inequalities);
  for (std::size_t j = 0; j < inequality_jacobian.size(); ++j)
    by_row[inequality_jacobian[j].row].push_back(static_cast<int>(j));
  for (const auto& entries : by_row)
    for (std::size_t a = 0; a < entries.size(); ++a)
      for (std::size_t b = a + 1; b < entries.size(); ++b)
        couple(inequality_jacobian[entries[a]].col, inequality_jacobian[entries[b]].col);
  std::vector<std::vector<int>> rows(M), columns(M);
  for (int k = 1; k < M; ++k) {
    for (int i = 0; i < sizes[k]; ++i)
      if (row_coupled[k][i]) rows[k].push_back(i);
    for (int j = 0; j < sizes[k - 1]; ++j)
      if (column_coupled[k][j]) columns[k].push_back(j);
  }
  coupled_row_index_.assign(M, {});
  coupled_column_index_.assign(M, {});
  for (int k = 0; k < M; ++k) {
    coupled_row_index_[k].assign(sizes[k], -1);
    for (std::size_t i = 0; i < rows[k].size(); ++i) coupled_row_index_[k][rows[k][i]] = static_cast<int>(i);
    if (k == 0) continue;
    coupled_column_index_[k].assign(sizes[k - 1], -1);
    for (std::size_t j = 0; j < columns[k].size(); ++j)
      coupled_column_index_[k][columns[k][j]] = static_cast<int>(j);
  }
  // Each stage's variables come first (positions 0..n-1 are numbered first): its quasidefinite
  // split, where the Hessian part is positive definite and the rows' Jacobian has full rank.
  std::vector<int> variables_in(M, 0);
  for (int i = 0; i < n_; ++i) ++variables_in[stage_of_[i]];
  ldlt_.setStructure(sizes, std::move(rows), std::move(columns), std::move(variables_in));

  for (const auto& e : hessian) hessian_.push_back({address(e.row, e.col), e.source});
  for (const auto& e : equality_jacobian)
    jacobian_.push_back({address(n_ + e.row, e.col), e.source});
  for (std::size_t r = 0; r < by_row.size(); ++r) {
    const auto& entries = by_row[r];
    for (std::size_t a = 0; a < entries.size(); ++a)
      for (std::size_t b = a; b < entries.size(); ++b) {
        const Entry& ea = inequality_jacobian[entries[a]];
        const Entry& eb = inequality_jacobian[entries[b]];
        const double multiplicity = (a != b && ea.col == eb.col) ? 2.0 : 1.0;
        pairs_.push_back({address(ea.col, eb.col), static_cast<int>(r), ea.source, eb.source,
                          multiplicity});
      }
  }
  for (int i = 0; i < n_; ++i) variable_diagonal_.push_back(address(i, i));
  for (int r = 0; r < m_; ++r) row_diagonal_.push_back(address(n_ + r, n_ + r));
}

double* KktSystem::address(int a, int b) {
  if (stage_of_[a] < stage_of_[b] ||
      (stage_of_[a] == stage_of_[b] && local_of_[a] < local_of_[b]))
    std::swap(a, b);
  const int k = stage_of_[a];
  if (stage_of_[b] == k) return &ldlt_.diagonal(k)(local_of_[a], local_of_[b]);
  return &ldlt_.coupling(k)(coupled_row_index_[k][local_of_[a]],
                            coupled_column_index_[k][local_of_[b]]);
}

int KktSystem::largestStage() const {
  int largest = 0;
  for (int k = 0; k < ldlt_.stages(); ++k) largest = std::max(largest, ldlt_.stageSize(k));
  return largest;
}

const Inertia& KktSystem::factorize(const double* hessian, const double* jacobian,
                                    const Eigen::VectorXd& sigma,
                                    const Eigen::VectorXd& inequality_weight, double delta_w,
                                    double delta_c) {
  ldlt_.setZero();
  for (const Scatter& s : hessian_) *s.target += hessian[s.source];
  for (const Scatter& s : jacobian_) *s.target += jacobian[s.source];
  for (const Pair& p : pairs_)
    *p.target += p.multiplicity * inequality_weight[p.row] * jacobian[p.source_a] *
                 jacobian[p.source_b];
  for (int i = 0; i < n_; ++i) *variable_diagonal_[i] += sigma[i] + delta_w;
  for (int r = 0; r < m_; ++r) *row_diagonal_[r] -= delta_c;
  // Zero: a pivot column that is zero but for rounding's traces.  A nearly singular matrix shows
  // as a wrong inertia instead (too few negative pivots: the rows' Jacobian is rank deficient).
  // Stopped where the inertia can no longer be right.
  return ldlt_.factorize(kZeroPivot, false, Inertia{n_, m_, 0});
}

bool KktSystem::refine(const Eigen::VectorXd& rhs) const {
  ordered_ = rhs;
  ldlt_.solveInPlace(ordered_);
  // Iterative refinement while the residual is above 1e-10 of the right-hand side and each
  // round reduces it tenfold (at most kRefinements rounds).
  const double scale = std::max(1.0, rhs.lpNorm<Eigen::Infinity>());
  double last = std::numeric_limits<double>::infinity();
  for (int refinement = 0;; ++refinement) {
    residual_ = rhs;
    correction_ = -ordered_;
    ldlt_.multiplyAdd(correction_, residual_);  // rhs - K x
    const double size = residual_.lpNorm<Eigen::Infinity>();
    if (!(size > kRefinedResidual * scale)) return true;
    if (refinement == kRefinements || !(size < 0.1 * last))
      return size <= kAcceptedResidual * scale;
    last = size;
    ldlt_.solveInPlace(residual_);
    ordered_ += residual_;
  }
}

void KktSystem::solve(Eigen::VectorXd& x, Eigen::VectorXd& c) const {
  Eigen::VectorXd& rhs = rhs_;
  rhs.resize(n_ + m_);
  for (int i = 0; i < n_; ++i) rhs[ldlt_.offset(stage_of_[i]) + local_of_[i]] = x[i];
  for (int r = 0; r < m_; ++r) rhs[ldlt_.offset(stage_of_[n_ + r]) + local_of_[n_ + r]] = c[r];
  // Factors without pivoting whose solve stays inaccurate after refinement are replaced by
  // pivoted ones (the same matrix, the same inertia unless it is nearly singular: then the
  // unpivoted solve is kept, as the pivoted one would be no better).
  if (!refine(rhs) && ldlt_.unpivotedStages() > 0) {
    const Inertia before = ldlt_.inertia();
    const Eigen::VectorXd unpivoted = ordered_;
    const Inertia& after = ldlt_.factorize(kZeroPivot, true);
    ++pivoted_refactorizations_;
    if (after.zero == 0 && after.positive == before.positive && after.negative == before.negative) {
      refine(rhs);
    } else {
      ldlt_.factorize(kZeroPivot);
      ++pivoted_refactorizations_;
      ordered_ = unpivoted;
    }
  }
  for (int i = 0; i < n_; ++i) x[i] = ordered_[ldlt_.offset(stage_of_[i]) + local_of_[i]];
  for (int r = 0; r < m_; ++r) c[r] = ordered_[ldlt_.offset(stage_of_[n_ + r]) + local_of_[n_ + r]];
}

}  // namespace marionette::detail

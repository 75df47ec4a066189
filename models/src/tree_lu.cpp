// SPDX-License-Identifier: BSD-3-Clause
#include "tree_lu.hpp"

#include <algorithm>
#include <cmath>

namespace marionette {

TreeLu::TreeLu(const Model& model) : n_(model.nd()) {
  start_.assign(1, 0);
  for (int k = 0; k < n_; ++k) {
    const std::vector<int>& chain = model.dynamic_ancestors[k];  // root first, ends with k
    chain_.insert(chain_.end(), chain.begin(), chain.end() - 1);
    start_.push_back(static_cast<int>(chain_.size()));
  }
  col_.assign(chain_.size(), 0.0);
  row_.assign(chain_.size(), 0.0);
  diag_.assign(n_, 0.0);
  scale_.assign(n_, 0.0);
  deepest_first_.resize(n_);
  for (int k = 0; k < n_; ++k) deepest_first_[k] = k;
  std::stable_sort(deepest_first_.begin(), deepest_first_.end(), [&](int a, int b) {
    return start_[a + 1] - start_[a] > start_[b + 1] - start_[b];
  });
}

bool TreeLu::factor(const Eigen::MatrixXd& A) {
  for (int k = 0; k < n_; ++k) {
    diag_[k] = A(k, k);
    double scale = std::abs(diag_[k]);
    for (int i = start_[k]; i < start_[k + 1]; ++i) {
      col_[i] = A(chain_[i], k);
      row_[i] = A(k, chain_[i]);
      scale = std::max({scale, std::abs(col_[i]), std::abs(row_[i])});
    }
    scale_[k] = scale;
  }
  for (int k : deepest_first_) {
    const double pivot = diag_[k];
    if (!std::isfinite(pivot) || !(std::abs(pivot) > 1e-13 * scale_[k])) return false;
    // Eliminate k from the rows of its ancestors c_0..c_{d-1}: row c_i -= (a_{c_i k} / a_kk)
    // row k.  Row k's other entries are in the columns of the same ancestors, so only ancestor
    // pairs (c_i, c_j) change: no fill.  For i < j, (c_i, c_j) is column c_j's i-th entry and
    // (c_j, c_i) row c_j's.
    const int s = start_[k], d = start_[k + 1] - s;
    double* lk = &col_[s];
    const double* uk = &row_[s];
    for (int i = 0; i < d; ++i) lk[i] /= pivot;
    for (int j = 0; j < d; ++j) {
      const int c = chain_[s + j];
      diag_[c] -= lk[j] * uk[j];
      double* lc = &col_[start_[c]];
      double* uc = &row_[start_[c]];
      const double ukj = uk[j], lkj = lk[j];
      for (int i = 0; i < j; ++i) {
        lc[i] -= lk[i] * ukj;
        uc[i] -= lkj * uk[i];
      }
    }
  }
  return true;
}

}  // namespace marionette

// SPDX-License-Identifier: BSD-3-Clause
// A sparse matrix of fixed structure made of blocks, the way a transcription's constraint
// Jacobian and Lagrangian Hessian are: the structure is declared once, then each evaluation
// overwrites the blocks' values in place.  A block's values are held dense (column-major), and
// it declares which of them are entries: all, those of a pattern (a tree's joints couple only
// along its chains), a symmetric block's lower triangle, or a diagonal.  Entries are (row,
// column, value) triplets in declaration order, as Ipopt takes them.
#pragma once

#include <Eigen/Core>
#include <vector>

namespace marionette::detail {

using Pattern = Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic>;

class SparseBlocks {
 public:
  // A dense rows x cols block at (row, col); returns its id.
  int dense(int row, int col, int rows, int cols) {
    return dense(row, col, Pattern::Constant(rows, cols, true));
  }
  // A block at (row, col) whose entries are the pattern's true ones.
  int dense(int row, int col, const Pattern& pattern) {
    return add(row, col, static_cast<int>(pattern.rows()), static_cast<int>(pattern.cols()),
               false, [&](int r, int c) { return pattern(r, c); });
  }
  // The diagonal of an n x n block at (row, col): its values are a column of n.
  int diagonal(int row, int col, int n) {
    return add(row, col, n, 1, true, [](int, int) { return true; });
  }
  // An n x n block on the diagonal of a symmetric matrix at (row, row), written in full: its
  // entries are the lower triangle (of the pattern's true ones).
  int lower(int row, const Pattern& pattern) {
    return add(row, row, static_cast<int>(pattern.rows()), static_cast<int>(pattern.cols()),
               false, [&](int r, int c) { return r >= c && pattern(r, c); });
  }

  // A block's values (column-major; a diagonal's as a column of n).
  Eigen::Map<Eigen::MatrixXd> values(int id) {
    const Block& b = blocks_[id];
    return {values_.data() + b.offset, b.rows, b.cols};
  }
  int nonzeros() const { return static_cast<int>(rows_.size()); }  // entries in structure()
  void setZero() { std::fill(values_.begin(), values_.end(), 0.0); }
  // The entries' values, in the order of structure().
  void copyValues(double* out) const {
    for (std::size_t n = 0; n < source_.size(); ++n) out[n] = values_[source_[n]];
  }
  // Each entry's row and column.
  template <class Index>
  void structure(Index* rows, Index* cols) const {
    for (std::size_t n = 0; n < rows_.size(); ++n) {
      rows[n] = static_cast<Index>(rows_[n]);
      cols[n] = static_cast<Index>(cols_[n]);
    }
  }

 private:
  struct Block {
    int rows, cols, offset;  // offset: into values_
  };
  template <class IsEntry>
  int add(int row, int col, int rows, int cols, bool is_diagonal, IsEntry is_entry) {
    const int offset = static_cast<int>(values_.size());
    blocks_.push_back({rows, cols, offset});
    values_.resize(values_.size() + static_cast<std::size_t>(rows * cols));
    for (int c = 0; c < cols; ++c)
      for (int r = 0; r < rows; ++r) {
        if (!is_entry(r, c)) continue;
        rows_.push_back(row + r);
        cols_.push_back(col + (is_diagonal ? r : c));
        source_.push_back(offset + c * rows + r);
      }
    return static_cast<int>(blocks_.size()) - 1;
  }
  std::vector<Block> blocks_;
  std::vector<double> values_;
  std::vector<int> rows_, cols_, source_;  // per entry: its row, column and value's index
};

}  // namespace marionette::detail

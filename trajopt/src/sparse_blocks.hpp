// SPDX-License-Identifier: BSD-3-Clause
// A sparse matrix of fixed structure made of dense, diagonal and lower-triangular blocks, the way a
// transcription's constraint Jacobian and Lagrangian Hessian are: the structure is declared once,
// then each evaluation overwrites the blocks' values in place.  Entries are (row, column, value)
// triplets in declaration order (dense blocks column by column, a lower block's lower triangle
// only), as Ipopt takes them.
#pragma once

#include <Eigen/Core>
#include <vector>

namespace marionette::detail {

class SparseBlocks {
 public:
  // A dense rows x cols block at (row, col); returns its id.
  int dense(int row, int col, int rows, int cols) { return add(row, col, rows, cols, false); }
  // The diagonal of an n x n block at (row, col).
  int diagonal(int row, int col, int n) { return add(row, col, n, n, true); }
  // An n x n block on the diagonal of a symmetric matrix at (row, row): its values are held (and
  // written) in full, its lower triangle is what structure() and copyValues() give.
  int lower(int row, int n) {
    const int id = add(row, row, n, n, false);
    blocks_.back().is_lower = true;
    nonzeros_ -= n * (n - 1) / 2;
    return id;
  }

  // A dense block's values (column-major), or a diagonal's (a column of n).
  Eigen::Map<Eigen::MatrixXd> values(int id) {
    const Block& b = blocks_[id];
    return {values_.data() + b.offset, b.rows, b.is_diagonal ? 1 : b.cols};
  }
  int nonzeros() const { return nonzeros_; }  // entries in structure()
  void setZero() { std::fill(values_.begin(), values_.end(), 0.0); }
  // The entries' values, in the order of structure().
  void copyValues(double* out) const {
    int n = 0;
    for (const Block& b : blocks_) {
      const double* v = values_.data() + b.offset;
      if (b.is_diagonal) {
        for (int i = 0; i < b.rows; ++i) out[n++] = v[i];
        continue;
      }
      for (int c = 0; c < b.cols; ++c)
        for (int r = b.is_lower ? c : 0; r < b.rows; ++r) out[n++] = v[c * b.rows + r];
    }
  }

  // Each entry's row and column, in the order of allValues().
  template <class Index>
  void structure(Index* rows, Index* cols) const {
    int n = 0;
    for (const Block& b : blocks_) {
      if (b.is_diagonal) {
        for (int i = 0; i < b.rows; ++i, ++n) {
          rows[n] = static_cast<Index>(b.row + i);
          cols[n] = static_cast<Index>(b.col + i);
        }
        continue;
      }
      for (int c = 0; c < b.cols; ++c)
        for (int r = b.is_lower ? c : 0; r < b.rows; ++r, ++n) {
          rows[n] = static_cast<Index>(b.row + r);
          cols[n] = static_cast<Index>(b.col + c);
        }
    }
  }

 private:
  struct Block {
    int row, col, rows, cols;
    bool is_diagonal;
    int offset;  // into values_
    bool is_lower = false;
  };
  int add(int row, int col, int rows, int cols, bool is_diagonal) {
    const int size = is_diagonal ? rows : rows * cols;
    blocks_.push_back({row, col, rows, cols, is_diagonal, static_cast<int>(values_.size())});
    values_.resize(values_.size() + static_cast<std::size_t>(size));
    nonzeros_ += size;
    return static_cast<int>(blocks_.size()) - 1;
  }
  std::vector<Block> blocks_;
  std::vector<double> values_;
  int nonzeros_ = 0;
};

}  // namespace marionette::detail

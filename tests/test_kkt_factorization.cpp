// SPDX-License-Identifier: BSD-3-Clause
// The interior point's linear algebra (trajopt/src/bunch_kaufman.hpp, block_tridiagonal_ldlt.hpp)
// against Eigen's dense decompositions: the inertia against the eigenvalues' signs, the solution
// against a pivoted LU, on random symmetric indefinite matrices shaped like a transcription's KKT
// (per stage a Hessian block and its rows' Jacobian, stages coupled through a few variables).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

#include "block_tridiagonal_ldlt.hpp"
#include "bunch_kaufman.hpp"

namespace marionette {
namespace {

using detail::BlockTridiagonalLdlt;
using detail::BunchKaufman;
using detail::Inertia;

Inertia eigenInertia(const Eigen::MatrixXd& K, double zero = 1e-9) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(K);
  Inertia in;
  for (Eigen::Index i = 0; i < K.rows(); ++i) {
    const double l = eig.eigenvalues()[i];
    (l > zero ? in.positive : l < -zero ? in.negative : in.zero) += 1;
  }
  return in;
}

// A KKT block [H J^T; J -delta]: n variables (H indefinite when `convex` is false), m rows.
Eigen::MatrixXd kktBlock(std::mt19937& rng, int n, int m, bool convex, double delta) {
  std::normal_distribution<double> normal;
  Eigen::MatrixXd G(n, n);
  for (int i = 0; i < n * n; ++i) G.data()[i] = normal(rng);
  Eigen::MatrixXd H = G * G.transpose() / n;
  if (!convex) H.diagonal().array() -= 0.5;
  Eigen::MatrixXd J(m, n);
  for (int i = 0; i < m * n; ++i) J.data()[i] = normal(rng);
  Eigen::MatrixXd K = Eigen::MatrixXd::Zero(n + m, n + m);
  K.topLeftCorner(n, n) = H;
  K.bottomLeftCorner(m, n) = J;
  K.topRightCorner(n, m) = J.transpose();
  K.bottomRightCorner(m, m).diagonal().setConstant(-delta);
  return K;
}

TEST(BunchKaufman, MatchesTheEigenvaluesAndSolvesIndefiniteSystems) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 1 + trial % 13, m = trial % 7;
    const Eigen::MatrixXd K = kktBlock(rng, n, m, trial % 3 == 0, trial % 2 ? 1e-8 : 0.0);
    BunchKaufman bk;
    bk.factorize(K, 1e-13);
    const Inertia expected = eigenInertia(K);
    if (expected.zero > 0) continue;  // (rank-deficient J: not what this case tests)
    EXPECT_EQ(bk.inertia().positive, expected.positive) << "trial " << trial;
    EXPECT_EQ(bk.inertia().negative, expected.negative) << "trial " << trial;
    ASSERT_FALSE(bk.singular());
    Eigen::MatrixXd B = Eigen::MatrixXd::Random(n + m, 3);
    const Eigen::MatrixXd expected_x = K.fullPivLu().solve(B);
    Eigen::MatrixXd x = B;
    bk.solveInPlace(x);
    EXPECT_LT((x - expected_x).norm(), 1e-8 * (1 + expected_x.norm())) << "trial " << trial;
    // The Schur complement S - B^T K^-1 B.
    Eigen::MatrixXd S = Eigen::MatrixXd::Identity(3, 3), work;
    bk.subtractQuadratic(B, S, work);
    const Eigen::MatrixXd expected_S = Eigen::MatrixXd::Identity(3, 3) - B.transpose() * expected_x;
    EXPECT_LT((S.triangularView<Eigen::Lower>().toDenseMatrix() -
               expected_S.triangularView<Eigen::Lower>().toDenseMatrix())
                  .norm(),
              1e-8 * (1 + expected_S.norm()));
  }
}

TEST(BunchKaufman, TakesTwoByTwoPivotsWhereTheDiagonalIsZero) {
  // [0 1; 1 0] has no usable 1x1 pivot: one 2x2 pivot, one eigenvalue of each sign.
  Eigen::MatrixXd K(3, 3);
  K << 0, 1, 2, 1, 0, 3, 2, 3, 0;
  BunchKaufman bk;
  bk.factorize(K, 1e-13);
  const Inertia expected = eigenInertia(K);
  EXPECT_EQ(bk.inertia().positive, expected.positive);
  EXPECT_EQ(bk.inertia().negative, expected.negative);
  Eigen::MatrixXd b = Eigen::MatrixXd::Ones(3, 1);
  bk.solveInPlace(b);
  EXPECT_LT((K * b - Eigen::MatrixXd::Ones(3, 1)).norm(), 1e-12);
}

TEST(BunchKaufman, CountsAZeroPivotOfASingularMatrix) {
  Eigen::MatrixXd K(3, 3);
  K << 1, 2, 0, 2, 4, 0, 0, 0, -1;  // rank 2
  BunchKaufman bk;
  bk.factorize(K, 1e-12);
  EXPECT_TRUE(bk.singular());
  EXPECT_EQ(bk.inertia().zero, 1);
  EXPECT_EQ(bk.inertia().positive, 1);
  EXPECT_EQ(bk.inertia().negative, 1);
}

// A random block tridiagonal KKT matrix: per stage a KKT block, coupled to the previous stage on
// a few rows and columns.
struct Staged {
  BlockTridiagonalLdlt blocks;
  Eigen::MatrixXd dense;
};

Staged stagedMatrix(std::mt19937& rng, int stages, bool convex) {
  std::uniform_int_distribution<int> size(1, 9), rows(0, 4);
  std::normal_distribution<double> normal;
  std::vector<int> sizes;
  std::vector<Eigen::MatrixXd> diagonal;
  for (int k = 0; k < stages; ++k) {
    const int n = size(rng), m = std::min(rows(rng), n);
    diagonal.push_back(kktBlock(rng, n, m, convex, 0.0));
    sizes.push_back(n + m);
  }
  std::vector<std::vector<int>> coupled_rows(stages), coupled_columns(stages);
  for (int k = 1; k < stages; ++k) {
    for (int i = 0; i < sizes[k]; ++i)
      if (rng() % 2) coupled_rows[k].push_back(i);
    for (int j = 0; j < sizes[k - 1]; ++j)
      if (rng() % 2) coupled_columns[k].push_back(j);
  }
  Staged out;
  out.blocks.setStructure(sizes, coupled_rows, coupled_columns);
  out.dense.setZero(out.blocks.size(), out.blocks.size());
  for (int k = 0; k < stages; ++k) {
    const int o = out.blocks.offset(k);
    out.blocks.diagonal(k) = diagonal[k];
    out.dense.block(o, o, sizes[k], sizes[k]) = diagonal[k];
    if (k == 0) continue;
    Eigen::MatrixXd& C = out.blocks.coupling(k);
    for (Eigen::Index i = 0; i < C.rows(); ++i)
      for (Eigen::Index j = 0; j < C.cols(); ++j) {
        C(i, j) = 0.3 * normal(rng);
        const int r = o + coupled_rows[k][i], c = out.blocks.offset(k - 1) + coupled_columns[k][j];
        out.dense(r, c) = out.dense(c, r) = C(i, j);
      }
  }
  return out;
}

TEST(BlockTridiagonalLdlt, MatchesTheDenseMatrixsInertiaAndSolution) {
  std::mt19937 rng(11);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Staged s = stagedMatrix(rng, 1 + trial % 12, trial % 4 == 0);
    const Inertia expected = eigenInertia(s.dense);
    if (expected.zero > 0) continue;
    const Eigen::VectorXd b = Eigen::VectorXd::Random(s.blocks.size());
    Eigen::VectorXd product = Eigen::VectorXd::Zero(s.blocks.size());
    s.blocks.multiplyAdd(b, product);
    EXPECT_LT((product - s.dense * b).norm(), 1e-12 * (1 + product.norm()));
    const Inertia& found = s.blocks.factorize(1e-13);
    if (found.zero > 0) continue;  // (a stage's complement singular where K is not: regularized)
    EXPECT_EQ(found.positive, expected.positive) << "trial " << trial;
    EXPECT_EQ(found.negative, expected.negative) << "trial " << trial;
    const Eigen::VectorXd expected_x = s.dense.fullPivLu().solve(b);
    Eigen::VectorXd x = b;
    s.blocks.solveInPlace(x);
    EXPECT_LT((s.dense * x - b).norm(), 1e-9 * (1 + b.norm())) << "trial " << trial;
    EXPECT_LT((x - expected_x).norm(), 1e-7 * (1 + expected_x.norm())) << "trial " << trial;
    ++checked;
  }
  EXPECT_GE(checked, 40);  // most draws are nonsingular
}

}  // namespace
}  // namespace marionette

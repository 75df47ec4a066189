// SPDX-License-Identifier: BSD-3-Clause
// The interior point's linear algebra (trajopt/src/bunch_kaufman.hpp, quasidefinite_ldlt.hpp,
// block_tridiagonal_ldlt.hpp) against Eigen's dense decompositions: the inertia against the
// eigenvalues' signs, the solution against a pivoted LU, on random symmetric indefinite matrices
// shaped like a transcription's KKT (per stage a Hessian block and its rows' Jacobian, stages
// coupled through a few variables).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

#include "block_tridiagonal_ldlt.hpp"
#include "bunch_kaufman.hpp"
#include "dense_kernels.hpp"
#include "quasidefinite_ldlt.hpp"

namespace marionette {
namespace {

using detail::BlockTridiagonalLdlt;
using detail::BunchKaufman;
using detail::DenseKernels;
using detail::Inertia;
using detail::QuasidefiniteLdlt;

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

// A factorization of K solves K x = B for three columns and one vector as a pivoted LU does
// (1e-8), and gives the Schur complement I - B^T K^-1 B.
template <class Factorization>
void expectSolvesOf(const Factorization& f, const Eigen::MatrixXd& K, int trial) {
  const Eigen::MatrixXd B = Eigen::MatrixXd::Random(K.rows(), 3);
  const Eigen::MatrixXd expected_x = K.fullPivLu().solve(B);
  Eigen::MatrixXd x = B;
  f.solveInPlace(x);
  EXPECT_LT((x - expected_x).norm(), 1e-8 * (1 + expected_x.norm())) << "trial " << trial;
  Eigen::VectorXd v = B.col(1);
  f.solveVectorInPlace(v);
  EXPECT_LT((v - expected_x.col(1)).norm(), 1e-8 * (1 + expected_x.norm())) << "trial " << trial;
  Eigen::MatrixXd S = Eigen::MatrixXd::Identity(3, 3), work;
  f.subtractQuadratic(B, S, work);
  const Eigen::MatrixXd expected_S = Eigen::MatrixXd::Identity(3, 3) - B.transpose() * expected_x;
  EXPECT_LT((S.triangularView<Eigen::Lower>().toDenseMatrix() -
             expected_S.triangularView<Eigen::Lower>().toDenseMatrix())
                .norm(),
            1e-8 * (1 + expected_S.norm()))
      << "trial " << trial;
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
    expectSolvesOf(bk, K, trial);
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

TEST(QuasidefiniteLdlt, FactorsAConvexKktBlockWithoutPivoting) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 1 + trial % 11, m = std::min(n, trial % 6);
    const Eigen::MatrixXd K = kktBlock(rng, n, m, true, trial % 2 ? 1e-8 : 0.0);
    const Inertia expected = eigenInertia(K);
    if (expected.zero > 0) continue;
    // H positive definite and J of full rank: quasidefinite, n positive and m negative.
    ASSERT_EQ(expected.positive, n);
    QuasidefiniteLdlt qd;
    ASSERT_TRUE(qd.factorize(K, n)) << "trial " << trial;
    expectSolvesOf(qd, K, trial);
  }
}

TEST(QuasidefiniteLdlt, RefusesWhatIsNotQuasidefinite) {
  std::mt19937 rng(6);
  // An indefinite Hessian block: its Cholesky factorization fails.
  Eigen::MatrixXd K = kktBlock(rng, 6, 2, true, 0.0);
  K(0, 0) = -1.0;
  QuasidefiniteLdlt qd;
  EXPECT_FALSE(qd.factorize(K, 6));
  // Dependent rows: their Schur complement is singular, not negative definite.
  Eigen::MatrixXd D = kktBlock(rng, 5, 2, true, 0.0);
  D.row(6).head(5) = D.row(5).head(5);
  D.col(6).head(5) = D.col(5).head(5);
  EXPECT_FALSE(qd.factorize(D, 5));
  // A symmetric positive definite matrix is quasidefinite with any p only at p = n.
  const Eigen::MatrixXd P = kktBlock(rng, 4, 0, true, 0.0);
  EXPECT_TRUE(qd.factorize(P, 4));
  EXPECT_FALSE(qd.factorize(P, 2));
}

// A random block tridiagonal KKT matrix: per stage a KKT block, coupled to the previous stage on
// a few rows and columns.
struct Staged {
  BlockTridiagonalLdlt blocks;
  Eigen::MatrixXd dense;
  int variables = 0;  // in all stages (the rest are rows)
};

// `split`: the stages' variables given as their quasidefinite split (factored without pivoting
// where that holds).
Staged stagedMatrix(std::mt19937& rng, int stages, bool convex, bool split = false,
                    int largest = 9) {
  std::uniform_int_distribution<int> size(1, largest), rows(0, (largest + 1) / 2);
  std::normal_distribution<double> normal;
  std::vector<int> sizes, variables;
  std::vector<Eigen::MatrixXd> diagonal;
  for (int k = 0; k < stages; ++k) {
    const int n = size(rng), m = std::min(rows(rng), n);
    diagonal.push_back(kktBlock(rng, n, m, convex, 0.0));
    sizes.push_back(n + m);
    variables.push_back(n);
  }
  std::vector<std::vector<int>> coupled_rows(stages), coupled_columns(stages);
  for (int k = 1; k < stages; ++k) {
    for (int i = 0; i < sizes[k]; ++i)
      if (rng() % 2) coupled_rows[k].push_back(i);
    for (int j = 0; j < sizes[k - 1]; ++j)
      if (rng() % 2) coupled_columns[k].push_back(j);
  }
  Staged out;
  for (int v : variables) out.variables += v;
  out.blocks.setStructure(sizes, coupled_rows, coupled_columns,
                          split ? variables : std::vector<int>{});
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

TEST(BlockTridiagonalLdlt, FactorsQuasidefiniteStagesWithoutPivotingToTheSameSolution) {
  std::mt19937 rng(12);
  int checked = 0, unpivoted = 0, pivoted = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Staged s = stagedMatrix(rng, 1 + trial % 12, trial % 2 == 0, true);
    const Inertia expected = eigenInertia(s.dense);
    if (expected.zero > 0) continue;
    const Inertia found = s.blocks.factorize(1e-13);
    if (found.zero > 0) continue;
    EXPECT_EQ(found.positive, expected.positive) << "trial " << trial;
    EXPECT_EQ(found.negative, expected.negative) << "trial " << trial;
    const int stages_unpivoted = s.blocks.unpivotedStages();
    unpivoted += stages_unpivoted;
    pivoted += s.blocks.stages() - stages_unpivoted;
    const Eigen::VectorXd b = Eigen::VectorXd::Random(s.blocks.size());
    const Eigen::VectorXd expected_x = s.dense.fullPivLu().solve(b);
    Eigen::VectorXd x = b;
    s.blocks.solveInPlace(x);
    EXPECT_LT((x - expected_x).norm(), 1e-7 * (1 + expected_x.norm())) << "trial " << trial;
    // Every stage pivoted: the same inertia and solution.
    const Inertia again = s.blocks.factorize(1e-13, true);
    EXPECT_EQ(s.blocks.unpivotedStages(), 0);
    EXPECT_EQ(again.positive, expected.positive);
    Eigen::VectorXd y = b;
    s.blocks.solveInPlace(y);
    EXPECT_LT((y - expected_x).norm(), 1e-7 * (1 + expected_x.norm())) << "trial " << trial;
    ++checked;
  }
  EXPECT_GE(checked, 40);
  // Both kinds of stage occur: the convex draws' mostly unpivoted, the others' pivoted.
  EXPECT_GT(unpivoted, 50);
  EXPECT_GT(pivoted, 50);
}

TEST(BlockTridiagonalLdlt, StopsOnceTheInertiaExceedsTheBound) {
  // An interior point needs as many positive eigenvalues as variables and negative as rows: with
  // an indefinite Hessian there are more negative ones, and the factorization stops at the stage
  // where the count passes the rows'.
  std::mt19937 rng(13);
  int wrong = 0, stopped_early = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Staged s = stagedMatrix(rng, 4 + trial % 8, false, trial % 2 == 0);
    const Inertia expected = eigenInertia(s.dense);
    const int rows = s.blocks.size() - s.variables;
    if (expected.zero > 0) continue;
    // Bounded by the true inertia: the whole factorization, as without a bound.
    const Inertia whole = s.blocks.factorize(1e-13, false, expected);
    if (whole.zero > 0) continue;
    EXPECT_EQ(whole.positive, expected.positive);
    EXPECT_EQ(whole.negative, expected.negative);
    if (expected.negative <= rows) continue;
    ++wrong;
    const Inertia partial = s.blocks.factorize(1e-13, false, Inertia{s.variables, rows, 0});
    EXPECT_GT(partial.negative, rows) << "trial " << trial;
    EXPECT_LT(partial.positive, s.variables) << "trial " << trial;
    stopped_early += partial.positive + partial.negative < s.blocks.size();
  }
  EXPECT_GT(wrong, 10);
  EXPECT_GT(stopped_early, wrong / 3);
}

// Each kernel of each set against Eigen's expression of it, on blocks inside larger arrays (the
// leading dimensions) and sizes past Eigen's blocking.
TEST(DenseKernels, EachSetComputesWhatItsNameSays) {
  std::vector<const DenseKernels*> sets{&detail::portableKernels()};
  if (detail::avx2FmaKernels()) sets.push_back(detail::avx2FmaKernels());
  EXPECT_TRUE(&detail::denseKernels() == sets.front() || &detail::denseKernels() == sets.back());
  std::mt19937 rng(21);
  std::normal_distribution<double> normal;
  auto random = [&](int rows, int columns) {
    Eigen::MatrixXd M(rows, columns);
    for (Eigen::Index i = 0; i < M.size(); ++i) M.data()[i] = normal(rng);
    return M;
  };
  for (const DenseKernels* k : sets) {
    SCOPED_TRACE(k->name);
    for (int n : {1, 7, 70, 131}) {
      const int ld = n + 3, m = n / 2 + 2;
      Eigen::MatrixXd G = random(n, n);
      const Eigen::MatrixXd A = G * G.transpose() + n * Eigen::MatrixXd::Identity(n, n);
      Eigen::MatrixXd store = Eigen::MatrixXd::Zero(ld, n);
      store.topRows(n) = A;
      ASSERT_TRUE(k->cholesky_lower(store.data(), n, ld));
      const Eigen::MatrixXd L = store.topRows(n).triangularView<Eigen::Lower>();
      EXPECT_LT((L * L.transpose() - A).norm(), 1e-12 * A.norm());
      Eigen::MatrixXd not_definite = -A;
      EXPECT_FALSE(k->cholesky_lower(not_definite.data(), n, n));
      const double tolerance = 1e-10 * n;
      // Solves: L^-1 B, L^-T B (with L's diagonal and a unit one), Y L^-T.
      const Eigen::MatrixXd B = random(n, m);
      for (bool unit : {false, true}) {
        const Eigen::MatrixXd T =
            unit ? Eigen::MatrixXd(L.triangularView<Eigen::StrictlyLower>()) +
                       Eigen::MatrixXd::Identity(n, n)
                 : L;
        for (int columns : {1, m}) {
          Eigen::MatrixXd X = B.leftCols(columns);
          k->solve_left_lower(store.data(), n, ld, unit, X.data(), columns, n);
          EXPECT_LT((T * X - B.leftCols(columns)).norm(), tolerance * B.norm());
          X = B.leftCols(columns);
          k->solve_left_lower_transposed(store.data(), n, ld, unit, X.data(), columns, n);
          EXPECT_LT((T.transpose() * X - B.leftCols(columns)).norm(), tolerance * B.norm());
        }
      }
      Eigen::MatrixXd Y = B.transpose();
      k->solve_right_lower_transposed(store.data(), n, ld, Y.data(), m, m);
      EXPECT_LT((Y * L.transpose() - B.transpose()).norm(), tolerance * B.norm());
      // Rank updates and the product, on the lower triangle only.
      const Eigen::MatrixXd S0 = random(m, m);
      Eigen::MatrixXd S = S0;
      const Eigen::MatrixXd Bt = B.transpose();
      k->rank_update_lower(S.data(), m, m, Bt.data(), n, m, -0.5);
      Eigen::MatrixXd expected = S0 - 0.5 * B.transpose() * B;
      EXPECT_LT((Eigen::MatrixXd(S.triangularView<Eigen::Lower>()) -
                 Eigen::MatrixXd(expected.triangularView<Eigen::Lower>())).norm(),
                tolerance * expected.norm());
      EXPECT_EQ(Eigen::MatrixXd(S.triangularView<Eigen::StrictlyUpper>()),
                Eigen::MatrixXd(S0.triangularView<Eigen::StrictlyUpper>()));
      S = S0;
      k->rank_update_lower_transposed(S.data(), m, m, B.data(), n, n, 2.0);
      expected = S0 + 2.0 * B.transpose() * B;
      EXPECT_LT((Eigen::MatrixXd(S.triangularView<Eigen::Lower>()) -
                 Eigen::MatrixXd(expected.triangularView<Eigen::Lower>())).norm(),
                tolerance * expected.norm());
      const Eigen::MatrixXd C = random(n, m);
      S = S0;
      k->subtract_product_lower(S.data(), m, m, B.data(), n, C.data(), n, n);
      expected = S0 - B.transpose() * C;
      EXPECT_LT((Eigen::MatrixXd(S.triangularView<Eigen::Lower>()) -
                 Eigen::MatrixXd(expected.triangularView<Eigen::Lower>())).norm(),
                tolerance * expected.norm());
      EXPECT_EQ(Eigen::MatrixXd(S.triangularView<Eigen::StrictlyUpper>()),
                Eigen::MatrixXd(S0.triangularView<Eigen::StrictlyUpper>()));
      // Products.
      const Eigen::VectorXd x = random(m, 1), z = random(n, 1), y0 = random(n, 1);
      Eigen::VectorXd y = y0;
      k->multiply_add(B.data(), n, m, n, x.data(), y.data(), -1.5);
      EXPECT_LT((y - (y0 - 1.5 * B * x)).norm(), tolerance * (1 + y.norm()));
      Eigen::VectorXd w = x;
      k->multiply_add_transposed(B.data(), n, m, n, z.data(), w.data(), 1.0);
      EXPECT_LT((w - (x + B.transpose() * z)).norm(), tolerance * (1 + w.norm()));
      Eigen::MatrixXd lower_only = A.triangularView<Eigen::Lower>();
      y = y0;
      k->symmetric_multiply_add(lower_only.data(), n, n, z.data(), y.data());
      EXPECT_LT((y - (y0 + A * z)).norm(), tolerance * (1 + y.norm()));
    }
  }
}

// Each kernel gives the same bits wherever its operands lie (Eigen peels loops to the vector
// width's alignment, 32 bytes with AVX, and an allocation is only 16-byte aligned): the operands
// copied to 0..3 doubles past a 64-byte boundary, every result bit for bit the first's.
TEST(DenseKernels, EachSetGivesTheSameBitsWhereverTheOperandsLie) {
  std::vector<const DenseKernels*> sets{&detail::portableKernels()};
  if (detail::avx2FmaKernels()) sets.push_back(detail::avx2FmaKernels());
  std::mt19937 rng(23);
  std::normal_distribution<double> normal;
  for (const DenseKernels* k : sets) {
    SCOPED_TRACE(k->name);
    for (int n : {37, 131}) {
      const int m = n / 2 + 3;
      Eigen::MatrixXd G(n, n), B(n, m);
      for (Eigen::Index i = 0; i < G.size(); ++i) G.data()[i] = normal(rng);
      for (Eigen::Index i = 0; i < B.size(); ++i) B.data()[i] = normal(rng);
      const Eigen::MatrixXd A = G * G.transpose() + n * Eigen::MatrixXd::Identity(n, n);
      // Every kernel once on operands `offset` doubles past an aligned start; all results.
      auto run = [&](int offset) {
        std::vector<double> results;
        alignas(64) static thread_local double arena[4][140 * 140 + 8];
        auto place = [&](int slot, const Eigen::MatrixXd& M) {
          double* p = arena[slot] + offset;
          std::copy(M.data(), M.data() + M.size(), p);
          return p;
        };
        auto keep = [&](const double* p, Eigen::Index size) {
          results.insert(results.end(), p, p + size);
        };
        double* a = place(0, A);
        EXPECT_TRUE(k->cholesky_lower(a, n, n));
        keep(a, A.size());
        for (int columns : {1, m}) {
          double* b = place(1, B.leftCols(columns));
          k->solve_left_lower(a, n, n, false, b, columns, n);
          k->solve_left_lower_transposed(a, n, n, true, b, columns, n);
          keep(b, n * columns);
        }
        double* y = place(1, B.transpose());
        k->solve_right_lower_transposed(a, n, n, y, m, m);
        keep(y, n * m);
        double* s = place(2, Eigen::MatrixXd(B.transpose() * B));
        double* w = place(1, B);
        k->rank_update_lower_transposed(s, m, m, w, n, n, -0.5);
        k->subtract_product_lower(s, m, m, w, n, w, n, n);
        keep(s, m * m);
        double* v = place(3, B.col(0));
        k->symmetric_multiply_add(a, n, n, w, v);
        k->multiply_add(a, n, n, n, w, v, 0.5);
        keep(v, n);
        return results;
      };
      const std::vector<double> first = run(0);
      for (int offset = 1; offset < 4; ++offset)
        EXPECT_TRUE(run(offset) == first) << "n " << n << ", " << offset << " doubles on";
    }
  }
}

// The baseline's kernels and AVX2 + FMA's give the same inertia and, to rounding, the same
// solution on staged matrices with stages as large as a transcription's.
TEST(DenseKernels, BothSetsFactorTheSameStagedMatrices) {
  if (!detail::avx2FmaKernels()) GTEST_SKIP() << "this CPU has no AVX2 with FMA";
  std::mt19937 rng(22);
  int checked = 0;
  for (int trial = 0; trial < 12; ++trial) {
    Staged s = stagedMatrix(rng, 2 + trial % 4, trial % 3 != 0, trial % 2 == 0, 90);
    const Eigen::VectorXd b = Eigen::VectorXd::Random(s.blocks.size());
    s.blocks.setKernels(detail::portableKernels());
    const Inertia portable = s.blocks.factorize(1e-13);
    if (portable.zero > 0) continue;
    Eigen::VectorXd x_portable = b;
    s.blocks.solveInPlace(x_portable);
    const int unpivoted = s.blocks.unpivotedStages();
    s.blocks.setKernels(*detail::avx2FmaKernels());
    const Inertia fast = s.blocks.factorize(1e-13);
    EXPECT_EQ(fast.positive, portable.positive) << "trial " << trial;
    EXPECT_EQ(fast.negative, portable.negative) << "trial " << trial;
    EXPECT_EQ(s.blocks.unpivotedStages(), unpivoted) << "trial " << trial;
    Eigen::VectorXd x_fast = b;
    s.blocks.solveInPlace(x_fast);
    EXPECT_LT((s.dense * x_fast - b).norm(), 1e-9 * (1 + b.norm())) << "trial " << trial;
    EXPECT_LT((x_fast - x_portable).norm(), 1e-8 * (1 + x_portable.norm())) << "trial " << trial;
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace marionette

// SPDX-License-Identifier: BSD-3-Clause
// One set of the dense kernels (dense_kernels.hpp), for the instruction set this file is compiled
// for: MARIONETTE_KERNELS_AVX2_FMA defined, the AVX2 + FMA set's exported table; otherwise the
// baseline's.
//
// Deterministic wherever the data lies: Eigen starts some loops where the data is aligned to its
// vector width, which is 16 bytes with SSE2 (every allocation is) but 32 with AVX (half of them
// are).  Its matrix products load unaligned and are indifferent; an elementwise loop's scalar
// head is as its vector body only if neither is contracted to FMA (the AVX2 set is compiled with
// -ffp-contract=off; Eigen's explicit multiply-adds inside its products stay); its symmetric
// matrix-vector product sums from where its result is aligned, and is given an aligned one.
#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "dense_kernels.hpp"

namespace marionette::detail {
namespace {

using Matrix = Eigen::Map<Eigen::MatrixXd, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstMatrix = Eigen::Map<const Eigen::MatrixXd, Eigen::Unaligned, Eigen::OuterStride<>>;
using Vector = Eigen::Map<Eigen::VectorXd>;
using ConstVector = Eigen::Map<const Eigen::VectorXd>;

Matrix matrix(double* a, long rows, long columns, long ld) {
  return Matrix(a, rows, columns, Eigen::OuterStride<>(ld));
}
ConstMatrix matrix(const double* a, long rows, long columns, long ld) {
  return ConstMatrix(a, rows, columns, Eigen::OuterStride<>(ld));
}

bool choleskyLower(double* a, long n, long lda) {
  if (n == 0) return true;
  Matrix A = matrix(a, n, n, lda);
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd, 0, Eigen::OuterStride<>>> llt(A);  // in place
  return llt.info() == Eigen::Success;
}

void solveRightLowerTransposed(const double* l, long n, long ldl, double* y, long rows, long ldy) {
  if (n == 0 || rows == 0) return;
  Matrix Y = matrix(y, rows, n, ldy);
  const auto L = matrix(l, n, n, ldl).triangularView<Eigen::Lower>();
  L.transpose().solveInPlace<Eigen::OnTheRight>(Y);
}

template <int Mode>
void solveLeft(const double* l, long n, long ldl, double* b, long columns, long ldb,
               bool transposed) {
  if (n == 0 || columns == 0) return;
  const auto L = matrix(l, n, n, ldl).triangularView<Mode>();
  if (columns == 1) {  // a vector: no packing
    Vector v(b, n);
    if (transposed)
      L.transpose().solveInPlace(v);
    else
      L.solveInPlace(v);
    return;
  }
  Matrix B = matrix(b, n, columns, ldb);
  if (transposed)
    L.transpose().solveInPlace(B);
  else
    L.solveInPlace(B);
}

void solveLeftLower(const double* l, long n, long ldl, bool unit_diagonal, double* b, long columns,
                    long ldb) {
  if (unit_diagonal)
    solveLeft<Eigen::UnitLower>(l, n, ldl, b, columns, ldb, false);
  else
    solveLeft<Eigen::Lower>(l, n, ldl, b, columns, ldb, false);
}

void solveLeftLowerTransposed(const double* l, long n, long ldl, bool unit_diagonal, double* b,
                              long columns, long ldb) {
  if (unit_diagonal)
    solveLeft<Eigen::UnitLower>(l, n, ldl, b, columns, ldb, true);
  else
    solveLeft<Eigen::Lower>(l, n, ldl, b, columns, ldb, true);
}

void rankUpdateLower(double* s, long m, long lds, const double* w, long k, long ldw,
                     double alpha) {
  if (m == 0 || k == 0) return;
  matrix(s, m, m, lds).selfadjointView<Eigen::Lower>().rankUpdate(matrix(w, m, k, ldw), alpha);
}

void rankUpdateLowerTransposed(double* s, long m, long lds, const double* w, long k, long ldw,
                               double alpha) {
  if (m == 0 || k == 0) return;
  matrix(s, m, m, lds).selfadjointView<Eigen::Lower>().rankUpdate(
      matrix(w, k, m, ldw).transpose(), alpha);
}

void subtractProductLower(double* s, long m, long lds, const double* a, long lda, const double* b,
                          long ldb, long k) {
  if (m == 0 || k == 0) return;
  matrix(s, m, m, lds).triangularView<Eigen::Lower>() -=
      matrix(a, k, m, lda).transpose() * matrix(b, k, m, ldb);
}

void multiplyAdd(const double* a, long rows, long columns, long lda, const double* x, double* y,
                 double alpha) {
  if (rows == 0 || columns == 0) return;
  Vector(y, rows).noalias() += alpha * matrix(a, rows, columns, lda) * ConstVector(x, columns);
}

void multiplyAddTransposed(const double* a, long rows, long columns, long lda, const double* x,
                           double* y, double alpha) {
  if (rows == 0 || columns == 0) return;
  Vector(y, columns).noalias() +=
      alpha * matrix(a, rows, columns, lda).transpose() * ConstVector(x, rows);
}

void symmetricMultiplyAdd(const double* a, long n, long lda, const double* x, double* y) {
  if (n == 0) return;
  // Eigen's symmetric product starts its sums where y is aligned to the vector width (with AVX's
  // 32 bytes, wherever the allocator put it): into a copy of y of this library's alignment.
  thread_local Eigen::VectorXd result;
  result = Vector(y, n);
  result.noalias() += matrix(a, n, n, lda).selfadjointView<Eigen::Lower>() * ConstVector(x, n);
  Vector(y, n) = result;
}

DenseKernels table(const char* name) {
  return DenseKernels{name,
                      &choleskyLower,
                      &solveRightLowerTransposed,
                      &solveLeftLower,
                      &solveLeftLowerTransposed,
                      &rankUpdateLower,
                      &rankUpdateLowerTransposed,
                      &subtractProductLower,
                      &multiplyAdd,
                      &multiplyAddTransposed,
                      &symmetricMultiplyAdd};
}

}  // namespace

#ifdef MARIONETTE_KERNELS_AVX2_FMA
}  // namespace marionette::detail

// The shared library's one export (its version script keeps everything else local).
extern "C" __attribute__((visibility("default"))) const marionette::detail::DenseKernels*
marionette_dense_kernels_avx2_fma() {
  static const marionette::detail::DenseKernels kernels = marionette::detail::table("avx2+fma");
  return &kernels;
}
#else
const DenseKernels& portableKernels() {
  static const DenseKernels kernels = table("portable");
  return kernels;
}

}  // namespace marionette::detail
#endif

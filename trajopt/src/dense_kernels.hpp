// SPDX-License-Identifier: BSD-3-Clause
// The dense kernels of the KKT factorization (quasidefinite_ldlt.hpp, bunch_kaufman.hpp,
// block_tridiagonal_ldlt.hpp): Cholesky, triangular solves, rank updates and products on
// column-major blocks given by pointer and leading dimension, each a call into Eigen's blocked
// algorithms.  Compiled twice from one source (dense_kernels_variant.cpp): for the x86-64 baseline
// (SSE2: Debian's generic build, any CPU) and for AVX2 with FMA, the latter in a shared library of
// its own whose only export is its table, so that no code compiled for AVX2 can be linked in place
// of the baseline's.  Chosen once per process: AVX2 + FMA where the CPU has them, unless the
// environment sets MARIONETTE_PORTABLE_KERNELS=1.  The two round differently (FMA, the vector
// width's summation order), so a plan is the same bit for bit on every CPU of one kernel set, not
// across the two: docs/decisions/0018-interior-point-solver.md.
//
// All pointers are to column-major storage, unaligned; "lower": only the lower triangle of a
// symmetric or triangular block is read or written.  Reentrant: no state.
#pragma once

namespace marionette::detail {

struct DenseKernels {
  const char* name;  // "portable" or "avx2+fma"
  // a <- L, the lower Cholesky factor of the symmetric a (n x n), in place; false where a pivot
  // is not positive (a not positive definite).
  bool (*cholesky_lower)(double* a, long n, long lda);
  // y <- y L^-T (y: rows x n; L: n x n lower).
  void (*solve_right_lower_transposed)(const double* l, long n, long ldl, double* y, long rows,
                                       long ldy);
  // b <- L^-1 b and b <- L^-T b (b: n x columns; L: n x n lower, its diagonal or a unit one).
  void (*solve_left_lower)(const double* l, long n, long ldl, bool unit_diagonal, double* b,
                           long columns, long ldb);
  void (*solve_left_lower_transposed)(const double* l, long n, long ldl, bool unit_diagonal,
                                      double* b, long columns, long ldb);
  // s <- s + alpha w w^T (w: m x k) and s <- s + alpha w^T w (w: k x m); s: m x m, lower.
  void (*rank_update_lower)(double* s, long m, long lds, const double* w, long k, long ldw,
                            double alpha);
  void (*rank_update_lower_transposed)(double* s, long m, long lds, const double* w, long k,
                                       long ldw, double alpha);
  // s <- s - a^T b, lower (a, b: k x m; s: m x m).
  void (*subtract_product_lower)(double* s, long m, long lds, const double* a, long lda,
                                 const double* b, long ldb, long k);
  // y <- y + alpha a x and y <- y + alpha a^T x (a: rows x columns).
  void (*multiply_add)(const double* a, long rows, long columns, long lda, const double* x,
                       double* y, double alpha);
  void (*multiply_add_transposed)(const double* a, long rows, long columns, long lda,
                                  const double* x, double* y, double alpha);
  // y <- y + a x, a symmetric (n x n) given by its lower triangle.
  void (*symmetric_multiply_add)(const double* a, long n, long lda, const double* x, double* y);
};

// The process's kernels (chosen at the first call).
const DenseKernels& denseKernels();
// Each set: the baseline always; AVX2 + FMA where built and the CPU has them, else nullptr.
const DenseKernels& portableKernels();
const DenseKernels* avx2FmaKernels();

}  // namespace marionette::detail

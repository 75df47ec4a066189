// SPDX-License-Identifier: BSD-3-Clause
#include "dense_kernels.hpp"

#include <cstdlib>
#include <cstring>

#ifdef MARIONETTE_HAVE_AVX2_FMA_KERNELS
extern "C" const marionette::detail::DenseKernels* marionette_dense_kernels_avx2_fma();
#endif

namespace marionette::detail {

const DenseKernels* avx2FmaKernels() {
#if defined(MARIONETTE_HAVE_AVX2_FMA_KERNELS) && (defined(__x86_64__) || defined(__i386__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return marionette_dense_kernels_avx2_fma();
#endif
  return nullptr;
}

const DenseKernels& denseKernels() {
  static const DenseKernels& chosen = []() -> const DenseKernels& {
    const char* portable = std::getenv("MARIONETTE_PORTABLE_KERNELS");
    if (portable && *portable && std::strcmp(portable, "0") != 0) return portableKernels();
    const DenseKernels* fast = avx2FmaKernels();
    return fast ? *fast : portableKernels();
  }();
  return chosen;
}

}  // namespace marionette::detail

// Internal: per-ISA reduction kernels behind optimizer_kernels.h.
#pragma once

#include <cstddef>

namespace zerotrain::device::cpu::detail {

bool any_nonfinite_portable(const float* x, size_t n);
double sum_squares_portable(const float* x, size_t n);
#if defined(__x86_64__)
bool any_nonfinite_avx2(const float* x, size_t n);
double sum_squares_avx2(const float* x, size_t n);
bool any_nonfinite_avx512(const float* x, size_t n);
double sum_squares_avx512(const float* x, size_t n);
#endif

}  // namespace zerotrain::device::cpu::detail

// Run-time SIMD level selection. The binary is built for baseline x86-64;
// fast paths are compiled per function with target attributes and chosen
// here from __builtin_cpu_supports, so one binary runs on any x86-64 and
// uses AVX-512 where present. Tests force lower levels to compare paths.
//
//   using namespace zerotrain::tensor;
//   if (active_simd_level() == SimdLevel::kAvx512) ...
//   { ScopedSimdLevel portable(SimdLevel::kPortable);  // this scope only
//     fp32_to_bf16(src, dst); }
//
// Thread-safety: the level is one process-wide atomic; changing it while
// other threads run kernels is safe (each call reads it once) but changes
// their path, so only tests and start-up code should set it.
#pragma once

#include <string_view>

namespace zerotrain::device::cpu {

enum class SimdLevel {
  kPortable = 0,  // plain C++, any CPU
  kAvx2 = 1,      // AVX2 + FMA + F16C
  kAvx512 = 2,    // AVX-512 F/BW/DQ/VL
};

// The best level this CPU (and OS) supports.
SimdLevel detected_simd_level();

// The level kernels use now: detected, unless lowered by set_simd_level.
SimdLevel active_simd_level();

// Sets the active level, clamped to the detected one (asking for AVX-512 on
// an AVX2 machine gives AVX2). Returns the level now active.
SimdLevel set_simd_level(SimdLevel level);

// "portable", "avx2", "avx512".
std::string_view simd_level_name(SimdLevel level);

// Sets a level for one scope and restores the previous one after.
class ScopedSimdLevel {
 public:
  explicit ScopedSimdLevel(SimdLevel level)
      : previous_(active_simd_level()), active_(set_simd_level(level)) {}
  ~ScopedSimdLevel() { set_simd_level(previous_); }
  ScopedSimdLevel(const ScopedSimdLevel&) = delete;
  ScopedSimdLevel& operator=(const ScopedSimdLevel&) = delete;
  // What was granted (may be lower than asked for).
  SimdLevel active() const { return active_; }

 private:
  SimdLevel previous_;
  SimdLevel active_;
};

}  // namespace zerotrain::device::cpu

// CPU feature detection and the process-wide active SIMD level.
#include "device/cpu/cpu_features.h"

#include <atomic>

namespace zerotrain::device::cpu {
namespace {

SimdLevel detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // libgcc's checks include the OS (XCR0) saving the wider registers.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return SimdLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    return SimdLevel::kAvx2;
  }
#endif
  return SimdLevel::kPortable;
}

std::atomic<int>& active_level() {
  static std::atomic<int> level{static_cast<int>(detected_simd_level())};
  return level;
}

}  // namespace

SimdLevel detected_simd_level() {
  static const SimdLevel level = detect();
  return level;
}

SimdLevel active_simd_level() {
  return static_cast<SimdLevel>(active_level().load(std::memory_order_relaxed));
}

SimdLevel set_simd_level(SimdLevel level) {
  const SimdLevel best = detected_simd_level();
  const SimdLevel granted = static_cast<int>(level) > static_cast<int>(best) ? best : level;
  active_level().store(static_cast<int>(granted), std::memory_order_relaxed);
  return granted;
}

std::string_view simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kPortable:
      return "portable";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kAvx512:
      return "avx512";
  }
  return "unknown";
}

}  // namespace zerotrain::device::cpu

// The device's own bf16 GEMM ceiling: C[n,n] = A·B with bf16 operands, fp32
// accumulation and a bf16 C (Ops::matmul_bf16: cuBLASLt on a GPU, oneDNN on
// the CPU), on random (never zero) data, median of timed runs after
// warm-up. MFU "against the GEMM ceiling" divides by this.
//
//   ZT_ASSIGN_OR_RETURN(GemmCeiling g, measure_gemm_ceiling(device, 8192));
//   std::puts(gemm_ceiling_json(g).dump().c_str());
//
// Thread-safety: drives `device` from the calling thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "device/device.h"

namespace zerotrain::bench {

struct GemmCeiling {
  std::string device;
  int64_t n = 0;
  int runs = 0;
  double median_seconds = 0, best_seconds = 0;
  double tflops() const { return median_seconds > 0 ? 2.0 * n * n * n / median_seconds / 1e12 : 0; }
};

StatusOr<GemmCeiling> measure_gemm_ceiling(device::Device& device, int64_t n, int warmup = 3,
                                           int runs = 10);
nlohmann::json gemm_ceiling_json(const GemmCeiling& g);

}  // namespace zerotrain::bench

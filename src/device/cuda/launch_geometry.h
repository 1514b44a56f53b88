// Launch geometry for the CUDA kernels, as plain host arithmetic (no CUDA
// header) so it is tested on machines with no GPU: a grid-stride 1-D
// launch, and one block per row.
//
//   Grid g = grid_1d(n);            // <<<g.blocks, g.threads>>>, then grid-stride
//   Grid r = grid_rows(rows, 256);  // block r handles row r
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>

namespace zerotrain::device::cuda {

struct Grid {
  int64_t blocks = 0;  // 0: nothing to launch
  int threads = 0;
};

// Blocks are capped (the kernels loop grid-stride): 132 SMs × 16 blocks
// keeps an H200 full and a launch cheap.
inline constexpr int64_t kMaxBlocks1d = 132 * 16;

inline Grid grid_1d(int64_t n, int threads = 256) {
  if (n <= 0) return {};
  return {std::min<int64_t>((n + threads - 1) / threads, kMaxBlocks1d), threads};
}

// One block per row (rows up to the grid's x limit, 2^31 - 1).
inline Grid grid_rows(int64_t rows, int threads) {
  if (rows <= 0) return {};
  return {rows, threads};
}

}  // namespace zerotrain::device::cuda

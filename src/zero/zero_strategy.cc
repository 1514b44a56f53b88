// DESIGN.md's per-stage model-state bytes.
#include "zero/zero_strategy.h"

#include <algorithm>

namespace zerotrain::zero {

int64_t zero_formula_bytes(int stage, int64_t numel, int world_size) {
  const int64_t n = std::max(1, world_size);
  auto per_rank = [&](int64_t bytes_per_element) {
    return (bytes_per_element * numel + n - 1) / n;
  };
  switch (stage) {
    case 0:
      return 16 * numel;
    case 1:
      return 4 * numel + per_rank(12);
    case 2:
      return 2 * numel + per_rank(14);
    default:
      return per_rank(16);
  }
}

}  // namespace zerotrain::zero

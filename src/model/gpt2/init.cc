// Counter-based GPT-2 initialisation (see init.h for the distributions).
#include "model/gpt2/init.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/init_normal.h"

namespace zerotrain::model::gpt2 {
namespace {

// Standard deviation of a tensor kind's weights; 0 for constant tensors.
double kind_std(ParamKind kind, int64_t n_layer) {
  switch (kind) {
    case ParamKind::kTokenEmbedding:
    case ParamKind::kPositionEmbedding:
    case ParamKind::kLinearWeight:
      return kInitStd;
    case ParamKind::kResidualProjWeight:
      return kInitStd / std::sqrt(2.0 * static_cast<double>(n_layer));
    default:
      return 0.0;
  }
}

}  // namespace

void init_parameter_range(const ParamLayout& layout, uint64_t seed, int64_t begin, int64_t end,
                          float* out) {
  const int64_t n_layer = layout.num_groups() - 2;
  init_flat_range(layout, seed, begin, end, out,
                  [n_layer](const TensorInfo& t) { return kind_std(t.kind, n_layer); });
}

void init_parameters(const ParamLayout& layout, uint64_t seed, float* params) {
  init_parameter_range(layout, seed, 0, layout.total_numel(), params);
}

}  // namespace zerotrain::model::gpt2

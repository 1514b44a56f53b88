// ZeroStrategy's shared step: the gradient statistics over all ranks.
#include "zero/zero_strategy.h"

#include <cmath>

#include "device/device.h"
#include "device/ops.h"

namespace zerotrain::zero {

StatusOr<GradientStats> ZeroStrategy::gradient_stats() {
  const Tensor grads = owned_gradients();
  ZT_ASSIGN_OR_RETURN(const double local_sq, device::ops_for(grads).sum_squares(grads));
  GradientStats st;
  st.sum_squares = local_sq;
  // The squares are summed in double, where no fp32 value's square
  // overflows: the sum is finite exactly when every gradient is.
  float flag = std::isfinite(local_sq) ? 0.0f : 1.0f;
  comm::Communicator& c = communicator();
  // Unpartitioned gradients are identical on every rank after the
  // reduction, so the local values already are the global ones.
  if (gradients_partitioned() && c.world_size() > 1) {
    ZT_RETURN_IF_ERROR(c.allreduce(std::span<float>(&flag, 1), comm::ReduceOp::kMax));
    // fp32 on the wire; the partial sums are already accumulated in double.
    float sq = static_cast<float>(local_sq);
    ZT_RETURN_IF_ERROR(c.allreduce(std::span<float>(&sq, 1), comm::ReduceOp::kSum));
    st.sum_squares = sq;
  }
  st.overflow = flag != 0.0f;
  return st;
}

}  // namespace zerotrain::zero

// HalfComputeCopy: the model's compute copy for ZeRO stages 1-2 in
// bf16/fp16 — Ψ elements of 2 bytes, as DeepSpeed's 16-bit model, where
// fp32 storage of the rounded values took 4 — and optionally the full
// gradient accumulator likewise (stage 1: DeepSpeed's 16-bit .grad).
//
// The model computes in fp32, so around each stage the groups it reads are
// expanded into fp32 buffers from a pool and bound (a ParamCoordinator
// over pass_trace(), no prefetch; a group is kept only when its next use is
// the very next step, the head's forward then backward), and released
// after: at most the groups of two stages exist in fp32 at once (the
// embeddings and the head's ln_f at the head's stages).
// With a gradient accumulator (accumulate_gradients), each group a
// backward stage writes gets a zeroed fp32 buffer at its first stage
// (group 0: the head's, which adds the tied wte's share) and, when its
// gradients are final (after_backward(g)), they are added into the
// accumulator, rounded to the dtype element by element, and the buffer is
// released. Without one the caller binds the model's gradients itself.
//
//   ZT_ASSIGN_OR_RETURN(auto h, HalfComputeCopy::create({.model = &m,
//       .dtype = DType::kBFloat16, .accumulate_gradients = true}, weights));
//   hooks: h->before_forward(s) / after_forward(s) / before_backward(s) / after_backward(s)
//   after the optimizer: h->release_all(); h->parameters().write(off, new_weights);
//
// For bf16 with a bf16_compute model, create() also binds the 16-bit copy
// as the model's bf16 parameter view (set_group_parameters_bf16), so its
// GEMMs read the weights there instead of re-rounding the expansions.
// create() frees the model's own flat buffers (the strategy owns every
// copy from then on). Thread-safety: one owner (the compute thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "model/module.h"
#include "zero/buffer_pool.h"
#include "zero/param_coordinator.h"
#include "zero/partition_array.h"

namespace zerotrain::zero {

struct HalfComputeOptions {
  model::Module* model = nullptr;
  DType dtype = DType::kBFloat16;     // kBFloat16 or kFloat16
  bool accumulate_gradients = false;  // keep a 16-bit [Ψ] gradient accumulator
};

class HalfComputeCopy : private GatherBackend {
 public:
  // weights: the Ψ initial weights (fp32, the model's device; every
  // rank's the same), stored rounded.
  static StatusOr<std::unique_ptr<HalfComputeCopy>> create(const HalfComputeOptions& o,
                                                           ConstTensor weights);
  ~HalfComputeCopy() override;  // unbinds whatever it bound

  Status before_forward(int s) { return coordinator_.before_step(s); }
  Status after_forward(int s) { return coordinator_.after_step(s); }
  Status before_backward(int s);
  Status after_backward(int s);
  // Unbinds and releases every expanded group: call before the weights
  // change (the next pass expands the new ones).
  Status release_all() { return coordinator_.release_all(); }
  // Zeroes the accumulator and drops the buffers an aborted backward left.
  Status zero_gradients();

  PartitionArray& parameters() { return params_; }
  const PartitionArray& parameters() const { return params_; }
  // The accumulator ([Ψ] in the dtype); empty without accumulate_gradients.
  PartitionArray& gradients() { return grads_; }
  const PartitionArray& gradients() const { return grads_; }
  // The pool of fp32 expansions and gradient buffers (transient: buffers).
  int64_t buffer_bytes() const { return pool_.bytes(); }
  const ParamCoordinator& coordinator() const { return coordinator_; }

 private:
  explicit HalfComputeCopy(const HalfComputeOptions& o) : options_(o) {}
  // GatherBackend: "gathering" a group is expanding its local 16-bit copy.
  Status start_gather(int g) override;
  Status finish_gather(int g) override;
  void release(int g) override;

  HalfComputeOptions options_;
  PartitionArray params_, grads_;
  ParamCoordinator coordinator_;
  BufferPool pool_;
  std::vector<device::Buffer> expanded_, grad_buffers_;  // [num_groups] fp32, device
  bool bf16_views_ = false;  // the model's GEMMs read params_ directly (bf16)
};

}  // namespace zerotrain::zero

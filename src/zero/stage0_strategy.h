// DataParallelStrategy: ZeRO stage 0 — plain data parallelism. Every rank
// holds the whole model state: the model's flat parameter and gradient
// buffers, an fp32 master copy (only for bf16/fp16; for fp32 the model's
// buffer IS the master), and full optimizer states, all in device memory.
// At the boundary the gradient buffer is all-reduced in place
// (reduction_policy: mean, sum, prescale, predivide, as DeepSpeed's
// allreduce_bucket), so every rank steps identically. Memory (Adam): fp32
// 16Ψ bytes a rank (4 params + 4 grads + 8 moments; the model's buffer is
// the master). bf16/fp16: DeepSpeed's 16Ψ — the compute copy and the
// gradient accumulator in 16 bits (2Ψ + 2Ψ, half_compute.h: the model's
// buffers are freed and each stage computes from fp32 expansions), the
// fp32 master 4Ψ and the moments 8Ψ; the gradients are all-reduced from a
// transient fp32 [Ψ] copy that lives through the boundary step: in the
// model's idle activation memory when that holds Ψ floats
// (lend_activation_memory), else its own buffer (buffers). The all-reduce
// runs in the wire dtype (a 16-bit wire narrows that array in place).
// With an optimizer that reads 16-bit gradients (Adam) there is no fp32
// copy at one rank, nor where the wire is the model dtype and the
// reduction unscaled (a mean or a sum; no prescale or predivide): the
// accumulator is all-reduced in place and handed to the optimizer.
//
//   ZT_ASSIGN_OR_RETURN(auto s, DataParallelStrategy::create(&model, comm.get(), options));
//
// create() broadcasts rank 0's weights so every rank starts identical (as
// DeepSpeed's _broadcast_model does), then rounds them to the model dtype.
// Thread-safety: as ZeroStrategy.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "device/device.h"
#include "model/module.h"
#include "zero/half_compute.h"
#include "zero/options.h"
#include "zero/zero_strategy.h"

namespace zerotrain::zero {

class DataParallelStrategy : public ZeroStrategy {
 public:
  // InvalidArgument when the model has no flat parameter/gradient buffer
  // or an option is out of range; the broadcast's error otherwise.
  static StatusOr<std::unique_ptr<DataParallelStrategy>> create(model::Module* model,
                                                                comm::Communicator* comm,
                                                                const StrategyOptions& o);
  ~DataParallelStrategy() override;

  int stage() const override { return 0; }
  Status after_backward(bool boundary) override { return Status(); }
  Status reduce_gradients() override;
  Tensor owned_gradients() override { return grads_; }
  Tensor owned_master() override { return master_; }
  std::vector<Range> owned_ranges() const override {
    return {{0, static_cast<int64_t>(master_.numel)}};
  }
  std::span<const Tensor> optimizer_states() override { return state_tensors_; }
  Status publish_parameters() override;
  void zero_gradients() override;
  Status gather_full_parameters(std::span<float> out) override;
  // bf16/fp16: the 16-bit compute copy and gradient accumulator; else null.
  HalfComputeCopy* half_compute() { return half_.get(); }
  ModelStateBytes model_state_bytes() const override;

 protected:
  bool gradients_partitioned() const override { return false; }
  comm::Communicator& communicator() const override { return *comm_; }

 private:
  DataParallelStrategy(model::Module* model, comm::Communicator* comm, const StrategyOptions& o)
      : model_(model), comm_(comm), options_(o) {}
  void install_hooks();
  // 16-bit: the accumulator itself is reduced (in the wire dtype, when
  // that is the model's and unscaled) and handed to an optimizer that
  // reads 16-bit gradients; else it is widened into fp32 first.
  bool reduces_16bit_in_place() const;

  model::Module* model_;
  comm::Communicator* comm_;
  StrategyOptions options_;
  Tensor params_;                          // the model's compute copy [Ψ] (fp32 only)
  Tensor grads_;  // the model's gradients [Ψ]; 16-bit: the step's fp32 copy or the accumulator
  std::unique_ptr<HalfComputeCopy> half_;  // bf16/fp16: the compute copy and gradients
  // 16-bit: fp32 [Ψ], boundary step only, when the activations are too small to lend it.
  device::Buffer step_grads_;
  device::Buffer own_master_;  // [Ψ] bf16/fp16 only
  Tensor master_;              // own_master_, or params_ for fp32
  std::vector<device::Buffer> states_;
  std::vector<Tensor> state_tensors_;
};

}  // namespace zerotrain::zero

// DataParallelStrategy: ZeRO stage 0 — plain data parallelism. Every rank
// holds the whole model state: the model's flat parameter and gradient
// buffers, an fp32 master copy (only for bf16/fp16; for fp32 the model's
// buffer IS the master), and full optimizer states. At the boundary the
// gradient buffer is all-reduced in place (mean, or sum per
// gradient_allreduce_op; prescale_gradients / gradient_predivide_factor as
// in DeepSpeed), so every rank steps identically. Memory (Adam): fp32
// 16Ψ bytes a rank (4 params + 4 grads + 8 moments; the model's buffer is
// the master). bf16/fp16: DeepSpeed's 16Ψ — the compute copy and the
// gradient accumulator in 16 bits (2Ψ + 2Ψ, half_compute.h: the model's
// buffers are freed and each stage computes from fp32 expansions), the
// fp32 master 4Ψ and the moments 8Ψ; the gradients are all-reduced from a
// transient fp32 [Ψ] copy that lives through the boundary step: in the
// model's idle activation memory when that holds Ψ floats (lend_activation_
// memory), else its own buffer (buffers). The all-reduce runs in the wire
// dtype (grad_wire: 16-bit narrows that array in place, zero/grad_wire.h).
//
//   DataParallelOptions o{.model = &model, .comm = comm.get(),
//                         .dtype = cfg.model_dtype(), .state_count = 2};
//   ZT_ASSIGN_OR_RETURN(auto strategy, DataParallelStrategy::create(o));
//
// create() broadcasts rank 0's weights so every rank starts identical (as
// DeepSpeed's _broadcast_model does), then rounds them to the model dtype.
// Thread-safety: as ZeroStrategy.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "config/config.h"
#include "engine/zero_strategy.h"
#include "model/gpt_model.h"
#include "device/cpu/aligned_buffer.h"
#include "zero/half_compute.h"

namespace zerotrain::engine {

struct DataParallelOptions {
  model::GptModel* model = nullptr;  // flat parameter and gradient buffers bound
  comm::Communicator* comm = nullptr;
  DType dtype = DType::kFloat32;
  int state_count = 2;  // optimizer state arrays per element
  config::AllreduceOp allreduce_op = config::AllreduceOp::kMean;
  // Mean, as DeepSpeed's allreduce_bucket: prescale_gradients divides by N
  // before the sum; otherwise g/f, sum, then * f/N (f = predivide factor).
  bool prescale = false;
  double predivide_factor = 1.0;
  // The all-reduce's dtype (zero::gradient_wire_dtype: DeepSpeed's
  // communication_data_type, unset meaning the model dtype).
  DType grad_wire = DType::kFloat32;
};

class DataParallelStrategy : public ZeroStrategy {
 public:
  // InvalidArgument when the model has no flat parameter/gradient buffer
  // or an option is out of range; the broadcast's error otherwise.
  static StatusOr<std::unique_ptr<DataParallelStrategy>> create(const DataParallelOptions& o);

  int stage() const override { return 0; }
  Status after_backward(bool boundary) override { return Status(); }
  Status reduce_gradients() override;
  bool gradients_partitioned() const override { return false; }
  std::span<float> owned_gradients() override { return grads_; }
  ~DataParallelStrategy() override;
  std::span<float> owned_master() override { return master_; }
  std::vector<Range> owned_ranges() const override {
    return {{0, static_cast<int64_t>(master_.size())}};
  }
  std::span<const std::span<float>> optimizer_states() override { return state_spans_; }
  Status publish_parameters() override;
  void zero_gradients() override;
  Status gather_full_parameters(std::span<float> out) override;
  // bf16/fp16: the 16-bit compute copy and gradient accumulator; else null.
  zero::HalfComputeCopy* half_compute() { return half_.get(); }
  ModelStateBytes model_state_bytes() const override;

 private:
  explicit DataParallelStrategy(const DataParallelOptions& o) : options_(o) {}
  void install_hooks();

  DataParallelOptions options_;
  std::span<float> params_;                      // the model's compute copy [Ψ]
  std::span<float> grads_;                       // the model's gradients [Ψ]; 16-bit: step_grads_
  std::unique_ptr<zero::HalfComputeCopy> half_;  // bf16/fp16: the compute copy and gradients
  // 16-bit: fp32 [Ψ], boundary step only, when the activations are too small to lend it.
  device::cpu::AlignedBuffer<float> step_grads_;
  device::cpu::AlignedBuffer<float> own_master_;  // [Ψ] bf16/fp16 only
  std::span<float> master_;                  // own_master_, or params_ for fp32
  std::vector<device::cpu::AlignedBuffer<float>> states_;
  std::vector<std::span<float>> state_spans_;
};

}  // namespace zerotrain::engine

// Stage2Strategy: ZeRO stage 2 — optimizer states and gradients
// partitioned. Every micro-step's gradients are reduce-scattered as
// backward finalizes them (the model's after_backward(g) hook flushes
// every bucket that lies in finalized groups) and added into a
// partition-sized accumulator (16-bit: in the model dtype, rounded); the
// model's full fp32 buffer is zeroed after each micro-step and only
// stages. A bucket's N chunks lie back to back in that buffer, so its
// reduce-scatter runs in place there (the 16-bit stages pad the buffer
// past Ψ with zeros so the last bucket does too). At the boundary an
// optimizer that reads 16-bit gradients (Adam) is handed the 16-bit
// accumulator itself; any other gets its fp32 widening, in the model's idle
// activation memory when that holds it. See sharded_strategy.h
// for what both stages share.
//
//   ZT_ASSIGN_OR_RETURN(auto s, Stage2Strategy::create(&model, comm, options));
//
// Thread-safety: as ZeroStrategy.
#pragma once

#include <memory>

#include "zero/sharded_strategy.h"

namespace zerotrain::zero {

class Stage2Strategy : public ShardedStrategy {
 public:
  static StatusOr<std::unique_ptr<Stage2Strategy>> create(model::Module* model,
                                                          comm::Communicator* comm,
                                                          const StrategyOptions& o);
  int stage() const override { return 2; }
  Status after_backward(bool boundary) override;
  Status reduce_gradients() override;

 protected:
  Status allocate_gradients(bool contiguous, int64_t own_offset) override;
  bool half_accumulates() const override { return false; }
  Status take_reduced(Range col, ConstTensor mine) override;
  int64_t in_place_base(Range col) const override;

 private:
  using ShardedStrategy::ShardedStrategy;
};

}  // namespace zerotrain::zero

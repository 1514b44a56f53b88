// Stage1Strategy: ZeRO stage 1 — optimizer states (and the fp32 master)
// partitioned, gradients whole. Gradients accumulate in the model's full
// buffer (16-bit: a [Ψ] 16-bit accumulator, DeepSpeed's 16-bit .grad);
// in the boundary micro-step's backward they are reduce-scattered bucket
// by bucket into the owned gradients, each bucket from the hooks once its
// groups are final (as DeepSpeed's stage 1 does on the boundary), the rest
// at after_backward. fp32 keeps one contiguous shard, so the model's own
// slice doubles as the master and holds the reduced gradients (without
// offload). See sharded_strategy.h for what both stages share.
//
//   ZT_ASSIGN_OR_RETURN(auto s, Stage1Strategy::create(&model, comm, options));
//
// Thread-safety: as ZeroStrategy.
#pragma once

#include <memory>

#include "zero/sharded_strategy.h"

namespace zerotrain::zero {

class Stage1Strategy : public ShardedStrategy {
 public:
  static StatusOr<std::unique_ptr<Stage1Strategy>> create(model::Module* model,
                                                          comm::Communicator* comm,
                                                          const StrategyOptions& o);
  int stage() const override { return 1; }
  void before_backward(bool boundary) override { reducing_pass_ = boundary; }
  Status after_backward(bool boundary) override;
  Status reduce_gradients() override;
  void zero_gradients() override;

 protected:
  Status allocate_gradients(bool contiguous, int64_t own_offset) override;
  bool half_accumulates() const override { return true; }
  Status take_reduced(Range col, ConstTensor mine) override;

 private:
  using ShardedStrategy::ShardedStrategy;
  bool reduced_in_backward_ = false;  // this boundary's reduction is done
};

}  // namespace zerotrain::zero

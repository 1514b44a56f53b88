// StrategyOptions: the ds_config keys every ZeRO stage reads, in one typed
// struct (built from the config once, by the factory), and the one
// gradient reduction policy all stages apply.
//
//   StrategyOptions o = strategy_options(config, opt->state_count());
//   ReductionPolicy r = reduction_policy(o, comm.world_size());
//   // g·r.pre on every rank, reduce with r.op, then ·r.post
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <limits>

#include "comm/types.h"
#include "model/param_layout.h"
#include "config/config.h"
#include "core/dtype.h"
#include "core/status.h"
#include "zero/memory_model.h"

namespace zerotrain::zero {

// Initial weights by flat range (model::ReadFlatFn).
using InitialWeights = model::ReadFlatFn;

struct StrategyOptions {
  DType dtype = DType::kFloat32;  // the model dtype (fp32, bf16, fp16)
  int state_count = 2;            // the optimizer's fp32 state arrays per element
  // The optimizer reads fp16/bf16 gradients itself (Optimizer::
  // reads_16bit_gradients): 16-bit stages 0-2 then hand it the
  // accumulator where no fp32 copy is needed for the reduction (stage 0 at
  // one rank or on an unscaled wire of the model dtype, stage 1 at one
  // rank, stage 2 always).
  bool optimizer_reads_16bit_gradients = false;
  // Reduction (DeepSpeed's allreduce_bucket): mean or sum, prescale_gradients,
  // gradient_predivide_factor; grad_wire: communication_data_type, unset
  // meaning the model dtype (16-bit narrows each bucket in place).
  config::AllreduceOp allreduce_op = config::AllreduceOp::kMean;
  bool prescale = false;
  double predivide_factor = 1.0;
  DType grad_wire = DType::kFloat32;
  // Buckets (elements) and their collectives.
  int64_t reduce_bucket_size = 500'000'000;
  int64_t allgather_bucket_size = 500'000'000;
  bool reduce_scatter = true;
  bool allgather_partitions = true;
  bool overlap_comm = false;
  // Offload (device cpu).
  bool offload_optimizer = false;  // master, states, gradient partition on the host
  bool pin_memory = true;          // offload_optimizer.pin_memory
  bool offload_param = false;      // stage 3: the parameter partition on the host
  bool pin_param_memory = true;    // offload_param.pin_memory
  // Stage 3.
  int64_t prefetch_bucket_size = 50'000'000;
  int64_t param_persistence_threshold = 100'000;
  int64_t model_persistence_threshold = std::numeric_limits<int64_t>::max();
  int64_t max_live_parameters = 1'000'000'000;
  int64_t max_reuse_distance = 1'000'000'000;
  int64_t sub_group_size = 1'000'000'000;
  // Stage 3: each rank fills only its own partition from this (no
  // broadcast, no whole-model buffer: the model may be created without
  // own_parameters / own_gradients). Unset: the model's flat buffer, as
  // rank 0 holds it (broadcast).
  InitialWeights initial_weights;
};

// What a strategy needs to know of the optimizer it serves.
struct OptimizerNeeds {
  int state_count = 2;                 // Optimizer::state_count()
  bool reads_16bit_gradients = false;  // Optimizer::reads_16bit_gradients()
};
StrategyOptions strategy_options(const config::Config& config, const OptimizerNeeds& optimizer);
// The wire dtype of the gradient reductions: communication_data_type, else
// the model dtype (DeepSpeed's rule).
DType gradient_wire_dtype(const config::Config& config);

// g ← g·pre on every rank, reduce with op, then ·post: sum = sum; mean =
// kAvg; prescale = g/N then sum; predivide f = g/f, sum, then ·f/N (fp16
// headroom). At world size 1 nothing is scaled.
struct ReductionPolicy {
  float pre = 1.0f, post = 1.0f;
  comm::ReduceOp op = comm::ReduceOp::kSum;
};
ReductionPolicy reduction_policy(const StrategyOptions& o, int world);
// The memory model's setup for a run of this config: Ψ = numel over
// `world` ranks on one node, the model dtype, the reduce bucket size.
ModelStateSetup model_state_setup(const config::Config& config, int64_t numel, int world);

// InvalidArgument naming gradient_predivide_factor unless it is positive
// and finite; state_count < 0 likewise.
Status validate_common(const StrategyOptions& o);

}  // namespace zerotrain::zero

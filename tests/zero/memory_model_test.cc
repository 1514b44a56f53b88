// The memory model (zero/memory_model.h) against hand computation: the
// paper's 7.5B / 64 example, partition padding, offload, fp32, the engine
// layout, the ZeRO formula, and the capacity advice.
#include "zero/memory_model.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/range.h"

namespace zerotrain::zero {
namespace {

ModelStateEstimate zt(int64_t params, int64_t world, int stage, bool offload,
                      DType dtype = DType::kBFloat16, int64_t ranks_per_node = 1) {
  StatusOr<ModelStateEstimate> m = model_state_bytes(
      {.params = params, .world_size = world, .ranks_per_node = ranks_per_node, .dtype = dtype},
      stage, offload);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : ModelStateEstimate{};
}

TEST(MemoryModel, PaperExample7point5BOn64Ranks) {
  // Rajbhandari et al. Fig. 1: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB (10^9 bytes).
  const int64_t psi = 7'500'000'000, part = psi / 64;  // 117,187,500, exact
  EXPECT_EQ(zt(psi, 64, 0, false).device_bytes, 120'000'000'000);
  EXPECT_EQ(zt(psi, 64, 1, false).device_bytes, 4 * psi + 12 * part);  // 31,406,250,000
  EXPECT_EQ(zt(psi, 64, 1, false).device_bytes, 31'406'250'000);
  EXPECT_EQ(zt(psi, 64, 2, false).device_bytes, 16'640'625'000);
  EXPECT_EQ(zt(psi, 64, 3, false).device_bytes, 1'875'000'000);
  for (int stage = 0; stage <= 3; ++stage) EXPECT_EQ(zt(psi, 64, stage, false).host_bytes, 0);
}

TEST(MemoryModel, PartitionsRoundUpToAMultipleOfTheWorldSize) {
  EXPECT_EQ(shard_size(0, 4), 0);
  EXPECT_EQ(shard_size(1, 4), 1);
  EXPECT_EQ(shard_size(8, 4), 2);
  EXPECT_EQ(shard_size(9, 4), 3);
  EXPECT_EQ(shard_size(7, 1), 7);
  // Ψ = 10 over 4 ranks: each holds ceil(10/4) = 3 elements of each partitioned state.
  EXPECT_EQ(zt(10, 4, 1, false).device_bytes, 4 * 10 + 12 * 3);
  EXPECT_EQ(zt(10, 4, 2, false).device_bytes, 2 * 10 + 14 * 3);
  EXPECT_EQ(zt(10, 4, 3, false).device_bytes, 16 * 3);
}

TEST(MemoryModel, OffloadMovesOptimizerShareAndStage3ParamsToHostPerNode) {
  // Ψ = 1000, 2 nodes x 2 ranks: partition 250; host totals are per node (2 ranks).
  const ModelStateEstimate s1 = zt(1000, 4, 1, true, DType::kBFloat16, 2);
  EXPECT_EQ(s1.device_bytes, 4 * 1000);
  EXPECT_EQ(s1.host_bytes_per_rank, 12 * 250);
  EXPECT_EQ(s1.host_bytes, 2 * 12 * 250);
  const ModelStateEstimate s2 = zt(1000, 4, 2, true, DType::kBFloat16, 2);
  EXPECT_EQ(s2.device_bytes, 2 * 1000 + 2 * 250);
  EXPECT_EQ(s2.host_bytes, 2 * 12 * 250);
  const ModelStateEstimate s3 = zt(1000, 4, 3, true, DType::kBFloat16, 2);
  EXPECT_EQ(s3.device_bytes, 2 * 250);  // the gradient partition stays
  EXPECT_EQ(s3.host_bytes_per_rank, (12 + 2) * 250);
  EXPECT_EQ(s3.host_bytes, 2 * 14 * 250);
}

TEST(MemoryModel, Fp32TrainingUses4Plus4Plus8BytesWithoutMaster) {
  const StateBytes b = state_bytes(DType::kFloat32);
  EXPECT_EQ(b.param, 4);
  EXPECT_EQ(b.grad, 4);
  EXPECT_EQ(b.optimizer, 8);
  EXPECT_EQ(state_bytes(DType::kFloat16).total(), 16);
  EXPECT_EQ(zt(1000, 4, 0, false, DType::kFloat32).device_bytes, 16 * 1000);
  EXPECT_EQ(zt(1000, 4, 1, false, DType::kFloat32).device_bytes, 8 * 1000 + 8 * 250);
  EXPECT_EQ(zt(1000, 4, 2, false, DType::kFloat32).device_bytes, 4 * 1000 + 12 * 250);
  EXPECT_EQ(zt(1000, 4, 3, false, DType::kFloat32).device_bytes, 16 * 250);
  const ModelStateEstimate off = zt(1000, 4, 1, true, DType::kFloat32);
  EXPECT_EQ(off.device_bytes, 8 * 1000);
  EXPECT_EQ(off.host_bytes, 8 * 250);
}

// StorageLayout::kEngine by hand, Ψ = 1000, N = 4, P = 250.
TEST(MemoryModel, EngineLayoutCountsWhatTheEngineAllocates) {
  auto eng = [](int stage, bool offload, DType d, int64_t persistent = 0) {
    StatusOr<ModelStateEstimate> m = model_state_bytes({.params = 1000,
                                                        .world_size = 4,
                                                        .dtype = d,
                                                        .layout = StorageLayout::kEngine,
                                                        .stage3_persistent_numel = persistent},
                                                       stage, offload);
    EXPECT_TRUE(m.ok());
    return std::pair{m->device_bytes, m->host_bytes_per_rank};
  };
  auto design = [](int stage) {
    return model_state_bytes({.params = 1000, .world_size = 4}, stage, false)->device_bytes;
  };
  using P = std::pair<int64_t, int64_t>;
  const DType bf16 = DType::kBFloat16, fp32 = DType::kFloat32;
  // 16-bit stages 0-2 store the ZeRO paper's layout: 2 + 2 + 4 master + 8.
  for (int stage : {0, 1, 2}) EXPECT_EQ(eng(stage, false, bf16), P(design(stage), 0)) << stage;
  EXPECT_EQ(eng(0, false, bf16), P(16 * 1000, 0));
  EXPECT_EQ(eng(1, false, bf16), P(4 * 1000 + 12 * 250, 0));
  EXPECT_EQ(eng(2, false, bf16), P(2 * 1000 + 14 * 250, 0));
  // fp32: the model's buffer is the master, except at stage 2 cut into
  // several reduce buckets (a rank owns a chunk of each, not one slice).
  EXPECT_EQ(eng(0, false, fp32), P(16 * 1000, 0));
  EXPECT_EQ(eng(1, false, fp32), P(8 * 1000 + 8 * 250, 0));
  EXPECT_EQ(eng(2, false, fp32), P(4 * 1000 + 12 * 250, 0));
  auto fp32_stage2 = [](int64_t world, int64_t bucket) {
    return model_state_bytes({.params = 1000,
                              .world_size = world,
                              .dtype = DType::kFloat32,
                              .layout = StorageLayout::kEngine,
                              .reduce_bucket_size = bucket},
                             2, false)
        ->device_bytes;
  };
  EXPECT_EQ(fp32_stage2(4, 999), 4 * 1000 + 16 * 250);   // 4 x 249 < 1000: two buckets
  EXPECT_EQ(fp32_stage2(4, 1000), 4 * 1000 + 12 * 250);  // one bucket
  EXPECT_EQ(fp32_stage2(1, 10), 4 * 1000 + 12 * 1000);   // one rank owns it all
  // Offload: master (a copy for fp32 too), Adam and the optimizer's
  // gradients (fp32 at stage 1, the stage-2 accumulator) on the host.
  EXPECT_EQ(eng(1, true, fp32), P(8 * 1000, 16 * 250));
  EXPECT_EQ(eng(2, true, fp32), P(4 * 1000, 16 * 250));
  EXPECT_EQ(eng(1, true, bf16), P(4 * 1000, 16 * 250));
  EXPECT_EQ(eng(2, true, bf16), P(2 * 1000, 14 * 250));
  for (DType d : {bf16, fp32}) {
    EXPECT_EQ(eng(3, true, d, 40), P(4 * 40, 16 * 250));  // persistent copies stay
    EXPECT_EQ(eng(3, false, d, 40), P(16 * 250 + 4 * 40, 0));
  }
  EXPECT_EQ(*parse_storage_layout("engine"), StorageLayout::kEngine);
  EXPECT_FALSE(parse_storage_layout("gpu").ok());
}

TEST(MemoryModel, InvalidSetupsNameTheProblem) {
  auto err = [](ModelStateSetup s, int stage, bool offload) {
    StatusOr<ModelStateEstimate> m = model_state_bytes(s, stage, offload);
    EXPECT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    return m.status().message();
  };
  EXPECT_NE(err({.params = 10}, 0, true).find("offload needs ZeRO stage 1, 2 or 3"),
            std::string::npos);
  EXPECT_NE(err({.params = 10}, 4, false).find("stage"), std::string::npos);
  EXPECT_NE(err({.params = 0}, 1, false).find("params"), std::string::npos);
  EXPECT_NE(err({.params = 10, .world_size = 3, .ranks_per_node = 2}, 1, false)
                .find("not a multiple of ranks_per_node 2"),
            std::string::npos);
}

TEST(MemoryModel, ZeroFormulaBytesPerStage) {
  const int64_t psi = 1000;
  EXPECT_EQ(zero_formula_bytes(0, psi, 4), 16 * psi);
  EXPECT_EQ(zero_formula_bytes(1, psi, 4), 4 * psi + 3 * psi);
  EXPECT_EQ(zero_formula_bytes(2, psi, 4), 2 * psi + 3500);
  EXPECT_EQ(zero_formula_bytes(3, psi, 4), 4 * psi);
  EXPECT_EQ(zero_formula_bytes(3, 10, 3), 54);  // ceil(160 / 3)
}

// Ψ = 1 Mi fp32 elements on one rank with 1 MiB of activations: stage 0
// needs 16 + 1 MiB, stage 1 with offload 8 + 1 (its fp32 params and
// gradients stay), stage 3 with offload only the activations.
TEST(MemoryModel, CapacityAdviceNamesTheFirstStageThatFits) {
  const ModelStateSetup s{.params = 1 << 20, .dtype = DType::kFloat32};
  const std::string mid = capacity_advice(s, 1 << 20, 10 << 20);
  EXPECT_NE(mid.find("stage 0 17 MiB"), std::string::npos) << mid;
  EXPECT_NE(mid.find("stage 1 + offload_optimizer 9 MiB"), std::string::npos) << mid;
  EXPECT_NE(mid.find("the first that fits: stage 1 + offload_optimizer"), std::string::npos) << mid;
  const std::string small = capacity_advice(s, 1 << 20, 3 << 20);
  EXPECT_NE(small.find("the first that fits: stage 3 + offload_param/offload_optimizer"),
            std::string::npos)
      << small;
  const std::string none = capacity_advice(s, 1 << 20, 1 << 19);
  EXPECT_NE(none.find("none fits"), std::string::npos) << none;
}

}  // namespace
}  // namespace zerotrain::zero

// Memory formulas of tools/estimate.h against hand computation: the paper's
// 7.5B / 64 example, partition padding, offload, fp32, DeepSpeed's
// estimator, the presets' counts, and the table text.
#include "tools/estimate.h"

#include <gtest/gtest.h>

#include <utility>

#include "model/gpt_config.h"
#include "tools/estimate_format.h"
#include "core/range.h"

namespace zerotrain::tools {
namespace {

MemoryEstimate zt(int64_t params, int64_t world, int stage, bool offload,
                  TrainDtype dtype = TrainDtype::kBf16, int64_t ranks_per_node = 1) {
  StatusOr<MemoryEstimate> m = zerotrain_model_states(
      {.params = params, .world_size = world, .ranks_per_node = ranks_per_node, .dtype = dtype},
      stage, offload);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : MemoryEstimate{};
}

TEST(ZerotrainEstimate, PaperExample7point5BOn64Ranks) {
  // Rajbhandari et al. Fig. 1: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB (10^9 bytes).
  const int64_t psi = 7'500'000'000, part = psi / 64;  // 117,187,500, exact
  EXPECT_EQ(zt(psi, 64, 0, false).device_bytes, 120'000'000'000);
  EXPECT_EQ(zt(psi, 64, 1, false).device_bytes, 4 * psi + 12 * part);  // 31,406,250,000
  EXPECT_EQ(zt(psi, 64, 1, false).device_bytes, 31'406'250'000);
  EXPECT_EQ(zt(psi, 64, 2, false).device_bytes, 16'640'625'000);
  EXPECT_EQ(zt(psi, 64, 3, false).device_bytes, 1'875'000'000);
  for (int stage = 0; stage <= 3; ++stage) EXPECT_EQ(zt(psi, 64, stage, false).host_bytes, 0);
}

TEST(ZerotrainEstimate, PartitionsRoundUpToAMultipleOfTheWorldSize) {
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

TEST(ZerotrainEstimate, OffloadMovesOptimizerShareAndStage3ParamsToHostPerNode) {
  // Ψ = 1000, 2 nodes x 2 ranks: partition 250; host totals are per node (2 ranks).
  const MemoryEstimate s1 = zt(1000, 4, 1, true, TrainDtype::kBf16, 2);
  EXPECT_EQ(s1.device_bytes, 4 * 1000);
  EXPECT_EQ(s1.host_bytes_per_rank, 12 * 250);
  EXPECT_EQ(s1.host_bytes, 2 * 12 * 250);
  const MemoryEstimate s2 = zt(1000, 4, 2, true, TrainDtype::kBf16, 2);
  EXPECT_EQ(s2.device_bytes, 2 * 1000 + 2 * 250);
  EXPECT_EQ(s2.host_bytes, 2 * 12 * 250);
  const MemoryEstimate s3 = zt(1000, 4, 3, true, TrainDtype::kBf16, 2);
  EXPECT_EQ(s3.device_bytes, 2 * 250);  // the gradient partition stays
  EXPECT_EQ(s3.host_bytes_per_rank, (12 + 2) * 250);
  EXPECT_EQ(s3.host_bytes, 2 * 14 * 250);
}

TEST(ZerotrainEstimate, Fp32TrainingUses4Plus4Plus8BytesWithoutMaster) {
  const StateBytes b = state_bytes(TrainDtype::kFp32);
  EXPECT_EQ(b.param, 4);
  EXPECT_EQ(b.grad, 4);
  EXPECT_EQ(b.optimizer, 8);
  EXPECT_EQ(state_bytes(TrainDtype::kFp16).total(), 16);
  EXPECT_EQ(zt(1000, 4, 0, false, TrainDtype::kFp32).device_bytes, 16 * 1000);
  EXPECT_EQ(zt(1000, 4, 1, false, TrainDtype::kFp32).device_bytes, 8 * 1000 + 8 * 250);
  EXPECT_EQ(zt(1000, 4, 2, false, TrainDtype::kFp32).device_bytes, 4 * 1000 + 12 * 250);
  EXPECT_EQ(zt(1000, 4, 3, false, TrainDtype::kFp32).device_bytes, 16 * 250);
  const MemoryEstimate off = zt(1000, 4, 1, true, TrainDtype::kFp32);
  EXPECT_EQ(off.device_bytes, 8 * 1000);
  EXPECT_EQ(off.host_bytes, 8 * 250);
}

// StorageLayout::kEngine by hand, Ψ = 1000, N = 4, P = 250.
TEST(ZerotrainEstimate, EngineLayoutCountsWhatTheEngineAllocates) {
  auto eng = [](int stage, bool offload, TrainDtype d, int64_t persistent = 0) {
    StatusOr<MemoryEstimate> m = zerotrain_model_states(
        {.params = 1000, .world_size = 4, .dtype = d, .layout = StorageLayout::kEngine,
         .stage3_persistent_numel = persistent},
        stage, offload);
    EXPECT_TRUE(m.ok());
    return std::pair{m->device_bytes, m->host_bytes_per_rank};
  };
  auto design = [](int stage) {
    return zerotrain_model_states({.params = 1000, .world_size = 4}, stage, false)->device_bytes;
  };
  using P = std::pair<int64_t, int64_t>;
  const TrainDtype bf16 = TrainDtype::kBf16, fp32 = TrainDtype::kFp32;
  // 16-bit stages 0-2 store DESIGN's layout: 2 + 2 + 4 master + 8.
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
    return zerotrain_model_states({.params = 1000, .world_size = world, .dtype = TrainDtype::kFp32,
                                   .layout = StorageLayout::kEngine, .reduce_bucket_size = bucket},
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
  for (TrainDtype d : {bf16, fp32}) {
    EXPECT_EQ(eng(3, true, d, 40), P(4 * 40, 16 * 250));  // persistent copies stay
    EXPECT_EQ(eng(3, false, d, 40), P(16 * 250 + 4 * 40, 0));
  }
  EXPECT_EQ(*parse_storage_layout("engine"), StorageLayout::kEngine);
  EXPECT_FALSE(parse_storage_layout("gpu").ok());
  // gpt2-tiny keeps its biases, layer norms and wpe whole at stage 3.
  EXPECT_GT(model_counts(*model::preset("gpt2-tiny")).stage3_persistent_numel, 0);
  EXPECT_EQ(model_counts(*model::preset("gpt2-tiny"), 1).stage3_persistent_numel, 0);
}

TEST(ZerotrainEstimate, InvalidSetupsNameTheProblem) {
  auto err = [](ZeroSetup s, int stage, bool offload) {
    StatusOr<MemoryEstimate> m = zerotrain_model_states(s, stage, offload);
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
  EXPECT_FALSE(parse_train_dtype("int8").ok());
  EXPECT_EQ(*parse_train_dtype("bf16"), TrainDtype::kBf16);
}

TEST(DeepSpeedEstimate, Zero2MatchesHandComputation) {
  // P = 1e9, 1 node x 8 GPUs, abf 1.5.
  const DeepSpeedSetup d{.total_params = 1'000'000'000, .gpus_per_node = 8};
  const MemoryEstimate off = deepspeed_zero2_estimate(d, true);
  EXPECT_EQ(off.device_bytes, 2'000'000'000);  // 2P
  EXPECT_EQ(off.host_bytes, 48'000'000'000);   // P * max(4*8, 16) * 1.5
  const MemoryEstimate none = deepspeed_zero2_estimate(d, false);
  EXPECT_EQ(none.device_bytes, 4'250'000'000);  // 2P + 18P/8
  EXPECT_EQ(none.host_bytes, 48'000'000'000);   // 4P * 8 * 1.5
  // int() truncation of 18P/G: P = 1, G = 4 -> 2 + int(4.5) = 6.
  EXPECT_EQ(deepspeed_zero2_estimate({.total_params = 1, .gpus_per_node = 4}, false).device_bytes,
            6);
  // A single GPU: max(4, 16) = 16.
  EXPECT_EQ(deepspeed_zero2_estimate({.total_params = 1000}, true).host_bytes, 24'000);
}

TEST(DeepSpeedEstimate, Zero3MatchesHandComputation) {
  // P = 1e9, L = 1e8, 2 nodes x 8 GPUs: G = 16, gf = 1/2, LL = 4e8.
  const DeepSpeedSetup d{.total_params = 1'000'000'000,
                         .largest_layer_params = 100'000'000,
                         .gpus_per_node = 8,
                         .nodes = 2};
  EXPECT_EQ(deepspeed_zero3_estimate(d, true, true, true).device_bytes, 400'000'000);
  EXPECT_EQ(deepspeed_zero3_estimate(d, true, true, true).host_bytes, 13'500'000'000);  // 18P/2*1.5
  EXPECT_EQ(deepspeed_zero3_estimate(d, true, true, false).host_bytes,
            48'000'000'000);  // max(32, 9)
  EXPECT_EQ(deepspeed_zero3_estimate(d, true, false, true).device_bytes,
            525'000'000);  // LL + 2P/16
  EXPECT_EQ(deepspeed_zero3_estimate(d, true, false, true).host_bytes, 12'000'000'000);
  EXPECT_EQ(deepspeed_zero3_estimate(d, true, false, false).host_bytes, 48'000'000'000);
  EXPECT_EQ(deepspeed_zero3_estimate(d, false, false, true).device_bytes, 1'525'000'000);
  EXPECT_EQ(deepspeed_zero3_estimate(d, false, false, true).host_bytes, 4'800'000'000);  // 4L*8*1.5
  EXPECT_EQ(deepspeed_zero3_estimate(d, false, false, false).host_bytes, 48'000'000'000);
}

TEST(ModelCounts, PresetsCountAsHfAndAsOurBuffer) {
  const model::GptConfig gpt2 = *model::preset("gpt2");
  const ModelCounts c = model_counts(gpt2);
  EXPECT_EQ(c.hf_params, 124'439'808);
  EXPECT_EQ(c.stored_params, 124'439'808 + (50304 - 50257) * 768);
  EXPECT_EQ(c.buffer_numel, 124'475'904);  // every tensor is already 16-float aligned
  EXPECT_EQ(c.ds_largest_layer, 50257 * 768);
  EXPECT_EQ(c.ds_largest_layer_name, "wte");
  EXPECT_EQ(c.largest_group, 50304 * 768 + 1024 * 768);  // wte + wpe
  EXPECT_EQ(c.largest_group_name, "embeddings");
  EXPECT_EQ(model_counts(*model::preset("gpt2-tiny")).hf_params, 1'853'568);
  EXPECT_EQ(model_counts(*model::preset("gpt2-small-ish")).hf_params, 23'240'704);
}

TEST(EstimateFormat, PrintsDeepSpeedRowsForGpt2) {
  const model::GptConfig gpt2 = *model::preset("gpt2");
  StatusOr<std::string> text = format_estimate(request_for_model("gpt2", model_counts(gpt2)));
  ASSERT_TRUE(text.ok()) << text.status().message();
  // P = 124,439,808: offload CPU 16P*1.5 = 2.78 GiB, GPU 2P = 0.23 GiB.
  EXPECT_NE(text->find("    2.78GB |   0.23GB | offload_optimizer=cpu \n"), std::string::npos)
      << *text;
  EXPECT_NE(text->find("SW: Model with 124M total params, 38M largest layer params."),
            std::string::npos);
  // zerotrain stage 0: 16 * 124,475,904 = 1.85 GiB on the device, nothing on the host.
  EXPECT_NE(text->find("    0.00GB |   1.85GB | stage=0, offload=none\n"), std::string::npos);
  EXPECT_EQ(text->find("stage=0, offload=cpu"), std::string::npos);
}

TEST(EstimateFormat, OffloadFilterAndSizes) {
  EstimateRequest r = request_for_params(7'500'000'000, 0);
  r.ranks_per_node = 8;
  r.nodes = 8;
  r.offload = *parse_offload_filter("none");
  StatusOr<std::string> text = format_estimate(r);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find("offload=cpu"), std::string::npos);
  EXPECT_EQ(text->find("offload_optimizer=cpu"), std::string::npos);
  EXPECT_NE(text->find("  29.25GB | stage=1, offload=none"), std::string::npos) << *text;
  EXPECT_NE(text->find("HW: Setup with 8 nodes, 8 GPUs per node."), std::string::npos);
  EXPECT_EQ(format_gb(1LL << 30), "1.00GB");
  EXPECT_EQ(format_count(124439808), "124,439,808");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_FALSE(parse_offload_filter("nvme").ok());
  r.nodes = 0;
  EXPECT_FALSE(format_estimate(r).ok());
  // 1e15 params on 2^20 ranks: DeepSpeed's P * 4G * 1.5 CPU bytes would overflow int64.
  r = request_for_params(1'000'000'000'000'000, 0);
  r.ranks_per_node = 1024;
  r.nodes = 1024;
  StatusOr<std::string> huge = format_estimate(r);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("too large"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::tools

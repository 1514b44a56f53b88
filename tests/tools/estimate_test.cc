// DeepSpeed's estimator (tools/estimate.h) against hand computation, the
// presets' counts from their layouts, and the table text.
#include "tools/estimate.h"

#include <gtest/gtest.h>

#include <utility>

#include "model/gpt2/config.h"
#include "model/gpt2/layout.h"
#include "tools/estimate_format.h"

namespace zerotrain::tools {
namespace {

model::ParamLayout layout_of(const char* preset) {
  return model::gpt2::make_layout(*model::gpt2::preset(preset));
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
  const ModelCounts c = model_counts(layout_of("gpt2"));
  EXPECT_EQ(c.hf_params, 124'439'808);
  EXPECT_EQ(c.stored_params, 124'439'808 + (50304 - 50257) * 768);
  EXPECT_EQ(c.buffer_numel, 124'475'904);  // every tensor is already 16-float aligned
  EXPECT_EQ(c.ds_largest_layer, 50257 * 768);
  EXPECT_EQ(c.ds_largest_layer_name, "wte");
  EXPECT_EQ(c.largest_group, 50304 * 768 + 1024 * 768);  // wte + wpe
  EXPECT_EQ(c.largest_group_name, "embeddings");
  EXPECT_EQ(model_counts(layout_of("gpt2-tiny")).hf_params, 1'853'568);
  EXPECT_EQ(model_counts(layout_of("gpt2-small-ish")).hf_params, 23'240'704);
  // gpt2-tiny keeps its biases, layer norms and wpe whole at stage 3.
  EXPECT_GT(model_counts(layout_of("gpt2-tiny")).stage3_persistent_numel, 0);
  EXPECT_EQ(model_counts(layout_of("gpt2-tiny"), 1).stage3_persistent_numel, 0);
  // The largest HF module of a small GPT-2 is a block's c_fc, named without its layer.
  const model::gpt2::GptConfig narrow{
      .n_layer = 2, .n_head = 2, .n_embd = 64, .seq_len = 16, .vocab_size = 32, .padded_vocab = 32};
  EXPECT_EQ(model_counts(model::gpt2::make_layout(narrow)).ds_largest_layer_name, "mlp.c_fc");
}

TEST(EstimateFormat, PrintsDeepSpeedRowsForGpt2) {
  StatusOr<std::string> text =
      format_estimate(request_for_model("gpt2", model_counts(layout_of("gpt2"))));
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

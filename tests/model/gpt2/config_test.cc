// GptConfig presets, validation and counts; ParamLayout names, shapes,
// HF transposition, 64-byte alignment and per-layer groups.
#include "model/gpt2/config.h"

#include <gtest/gtest.h>

#include <set>

#include "model/gpt2/reference_gpt.h"
#include "model/param_layout.h"

namespace zerotrain::model::gpt2 {
namespace {

TEST(GptConfig, PresetCountsMatchTheClosedForm) {
  // HF GPT2LMHeadModel("gpt2").num_parameters() = 124,439,808.
  EXPECT_EQ(parameter_count(*preset("gpt2")), 124439808);
  EXPECT_EQ(padded_parameter_count(*preset("gpt2")), 124439808 + (50304 - 50257) * 768);
  EXPECT_EQ(parameter_count(*preset("gpt2-tiny")), 1853568);
  EXPECT_EQ(parameter_count(*preset("gpt2-small-ish")), 23240704);
  EXPECT_EQ(parameter_count(*preset("gpt2-5m")), 5322240);  // issue #6's "5.3 M"
  for (const PresetInfo& p : list_presets()) {
    EXPECT_TRUE(validate(p.config).ok()) << p.name;
    const int64_t C = p.config.n_embd, L = p.config.n_layer;
    EXPECT_EQ(parameter_count(p.config),
              p.config.vocab_size * C + p.config.seq_len * C + L * (12 * C * C + 13 * C) + 2 * C)
        << p.name;
  }
  const GptConfig g = *preset("gpt2");
  EXPECT_EQ(g.n_layer, 12);
  EXPECT_EQ(g.n_head, 12);
  EXPECT_EQ(g.seq_len, 1024);
  EXPECT_EQ(g.padded_vocab, pad_vocab(50257));
}

TEST(GptConfig, TinyAndSmallIshLandInTheirRanges) {
  const int64_t tiny = parameter_count(*preset("gpt2-tiny"));
  const int64_t small = parameter_count(*preset("gpt2-small-ish"));
  EXPECT_GE(tiny, 1000000);
  EXPECT_LE(tiny, 3000000);
  EXPECT_GE(small, 20000000);
  EXPECT_LE(small, 30000000);
}

TEST(GptConfig, UnknownPresetSuggestsAndListsNames) {
  StatusOr<GptConfig> r = preset("gpt2-tny");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("'gpt2-tny'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'gpt2-tiny'"), std::string::npos) << m;
  EXPECT_NE(m.find("gpt2-tiny, gpt2-5m, gpt2-small-ish, gpt2"), std::string::npos) << m;
  // Far from every name: no suggestion, still the list.
  const std::string far = preset("llama-70b").status().message();
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
  EXPECT_NE(far.find("valid: "), std::string::npos) << far;
}

TEST(GptConfig, ValidateNamesTheBadField) {
  GptConfig c = testing::micro_config();
  c.n_head = 3;  // 16 % 3 != 0
  EXPECT_NE(validate(c).message().find("n_embd (16) must be a multiple of n_head (3)"),
            std::string::npos);
  c = testing::micro_config();
  c.padded_vocab = 22;
  EXPECT_NE(validate(c).message().find("padded_vocab (22) must be >= vocab_size (23)"),
            std::string::npos);
  c = testing::micro_config();
  c.seq_len = 0;
  EXPECT_NE(validate(c).message().find("seq_len must be positive"), std::string::npos);
  EXPECT_EQ(pad_vocab(50257), 50304);
  EXPECT_EQ(pad_vocab(256), 256);
  EXPECT_EQ(pad_vocab(23, 8), 24);
}

TEST(ParamLayout, HfNamesShapesAndTransposition) {
  const GptConfig cfg = testing::micro_config();
  const ParamLayout layout = make_layout(cfg);
  const int64_t C = 16;
  ASSERT_EQ(layout.tensors().size(), 2u + 12 * 2 + 2);
  const TensorInfo& wte = layout.tensor("wte.weight");
  EXPECT_EQ(wte.shape, (std::vector<int64_t>{32, C}));
  EXPECT_EQ(wte.hf_shape, (std::vector<int64_t>{23, C}));  // HF has V rows
  EXPECT_FALSE(wte.hf_transposed);
  const TensorInfo& qkv = layout.tensor("h.1.attn.c_attn.weight");
  EXPECT_EQ(qkv.shape, (std::vector<int64_t>{3 * C, C}));
  EXPECT_EQ(qkv.hf_shape, (std::vector<int64_t>{C, 3 * C}));  // Conv1D [in, out]
  EXPECT_TRUE(qkv.hf_transposed);
  EXPECT_EQ(qkv.group, 2);
  const TensorInfo& fcproj = layout.tensor("h.0.mlp.c_proj.weight");
  EXPECT_EQ(fcproj.shape, (std::vector<int64_t>{C, 4 * C}));
  EXPECT_EQ(fcproj.hf_shape, (std::vector<int64_t>{4 * C, C}));
  EXPECT_EQ(fcproj.kind, ParamKind::kResidualProjWeight);
  EXPECT_FALSE(layout.tensor("h.0.mlp.c_fc.bias").hf_transposed);
  EXPECT_EQ(layout.tensor("ln_f.bias").group, 3);
  EXPECT_EQ(&block_tensor(layout, 1, kFcWeight), &layout.tensor("h.1.mlp.c_fc.weight"));
  StatusOr<int> missing = layout.find("h.2.ln_1.weight");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'h.2.ln_1.weight'"), std::string::npos);
}

TEST(ParamLayout, OffsetsAlignedGroupsContiguousAndCountsExact) {
  for (const PresetInfo& p : list_presets()) {
    const ParamLayout layout = make_layout(p.config);
    const int L = static_cast<int>(p.config.n_layer);
    ASSERT_EQ(layout.num_groups(), L + 2) << p.name;
    int64_t real = 0, end = 0;
    std::set<std::string> names;
    for (const TensorInfo& t : layout.tensors()) {
      EXPECT_EQ(t.offset % kParamAlignment, 0) << t.name;  // 64 bytes
      EXPECT_GE(t.offset, end) << t.name << " overlaps its predecessor";
      EXPECT_LT(t.offset - end, kParamAlignment) << t.name << " gap larger than alignment";
      const GroupInfo& g = layout.groups()[t.group];
      EXPECT_GE(t.offset, g.offset) << t.name;
      EXPECT_LE(t.offset + t.numel, g.offset + g.numel) << t.name;
      EXPECT_TRUE(names.insert(t.name).second) << "duplicate " << t.name;
      end = t.offset + t.numel;
      real += t.numel;
    }
    EXPECT_EQ(real, padded_parameter_count(p.config)) << p.name;
    int64_t next = 0;
    for (const GroupInfo& g : layout.groups()) {
      EXPECT_EQ(g.offset, next) << g.name;  // groups tile the buffer
      EXPECT_EQ(g.numel % kParamAlignment, 0) << g.name;
      next = g.offset + g.numel;
    }
    EXPECT_EQ(next, layout.total_numel());
    EXPECT_EQ(layout.groups()[0].name, "embeddings");
    EXPECT_EQ(layout.groups()[1].name, "h.0");
    EXPECT_EQ(layout.groups()[L + 1].name, "ln_f");
    EXPECT_EQ(layout.groups()[1].tensor_count, kBlockSlots);
  }
}

TEST(ParamLayout, HfConversionTransposesConv1DAndDropsVocabPadding) {
  const ParamLayout layout = make_layout(testing::micro_config());
  const TensorInfo& fc = layout.tensor("h.0.mlp.c_fc.weight");  // ours [64, 16], HF [16, 64]
  std::vector<float> ours(fc.numel), hf(hf_numel(fc)), back(fc.numel);
  for (int64_t i = 0; i < fc.numel; ++i) ours[i] = static_cast<float>(i);
  copy_to_hf(fc, ours.data(), hf.data());
  // ours[o=5][i=3] is HF's [in=3][out=5].
  EXPECT_EQ(hf[3 * 64 + 5], ours[5 * 16 + 3]);
  copy_from_hf(fc, hf.data(), back.data());
  EXPECT_EQ(back, ours);

  const TensorInfo& wte = layout.tensor("wte.weight");  // ours [32, 16], HF [23, 16]
  ASSERT_EQ(hf_numel(wte), 23 * 16);
  std::vector<float> e(wte.numel, 7.0f), ehf(hf_numel(wte)), eback(wte.numel, -1.0f);
  copy_to_hf(wte, e.data(), ehf.data());
  copy_from_hf(wte, ehf.data(), eback.data());
  EXPECT_EQ(eback[23 * 16 - 1], 7.0f);
  EXPECT_EQ(eback[23 * 16], 0.0f);  // padding rows come back zero
}

TEST(GptConfig, FlopsPerTokenFollowsSixNPlusAttention) {
  const GptConfig g = *preset("gpt2");
  EXPECT_EQ(flops_per_token(g, 1024), 6 * 124439808LL + 12LL * 12 * 768 * 1024);
}

}  // namespace
}  // namespace zerotrain::model::gpt2

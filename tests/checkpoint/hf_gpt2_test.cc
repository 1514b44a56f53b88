// HF GPT-2 safetensors export/import on a small config: exact round trip of
// the flat buffer, Conv1D transposition and wte's real rows on disk, bf16
// rounding, HF naming variants accepted, wrong files refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/hf/gpt2.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/test_util.h"
#include "core/half.h"
#include "model/gpt2/layout.h"

namespace zerotrain::checkpoint {
namespace {

using model::ParamLayout;
using model::TensorInfo;
using model::gpt2::GptConfig;
using model::gpt2::make_layout;
using testing::TempDir;

// 2 layers, C=32, NH=2, V=50 padded to 64, block size 16.
GptConfig small_config(int64_t n_layer = 2, int64_t n_embd = 32) {
  return {.n_layer = n_layer, .n_head = 2, .n_embd = n_embd, .seq_len = 16, .vocab_size = 50,
          .padded_vocab = 64};
}

// Random parameters; wte's padding rows and the alignment gaps stay zero,
// as a loaded buffer has them.
std::vector<float> sample_params(const ParamLayout& layout, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> p(static_cast<size_t>(layout.total_numel()), 0.0f);
  for (const TensorInfo& t : layout.tensors()) {
    const int64_t real = t.hf_transposed ? t.numel : model::hf_numel(t);
    for (int64_t i = 0; i < real; ++i) p[t.offset + i] = dist(rng);
  }
  return p;
}

ReadFlatFn reader_of(const std::vector<float>& params) {
  return [&params](int64_t offset, int64_t count, float* out) {
    std::copy_n(params.data() + offset, count, out);
    return ok_status();
  };
}

// One tensor of a hand-made file: its spec and its values in HF layout.
struct Entry {
  SafetensorsTensor spec;
  std::vector<float> values;
};

std::vector<Entry> hf_entries(const ParamLayout& layout, const std::vector<float>& params) {
  std::vector<Entry> entries;
  for (const TensorInfo& t : layout.tensors()) {
    Entry e{.spec = {.name = t.name, .shape = t.hf_shape},
            .values = std::vector<float>(static_cast<size_t>(model::hf_numel(t)))};
    model::copy_to_hf(t, params.data() + t.offset, e.values.data());
    entries.push_back(std::move(e));
  }
  return entries;
}

void write_entries(const std::string& path, const std::vector<Entry>& entries) {
  std::vector<SafetensorsTensor> specs;
  for (const Entry& e : entries) specs.push_back(e.spec);
  auto w = SafetensorsWriter::create(path, specs);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  for (const Entry& e : entries) ASSERT_TRUE(w->write(e.values).ok());
  ASSERT_TRUE(w->finish().ok());
}

Status load(const std::string& path, const ParamLayout& layout, std::vector<float>* out) {
  out->assign(static_cast<size_t>(layout.total_numel()), NAN);
  return load_hf_gpt2(path, layout, out->data());
}

TEST(HfGpt2, WriteThenLoadGivesBackTheFlatBufferExactly) {
  TempDir dir;
  const ParamLayout layout = make_layout(small_config());
  const std::vector<float> params = sample_params(layout, 1);
  std::vector<std::pair<int64_t, int64_t>> reads;
  const ReadFlatFn read = [&](int64_t offset, int64_t count, float* out) {
    reads.emplace_back(offset, count);
    return reader_of(params)(offset, count, out);
  };
  const std::string path = dir.file("model.safetensors");
  ASSERT_TRUE(write_hf_gpt2(path, layout, DType::kFloat32, read).ok());

  ASSERT_EQ(reads.size(), layout.tensors().size());  // one tensor at a time, in order
  for (size_t i = 0; i < reads.size(); ++i) {
    EXPECT_EQ(reads[i].first, layout.tensors()[i].offset);
    EXPECT_EQ(reads[i].second, layout.tensors()[i].numel);
  }
  std::vector<float> loaded;
  const Status st = load(path, layout, &loaded);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(loaded, params);  // NaN-filled before: gaps and padding rows written as zero
}

TEST(HfGpt2, FileHoldsHfShapesConv1dTransposedAndNoLmHead) {
  TempDir dir;
  const ParamLayout layout = make_layout(small_config());
  const std::vector<float> params = sample_params(layout, 2);
  const std::string path = dir.file("model.safetensors");
  ASSERT_TRUE(
      write_hf_gpt2(path, layout, DType::kFloat32, reader_of(params), {{"source", "test"}}).ok());
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().size(), layout.tensors().size());
  EXPECT_EQ(f->find("lm_head.weight"), nullptr);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("source"), "test");
  EXPECT_EQ(f->find("wte.weight")->shape, (std::vector<int64_t>{50, 32}));

  // HF Conv1D [in=C, out=4C]; ours [out, in]: HF (i, j) is our (j, i).
  const TensorInfo& fc = layout.tensor("h.1.mlp.c_fc.weight");
  const SafetensorsTensor* t = f->find("h.1.mlp.c_fc.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{32, 128}));
  const int64_t i = 5, j = 101, C = 32, out_features = 128;
  float on_disk = 0;
  ASSERT_TRUE(f->read_f32(*t, i * out_features + j, 1, &on_disk).ok());
  EXPECT_EQ(on_disk, params[fc.offset + j * C + i]);
  EXPECT_NE(params[fc.offset + j * C + i], params[fc.offset + i * C + j]);
}

TEST(HfGpt2, Bf16ExportLoadsAsTheRoundedValues) {
  TempDir dir;
  const ParamLayout layout = make_layout(small_config());
  const std::vector<float> params = sample_params(layout, 3);
  const std::string path = dir.file("model.safetensors");
  ASSERT_TRUE(write_hf_gpt2(path, layout, DType::kBFloat16, reader_of(params)).ok());
  std::vector<float> loaded;
  ASSERT_TRUE(load(path, layout, &loaded).ok());
  for (size_t k = 0; k < params.size(); ++k) {
    const float want = bf16_bits_to_fp32(fp32_to_bf16_bits(params[k]));
    ASSERT_EQ(loaded[k], want) << "flat element " << k;
  }
}

TEST(HfGpt2, AcceptsTransformerPrefixTiedLmHeadAndMaskBuffers) {
  TempDir dir;
  const ParamLayout layout = make_layout(small_config());
  const std::vector<float> params = sample_params(layout, 4);
  std::vector<Entry> entries = hf_entries(layout, params);
  for (Entry& e : entries) e.spec.name = "transformer." + e.spec.name;
  entries.push_back({.spec = {.name = "lm_head.weight", .shape = {50, 32}},
                     .values = std::vector<float>(50 * 32, 1.0f)});
  entries.push_back({.spec = {.name = "transformer.h.0.attn.bias", .shape = {1, 1, 16, 16}},
                     .values = std::vector<float>(256, 1.0f)});
  entries.push_back({.spec = {.name = "h.1.attn.masked_bias", .shape = {}},
                     .values = std::vector<float>{-1e4f}});
  const std::string path = dir.file("hf.safetensors");
  write_entries(path, entries);
  std::vector<float> loaded;
  const Status st = load(path, layout, &loaded);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(loaded, params);
}

// Loading must fail with InvalidArgument containing `want`.
void expect_load_refused(const std::vector<Entry>& entries, const ParamLayout& layout,
                         const std::string& want) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_entries(path, entries);
  std::vector<float> loaded;
  const Status st = load(path, layout, &loaded);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find(want), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find(path), std::string::npos) << st.to_string();
}

TEST(HfGpt2, RefusesAMissingTensorNamingIt) {
  const ParamLayout layout = make_layout(small_config());
  std::vector<Entry> entries = hf_entries(layout, sample_params(layout, 5));
  std::erase_if(entries, [](const Entry& e) { return e.spec.name == "h.1.ln_2.bias"; });
  expect_load_refused(entries, layout, "no tensor 'h.1.ln_2.bias'");
}

TEST(HfGpt2, RefusesAFileForAnotherWidthNamingTensorAndShapes) {
  const ParamLayout wider = make_layout(small_config(2, 48));
  expect_load_refused(hf_entries(wider, sample_params(wider, 6)), make_layout(small_config()),
                      "'wte.weight' has shape [50, 48], expected [50, 32]");
}

TEST(HfGpt2, RefusesUnknownTensorsAndExtraLayers) {
  const ParamLayout layout = make_layout(small_config());
  std::vector<Entry> entries = hf_entries(layout, sample_params(layout, 7));
  entries.push_back({.spec = {.name = "h.0.attn.rotary", .shape = {2}}, .values = {1, 2}});
  expect_load_refused(entries, layout, "'h.0.attn.rotary' is not a parameter");

  const ParamLayout deeper = make_layout(small_config(3));
  expect_load_refused(hf_entries(deeper, sample_params(deeper, 8)), layout,
                      "'h.2.ln_1.weight' is not a parameter of this 2-layer model");
}

TEST(HfGpt2, RefusesATensorGivenWithAndWithoutPrefix) {
  const ParamLayout layout = make_layout(small_config());
  std::vector<Entry> entries = hf_entries(layout, sample_params(layout, 9));
  Entry copy = entries.front();
  copy.spec.name = "transformer." + copy.spec.name;
  entries.push_back(copy);
  expect_load_refused(entries, layout, "'wte.weight' appears twice");
}

TEST(HfGpt2, ReadFlatFailureNamesTheTensorAndLeavesNoFile) {
  TempDir dir;
  const ParamLayout layout = make_layout(small_config());
  const std::vector<float> params = sample_params(layout, 10);
  const ReadFlatFn failing = [&](int64_t offset, int64_t count, float* out) {
    if (offset == layout.tensor("h.0.attn.c_proj.weight").offset) return io_error("disk gone");
    return reader_of(params)(offset, count, out);
  };
  const Status st = write_hf_gpt2(dir.file("m"), layout, DType::kFloat16, failing);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("h.0.attn.c_proj.weight"), std::string::npos) << st.to_string();
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace zerotrain::checkpoint

// Packed documents (Module::forward's doc_starts): three documents packed
// into one row give the same loss and the same gradient as the three
// documents each in a row of its own, for GPT-2 (positions through wpe)
// and the Llama family (positions through RoPE, grouped-query attention),
// while the same packed row without doc_starts does not (the documents
// would see each other).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "device/cpu/guarded_device.h"
#include "model/registry.h"

namespace zerotrain::model {
namespace {

constexpr int64_t T = 24;
const std::vector<int64_t> kDocs = {5, 9, 7};  // lengths; 3 tokens of padding after them

struct Batch {
  std::vector<int32_t> tokens, targets, starts;
  int64_t B = 0;
};

// Packed: one row [doc0 doc1 doc2 pad], each document's targets inside
// it, the rest -1; starts mark each document (the padding is its own).
// Unpacked: a row per document, padded.
void make_batches(Batch* packed, Batch* unpacked) {
  std::mt19937 gen(9);
  std::vector<std::vector<int32_t>> docs;
  for (int64_t n : kDocs) {
    std::vector<int32_t> d(n);
    for (auto& t : d) t = static_cast<int32_t>(gen() % 250);
    docs.push_back(d);
  }
  packed->B = 1;
  unpacked->B = static_cast<int64_t>(docs.size());
  for (const auto& d : docs) {
    const auto at = static_cast<int32_t>(packed->tokens.size());
    for (size_t i = 0; i < d.size(); ++i) {
      packed->tokens.push_back(d[i]);
      packed->targets.push_back(i + 1 < d.size() ? d[i + 1] : -1);
      packed->starts.push_back(at);
    }
    for (int64_t i = 0; i < T; ++i) {
      const auto k = static_cast<size_t>(i);
      unpacked->tokens.push_back(k < d.size() ? d[k] : 255);
      unpacked->targets.push_back(k + 1 < d.size() ? d[k + 1] : -1);
    }
  }
  const auto pad_at = static_cast<int32_t>(packed->tokens.size());
  while (static_cast<int64_t>(packed->tokens.size()) < T) {
    packed->tokens.push_back(255);
    packed->targets.push_back(-1);
    packed->starts.push_back(pad_at);
  }
}

struct Result {
  float loss;
  std::vector<float> grad;
};

Result run(const char* preset, const Batch& b, bool with_starts, device::Device* device = nullptr,
           bool bf16 = false) {
  auto spec = model_spec(preset);
  EXPECT_TRUE(spec.ok());
  auto m =
      create_module(*spec, {.max_batch = 3, .max_seq = T, .bf16_compute = bf16, .device = device});
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->init_parameters(11).ok());
  (*m)->zero_gradients();
  auto loss = (*m)->forward(b.tokens.data(), b.targets.data(), b.B, T, true,
                            with_starts ? b.starts.data() : nullptr);
  EXPECT_TRUE(loss.ok()) << loss.status().to_string();
  EXPECT_TRUE((*m)->backward(1.0f).ok());
  const int64_t n = (*m)->layout().total_numel();
  std::vector<float> grad(static_cast<size_t>(n));
  EXPECT_TRUE((*m)->device().copy(grad.data(), (*m)->gradients(), grad.size() * 4).ok());
  return {*loss, grad};
}

class Packing : public ::testing::TestWithParam<const char*> {};

TEST_P(Packing, PackedDocumentsEqualDocumentsInRowsOfTheirOwn) {
  Batch packed, unpacked;
  make_batches(&packed, &unpacked);
  const Result p = run(GetParam(), packed, true), u = run(GetParam(), unpacked, false);
  EXPECT_NEAR(p.loss, u.loss, 2e-6 * u.loss);
  float scale = 0, worst = 0;
  for (size_t i = 0; i < u.grad.size(); ++i) {
    scale = std::max(scale, std::abs(u.grad[i]));
    worst = std::max(worst, std::abs(u.grad[i] - p.grad[i]));
  }
  EXPECT_GT(scale, 0.0f);
  EXPECT_LE(worst, 1e-5f * scale);
  const Result mixed = run(GetParam(), packed, false);
  EXPECT_GT(std::abs(mixed.loss - u.loss), 1e-4 * u.loss)
      << "without doc_starts the packed documents see each other";
}

// The Llama family's bf16 path packs too (its bf16 attention takes the
// document starts, its bf16 RoPE the positions): packed equals unpacked
// within bf16 rounding (the rows round differently: another batch shape
// and other row blocks), and far closer than without doc_starts.
TEST(PackingBf16, LlamaPackedDocumentsEqualDocumentsInRowsOfTheirOwn) {
  for (const char* preset : {"llama-tiny", "qwen2-tiny"}) {
    SCOPED_TRACE(preset);
    Batch packed, unpacked;
    make_batches(&packed, &unpacked);
    const Result p = run(preset, packed, true, nullptr, true);
    const Result u = run(preset, unpacked, false, nullptr, true);
    const Result mixed = run(preset, packed, false, nullptr, true);
    EXPECT_NEAR(p.loss, u.loss, 2e-3 * u.loss);
    EXPECT_GT(std::abs(mixed.loss - u.loss), 5 * std::abs(p.loss - u.loss));
    double diff = 0, norm = 0;
    for (size_t i = 0; i < u.grad.size(); ++i) {
      diff += (u.grad[i] - p.grad[i]) * double(u.grad[i] - p.grad[i]);
      norm += u.grad[i] * double(u.grad[i]);
    }
    EXPECT_GT(norm, 0);
    EXPECT_LT(std::sqrt(diff / norm), 2e-2);
  }
}

// The device seam for packed documents: on the guarded device (device ops
// that get host memory abort, as a GPU kernel would fault) the same bits.
TEST_P(Packing, GuardedDeviceGivesTheSameBits) {
  Batch packed, unpacked;
  make_batches(&packed, &unpacked);
  std::unique_ptr<device::Device> guarded = device::cpu::make_guarded_device();
  const Result cpu = run(GetParam(), packed, true);
  const Result g = run(GetParam(), packed, true, guarded.get());
  EXPECT_EQ(g.loss, cpu.loss);
  EXPECT_EQ(g.grad, cpu.grad);
}

INSTANTIATE_TEST_SUITE_P(Families, Packing,
                         ::testing::Values("gpt2-tiny", "llama-tiny", "qwen2-tiny"));

TEST(Packing, MalformedStartsAndUnsupportedPathsAreRefused) {
  Batch packed, unpacked;
  make_batches(&packed, &unpacked);
  auto spec = model_spec("gpt2-tiny");
  ASSERT_TRUE(spec.ok());
  auto m = create_module(*spec, {.max_batch = 1, .max_seq = T});
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->init_parameters(1).ok());
  packed.starts[7] = 6;  // inside a document, not its start
  auto bad =
      (*m)->forward(packed.tokens.data(), packed.targets.data(), 1, T, true, packed.starts.data());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("doc_starts[0, 7] = 6"), std::string::npos)
      << bad.status().message();
  auto bf16 = create_module(*spec, {.max_batch = 1, .max_seq = T, .bf16_compute = true});
  ASSERT_TRUE(bf16.ok());
  make_batches(&packed, &unpacked);
  auto refused = (*bf16)->forward(packed.tokens.data(), packed.targets.data(), 1, T, true,
                                  packed.starts.data());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("fp32 with recompute_attention"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::model

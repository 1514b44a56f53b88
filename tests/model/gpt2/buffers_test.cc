// GptModel with parameters and gradients bound group by group, the way
// ZeRO stage 3 drives it: hooks gather each group into a fresh buffer
// before use and release (poison) it after, so any parameter read outside
// the documented stages would show up as NaN; plus error paths and memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/cpu/aligned_buffer.h"
#include "model/gpt2/gpt_model.h"
#include "model/gpt2/reference_gpt.h"

namespace zerotrain::model::gpt2 {
namespace {

using testing::micro_config;
using testing::random_tokens;

constexpr int B = 2, T = 5;

GptModel make(bool own) {
  StatusOr<GptModel> m = GptModel::create(
      micro_config(), {.max_batch = B, .max_seq = T, .own_parameters = own, .own_gradients = own});
  ZT_CHECK(m.ok(), m.status().to_string());
  return std::move(m).value();
}

// A fake stage-3 partitioner: the master copy lives in `master`; each
// gather allocates a group buffer, each release poisons and drops it.
class FakeStage3 {
 public:
  FakeStage3(GptModel* m, const float* master) : m_(m), master_(master) {}

  GroupHooks hooks() {
    return {[this](int s) { return gather(s, Pass::kForward); },
            [this](int s) { return release(s, Pass::kForward); },
            [this](int s) { return gather(s, Pass::kBackward); },
            [this](int s) { return release(s, Pass::kBackward); }};
  }
  int max_live = 0;
  std::vector<int> grads_final;  // groups in after_backward order

 private:
  Status gather(int stage, Pass pass) {
    for (int g : m_->param_groups_read(stage, pass)) {
      const GroupInfo& gi = m_->layout().groups()[g];
      auto buf = std::make_unique<device::cpu::AlignedBuffer<float>>(gi.numel);
      std::memcpy(buf->data(), master_ + gi.offset, gi.numel * sizeof(float));
      m_->set_group_parameters(g, buf->data());
      live_[g] = std::move(buf);
    }
    max_live = std::max(max_live, static_cast<int>(live_.size()));
    return ok_status();
  }
  Status release(int stage, Pass pass) {
    if (pass == Pass::kBackward) grads_final.push_back(stage);
    for (int g : m_->param_groups_read(stage, pass)) {
      // Poison instead of freeing so a stale read yields NaN, not a crash.
      auto& buf = live_.at(g);
      std::fill(buf->begin(), buf->end(), std::numeric_limits<float>::quiet_NaN());
      graveyard_.push_back(std::move(buf));
      live_.erase(g);
      m_->set_group_parameters(g, nullptr);
    }
    return ok_status();
  }
  GptModel* m_;
  const float* master_;
  std::map<int, std::unique_ptr<device::cpu::AlignedBuffer<float>>> live_;
  std::vector<std::unique_ptr<device::cpu::AlignedBuffer<float>>> graveyard_;
};

TEST(GptModelBuffers, Stage3StyleGatherReleaseMatchesFlatBuffers) {
  const std::vector<int32_t> tokens = random_tokens(B * T, 23, 3);
  const std::vector<int32_t> targets = random_tokens(B * T, 23, 4);
  GptModel flat = make(true);
  ASSERT_TRUE(flat.init_parameters(77).ok());
  flat.zero_gradients();
  const float want = *flat.forward(tokens.data(), targets.data(), B, T);
  ASSERT_TRUE(flat.backward().ok());

  GptModel m = make(false);
  const ParamLayout& layout = m.layout();
  // Gradients: one separate buffer per group.
  std::vector<device::cpu::AlignedBuffer<float>> grads;
  for (const GroupInfo& gi : layout.groups()) grads.emplace_back(gi.numel);
  for (int g = 0; g < m.num_groups(); ++g) m.set_group_gradients(g, grads[g].data());
  FakeStage3 zero(&m, flat.parameters());
  m.set_hooks(zero.hooks());
  StatusOr<float> got = m.forward(tokens.data(), targets.data(), B, T);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(m.backward().ok());
  EXPECT_EQ(*got, want);
  EXPECT_EQ(zero.max_live, 2);  // the head stage holds ln_f and wte
  EXPECT_EQ(zero.grads_final, (std::vector<int>{3, 2, 1, 0}));
  for (const GroupInfo& gi : layout.groups()) {
    EXPECT_EQ(
        std::memcmp(grads[gi.index].data(), flat.gradients() + gi.offset, gi.numel * sizeof(float)),
        0)
        << gi.name;
  }
}

// fp32 and the bf16 path (whose attention reads the saved bf16 qkv).
TEST(GptModelBuffers, SavedAttentionMapsMatchRecomputation) {
  const std::vector<int32_t> tok = random_tokens(B * T, 23, 31), tgt = random_tokens(B * T, 23, 32);
  for (bool bf16 : {false, true}) {
    float loss[2];
    std::vector<float> grad[2];
    for (int k = 0; k < 2; ++k) {
      StatusOr<GptModel> m = GptModel::create(
          micro_config(),
          {.max_batch = B, .max_seq = T, .bf16_compute = bf16, .recompute_attention = k == 0});
      ASSERT_TRUE(m.ok());
      ASSERT_TRUE(m->init_parameters(6).ok());
      m->zero_gradients();
      loss[k] = *m->forward(tok.data(), tgt.data(), B, T);
      ASSERT_TRUE(m->backward().ok());
      grad[k].assign(m->gradients(), m->gradients() + m->layout().total_numel());
    }
    EXPECT_NEAR(loss[0], loss[1], 1e-6) << "bf16 " << bf16;
    double max_abs = 0;
    for (float x : grad[1]) max_abs = std::max(max_abs, std::fabs(double(x)));
    for (size_t i = 0; i < grad[0].size(); ++i) {
      ASSERT_NEAR(grad[0][i], grad[1][i], 1e-5 * max_abs) << i << " bf16 " << bf16;
    }
  }
}

TEST(GptModelBuffers, GroupGradientsAreFinalAtAfterBackward) {
  // What overlap_comm relies on: a snapshot of group g's gradients taken in
  // after_backward(g) equals the gradients at the end of backward().
  GptModel m = make(true);
  ASSERT_TRUE(m.init_parameters(12).ok());
  m.zero_gradients();
  std::vector<std::vector<float>> snap(m.num_groups());
  GroupHooks h;
  h.after_backward = [&](int g) {
    const GroupInfo& gi = m.layout().groups()[g];
    snap[g].assign(m.group_gradients(g), m.group_gradients(g) + gi.numel);
    return ok_status();
  };
  m.set_hooks(h);
  const std::vector<int32_t> tok = random_tokens(B * T, 23, 8), tgt = random_tokens(B * T, 23, 9);
  ASSERT_TRUE(m.forward(tok.data(), tgt.data(), B, T).ok());
  ASSERT_TRUE(m.backward().ok());
  for (const GroupInfo& gi : m.layout().groups()) {
    ASSERT_EQ(snap[gi.index].size(), static_cast<size_t>(gi.numel));
    EXPECT_EQ(std::memcmp(snap[gi.index].data(), m.gradients() + gi.offset, gi.numel * 4), 0)
        << gi.name << " changed after its after_backward";
  }
}

TEST(GptModelBuffers, UnboundGroupAndHookErrorsAreReported) {
  GptModel m = make(false);
  const std::vector<int32_t> tok(B * T, 1);
  StatusOr<float> r = m.forward(tok.data(), tok.data(), B, T);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("group 0 (embeddings) has no parameter buffer"),
            std::string::npos)
      << r.status().message();
  device::cpu::AlignedBuffer<float> p(m.layout().total_numel());
  m.set_parameters(p.data());
  ASSERT_TRUE(m.init_parameters(1).ok());
  ASSERT_TRUE(m.forward(tok.data(), tok.data(), B, T).ok());
  Status s = m.backward();
  EXPECT_NE(s.message().find("group 3 (ln_f) has no gradient buffer"), std::string::npos)
      << s.message();

  GroupHooks failing;
  failing.before_forward = [](int g) {
    return g == 2 ? unavailable("rank 1 died during the all-gather") : ok_status();
  };
  m.set_hooks(failing);
  r = m.forward(tok.data(), tok.data(), B, T);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("group hook for group 2"), std::string::npos);
  EXPECT_NE(r.status().message().find("rank 1 died"), std::string::npos);
  EXPECT_FALSE(m.backward().ok()) << "a failed forward must not allow a backward";
}

TEST(GptModelBuffers, ArgumentErrorsNameTheProblem) {
  GptModel m = make(true);
  ASSERT_TRUE(m.init_parameters(1).ok());
  std::vector<int32_t> tok(B * T, 1), tgt(B * T, 2);
  EXPECT_NE(m.backward().message().find("needs a forward with targets"), std::string::npos);
  EXPECT_NE(m.forward(tok.data(), tgt.data(), B + 1, T).status().message().find("B=3, T=5"),
            std::string::npos);
  tok[1 * T + 2] = 23;  // == V: out of range at (b=1, t=2)
  const std::string bad = m.forward(tok.data(), tgt.data(), B, T).status().message();
  EXPECT_NE(bad.find("23"), std::string::npos) << bad;
  tok[1 * T + 2] = 1;
  ASSERT_TRUE(m.forward(tok.data(), tgt.data(), B, T).ok());
  ASSERT_TRUE(m.backward().ok());
  EXPECT_FALSE(m.backward().ok()) << "one backward per forward";
  StatusOr<GptModel> too_long = GptModel::create(micro_config(), {.max_seq = 9});
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("max_seq must be in [1, seq_len=8], got 9"),
            std::string::npos);
}

TEST(GptModelBuffers, InferenceAndIgnoredTargets) {
  GptModel chunked = make(true);
  ASSERT_TRUE(chunked.init_parameters(2).ok());
  const std::vector<int32_t> tok = random_tokens(B * T, 23, 5);
  StatusOr<float> refused = chunked.forward(tok.data(), nullptr, B, T);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("full_logits"), std::string::npos);

  StatusOr<GptModel> made =
      GptModel::create(micro_config(), {.max_batch = B, .max_seq = T, .full_logits = true});
  ASSERT_TRUE(made.ok());
  GptModel& m = *made;
  ASSERT_TRUE(m.init_parameters(2).ok());
  m.zero_gradients();
  StatusOr<float> r = m.forward(tok.data(), nullptr, B, T);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan(*r));
  EXPECT_FALSE(m.backward().ok());
  // Logits of the last position stay finite and the padding columns are 0
  // (wte's padded rows are zero).
  const float* last = m.logits() + (B * T - 1) * 32;
  for (int v = 23; v < 32; ++v) EXPECT_EQ(last[v], 0.0f);
  const std::vector<int32_t> ignored(B * T, -1);
  r = m.forward(tok.data(), ignored.data(), B, T);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0.0f);
  ASSERT_TRUE(m.backward().ok());
  for (int64_t i = 0; i < m.layout().total_numel(); ++i) ASSERT_EQ(m.gradients()[i], 0.0f) << i;
}

// Lending the activation memory: exactly the buffer, refused beyond its
// size; while lent, forward refuses with a reason and the pending backward
// is gone (the memory it needed is someone else's); once returned, a
// forward and backward give the same loss and gradients as before.
TEST(GptModelBuffers, LentActivationMemoryBlocksPassesUntilReturned) {
  GptModel m = make(true);
  ASSERT_TRUE(m.init_parameters(3).ok());
  const std::vector<int32_t> tok = random_tokens(B * T, 23, 31), tg = random_tokens(B * T, 23, 32);
  auto step = [&]() {
    m.zero_gradients();
    StatusOr<float> l = m.forward(tok.data(), tg.data(), B, T);
    ZT_CHECK(l.ok(), l.status().to_string());
    ZT_CHECK(m.backward().ok(), "backward");
    std::vector<float> out(m.gradients(), m.gradients() + m.layout().total_numel());
    out.push_back(*l);
    return out;
  };
  const std::vector<float> before = step();
  const int64_t floats = m.memory().activation_bytes / 4;
  EXPECT_EQ(m.lend_activation_memory(floats + 1), nullptr);
  EXPECT_FALSE(m.activation_memory_lent());
  ASSERT_TRUE(m.forward(tok.data(), tg.data(), B, T).ok());
  float* lent = m.lend_activation_memory(floats);
  ASSERT_NE(lent, nullptr);
  EXPECT_TRUE(m.activation_memory_lent());
  std::fill(lent, lent + floats, std::nanf(""));  // the borrower's data
  EXPECT_FALSE(m.backward().ok()) << "the forward's activations were lent out";
  StatusOr<float> refused = m.forward(tok.data(), tg.data(), B, T);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("lent out"), std::string::npos)
      << refused.status().message();
  m.return_activation_memory();
  EXPECT_EQ(step(), before);
}

TEST(GptModelBuffers, MemoryAccountingMatchesTheArrays) {
  const GptConfig cfg = micro_config();
  GptModel m = make(true);
  const MemoryStats mem = m.memory();
  EXPECT_EQ(mem.parameter_bytes, m.layout().total_bytes());
  EXPECT_EQ(mem.gradient_bytes, m.layout().total_bytes());
  EXPECT_EQ(mem.activation_bytes, GptModel::activation_bytes(cfg, B, T));
  // Saved per layer: qkv(3), atty, res2, fch(4), res3 = 10·BTC (ln_1, ln_2
  // and gelu are recomputed), 4 row statistics, attention lse NH·T·B; head:
  // encoded, lnf, 2 stats, one chunk of logits (here all BT rows: fewer
  // than 64) · Vp, dwte Vp·C, losses; scratch: proj, ln, fch_gelu(4),
  // dres, dln, datty, dqkv(3), dfch_gelu(4) = 16·BTC.
  const int64_t BT = B * T, C = cfg.n_embd, L = cfg.n_layer;
  const int64_t floats = L * (10 * BT * C + 4 * BT + cfg.n_head * T * B) + 2 * BT * C + 3 * BT +
                         BT * cfg.padded_vocab + cfg.padded_vocab * C + 16 * BT * C;
  const int64_t arrays = 10 * L + 15;  // each padded to 16 floats at most
  EXPECT_GE(mem.activation_bytes, floats * 4);
  EXPECT_LT(mem.activation_bytes, (floats + 16 * arrays) * 4);
  // Saving the attention maps instead of their log-sum-exp costs exactly
  // L·B·NH·(T² - T) floats (both sizes are multiples of 16 here).
  const GptConfig gpt2 = *preset("gpt2");
  const int64_t lean = GptModel::activation_bytes(gpt2, 1, 1024);
  const int64_t maps = GptModel::activation_bytes(gpt2, 1, 1024, false, false);
  EXPECT_EQ(maps - lean, 12LL * 12 * (1024 * 1024 - 1024) * 4);  // 575.4 MiB
  EXPECT_LT(lean, 1LL << 30);
}

// The lm head in chunks of 3 rows (with a short last chunk) against all
// rows at once: the same per-token losses and, up to the summation order of
// d wte over chunks, the same gradients; bf16 likewise. Losses are compared
// to 4 ulps, not bit for bit: oneDNN may pick another GEMM kernel (another
// order of the K sum) for 3 rows than for all of them, as its AVX2 sgemm
// does (ONEDNN_MAX_CPU_ISA=AVX2, or a CPU without AVX-512).
TEST(GptModelBuffers, ChunkedHeadEqualsTheWholeHead) {
  for (bool bf16 : {false, true}) {
    auto run = [&](bool full) {
      StatusOr<GptModel> m = GptModel::create(micro_config(), {.max_batch = B,
                                                               .max_seq = T,
                                                               .bf16_compute = bf16,
                                                               .full_logits = full,
                                                               .head_rows = 3});
      ZT_CHECK(m.ok(), m.status().to_string());
      ZT_CHECK(m->init_parameters(4).ok(), "init_parameters");
      m->zero_gradients();
      const std::vector<int32_t> tok = random_tokens(B * T, 23, 7),
                                 tg = random_tokens(B * T, 23, 8);
      StatusOr<float> loss = m->forward(tok.data(), tg.data(), B, T);
      ZT_CHECK(loss.ok(), loss.status().to_string());
      ZT_CHECK(m->backward(0.75f).ok(), "backward");
      std::vector<float> out(m->losses().begin(), m->losses().end());
      out.push_back(*loss);
      out.insert(out.end(), m->gradients(), m->gradients() + m->layout().total_numel());
      return out;
    };
    const std::vector<float> whole = run(true), chunks = run(false);
    ASSERT_EQ(whole.size(), chunks.size());
    for (int i = 0; i <= B * T; ++i) {
      EXPECT_FLOAT_EQ(chunks[i], whole[i]) << "loss " << i << " bf16 " << bf16;
    }
    double err = 0, norm = 0;
    for (size_t i = B * T + 1; i < whole.size(); ++i) {
      err = std::max(err, std::abs(double(chunks[i]) - whole[i]));
      norm = std::max(norm, std::abs(double(whole[i])));
    }
    EXPECT_GT(norm, 0);
    EXPECT_LE(err, 1e-6 * norm) << "bf16 " << bf16;
  }
  // Evaluation (for_backward = false) gives the loss and allows no backward.
  GptModel e = make(true);
  ASSERT_TRUE(e.init_parameters(4).ok());
  const std::vector<int32_t> tok = random_tokens(B * T, 23, 7), tg = random_tokens(B * T, 23, 8);
  ASSERT_TRUE(e.forward(tok.data(), tg.data(), B, T, /*for_backward=*/false).ok());
  EXPECT_FALSE(e.backward().ok());
}

}  // namespace
}  // namespace zerotrain::model::gpt2

// LoRA (model/adapters.h, checkpoint/peft_adapter.h) against independent
// references:
//  - llama / qwen2 tiny HF dirs: zerotrain's adapter is written in PEFT's
//    format, the float64 PyTorch reference (llama_reference.py run
//    --adapter: y = Wx + b + s·B·A·x over a frozen base, PEFT's scaling
//    alpha/r or alpha/sqrt(r)) reads it and gives the loss and the grads of
//    the adapter tensors; zerotrain's must agree;
//  - every family (gpt2 too): the chain rule through the merged weight.
//    With W' = W + s·B·A, dL/dB = s·dL/dW'·Aᵀ and dL/dA = s·Bᵀ·dL/dW',
//    where dL/dW' is the plain model's full gradient at the merged weights
//    (the path the full-fine-tuning reference tests check); the merged
//    model's loss equals the adapted one's;
//  - malformed adapters are refused with the path and the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "checkpoint/hf/model_dir.h"
#include "checkpoint/peft_adapter.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/test_util.h"
#include "integration/subprocess.h"
#include "model/registry.h"

namespace zerotrain::model {
namespace {

using checkpoint::testing::TempDir;
constexpr int B = 2, T = 8;

std::string script() { return std::string(ZT_SOURCE_DIR) + "/tests/model/llama/llama_reference.py"; }

void reference(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/python3", script()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = zerotrain::testing::run_process(argv, std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << "llama_reference.py " << args.front() << ":\n" << r.err;
}

void write_ints(const std::string& path, const std::vector<int32_t>& v) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
}

// max |got − want| ≤ tol · max |want|, want not all zero.
void expect_close(const float* got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  double scale = 0, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    const double d = std::fabs(got[i] - want[i]);
    if (d > worst) worst = d, at = i;
  }
  ASSERT_GT(scale, 0.0) << what << " is identically zero: the check would be vacuous";
  EXPECT_LE(worst, tol * scale) << what << "[" << at << "]: " << got[at] << " vs " << want[at]
                                << " (scale " << scale << ")";
}

struct Fixture {
  ModelSpec spec;
  std::unique_ptr<Module> lora;           // adapted
  std::vector<float> trainable;           // its parameters (host)
  ReadFlatFn base;                        // the base weights
  std::vector<int32_t> tokens, targets;
};

// A module with `cfg` over base weights `base`; the adapter starts at the
// seeded PEFT init with lora_B drawn too (B = 0 would make dA vacuous).
void make_fixture(Fixture& f, const ModelSpec& spec, ReadFlatFn base, const LoraConfig& cfg) {
  f.spec = spec;
  f.base = std::move(base);
  auto m = create_module(spec, {.max_batch = B, .max_seq = T,
                                .lora = std::make_shared<LoraConfig>(cfg)});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  f.lora = std::move(*m);
  ASSERT_TRUE(f.lora->load_frozen(f.base).ok());
  const ParamLayout& l = f.lora->layout();
  f.trainable.assign(static_cast<size_t>(l.total_numel()), 0.0f);
  f.lora->init_range(5, 0, l.total_numel(), f.trainable.data());
  std::mt19937 gen(3);
  std::normal_distribution<float> n(0.0f, 0.2f);
  for (const TensorInfo& t : l.tensors())
    if (t.kind == ParamKind::kLoraB)
      for (int64_t i = 0; i < t.numel; ++i) f.trainable[static_cast<size_t>(t.offset + i)] = n(gen);
  ASSERT_TRUE(f.lora->load_parameters([&](int64_t o, int64_t c, float* out) {
                      std::copy_n(f.trainable.data() + o, c, out);
                      return ok_status();
                    }).ok());
  const int64_t V = spec.config.contains("vocab_size") ? spec.config["vocab_size"].get<int64_t>()
                                                       : 256;
  std::mt19937 g2(11);
  f.tokens.resize(B * T);
  f.targets.resize(B * T);
  for (auto& t : f.tokens) t = static_cast<int32_t>(g2() % V);
  for (auto& t : f.targets) t = g2() % 5 == 0 ? -100 : static_cast<int32_t>(g2() % V);
}

ReadFlatFn host_reader(const std::vector<float>& v) {
  return [&v](int64_t o, int64_t c, float* out) {
    std::copy_n(v.data() + o, c, out);
    return ok_status();
  };
}

// The chain-rule reference: the merged plain model's loss and full
// gradient, mapped onto dA, dB; and the merged loss equals the adapted.
void check_against_merged(Fixture& f, double tol) {
  Module& m = *f.lora;
  m.zero_gradients();
  StatusOr<float> loss = m.forward(f.tokens.data(), f.targets.data(), B, T);
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  ASSERT_TRUE(m.backward().ok());

  auto plain = create_module(f.spec, {.max_batch = B, .max_seq = T});
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE((*plain)->load_parameters(
                  checkpoint::merged_reader(m.base_layout(),
                                            std::make_shared<AdapterPlan>(*m.adapters()), f.base,
                                            host_reader(f.trainable)))
                  .ok());
  (*plain)->zero_gradients();
  StatusOr<float> merged = (*plain)->forward(f.tokens.data(), f.targets.data(), B, T);
  ASSERT_TRUE(merged.ok());
  ASSERT_TRUE((*plain)->backward().ok());
  EXPECT_NEAR(*loss, *merged, 2e-6 * *merged) << "the merged model's loss";

  const AdapterPlan& plan = *m.adapters();
  const double s = plan.scale;
  const ParamLayout& tl = m.layout();
  int checked = 0;
  for (const TensorInfo& w : m.base_layout().tensors()) {
    const AdaptedTensor& at = plan.of_base[static_cast<size_t>(w.index)];
    if (at.lora_a < 0) continue;
    const TensorInfo& ta = tl.tensors()[static_cast<size_t>(at.lora_a)];
    const TensorInfo& tb = tl.tensors()[static_cast<size_t>(at.lora_b)];
    const int64_t out = w.shape[0], in = w.shape[1], r = plan.config.r;
    const float* gw = (*plain)->gradients() + w.offset;
    const float* A = f.trainable.data() + ta.offset;
    const float* Bm = f.trainable.data() + tb.offset;
    std::vector<double> dA(static_cast<size_t>(r * in)), dB(static_cast<size_t>(out * r));
    for (int64_t o = 0; o < out; ++o)
      for (int64_t k = 0; k < r; ++k)
        for (int64_t i = 0; i < in; ++i) {
          const double g = gw[o * in + i];
          dB[o * r + k] += s * g * A[k * in + i];
          dA[k * in + i] += s * Bm[o * r + k] * g;
        }
    expect_close(m.gradients() + ta.offset, dA, tol, "dA " + ta.name);
    expect_close(m.gradients() + tb.offset, dB, tol, "dB " + tb.name);
    ++checked;
  }
  EXPECT_EQ(checked, plan.adapted_linears);
}

struct LlamaCase {
  const char* name;
  const char* config;
  LoraConfig lora;
};

const LlamaCase kLlamaCases[] = {
    {"llama_gqa_qv",
     R"({"model_type": "llama", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 64,
         "tie_word_embeddings": false})",
     {.r = 4, .alpha = 8, .target_modules = {"q_proj", "v_proj"}}},
    {"llama_all_linear_rslora_lm_head_saved",
     R"({"model_type": "llama", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 64,
         "tie_word_embeddings": false})",
     {.r = 3, .alpha = 5, .use_rslora = true, .all_linear = true,
      .modules_to_save = {"lm_head"}}},
    {"qwen2_mqa_tied_regex_embed_saved",
     R"({"model_type": "qwen2", "vocab_size": 70, "hidden_size": 32, "intermediate_size": 56,
         "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 1,
         "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 64,
         "tie_word_embeddings": true, "use_sliding_window": false})",
     {.r = 2, .alpha = 16, .target_regex = R"(model\.layers\.[02]\.(self_attn\.(q|k|o)_proj|mlp\.down_proj))",
      .modules_to_save = {"embed_tokens"}}},
};

class LoraLlamaReference : public ::testing::TestWithParam<LlamaCase> {};

TEST_P(LoraLlamaReference, LossAndAdapterGradientsMatchFloat64PeftMath) {
  const LlamaCase& c = GetParam();
  TempDir dir;
  std::ofstream(dir.file("config.json")) << c.config;
  const std::string hf_dir = dir.file("hf");
  ASSERT_NO_FATAL_FAILURE(
      reference({"make", "--config", dir.file("config.json"), "--out", hf_dir, "--seed", "7"}));
  auto hf = checkpoint::open_hf_model(hf_dir);
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  auto spec = model_spec_from_config(hf->config);
  ASSERT_TRUE(spec.ok());
  auto plain = create_module(*spec, {.max_batch = 1, .max_seq = 1});
  ASSERT_TRUE(plain.ok());
  auto weights = checkpoint::HfWeights::open(*hf, (*plain)->layout());
  ASSERT_TRUE(weights.ok()) << weights.status().to_string();
  auto shared = std::make_shared<checkpoint::HfWeights>(std::move(*weights));
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(make_fixture(
      f, *spec, [shared](int64_t o, int64_t n, float* out) { return shared->read(o, o + n, out); },
      c.lora));
  Module& m = *f.lora;
  EXPECT_LT(m.layout().total_numel(), m.base_layout().total_numel());

  // zerotrain's adapter, in PEFT's format, is what the reference reads.
  const std::string adapter = dir.file("adapter");
  ASSERT_TRUE(checkpoint::write_peft_adapter(adapter, c.lora, m.layout(), m.hf_module_prefix(),
                                             false, host_reader(f.trainable))
                  .ok());
  write_ints(dir.file("tokens.i32"), f.tokens);
  write_ints(dir.file("targets.i32"), f.targets);
  ASSERT_NO_FATAL_FAILURE(reference({"run", "--model", hf_dir, "--adapter", adapter, "--tokens",
                                     dir.file("tokens.i32"), "--targets", dir.file("targets.i32"),
                                     "--batch", std::to_string(B), "--seq", std::to_string(T),
                                     "--out", dir.file("ref.safetensors"), "--dtype", "float64",
                                     "--out-dtype", "float32"}));
  auto ref = checkpoint::SafetensorsFile::open(dir.file("ref.safetensors"));
  ASSERT_TRUE(ref.ok());
  auto read = [&](const std::string& name) {
    const checkpoint::SafetensorsTensor* t = ref->find(name);
    EXPECT_NE(t, nullptr) << name;
    std::vector<float> v(t ? static_cast<size_t>(t->numel()) : 0);
    if (t) EXPECT_TRUE(ref->read_f32(*t, 0, t->numel(), v.data()).ok());
    return std::vector<double>(v.begin(), v.end());
  };

  m.zero_gradients();
  StatusOr<float> loss = m.forward(f.tokens.data(), f.targets.data(), B, T);
  ASSERT_TRUE(loss.ok()) << loss.status().to_string();
  ASSERT_TRUE(m.backward().ok());
  const double want = read("loss")[0];
  EXPECT_NEAR(*loss, want, 1e-6 * want);
  for (const TensorInfo& t : m.layout().tensors()) {
    std::vector<double> g = read("grad." + checkpoint::peft_tensor_name(t, m.hf_module_prefix()));
    std::vector<float> ours(static_cast<size_t>(hf_numel(t)));
    copy_to_hf(t, m.gradients() + t.offset, ours.data());
    // fp32 against float64: ≤ 3e-6 of the tensor's largest measured (scale 8).
    expect_close(ours.data(), g, 5e-6, "grad " + t.name);
  }
  ASSERT_NO_FATAL_FAILURE(check_against_merged(f, 2e-5));

  // The adapter reads back exactly; a wrong shape and a missing key are refused.
  auto back = checkpoint::PeftAdapter::open(adapter, m.layout(), m.hf_module_prefix());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  std::vector<float> again(f.trainable.size());
  ASSERT_TRUE(back->read(0, static_cast<int64_t>(again.size()), again.data()).ok());
  EXPECT_EQ(again, f.trainable);
  auto cfg = checkpoint::read_peft_config(adapter);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->describe(), c.lora.describe());
}

INSTANTIATE_TEST_SUITE_P(Families, LoraLlamaReference, ::testing::ValuesIn(kLlamaCases),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(LoraGpt2, AdapterGradientsFollowTheMergedModelsFullGradient) {
  auto spec = model_spec("gpt2-tiny");
  ASSERT_TRUE(spec.ok());
  auto plain = create_module(*spec, {.max_batch = 1, .max_seq = 1});
  ASSERT_TRUE(plain.ok());
  const Module* base = plain->get();
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(make_fixture(
      f, *spec,
      [base](int64_t o, int64_t n, float* out) {
        base->init_base_range(9, o, o + n, out);
        return ok_status();
      },
      {.r = 4, .alpha = 32, .target_modules = {"c_attn", "c_fc", "mlp.c_proj"}}));
  // PEFT's full names carry GPT2LMHeadModel's "transformer." prefix.
  EXPECT_EQ(checkpoint::peft_tensor_name(f.lora->layout().tensors().front(),
                                         f.lora->hf_module_prefix()),
            "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight");
  EXPECT_EQ(f.lora->adapters()->adapted_linears, 3 * spec->config["n_layer"].get<int>());
  ASSERT_NO_FATAL_FAILURE(check_against_merged(f, 2e-5));
}

// QLoRA's plan: every frozen Linear weight but the lm head is held 4-bit
// (bitsandbytes' Linear4bit rule); biases, norms, embeddings, the head and
// modules_to_save copies are not, and the fp32 store shrinks by exactly
// them. A family whose GEMMs do not decode 4-bit weights (GPT-2) is refused.
TEST(QloraPlan, FrozenLinearWeightsButTheHeadAreHeld4BitAndGpt2IsRefused) {
  const auto cfg = nlohmann::json::parse(kLlamaCases[0].config);
  auto spec = model_spec_from_config(cfg);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto m = create_module(*spec, {.max_batch = 1, .max_seq = 1});
  ASSERT_TRUE(m.ok());
  const ParamLayout& base = (*m)->layout();
  const LoraConfig lora{.r = 2, .target_modules = {"q_proj"}, .modules_to_save = {"o_proj"}};
  auto fp32 = plan_adapters(base, lora, "");
  auto four = plan_adapters(base, lora, "", device::Quant4Options{});
  ASSERT_TRUE(fp32.ok() && four.ok());
  int64_t held = 0;
  for (const TensorInfo& t : base.tensors()) {
    const AdaptedTensor& a = four->of_base[static_cast<size_t>(t.index)];
    const bool linear = t.shape.size() == 2 && t.name.ends_with("_proj.weight");
    const bool saved = t.name.find("o_proj") != std::string::npos;
    EXPECT_EQ(a.quant4 >= 0, linear && !saved) << t.name;
    EXPECT_EQ(a.frozen >= 0, !saved) << t.name;  // its place in the group's frozen block
    if (a.quant4 >= 0) held += t.numel;
  }
  EXPECT_EQ(held, four->quantized_params);
  EXPECT_EQ(static_cast<int>(four->quantized.size()), 6 * cfg["num_hidden_layers"].get<int>());
  EXPECT_EQ(four->frozen_params, fp32->frozen_params);
  // The store: the fp32 one less the held weights' floats (every numel here
  // is 16-aligned), plus each one's 4-bit buffer padded to 16 bytes and the
  // code tables.
  int64_t expect = frozen_store_bytes(*fp32) - 4 * held + device::kQuant4CodeTableBytes;
  for (int i : four->quantized) {
    const auto bytes = static_cast<int64_t>(
        device::quant4_store_layout(base.tensors()[static_cast<size_t>(i)].numel, *four->quant4)
            .bytes);
    expect += (bytes + 15) / 16 * 16;
  }
  EXPECT_EQ(frozen_store_bytes(*four), expect);

  auto gpt2 = model_spec("gpt2-tiny");
  ASSERT_TRUE(gpt2.ok());
  auto refused = create_module(
      *gpt2, {.max_batch = 1, .max_seq = 1,
              .lora = std::make_shared<const LoraConfig>(LoraConfig{.r = 2, .all_linear = true}),
              .base_4bit = device::Quant4Options{}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not gpt2"), std::string::npos)
      << refused.status().to_string();
}

// A QLoRA module equals a LoRA module over the host-dequantized base
// (quantize_4bit, then the reference decoder, itself bit-equal to
// bnb_reference.py): loss and adapter gradients, fp32 and bf16, with the
// default tile (one per weight here) and with tiles of 3 rows or fewer
// (the forward writes column blocks, the backward sums over row tiles).
TEST(QloraModule, EqualsLoraOverTheDequantizedBaseForAnyTile) {
  const auto cfg = nlohmann::json::parse(kLlamaCases[0].config);
  auto spec = model_spec_from_config(cfg);
  ASSERT_TRUE(spec.ok());
  auto plain = create_module(*spec, {.max_batch = 1, .max_seq = 1});
  ASSERT_TRUE(plain.ok());
  std::vector<float> base(static_cast<size_t>((*plain)->layout().total_numel()));
  (*plain)->init_base_range(9, 0, static_cast<int64_t>(base.size()), base.data());
  const auto lora = std::make_shared<const LoraConfig>(LoraConfig{.r = 4, .all_linear = true});
  const device::Quant4Options q4{.type = device::Quant4Type::kNf4, .double_quant = true};
  auto probe = plan_adapters((*plain)->layout(), *lora, "", q4);
  ASSERT_TRUE(probe.ok());
  std::vector<float> dequantized = base;
  for (int i : probe->quantized) {
    const TensorInfo& t = (*plain)->layout().tensors()[static_cast<size_t>(i)];
    const device::Quant4Host q = device::quantize_4bit(base.data() + t.offset, t.numel, q4);
    device::dequantize_4bit_reference(q.view(), 0, t.numel, dequantized.data() + t.offset);
  }
  std::mt19937 g(11);
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (auto& t : tokens) t = static_cast<int32_t>(g() % 61);
  for (auto& t : targets) t = static_cast<int32_t>(g() % 61);
  for (const bool bf16 : {false, true}) {
    std::vector<float> want_grads;
    float want = 0;
    for (const int64_t tile : {int64_t{-1}, int64_t{0}, int64_t{100}}) {  // -1: LoRA, fp32 base
      ModuleOptions o{.max_batch = B, .max_seq = T, .bf16_compute = bf16, .lora = lora};
      if (tile >= 0) o.base_4bit = q4, o.dequant_tile = tile;
      auto m = create_module(*spec, o);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      ASSERT_TRUE((*m)->load_frozen(host_reader(tile < 0 ? dequantized : base)).ok());
      const TensorInfo& q_proj = (*m)->base_layout().tensors()[static_cast<size_t>(probe->quantized[0])];
      if (tile == 100) {
        EXPECT_EQ((*m)->weight_tile_rows(q_proj), 3);  // 100 / 32 columns
      }
      std::vector<float> trainable(static_cast<size_t>((*m)->layout().total_numel()));
      (*m)->init_range(5, 0, static_cast<int64_t>(trainable.size()), trainable.data());
      std::normal_distribution<float> n(0.0f, 0.2f);
      std::mt19937 gb(3);
      for (const TensorInfo& t : (*m)->layout().tensors())
        if (t.kind == ParamKind::kLoraB)
          for (int64_t i = 0; i < t.numel; ++i) trainable[static_cast<size_t>(t.offset + i)] = n(gb);
      ASSERT_TRUE((*m)->load_parameters(host_reader(trainable)).ok());
      (*m)->zero_gradients();
      StatusOr<float> loss = (*m)->forward(tokens.data(), targets.data(), B, T);
      ASSERT_TRUE(loss.ok()) << loss.status().to_string();
      ASSERT_TRUE((*m)->backward().ok());
      const float* gr = (*m)->gradients();
      if (tile < 0) {
        want = *loss;
        want_grads.assign(gr, gr + trainable.size());
        continue;
      }
      const std::string what = std::string(bf16 ? "bf16" : "fp32") + " tile " + std::to_string(tile);
      EXPECT_NEAR(*loss, want, 1e-6 * want) << what;
      std::vector<double> w(want_grads.begin(), want_grads.end());
      // bf16: the whole and the tiled GEMMs may run on different kernels
      // (AMX for the whole weight, AVX-512 for a 3-row tile, where the
      // cores have AMX) whose fp32 sums differ in order; one ulp there can
      // flip an activation's bf16 rounding (2^-9 of it), which the
      // gradients carry, diluted: measured 3.3e-5 of scale with AMX, 1e-6
      // without. A wrong tile or dequantization is off by O(1).
      expect_close(gr, w, bf16 ? 1e-4 : 1e-6, what + " adapter gradients");
    }
  }
}

TEST(LoraPlan, TargetsFollowPeftRulesAndBadOnesAreRefusedByName) {
  auto spec = model_spec("gpt2-tiny");
  ASSERT_TRUE(spec.ok());
  auto m = create_module(*spec, {.max_batch = 1, .max_seq = 1});
  ASSERT_TRUE(m.ok());
  const ParamLayout& base = (*m)->layout();
  auto plan = [&](LoraConfig c) { return plan_adapters(base, c, "transformer."); };
  const int L = spec->config["n_layer"].get<int>();
  // Suffix rule: "c_proj" is both attn.c_proj and mlp.c_proj; "attn.c_proj" only one.
  EXPECT_EQ(plan({.target_modules = {"c_proj"}})->adapted_linears, 2 * L);
  EXPECT_EQ(plan({.target_modules = {"attn.c_proj"}})->adapted_linears, L);
  EXPECT_EQ(plan({.all_linear = true})->adapted_linears, 4 * L);
  EXPECT_EQ(plan({.target_regex = R"(transformer\.h\.1\.mlp\..*)"})->adapted_linears, 2);
  auto none = plan({.target_modules = {"q_proj"}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("c_attn"), std::string::npos) << none.status().message();
  auto norm = plan({.target_modules = {"ln_1"}});
  ASSERT_FALSE(norm.ok());
  EXPECT_NE(norm.status().message().find("not a Linear"), std::string::npos);
  EXPECT_FALSE(plan({.dropout = 0.1, .target_modules = {"c_attn"}}).ok());
  EXPECT_FALSE(plan({.target_modules = {"c_attn"}, .modules_to_save = {"lm_heda"}}).ok());
  // Frozen: no gradient anywhere in the trainable layout but the adapters.
  auto p = plan({.r = 8, .target_modules = {"c_attn"}});
  ASSERT_TRUE(p.ok());
  int64_t want = 0;
  for (const TensorInfo& t : base.tensors())
    if (t.name.find("c_attn.weight") != std::string::npos) want += 8 * (t.shape[0] + t.shape[1]);
  EXPECT_EQ(p->trainable.total_numel(), want);  // 16-aligned shapes here
  EXPECT_EQ(p->trainable.num_groups(), base.num_groups());
}

TEST(PeftAdapterFiles, MalformedAdaptersAreRefusedWithPathAndReason) {
  auto spec = model_spec("gpt2-tiny");
  ASSERT_TRUE(spec.ok());
  LoraConfig cfg{.r = 2, .alpha = 4, .target_modules = {"c_attn"}};
  auto m = create_module(*spec, {.max_batch = 1, .max_seq = 4,
                                 .lora = std::make_shared<LoraConfig>(cfg)});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ParamLayout& l = (*m)->layout();
  std::vector<float> zeros(static_cast<size_t>(l.total_numel()), 0.5f);
  TempDir dir;
  ASSERT_TRUE(checkpoint::write_peft_adapter(dir.file("a"), cfg, l, "transformer.", true,
                                             host_reader(zeros))
                  .ok());
  // Another rank: every lora tensor's shape is wrong.
  LoraConfig r4 = cfg;
  r4.r = 4;
  auto m4 = create_module(*spec, {.max_batch = 1, .max_seq = 4,
                                  .lora = std::make_shared<LoraConfig>(r4)});
  ASSERT_TRUE(m4.ok());
  auto bad = checkpoint::PeftAdapter::open(dir.file("a"), (*m4)->layout(), "transformer.");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("adapter_model.safetensors"), std::string::npos);
  EXPECT_NE(bad.status().message().find("shape"), std::string::npos) << bad.status().message();
  // Fewer targets than the file holds: the extra tensor is named.
  LoraConfig fewer{.r = 2, .alpha = 4, .target_regex = R"(transformer\.h\.0\.attn\.c_attn)"};
  auto m1 = create_module(*spec, {.max_batch = 1, .max_seq = 4,
                                  .lora = std::make_shared<LoraConfig>(fewer)});
  ASSERT_TRUE(m1.ok());
  auto extra = checkpoint::PeftAdapter::open(dir.file("a"), (*m1)->layout(), "transformer.");
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("h.1.attn.c_attn"), std::string::npos)
      << extra.status().message();
  // A config without r; one with DoRA.
  std::ofstream(dir.file("a/adapter_config.json")) << R"({"lora_alpha": 8, "target_modules": ["c_attn"]})";
  auto no_r = checkpoint::read_peft_config(dir.file("a"));
  ASSERT_FALSE(no_r.ok());
  EXPECT_NE(no_r.status().message().find("'r'"), std::string::npos);
  EXPECT_NE(no_r.status().message().find("adapter_config.json"), std::string::npos);
  std::ofstream(dir.file("a/adapter_config.json"))
      << R"({"r": 8, "lora_alpha": 8, "target_modules": ["c_attn"], "use_dora": true})";
  EXPECT_FALSE(checkpoint::read_peft_config(dir.file("a")).ok());
}

}  // namespace
}  // namespace zerotrain::model

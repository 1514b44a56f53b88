// The flops profiler: DeepSpeed's number formats; the family's per-stage
// MACs and parameters against the model's own counts (ModelInfo's
// parameters and flops_per_token, the PaLM formula: an independent sum);
// and a training run that prints DeepSpeed's report once, at DeepSpeed's
// step, with latencies and MACs consistent with the run, or writes it to
// output_file.
#include "train/flops_profile.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "comm/gloo/gloo_communicator.h"
#include "model/gpt2/config.h"
#include "model/registry.h"
#include "train/test_util.h"
#include "train/tiny_run.h"
#include "train/trainer.h"

namespace zerotrain::train {
namespace {

using testing::TempDir;
using testing::tiny_run;

// Values from DeepSpeed's own profiler output (its docs and logs).
TEST(FlopsProfileFormat, NumbersPrintAsDeepSpeedPrintsThem) {
  EXPECT_EQ(params_to_string(336.23e6), "336.23 M");
  EXPECT_EQ(params_to_string(2.14e9), "2.14 B");
  EXPECT_EQ(params_to_string(384), "384");
  EXPECT_EQ(params_to_string(73728), "73.73 K");
  EXPECT_EQ(macs_to_string(17.66e12), "17.66 TMACs");
  EXPECT_EQ(macs_to_string(0), "0 MACs");
  EXPECT_EQ(flops_to_string(81.9e12), "81.9 TFLOPS");
  EXPECT_EQ(flops_to_string(779.47e9), "779.47 GFLOPS");
  EXPECT_EQ(duration_to_string(0.07667), "76.67 ms");
  EXPECT_EQ(duration_to_string(34.09e-6), "34.09 us");
  EXPECT_EQ(duration_to_string(1.55), "1.55 s");
}

// 6 x forward MACs per token = training FLOPs per token (PaLM: 6N + 12LCT)
// once the parameters that are no GEMM's weights (wpe, norms, biases) come
// out and the head's padded vocabulary goes in; the stages' parameters add
// up to Hugging Face's count.
TEST(ModelCost, StagesAgreeWithTheModelsFlopsAndParameterCounts) {
  // A preset, and a vocabulary padded for the head's GEMM.
  const nlohmann::json padded = model::gpt2::to_json({.n_layer = 2,
                                                      .n_head = 2,
                                                      .n_embd = 32,
                                                      .seq_len = 16,
                                                      .vocab_size = 250,
                                                      .padded_vocab = 256});
  for (const std::string name : {"gpt2-tiny", "padded"}) {
    auto spec = name == "padded" ? model::model_spec_from_config(padded) : model::model_spec(name);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    auto info = spec->family->info(spec->config);
    ASSERT_TRUE(info.ok());
    auto m = model::create_module(*spec, {.max_batch = 3});
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    const int64_t C = info->hidden_size, L = info->num_layers, V = info->vocab_size;
    auto gpt = model::gpt2::from_json(spec->config);
    ASSERT_TRUE(gpt.ok());
    const int64_t Vp = gpt->padded_vocab;
    if (name == "padded") {
      ASSERT_EQ(Vp - V, 6);
    }
    for (int64_t B : {1, 3})
      for (int64_t T : {int64_t{1}, info->max_seq / 2, info->max_seq}) {
        const model::ModelCost cost = (*m)->cost(B, T);
        ASSERT_EQ(static_cast<int>(cost.stages.size()), (*m)->num_groups());
        int64_t macs = 0, params = 0;
        for (const model::StageCost& s : cost.stages) {
          macs += s.macs;
          params += s.params;
        }
        EXPECT_EQ(params, info->parameters) << name;
        ASSERT_EQ(macs % (B * T), 0);
        const int64_t not_gemm = info->max_seq * C + L * 13 * C + 2 * C;
        EXPECT_EQ(6 * macs / (B * T), info->flops_per_token(T) - 6 * not_gemm + 6 * (Vp - V) * C)
            << name << " B=" << B << " T=" << T;
      }
  }
}

// The same two formulas for the Llama family: the GEMMs are the q/k/v/o
// projections, the three MLP matrices and the lm head over the padded
// vocabulary; not GEMMs are the norms, the biases and (untied) the
// embedding lookup.
TEST(ModelCost, LlamaStagesAgreeWithTheFlopsAndParameterCounts) {
  for (const std::string name : {"llama-tiny", "qwen2-tiny", "smollm-135m"}) {
    auto spec = model::model_spec(name);
    ASSERT_TRUE(spec.ok());
    auto info = spec->family->info(spec->config);
    ASSERT_TRUE(info.ok());
    auto m = model::create_module(
        *spec, {.max_batch = 1, .max_seq = 8, .own_parameters = false, .own_gradients = false});
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    const nlohmann::json& c = spec->config;
    const int64_t C = info->hidden_size, L = info->num_layers, V = info->vocab_size;
    const int64_t Vp = (V + 63) / 64 * 64;
    const int64_t KC =
        C / c["num_attention_heads"].get<int64_t>() * c["num_key_value_heads"].get<int64_t>();
    const bool tied = c["tie_word_embeddings"], biases = c["model_type"] == "qwen2";
    const int64_t not_gemm = (tied ? 0 : V * C) + L * 2 * C + C + (biases ? L * (C + 2 * KC) : 0);
    for (int64_t B : {1, 3})
      for (int64_t T : {int64_t{1}, int64_t{64}}) {
        const model::ModelCost cost = (*m)->cost(B, T);
        ASSERT_EQ(static_cast<int>(cost.stages.size()), (*m)->num_groups());
        int64_t macs = 0, params = 0;
        for (const model::StageCost& s : cost.stages) {
          macs += s.macs;
          params += s.params;
        }
        EXPECT_EQ(params, info->parameters) << name;
        EXPECT_EQ(6 * macs / (B * T), info->flops_per_token(T) - 6 * not_gemm + 6 * (Vp - V) * C)
            << name << " B=" << B << " T=" << T;
      }
  }
}

std::string profile_config(const std::string& extra) {
  return R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "flops_profiler": {"enabled": true)" +
         extra + "}}";
}

double ms_after(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  EXPECT_NE(at, std::string::npos) << label;
  if (at == std::string::npos) return -1;
  size_t v = text.find_first_not_of(' ', at + label.size());
  const double x = std::strtod(text.c_str() + v, nullptr);
  const std::string unit = text.substr(text.find(' ', v) + 1, 2);
  return unit == "ms" ? x : unit == "us" ? x * 1e-3 : x * 1e3;
}

TEST(FlopsProfiler, TrainerPrintsDeepSpeedsReportOnceAtTheProfileStep) {
  TempDir dir;
  std::ofstream(dir.file("ds.json")) << profile_config(R"(, "profile_step": 2, "top_modules": 2)");
  std::ostringstream log;
  auto c = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(c.ok());
  auto s = train(tiny_run(dir.file("ds.json"), 4, &log), **c);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string text = log.str();
  const size_t at = text.find("Profile Summary at step 2:\n");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.find("DeepSpeed Flops Profiler", at + 1), std::string::npos) << "once";
  // global_steps 2 is the third optimizer step: after its timer line.
  const size_t third_step_timers = [&] {
    size_t p = 0;
    for (int i = 0; i < 3; ++i) p = text.find("[Rank 0] time (ms) | fwd: ", p + 1);
    return p;
  }();
  EXPECT_LT(third_step_timers, at);
  EXPECT_EQ(text.find("fwd_microstep"), std::string::npos) << "micro lines are wall_clock's";

  // MACs as the model counts them for the micro-batch (B=2, T=16).
  auto spec = model::model_spec_from_config(*tiny_run("", 1, nullptr).model_config);
  ASSERT_TRUE(spec.ok());
  auto m = model::create_module(*spec, {.max_batch = 2});
  ASSERT_TRUE(m.ok());
  int64_t macs = 0;
  for (const model::StageCost& st : (*m)->cost(2, 16).stages) macs += st.macs;
  EXPECT_NE(text.find("fwd MACs per GPU:" + std::string(60 - 17 + 2, ' ') + macs_to_string(macs)),
            std::string::npos)
      << text.substr(at, 2000);
  // The model's training flops for the micro-batch, exactly as ModelInfo
  // counts them (the MFU formula).
  auto info = spec->family->info(spec->config);
  ASSERT_TRUE(info.ok());
  const std::string exact_label = "train flops per GPU = (6N + 12LCT) per token * tokens:";
  const size_t exact = text.find(exact_label, at);
  ASSERT_NE(exact, std::string::npos);
  const size_t paren = text.find('(', exact + exact_label.size());
  EXPECT_EQ(std::stoll(text.substr(paren + 1)), info->flops_per_token(16) * 2 * 16);
  EXPECT_NE(text.find("MFU = model FLOPS per GPU / peak: ", at), std::string::npos);
  // The stages' latencies are parts of the forward's.
  const double fwd = ms_after(text, "fwd latency:");
  double stages = 0;
  for (const char* stage : {"(transformer.wte+wpe): Embedding(", "(transformer.h.0): GPT2Block(",
                            "(transformer.ln_f+lm_head): LayerNorm+Linear("}) {
    const size_t line = text.find(stage, at);
    ASSERT_NE(line, std::string::npos) << stage;
    // params, %, MACs, %, latency: the fifth field.
    std::string fields = text.substr(line + std::strlen(stage));
    for (int i = 0; i < 4; ++i) fields = fields.substr(fields.find(", ") + 2);
    stages += ms_after(fields, "");
  }
  EXPECT_GT(fwd, 0);
  EXPECT_LE(stages, fwd * 1.001 + 0.01);
  // top_modules 2 at depth 1: two types of the three.
  const size_t depth1 = text.find("depth 1:\n    params      - {", at);
  ASSERT_NE(depth1, std::string::npos);
  const std::string dict = text.substr(depth1, text.find('}', depth1) - depth1);
  EXPECT_EQ(std::count(dict.begin(), dict.end(), ':'), 3) << dict;  // "depth 1:" + 2 entries
}

TEST(FlopsProfiler, OutputFileTakesTheReportAndModuleDepthZeroStopsAtTheModel) {
  TempDir dir;
  const std::string report = dir.file("profile.txt");
  std::ofstream(dir.file("ds.json")) << profile_config(
      R"(, "profile_step": 0, "module_depth": 0, "output_file": ")" + report + "\"");
  std::ostringstream log;
  auto c = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(c.ok());
  auto s = train(tiny_run(dir.file("ds.json"), 2, &log), **c);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_NE(log.str().find("[zerotrain] flops profile of step 1 written to " + report),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("Profile Summary"), std::string::npos);
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("Profile Summary at step 0:"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("GPT2LMHeadModel(\n"), std::string::npos);
  EXPECT_EQ(text.str().find("depth 1:"), std::string::npos);
  EXPECT_EQ(text.str().find("(transformer.h.0)"), std::string::npos);
}

// DeepSpeed prints nothing when profile_step is never reached; zerotrain
// says so at the start.
TEST(FlopsProfiler, AProfileStepPastTheRunIsNamedAtTheStart) {
  TempDir dir;
  std::ofstream(dir.file("ds.json")) << profile_config(R"(, "profile_step": 5)");
  std::ostringstream log;
  auto c = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(c.ok());
  auto s = train(tiny_run(dir.file("ds.json"), 2, &log), **c);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_NE(log.str().find("[zerotrain] ds_config warning: flops_profiler.profile_step 5 is "
                           "optimizer step 6, outside this run's steps 1..2: no profile"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("Profile Summary"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::train

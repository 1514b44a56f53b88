// QLoRA through the CLI, end to end. The reference for a 4-bit base is
// bnb_reference.py model: an independent PyTorch implementation of
// bitsandbytes' quantize/dequantize_4bit writes the HF directory a 4-bit
// load computes with (every Linear weight but lm_head replaced by its round
// trip). `train --load-in-4bit` over the original directory must give the
// loss trajectory of plain LoRA over that dequantized copy (fp32 and bf16,
// NF4 with double quant and FP4 without, stage 0 and stage 3 on 2 ranks
// through the config file's lora section), must differ from LoRA over the
// fp32 base (the 4-bit base is really used), and its frozen store must hold
// the bytes of bitsandbytes' format exactly (and `estimate --lora-r
// --load-in-4bit` predicts them); `eval --load-in-4bit` of the
// trained adapter equals eval over the dequantized copy. Refusals name the fix.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <tuple>

#include "integration/subprocess.h"
#include "train/cli_util.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

using Json = nlohmann::json;
using testing::metrics_losses;
using testing::run_cli;
using testing::run_cli_ok;
const std::string kSource = ZT_SOURCE_DIR;
const std::string kRef = kSource + "/tests/model/llama/llama_reference.py";
const std::string kBnb = kSource + "/tests/device/quant4/bnb_reference.py";

void expect_same_curve(const std::vector<double>& a, const std::vector<double>& b, double rel,
                       const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], rel * std::abs(b[i])) << what << " at step " << i;
}

// "frozen store 0.2 MiB (197944 bytes) per rank" of the run's log.
int64_t frozen_store_bytes(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(frozen store [^(]*\((\d+) bytes\))"))) return -1;
  return std::stoll(m[1]);
}

// Bytes bitsandbytes' 4-bit format holds for n elements, blocksize 64: the
// packed codes, then per block an fp32 absmax or (double quant) a uint8
// index plus an fp32 scale per 256 blocks. n is a multiple of 1024 here, so
// the store's 16-byte alignment of each part adds nothing.
int64_t quant4_bytes(int64_t n, bool double_quant) {
  const int64_t blocks = n / 64;
  return n / 2 + (double_quant ? blocks + 4 * ((blocks + 255) / 256) : 4 * blocks);
}
// The same padded to 16 bytes: each weight's place in its group's block.
int64_t quant4_block_bytes(int64_t n, bool double_quant) {
  return (quant4_bytes(n, double_quant) + 15) / 16 * 16;
}

class QloraCli : public ::testing::Test {
 protected:
  void SetUp() override {
    // hidden 64, intermediate 96, 2 kv heads of 16: every Linear weight has
    // a multiple of 1024 elements (4096, 2048, 6144).
    std::ofstream(dir_.file("cfg.json")) << R"({"model_type": "llama", "vocab_size": 256,
        "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "max_position_embeddings": 128, "tie_word_embeddings": false})";
    run_cli_ok({"/usr/bin/python3", kRef, "make", "--config", dir_.file("cfg.json"), "--out", hf_,
                "--seed", "3", "--std", "0.05"});
    run_cli_ok({ZT_BIN, "data", "generate", data_});
  }
  // A ds_config; `extra` is spliced into its top level, `zero` into its
  // zero_optimization section.
  std::string ds_config(const std::string& name, int stage, int micro, const std::string& extra,
                        const std::string& zero = "") {
    const std::string p = dir_.file(name + ".json");
    std::ofstream(p) << R"({"train_micro_batch_size_per_gpu": )" << micro
                     << R"(, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
                           "zero_optimization": {"stage": )"
                     << stage << zero << "}" << extra << "}";
    return p;
  }
  // `train` over `model` with `args` on `ranks` processes (through
  // `zerotrain run` when more than one); the log, the losses in `metrics`.
  std::string train(const std::string& model, const std::string& config, const std::string& metrics,
                    std::vector<std::string> args, int ranks = 1) {
    std::vector<std::string> a;
    if (ranks > 1) a = {ZT_BIN, "run", "--num_gpus", std::to_string(ranks), "--"};
    a.insert(a.end(), {ZT_BIN, "train", "--model", model, "--deepspeed", config, "--metrics",
                       dir_.file(metrics), "--steps", "5", "--seq-len", "64", "--eval-interval",
                       "0", "--data", data_});
    a.insert(a.end(), args.begin(), args.end());
    return run_cli_ok(a);
  }
  std::string dequantized(const std::string& name, const std::vector<std::string>& how) {
    std::vector<std::string> a{"/usr/bin/python3", kBnb, "model", hf_, dir_.file(name)};
    a.insert(a.end(), how.begin(), how.end());
    run_cli_ok(a);
    return dir_.file(name);
  }

  testing::TempDir dir_;
  const std::string hf_ = dir_.file("hf"), data_ = dir_.file("corpus");
  const std::vector<std::string> lora_{"--lora-r", "4", "--lora-alpha", "8"};
};

TEST_F(QloraCli, Nf4DoubleQuantTrainsAsLoraOverTheDequantizedBaseAndStoresItsFormulaBytes) {
  const std::string deq = dequantized("deq", {"--type", "nf4", "--double-quant"});
  const std::string z0 = ds_config("z0", 0, 8, "");
  std::vector<std::string> q = lora_;
  q.push_back("--load-in-4bit");  // LLaMA-Factory's defaults: nf4, double quant
  std::vector<std::string> saved = q;
  saved.insert(saved.end(), {"--save", dir_.file("ck")});
  const std::string log4 = train(hf_, z0, "q.jsonl", saved);
  const std::string logd = train(deq, z0, "d.jsonl", lora_);
  train(hf_, z0, "f.jsonl", lora_);
  const auto q4 = metrics_losses(dir_.file("q.jsonl")), d = metrics_losses(dir_.file("d.jsonl")),
             f = metrics_losses(dir_.file("f.jsonl"));
  expect_same_curve(q4, d, 1e-5, "QLoRA vs LoRA over the dequantized base");
  ASSERT_EQ(q4.size(), f.size());
  EXPECT_GT(std::abs(q4[0] - f[0]), 1e-4) << "the 4-bit base changes the loss";
  EXPECT_NE(log4.find("4-bit nf4 double-quant blocksize 64: 14 Linear weights, 61440 parameters"),
            std::string::npos)
      << log4;

  // Bytes: LoRA's fp32 store less the Linear weights' fp32, plus their
  // 4-bit form (each padded to 16 bytes) and the code tables (16 + 256 floats).
  const int64_t fp32 = frozen_store_bytes(logd), four = frozen_store_bytes(log4);
  ASSERT_GT(fp32, 0) << logd;
  int64_t expect = fp32 + 4 * (16 + 256);
  for (int64_t n : {4096, 2048, 2048, 4096, 6144, 6144, 6144})  // q k v o gate up down
    expect += 2 * (quant4_block_bytes(n, true) - 4 * n);        // 2 layers
  EXPECT_EQ(four, expect);
  // `zerotrain estimate` counts the same store and trainable Ψ in advance.
  for (const bool four_bit : {true, false}) {
    std::vector<std::string> e{ZT_BIN,     "estimate", "--model",      hf_, "--offload", "none",
                               "--lora-r", "4",        "--lora-alpha", "8"};
    if (four_bit) e.push_back("--load-in-4bit");
    const std::string text = run_cli_ok(e);
    std::smatch frozen, trainable, run_trainable;
    ASSERT_TRUE(std::regex_search(text, frozen, std::regex(R"(the frozen base, ([\d,]+) bytes)")))
        << text;
    ASSERT_TRUE(std::regex_search(text, trainable, std::regex(R"(([\d,]+) trainable in)"))) << text;
    ASSERT_TRUE(std::regex_search(log4, run_trainable, std::regex(R"(trainable (\d+) \|\|)")));
    std::string f = frozen[1], t = trainable[1];
    std::erase(f, ','), std::erase(t, ',');
    EXPECT_EQ(std::stoll(f), four_bit ? four : fp32) << text;
    EXPECT_EQ(t, run_trainable[1].str()) << text;
  }
  // The engine's memory report counts the same store on the device.
  std::smatch store, report;
  ASSERT_TRUE(std::regex_search(log4, store, std::regex(R"(frozen store ([\d.]+ [KMG]?i?B) \()")));
  ASSERT_TRUE(std::regex_search(
      log4, report, std::regex(R"(memory per rank: device [^(]*\(params [^,]*, frozen ([^,]*),)")))
      << log4;
  EXPECT_EQ(store[1], report[1]);
  const double bits = 8.0 * static_cast<double>(quant4_bytes(1 << 20, true)) / (1 << 20);
  EXPECT_NEAR(bits, 4.0 + 8.0 / 64 + 32.0 / (64 * 256), 1e-12);
  std::cout << "frozen store: fp32 " << fp32 << " bytes, 4-bit " << four << " bytes\n";

  // The trained adapter, evaluated on the 4-bit base it trained over
  // (`eval --load-in-4bit`: the base rounded, then the adapter merged), is
  // the adapter on the dequantized copy, and not the adapter on the fp32 base.
  run_cli_ok(
      {ZT_BIN, "checkpoint", "export", dir_.file("ck"), "--to", dir_.file("adapter"), "--adapter"});
  auto eval = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{
        ZT_BIN,    "eval", "--data", data_,       "--seq-len",         "64", "--max-windows", "4",
        "--batch", "4",    "--json", "--adapter", dir_.file("adapter")};
    a.insert(a.end(), extra.begin(), extra.end());
    return Json::parse(run_cli_ok(a))["mean_loss"].get<double>();
  };
  const double on_4bit = eval({"--model", hf_, "--load-in-4bit"});
  EXPECT_NEAR(on_4bit, eval({"--model", deq}), 1e-6 * on_4bit);
  EXPECT_GT(std::abs(on_4bit - eval({"--model", hf_})), 1e-4);

  // bf16 compute: the decoded weights round to bf16 as the fp32 ones do.
  const std::string b0 = ds_config("b0", 0, 8, R"(, "bf16": {"enabled": true})");
  train(hf_, b0, "qb.jsonl", q);
  train(deq, b0, "db.jsonl", lora_);
  const auto qb = metrics_losses(dir_.file("qb.jsonl"));
  expect_same_curve(qb, metrics_losses(dir_.file("db.jsonl")), 1e-5, "bf16 QLoRA vs bf16 LoRA");
  expect_same_curve(qb, q4, 2e-2, "bf16 QLoRA vs fp32 QLoRA");
}

TEST_F(QloraCli, Fp4AndStage3FromTheConfigFileFollowTheirReferences) {
  // FP4 without double quant, spelled as LLaMA-Factory does.
  const std::string deq = dequantized("deq_fp4", {"--type", "fp4"});
  const std::string z0 = ds_config("z0", 0, 8, "");
  std::vector<std::string> q = lora_;
  for (const char* s :
       {"--quantization_bit", "4", "--quantization_type", "fp4", "--double_quantization", "false"})
    q.emplace_back(s);
  const std::string log = train(hf_, z0, "q.jsonl", q);
  EXPECT_NE(log.find("4-bit fp4 blocksize 64"), std::string::npos) << log;
  train(deq, z0, "d.jsonl", lora_);
  const auto q4 = metrics_losses(dir_.file("q.jsonl"));
  expect_same_curve(q4, metrics_losses(dir_.file("d.jsonl")), 1e-5,
                    "FP4 QLoRA vs LoRA over its base");

  // Stage 3 on 2 ranks, QLoRA from the ds_config's lora section: the same
  // global batch, the same trajectory.
  const std::string z3 = ds_config("z3", 3, 4, R"(, "lora": {"r": 4, "lora_alpha": 8,
      "load_in_4bit": true, "bnb_4bit_quant_type": "fp4", "bnb_4bit_use_double_quant": false})");
  train(hf_, z3, "s3.jsonl", {}, 2);
  expect_same_curve(metrics_losses(dir_.file("s3.jsonl")), q4, 1e-5, "stage 3 x2 vs stage 0");
}

// "memory per rank: device ... (params X, frozen Y, ...)": Y of the device
// or the host line; empty when the line has no frozen part.
std::string frozen_in(const std::string& log, const std::string& where) {
  std::smatch m;
  const std::regex re("memory per rank: " + where + R"( [^(]*\(params [^,]*, frozen ([^,)]*))");
  return std::regex_search(log, m, re) ? m[1].str() : "";
}

// `estimate --ranks N`'s stage-3 frozen bytes per rank.
int64_t estimated_stage3_frozen(const std::string& text) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"(stage 3 partitions it, ([\d,]+) bytes per rank)")))
    return -1;
  std::string n = m[1];
  std::erase(n, ',');
  return std::stoll(n);
}

// ZeRO-3 partitions the frozen base like the trainable parameters and
// gathers it per stage: on 3 ranks (blocks that do not split evenly), fp32
// LoRA on the device and NF4 QLoRA offloaded (offload_param, overlap_comm
// and prefetch on) follow stage 0's curves on the same global batch; each
// rank holds a third of the store (at most a few padding floats per group
// more, the code tables whole), which `estimate` predicts to the byte.
TEST_F(QloraCli, Stage3PartitionsTheFrozenBaseAndOffloadsIt) {
  const std::string z0 = ds_config("z0", 0, 6, "");
  const std::string z3 = ds_config("z3", 3, 2, "", R"(, "overlap_comm": true,
      "stage3_prefetch_bucket_size": 100000, "stage3_param_persistence_threshold": 0)");
  const std::string z3_off = ds_config("z3o", 3, 2, "", R"(, "overlap_comm": true,
      "stage3_prefetch_bucket_size": 100000, "offload_param": {"device": "cpu"})");
  std::vector<std::string> q = lora_;
  q.push_back("--load-in-4bit");
  const std::string log_f0 = train(hf_, z0, "f0.jsonl", lora_);
  const std::string log_q0 = train(hf_, z0, "q0.jsonl", q);
  const std::string log_f3 = train(hf_, z3, "f3.jsonl", lora_, 3);
  const std::string log_q3 = train(hf_, z3_off, "q3.jsonl", q, 3);
  expect_same_curve(metrics_losses(dir_.file("f3.jsonl")), metrics_losses(dir_.file("f0.jsonl")),
                    1e-5, "LoRA stage 3 x3 vs stage 0");
  expect_same_curve(metrics_losses(dir_.file("q3.jsonl")), metrics_losses(dir_.file("q0.jsonl")),
                    1e-5, "QLoRA stage 3 x3 offloaded vs stage 0");

  const int64_t groups = 4;  // embeddings, 2 layers, final norm + head
  for (const auto& [whole_log, part_log, tables] :
       {std::tuple{log_f0, log_f3, int64_t{0}}, std::tuple{log_q0, log_q3, int64_t{1088}}}) {
    const int64_t whole = frozen_store_bytes(whole_log), part = frozen_store_bytes(part_log);
    ASSERT_GT(whole, 0) << whole_log;
    ASSERT_GT(part, 0) << part_log;
    // 3·part = whole + 2·tables + the padding of each block to 12 bytes.
    const int64_t pad = 3 * part - 2 * tables - whole;
    EXPECT_GE(pad, 0) << part_log;
    EXPECT_LT(pad, 12 * groups) << part_log;
    std::vector<std::string> e{ZT_BIN,     "estimate", "--model",      hf_, "--ranks", "3",
                               "--lora-r", "4",        "--lora-alpha", "8"};
    if (tables > 0) e.push_back("--load-in-4bit");
    EXPECT_EQ(estimated_stage3_frozen(run_cli_ok(e)), part);
  }
  // On the device: LoRA's partition; QLoRA's offloaded one leaves only the
  // code tables there, and the host memory holds the rest; the memory lines
  // say the same.
  const int64_t q3 = frozen_store_bytes(log_q3);
  EXPECT_NE(log_f3.find(" bytes: " + std::to_string(frozen_store_bytes(log_f3)) +
                        " on the device, 0 in host memory)"),
            std::string::npos)
      << log_f3;
  EXPECT_NE(
      log_q3.find(" bytes: 1088 on the device, " + std::to_string(q3 - 1088) + " in host memory)"),
      std::string::npos)
      << log_q3;
  EXPECT_NE(frozen_in(log_f3, "device"), "") << log_f3;
  EXPECT_EQ(frozen_in(log_f3, "host"), "") << log_f3;
  EXPECT_NE(frozen_in(log_q3, "host"), "") << log_q3;
}

TEST_F(QloraCli, RefusalsNameTheFix) {
  const std::string z0 = ds_config("z0", 0, 8, "");
  auto r = run_cli({ZT_BIN, "train", "--model", hf_, "--deepspeed", z0, "--load-in-4bit", "--steps",
                    "1", "--seq-len", "64", "--data", data_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("give --lora-r"), std::string::npos) << r.err;
  r = run_cli({ZT_BIN, "train", "--model", hf_, "--deepspeed", z0, "--lora-r", "4",
               "--quantization-bit", "8", "--steps", "1", "--seq-len", "64", "--data", data_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("only 4"), std::string::npos) << r.err;
  r = run_cli({ZT_BIN, "train", "--model", hf_, "--deepspeed", z0, "--lora-r", "4",
               "--bnb-4bit-quant-type", "int4", "--steps", "1", "--seq-len", "64", "--data",
               data_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("int4"), std::string::npos) << r.err;
  // GPT-2 cannot hold its base 4-bit: estimate refuses it as train does.
  r = run_cli({ZT_BIN, "estimate", "--model", "gpt2-tiny", "--lora-r", "4", "--load-in-4bit"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("implemented for llama, mistral, qwen2, not gpt2"), std::string::npos)
      << r.err;
  const std::string typo = ds_config("typo", 0, 8, R"(, "lora": {"r": 4, "load_in_4bits": true})");
  r = run_cli({ZT_BIN, "train", "--model", hf_, "--deepspeed", typo, "--steps", "1", "--seq-len",
               "64", "--data", data_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("load_in_4bit"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace zerotrain::train

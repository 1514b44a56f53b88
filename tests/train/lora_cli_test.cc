// LoRA through the CLI, end to end: `train --model HF_DIR --lora-*` at
// ZeRO stage 0 on 1 rank and stage 3 on 2 ranks (the same global batch)
// give the same loss trajectory; the checkpoint exports as a PEFT adapter
// and as a merged HF model; `eval --adapter` of the adapter equals `eval`
// of the merged model and the float64 PyTorch reference applying the
// adapter (llama_reference.py run --adapter); resuming over another base,
// and a malformed adapter, are refused with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "integration/subprocess.h"
#include "train/data/dataset.h"
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


TEST(LoraCli, Stage3EqualsStage0AndTheAdapterEvaluatesAsTheMergedModelAndPyTorch) {
  testing::TempDir dir;
  std::ofstream(dir.file("cfg.json")) << R"({"model_type": "llama", "vocab_size": 256,
      "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
      "rope_theta": 10000.0, "max_position_embeddings": 128, "tie_word_embeddings": false})";
  const std::string hf = dir.file("hf"), other = dir.file("other"), data = dir.file("corpus");
  run_cli_ok({"/usr/bin/python3", kRef, "make", "--config", dir.file("cfg.json"), "--out", hf,
          "--seed", "3", "--std", "0.05"});
  run_cli_ok({"/usr/bin/python3", kRef, "make", "--config", dir.file("cfg.json"), "--out", other,
          "--seed", "4", "--std", "0.05"});
  run_cli_ok({ZT_BIN, "data", "generate", data});
  auto ds_config = [&](int stage, int micro) {
    const std::string p = dir.file("z" + std::to_string(stage) + ".json");
    std::ofstream(p) << R"({"train_micro_batch_size_per_gpu": )" << micro
                     << R"(, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
                           "zero_optimization": {"stage": )" << stage << "}}";
    return p;
  };
  const std::vector<std::string> lora{"--lora-r", "4", "--lora-alpha", "8", "--lora-target",
                                      "q_proj,v_proj,down_proj", "--steps", "6", "--seq-len",
                                      "64", "--eval-interval", "0", "--data", data};
  std::vector<std::string> one{ZT_BIN, "train", "--model", hf, "--deepspeed", ds_config(0, 8),
                               "--metrics", dir.file("m0.jsonl"), "--save", dir.file("ck")};
  one.insert(one.end(), lora.begin(), lora.end());
  const std::string log = run_cli_ok(one);
  EXPECT_NE(log.find("LoRA: r=4 alpha=8 (scale 2) targets q_proj,v_proj,down_proj; 6 Linear"),
            std::string::npos)
      << log;
  std::vector<std::string> two{ZT_BIN, "run", "--num_gpus", "2", "--", ZT_BIN, "train",
                               "--model", hf, "--deepspeed", ds_config(3, 4), "--metrics",
                               dir.file("m3.jsonl")};
  two.insert(two.end(), lora.begin(), lora.end());
  run_cli_ok(two);
  const std::vector<double> l0 = metrics_losses(dir.file("m0.jsonl")),
                            l3 = metrics_losses(dir.file("m3.jsonl"));
  ASSERT_EQ(l0.size(), 6u);
  ASSERT_EQ(l3.size(), 6u);
  for (size_t s = 0; s < l0.size(); ++s) EXPECT_NEAR(l3[s], l0[s], 1e-5 * l0[s]) << "step " << s + 1;
  EXPECT_LT(l0.back(), l0.front() - 0.05) << "the adapter did not train";

  // Export both ways; evaluate the same windows through each.
  run_cli_ok({ZT_BIN, "checkpoint", "export", dir.file("ck"), "--to", dir.file("adapter"), "--adapter"});
  run_cli_ok({ZT_BIN, "checkpoint", "export", dir.file("ck"), "--to", dir.file("merged"), "--merge",
          "--base", hf});
  constexpr int64_t T = 64, W = 4;
  auto eval = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{ZT_BIN, "eval", "--data", data, "--seq-len", std::to_string(T),
                               "--max-windows", std::to_string(W), "--batch", "4", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return Json::parse(run_cli_ok(a))["mean_loss"].get<double>();
  };
  const double with_adapter = eval({"--model", hf, "--adapter", dir.file("adapter")});
  const double merged = eval({"--model", dir.file("merged")});
  const double base = eval({"--model", hf});
  EXPECT_NEAR(with_adapter, merged, 1e-6 * merged);
  EXPECT_GT(std::fabs(with_adapter - base), 1e-3) << "the adapter changes nothing";

  auto ds = TokenDataset::open_split(data, "val");
  ASSERT_TRUE(ds.ok());
  std::vector<int32_t> x(W * T), y(W * T), window(T + 1);
  for (int64_t w = 0; w < W; ++w) {
    ds->copy(w * T, T + 1, window.data());
    std::copy_n(window.begin(), T, x.begin() + w * T);
    std::copy_n(window.begin() + 1, T, y.begin() + w * T);
  }
  std::ofstream(dir.file("x.i32"), std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), x.size() * 4);
  std::ofstream(dir.file("y.i32"), std::ios::binary)
      .write(reinterpret_cast<const char*>(y.data()), y.size() * 4);
  const std::string out = run_cli_ok({"/usr/bin/python3", kRef, "run", "--model", hf, "--adapter",
                                  dir.file("adapter"), "--tokens", dir.file("x.i32"), "--targets",
                                  dir.file("y.i32"), "--batch", std::to_string(W), "--seq",
                                  std::to_string(T), "--out", dir.file("ref.safetensors")});
  const double want = Json::parse(out.substr(out.rfind('{')))["loss"].get<double>();
  EXPECT_NEAR(with_adapter, want, 1e-5 * want) << "against the float64 PEFT reference";

  // Resuming over another base, merging into it: refused, naming the reason.
  std::vector<std::string> resume{ZT_BIN, "train", "--model", other, "--deepspeed",
                                  ds_config(0, 8), "--load", dir.file("ck")};
  resume.insert(resume.end(), lora.begin(), lora.end());
  auto r = run_cli(resume);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("another base model"), std::string::npos) << r.err;
  r = run_cli({ZT_BIN, "checkpoint", "export", dir.file("ck"), "--to", dir.file("bad"), "--merge",
           "--base", other});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not the base"), std::string::npos) << r.err;
  // A plain export of a LoRA checkpoint says what to do instead.
  r = run_cli({ZT_BIN, "checkpoint", "export", dir.file("ck"), "--to", dir.file("plain")});
  EXPECT_NE(r.err.find("--adapter"), std::string::npos) << r.err;
  // A malformed adapter: a missing key, refused with the file's path.
  std::ofstream(dir.file("adapter/adapter_config.json")) << R"({"r": 4, "lora_alpha": 8})";
  r = run_cli({ZT_BIN, "eval", "--model", hf, "--adapter", dir.file("adapter"), "--data", data,
           "--max-windows", "1", "--seq-len", "64"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("adapter_config.json: missing config key 'target_modules'"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace zerotrain::train

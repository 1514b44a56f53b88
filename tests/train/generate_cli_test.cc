// `zerotrain generate` and `zerotrain eval` through the binary, against
// PyTorch references (tests/model/gpt2/gpt2_reference.py and
// tests/model/llama/llama_reference.py on Debian's python3-torch):
//  - greedy: 64 new tokens of a trained gpt2-tiny (from its checkpoint, its
//    HF export directory and its single-file export) and of a llama-tiny
//    trained at ZeRO stage 3 on 2 ranks (from the checkpoint and its HF
//    export) equal the reference's, which recomputes the whole sequence
//    in float64 for every token (no cache);
//  - eval: the mean loss (and perplexity) on val shards equals the
//    reference's loss over the same windows within 1e-5 relative;
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "integration/subprocess.h"
#include "train/data/dataset.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

using Json = nlohmann::json;
using zerotrain::testing::run_process;

const std::string kSource = ZT_SOURCE_DIR;
const std::string kPrompt = "84,104,101,32";  // "The "

class GenerateCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new testing::TempDir(); }
  static void TearDownTestSuite() { delete dir_; }

  static std::string run_ok(const std::vector<std::string>& argv, int seconds = 120) {
    auto r = run_process(argv, std::chrono::seconds(seconds), {"OMP_NUM_THREADS=2"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r.out;
  }
  // Trains `model` 120 steps on the generated corpus at `stage` on `ranks`
  // and saves a checkpoint; returns its directory.
  static std::string trained(const std::string& model, int stage, int ranks) {
    const std::string out = dir_->file(model + "_ck");
    if (std::filesystem::exists(out)) return out;
    const std::string cfg = dir_->file(model + "_ds.json");
    std::ofstream(cfg) << R"({"train_micro_batch_size_per_gpu": 8, "optimizer": {"type": "AdamW",
        "params": {"lr": 0.003}}, "zero_optimization": {"stage": )"
                       << stage << "}}";
    run_ok({ZT_BIN, "run", "--num_gpus", std::to_string(ranks), "--", ZT_BIN, "train", "--model",
            model, "--deepspeed", cfg, "--steps", "120", "--eval-interval", "0", "--save", out},
           300);
    return out;
  }
  static std::vector<int> zerotrain_greedy(const std::string& model) {
    const Json j = Json::parse(run_ok({ZT_BIN, "generate", "--model", model, "--prompt-ids",
                                       kPrompt, "--max-new-tokens", "64", "--greedy", "--json"}));
    return j["tokens"].get<std::vector<int>>();
  }
  static std::vector<int> reference_greedy(const std::string& script, const std::string& model) {
    const Json j = Json::parse(run_ok({"/usr/bin/python3", kSource + script, "generate", "--model",
                                       model, "--prompt", kPrompt, "--new", "64"},
                                      300));
    return j["tokens"].get<std::vector<int>>();
  }
  static testing::TempDir* dir_;
};
testing::TempDir* GenerateCli::dir_ = nullptr;

TEST_F(GenerateCli, Gpt2GreedyEqualsPyTorchFromEverySource) {
  const std::string ck = trained("gpt2-tiny", 0, 1);
  run_ok({ZT_BIN, "checkpoint", "export", ck, "--to", dir_->file("gpt2_hf")});
  run_ok({ZT_BIN, "checkpoint", "export", ck, "--to", dir_->file("gpt2.safetensors")});
  const std::vector<int> want =
      reference_greedy("/tests/model/gpt2/gpt2_reference.py", dir_->file("gpt2_hf"));
  ASSERT_EQ(want.size(), 64u);
  EXPECT_EQ(zerotrain_greedy(ck), want) << "from the checkpoint";
  EXPECT_EQ(zerotrain_greedy(dir_->file("gpt2_hf")), want) << "from the HF directory";
  EXPECT_EQ(zerotrain_greedy(dir_->file("gpt2.safetensors")), want) << "from the safetensors file";

  // generation_config.json's eos_token_id (a list, as HF writes it) stops
  // generation at the first of its ids: the sixth greedy token.
  const std::string hf = dir_->file("gpt2_hf");
  std::ofstream(hf + "/generation_config.json")
      << R"({"eos_token_id": [)" << want[5] << R"(], "bos_token_id": 0})";
  const auto first_of = [&](int id) {
    return static_cast<size_t>(std::find(want.begin(), want.end(), id) - want.begin()) + 1;
  };
  const Json eos = Json::parse(run_ok({ZT_BIN, "generate", "--model", hf, "--prompt-ids", kPrompt,
                                       "--max-new-tokens", "64", "--greedy", "--json"}));
  EXPECT_EQ(eos["tokens"].get<std::vector<int>>(),
            std::vector<int>(want.begin(), want.begin() + first_of(want[5])));
  EXPECT_TRUE(eos["stopped_at_eos"].get<bool>());
  // A --stop string: the first character of the fifth token, a byte here.
  ASSERT_LT(want[4], 128) << "the stop string must be one ASCII byte";
  const Json stop = Json::parse(
      run_ok({ZT_BIN, "generate", "--model", hf, "--prompt-ids", kPrompt, "--max-new-tokens", "64",
              "--greedy", "--json", "--ignore-eos", "--stop", std::string(1, char(want[4]))}));
  EXPECT_EQ(stop["tokens"].get<std::vector<int>>(),
            std::vector<int>(want.begin(), want.begin() + first_of(want[4])));
  EXPECT_TRUE(stop["stopped_at_stop_string"].get<bool>());
  // Its sampling keys stand in for the flags not given: do_sample false is
  // greedy without --greedy; temperature, top_k and max_new_tokens act as
  // those flags would, and a flag given wins.
  const auto tokens_of = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {ZT_BIN,  "generate", "--model", hf,  "--prompt-ids",
                                     kPrompt, "--json",   "--seed",  "3", "--ignore-eos"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Json::parse(run_ok(argv))["tokens"].get<std::vector<int>>();
  };
  std::ofstream(hf + "/generation_config.json") << R"({"do_sample": false})";
  EXPECT_EQ(tokens_of({}), want);
  std::ofstream(hf + "/generation_config.json")
      << R"({"do_sample": true, "temperature": 0.7, "top_k": 5, "max_new_tokens": 10})";
  const std::vector<int> from_file = tokens_of({});
  EXPECT_EQ(from_file.size(), 10u);
  EXPECT_EQ(tokens_of({"--greedy"}), std::vector<int>(want.begin(), want.begin() + 10));
  std::filesystem::remove(hf + "/generation_config.json");
  EXPECT_EQ(tokens_of({"--temperature", "0.7", "--top-k", "5", "--max-new-tokens", "10"}),
            from_file);
  EXPECT_NE(tokens_of({"--max-new-tokens", "10"}), from_file) << "the file's keys changed nothing";
  // A malformed file is refused with its path.
  std::ofstream(hf + "/generation_config.json") << R"({"eos_token_id": "x"})";
  const auto bad = run_process({ZT_BIN, "generate", "--model", hf, "--prompt-ids", kPrompt},
                               std::chrono::seconds(60));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find(hf + "/generation_config.json: eos_token_id"), std::string::npos)
      << bad.err;
  std::filesystem::remove(hf + "/generation_config.json");
  // --dtype: fp32 or bf16 (decoder_test checks bf16's numerics); another is
  // refused by name before the model loads.
  const auto fp16 = run_process(
      {ZT_BIN, "generate", "--model", hf, "--prompt-ids", kPrompt, "--dtype", "fp16"},
      std::chrono::seconds(60));
  EXPECT_EQ(fp16.exit_code, 2) << fp16.err;
  EXPECT_NE(fp16.err.find("--dtype fp16: generation runs in fp32 or bf16"), std::string::npos)
      << fp16.err;
}

TEST_F(GenerateCli, LlamaFromAStage3CheckpointGreedyAndEvalEqualPyTorch) {
  const std::string ck = trained("llama-tiny", 3, 2);
  run_ok({ZT_BIN, "checkpoint", "export", ck, "--to", dir_->file("llama_hf")});
  const std::vector<int> want =
      reference_greedy("/tests/model/llama/llama_reference.py", dir_->file("llama_hf"));
  ASSERT_EQ(want.size(), 64u);
  EXPECT_EQ(zerotrain_greedy(ck), want) << "from the stage-3 checkpoint (2 ranks' shards)";
  EXPECT_EQ(zerotrain_greedy(dir_->file("llama_hf")), want) << "from the HF directory";

  // Three prompts of different lengths as one batch: a JSON line each, in
  // order, with the tokens each gives alone (the first: PyTorch's).
  const std::vector<std::string> prompts = {kPrompt, "72,101", "87,104,101,110,32,116,104,101"};
  std::vector<std::string> argv = {ZT_BIN, "generate", "--model", ck, "--max-new-tokens",
                                   "24",   "--greedy", "--json"};
  for (const std::string& p : prompts) argv.insert(argv.end(), {"--prompt-ids", p});
  std::istringstream lines(run_ok(argv));
  for (size_t b = 0; b < prompts.size(); ++b) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << "line " << b;
    const Json batched = Json::parse(line);
    const Json alone =
        Json::parse(run_ok({ZT_BIN, "generate", "--model", ck, "--prompt-ids", prompts[b],
                            "--max-new-tokens", "24", "--greedy", "--json"}));
    EXPECT_EQ(batched["tokens"], alone["tokens"]) << "prompt " << prompts[b];
    if (b == 0)
      EXPECT_EQ(batched["tokens"].get<std::vector<int>>(),
                std::vector<int>(want.begin(), want.begin() + 24));
  }

  // eval on the generated corpus's val split against the reference's loss.
  const std::string data = dir_->file("corpus");
  if (!std::filesystem::exists(data)) run_ok({ZT_BIN, "data", "generate", data});
  constexpr int64_t T = 64, W = 6;
  const Json ours = Json::parse(
      run_ok({ZT_BIN, "eval", "--model", ck, "--data", data, "--seq-len", std::to_string(T),
              "--max-windows", std::to_string(W), "--batch", "4", "--json"}));
  // The same windows for the reference: [w·T, w·T + T + 1) of the val split.
  auto ds = TokenDataset::open_split(data, "val");
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
  std::vector<int32_t> x(W * T), y(W * T), window(T + 1);
  for (int64_t w = 0; w < W; ++w) {
    ds->copy(w * T, T + 1, window.data());
    std::copy_n(window.begin(), T, x.begin() + w * T);
    std::copy_n(window.begin() + 1, T, y.begin() + w * T);
  }
  std::ofstream(dir_->file("x.i32"), std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), x.size() * 4);
  std::ofstream(dir_->file("y.i32"), std::ios::binary)
      .write(reinterpret_cast<const char*>(y.data()), y.size() * 4);
  const std::string out =
      run_ok({"/usr/bin/python3", kSource + "/tests/model/llama/llama_reference.py", "run",
              "--model", dir_->file("llama_hf"), "--tokens", dir_->file("x.i32"), "--targets",
              dir_->file("y.i32"), "--batch", std::to_string(W), "--seq", std::to_string(T),
              "--out", dir_->file("ref.safetensors")});
  const double loss = Json::parse(out.substr(out.rfind('{')))["loss"].get<double>();
  EXPECT_EQ(ours["targets"].get<int64_t>(), W * T);
  EXPECT_NEAR(ours["mean_loss"].get<double>(), loss, 1e-5 * loss);
  EXPECT_NEAR(ours["perplexity"].get<double>(), std::exp(loss), 1e-5 * std::exp(loss));
}

}  // namespace
}  // namespace zerotrain::train

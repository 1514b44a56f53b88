// Checkpoints through the binary, as a user runs them: a resume in a new
// process continues bit for bit, a worker killed in any phase of a save
// leaves the previous checkpoint loadable, a damaged shard is refused with
// its path, and export / --init carry weights through safetensors.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "checkpoint/test_util.h"
#include "integration/subprocess.h"

namespace zerotrain::checkpoint {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;
using zerotrain::testing::ProcessResult;
using zerotrain::testing::run_process;

constexpr auto kTimeout = std::chrono::seconds(120);

std::string config(const TempDir& dir, int stage) {
  const std::string path = dir.file("ds" + std::to_string(stage) + ".json");
  std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.003, "weight_decay": 0.01}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 5}},
    "gradient_clipping": 1.0, "steps_per_print": 100,
    "zero_optimization": {"stage": )"
                      << stage << R"(, "reduce_bucket_size": 20000, "allgather_bucket_size": 20000,
      "stage3_param_persistence_threshold": 200, "stage3_prefetch_bucket_size": 20000}})";
  return path;
}

// `zerotrain run --num_gpus N -- zerotrain train ARGS` (2 threads a rank at most).
ProcessResult train(int ranks, const std::vector<std::string>& args,
                    const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv{
      ZT_BIN,  "run",       "--num_gpus", std::to_string(ranks), "--", ZT_BIN,
      "train", "--seq-len", "32",         "--eval-interval",     "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> e{"OMP_NUM_THREADS=1"};
  e.insert(e.end(), env.begin(), env.end());
  return run_process(argv, kTimeout, e);
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class ResumeInNewProcess : public ::testing::TestWithParam<int> {};

TEST_P(ResumeInNewProcess, TwelveStepsEqualSixSaveLoadSixBitForBit) {
  const int stage = GetParam();
  TempDir dir;
  const std::string cfg = config(dir, stage);
  ProcessResult a = train(2, {"--deepspeed", cfg, "--steps", "12", "--save", dir.file("a"),
                              "--metrics", dir.file("a.jsonl")});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  ProcessResult b1 = train(2, {"--deepspeed", cfg, "--steps", "6", "--save", dir.file("b"),
                               "--metrics", dir.file("b.jsonl")});
  ASSERT_EQ(b1.exit_code, 0) << b1.out << b1.err;
  ProcessResult b2 = train(2, {"--deepspeed", cfg, "--steps", "12", "--load", dir.file("b"),
                               "--save", dir.file("b"), "--metrics", dir.file("b.jsonl")});
  ASSERT_EQ(b2.exit_code, 0) << b2.out << b2.err;
  EXPECT_NE(b2.err.find("loaded checkpoint"), std::string::npos) << b2.err;

  // Every step's exact loss, lr, loss scale and grad norm (%.9g / %.17g).
  const std::vector<std::string> la = lines(dir.file("a.jsonl")), lb = lines(dir.file("b.jsonl"));
  ASSERT_EQ(la.size(), 12u);
  EXPECT_EQ(lb, la);
  // The final master weights and optimizer states, byte for byte.
  for (int r = 0; r < 2; ++r) {
    const std::string shard = "/global_step12/zero_rank_" + std::to_string(r) + "_states.ztshard";
    EXPECT_EQ(read_bytes(dir.file("b") + shard), read_bytes(dir.file("a") + shard)) << shard;
  }
  EXPECT_EQ(read_bytes(dir.file("b/latest")), "global_step12\n");
}

INSTANTIATE_TEST_SUITE_P(Stages, ResumeInNewProcess, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "Stage" + std::to_string(info.param); });

class KillDuringSave : public ::testing::TestWithParam<std::string> {};

TEST_P(KillDuringSave, LeavesThePreviousCheckpointLoadable) {
  TempDir dir;
  const std::string cfg = config(dir, 2), ck = dir.file("ck");
  ProcessResult first = train(2, {"--deepspeed", cfg, "--steps", "2", "--save", ck});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // Rank 0 SIGKILLs itself in the save at step 4, after the given phase.
  ProcessResult killed = train(2, {"--deepspeed", cfg, "--steps", "4", "--load", ck, "--save", ck},
                               {"ZEROTRAIN_FAULT_KILL_IN_SAVE=" + GetParam()});
  EXPECT_NE(killed.exit_code, 0);
  EXPECT_FALSE(killed.timed_out);
  EXPECT_NE(killed.err.find("rank 0"), std::string::npos) << killed.err;  // the launcher names it
  EXPECT_EQ(read_bytes(ck + "/latest"), "global_step2\n");
  // latest still loads and training goes on from step 3.
  ProcessResult resumed = train(2, {"--deepspeed", cfg, "--steps", "4", "--load", ck, "--save", ck,
                                    "--metrics", dir.file("m.jsonl")});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const std::vector<std::string> m = lines(dir.file("m.jsonl"));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].rfind("{\"step\": 3,", 0), 0u) << m[0];
  EXPECT_EQ(read_bytes(ck + "/latest"), "global_step4\n");
  EXPECT_FALSE(std::filesystem::exists(ck + "/global_step4.partial"));
}

INSTANTIATE_TEST_SUITE_P(Phases, KillDuringSave, ::testing::Values("shards", "manifest", "rename"));

TEST(CheckpointCli, ADamagedShardIsRefusedWithItsPathByTrainAndShow) {
  TempDir dir;
  const std::string cfg = config(dir, 1), ck = dir.file("ck");
  ASSERT_EQ(train(2, {"--deepspeed", cfg, "--steps", "2", "--save", ck}).exit_code, 0);
  const std::string shard = ck + "/global_step2/zero_rank_1_states.ztshard";
  std::string bytes = read_bytes(shard);
  bytes[bytes.size() / 2] ^= 0x40;
  write_bytes(shard, bytes);
  ProcessResult r = train(2, {"--deepspeed", cfg, "--steps", "4", "--load", ck});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(shard), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;
  // Truncated: show refuses it before reading any value.
  write_bytes(shard, bytes.substr(0, bytes.size() - 100));
  ProcessResult show = run_process({ZT_BIN, "checkpoint", "show", ck}, kTimeout);
  EXPECT_EQ(show.exit_code, 2);
  EXPECT_NE(show.err.find(shard), std::string::npos) << show.err;
  EXPECT_NE(show.err.find("truncated"), std::string::npos) << show.err;
  EXPECT_EQ(read_bytes(ck + "/latest"), "global_step2\n");  // nothing was overwritten
}

// Every tensor of two safetensors files, as fp32.
std::vector<std::vector<float>> tensors_of(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  std::vector<std::vector<float>> out;
  for (const SafetensorsTensor& t : f->tensors()) {
    out.emplace_back(static_cast<size_t>(t.numel()));
    EXPECT_TRUE(f->read_f32(t, 0, t.numel(), out.back().data()).ok());
  }
  return out;
}

TEST(CheckpointCli, ExportThenInitStartsFromTheExportedWeights) {
  TempDir dir;
  const std::string cfg = config(dir, 3);
  ASSERT_EQ(train(2, {"--deepspeed", cfg, "--steps", "3", "--save", dir.file("a")}).exit_code, 0);
  ProcessResult ex = run_process(
      {ZT_BIN, "checkpoint", "export", dir.file("a"), "--to", dir.file("a.safetensors")}, kTimeout);
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  // lr 0: AdamW (decoupled decay scales by lr too) leaves the weights as loaded.
  ProcessResult b =
      run_process({ZT_BIN, "train", "--seq-len", "32", "--eval-interval", "0", "--init",
                   dir.file("a.safetensors"), "--lr", "0", "--steps", "1", "--save", dir.file("b")},
                  kTimeout, {"OMP_NUM_THREADS=1"});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  ASSERT_EQ(run_process(
                {ZT_BIN, "checkpoint", "export", dir.file("b"), "--to", dir.file("b.safetensors")},
                kTimeout)
                .exit_code,
            0);
  EXPECT_EQ(tensors_of(dir.file("b.safetensors")), tensors_of(dir.file("a.safetensors")));
  // A file for another model is refused naming a tensor.
  ProcessResult wrong = run_process(
      {ZT_BIN, "train", "--model", "gpt2-5m", "--init", dir.file("a.safetensors"), "--steps", "1"},
      kTimeout);
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("--init"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("wte.weight"), std::string::npos) << wrong.err;
}

}  // namespace
}  // namespace zerotrain::checkpoint

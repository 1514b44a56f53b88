// The trainer loop: loss falls on the generated corpus, same seed gives
// bit-identical losses, 2 ranks follow 1 rank with the same global batch,
// the log's lines, flag/config errors.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "comm/gloo/gloo_communicator.h"
#include "comm/rank_threads.h"
#include "model/gpt2/config.h"
#include "train/data/corpus.h"
#include "train/test_util.h"
#include "train/train_log.h"

namespace zerotrain::train {
namespace {

// 2 layers x 64, byte vocab, block 32: ~0.13 M parameters.
model::gpt2::GptConfig small_gpt() {
  return {.n_layer = 2,
          .n_head = 4,
          .n_embd = 64,
          .seq_len = 32,
          .vocab_size = 256,
          .padded_vocab = 256};
}

TrainOptions small(int64_t steps, std::ostream* out) {
  TrainOptions o;
  o.model_config = model::gpt2::to_json(small_gpt());
  o.steps = steps;
  o.micro_batch = 8;
  o.lr = 3e-3;
  o.warmup_steps = 5;
  o.corpus_bytes = 100000;
  o.threads = 1;  // bit-identical across machines with different core counts
  o.out = out;
  o.progress = false;
  return o;
}

StatusOr<TrainSummary> train_one_rank(const TrainOptions& o) {
  auto c = comm::create_gloo_communicator(comm::CommOptions{});
  if (!c.ok()) return c.status();
  return train(o, **c);
}

double mean_tail(const std::vector<double>& v, size_t n) {
  return std::accumulate(v.end() - n, v.end(), 0.0) / n;
}

// From ln 256 = 5.55 to under 2.5 nats/token over the last 10 of 150 steps
// of 8 x 32 tokens (measured 2.06; the corpus's byte unigram entropy is
// about 2.9, so the model has learned context, not just frequencies).
TEST(Trainer, LossFallsOnTheGeneratedCorpus) {
  std::ostringstream log;
  StatusOr<TrainSummary> s = train_one_rank(small(150, &log));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_NEAR(s->first_loss, std::log(256.0), 0.1);
  RecordProperty("tail_loss", std::to_string(mean_tail(s->losses, 10)));
  EXPECT_LT(mean_tail(s->losses, 10), 2.5) << log.str();
  EXPECT_EQ(s->steps, 150);
  EXPECT_EQ(s->losses.size(), 150u);
  EXPECT_EQ(s->tokens_per_step, 8 * 32);
  EXPECT_GT(s->mean_tokens_per_s, 0);
}

TEST(Trainer, SameSeedGivesBitIdenticalLosses) {
  std::ostringstream sink;
  auto a = train_one_rank(small(12, &sink));
  auto b = train_one_rank(small(12, &sink));
  TrainOptions other = small(12, &sink);
  other.seed = 99;
  auto c = train_one_rank(other);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->losses, b->losses);
  EXPECT_NE(a->losses, c->losses);
}

// The loader gives 2 ranks x B=4 (or B=2 x 2 accumulation steps) the same
// windows as 1 rank x B=8, and the engine averages gradients: the loss
// curves agree (fp32, 1e-5 relative).
TEST(Trainer, TwoRanksAndAccumulationFollowOneRankWithTheSameGlobalBatch) {
  std::ostringstream sink;
  auto one = train_one_rank(small(10, &sink));
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  std::vector<double> two[2];
  comm::testutil::run_ranks(2, [&](comm::Communicator& c) {
    std::ostringstream local;
    TrainOptions o = small(10, &local);
    o.micro_batch = 4;
    auto s = train(o, c);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    two[c.rank()] = s->losses;
  });
  // And 2 ranks x B=2 x 2 accumulation steps.
  std::vector<double> accum[2];
  comm::testutil::run_ranks(2, [&](comm::Communicator& c) {
    std::ostringstream local;
    TrainOptions o = small(10, &local);
    o.micro_batch = 2;
    o.grad_accum = 2;
    auto s = train(o, c);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    accum[c.rank()] = s->losses;
  });
  ASSERT_EQ(two[0].size(), 10u);
  ASSERT_EQ(accum[0].size(), 10u);
  EXPECT_EQ(two[0], two[1]) << "every rank logs the all-reduced loss";
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(two[0][i], one->losses[i], 1e-5 * one->losses[i]) << "step " << i + 1;
    EXPECT_NEAR(accum[0][i], one->losses[i], 1e-5 * one->losses[i]) << "step " << i + 1;
  }
}

// bf16 (rounded weights, bf16 GEMMs) tracks fp32 over 40 steps; fp16
// starts at scale 2^16, skips the overflowing first steps while halving,
// then trains as well.
TEST(Trainer, MixedPrecisionTracksFp32) {
  std::ostringstream sink;
  auto fp32 = train_one_rank(small(40, &sink));
  TrainOptions o = small(40, &sink);
  o.bf16 = true;
  auto bf16 = train_one_rank(o);
  o = small(40, &sink);
  o.fp16 = true;
  auto fp16 = train_one_rank(o);
  ASSERT_TRUE(fp32.ok() && bf16.ok() && fp16.ok());
  const double ref = mean_tail(fp32->losses, 5);
  RecordProperty("fp32_bf16_fp16_tail", std::to_string(ref) + " " +
                                            std::to_string(mean_tail(bf16->losses, 5)) + " " +
                                            std::to_string(mean_tail(fp16->losses, 5)));
  EXPECT_LT(ref, 3.5);
  EXPECT_NEAR(mean_tail(bf16->losses, 5), ref, 0.15);
  EXPECT_EQ(bf16->skipped_steps, 0);
  EXPECT_GT(fp16->skipped_steps, 0) << "2^16 x these gradients overflows fp16";
  EXPECT_LT(fp16->skipped_steps, 10);
  EXPECT_NEAR(mean_tail(fp16->losses, 5), ref, 0.25);
}

TEST(Trainer, LogHasConfigStepLinesAndSummary) {
  std::ostringstream log;
  TrainOptions o = small(4, &log);
  auto s = train_one_rank(o);
  ASSERT_TRUE(s.ok());
  const std::string text = log.str();
  EXPECT_NE(text.find("effective ds_config (embedded default)"), std::string::npos);
  EXPECT_NE(text.find("\"lr\": 0.003"), std::string::npos) << text;  // the resolved auto
  EXPECT_NE(text.find("[zerotrain] step 1/4 | loss "), std::string::npos) << text;
  EXPECT_NE(text.find("[zerotrain] step 4/4 | loss "), std::string::npos);
  EXPECT_EQ(text.find("step 2/4"), std::string::npos) << "steps_per_print 25";
  EXPECT_NE(text.find("[zerotrain] done: 4 steps (0 skipped)"), std::string::npos);
  EXPECT_NE(text.find("| mem dev "), std::string::npos) << text;
  EXPECT_NE(text.find("[zerotrain] memory per rank: device "), std::string::npos) << text;
}

TEST(Trainer, ValidationLossEveryNSteps) {
  std::ostringstream log;
  TrainOptions o = small(6, &log);
  o.eval_interval = 3;
  o.eval_batches = 2;
  auto s = train_one_rank(o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->val_losses.size(), 2u);
  EXPECT_LT(s->val_losses[1], std::log(256.0));
  EXPECT_NE(log.str().find("step 6 | val_loss"), std::string::npos);
}

TEST(Trainer, TrainsFromTokenShards) {
  testing::TempDir dir;
  ASSERT_TRUE(
      write_default_corpus(dir.path(), {.seed = 5, .target_bytes = 60000}, 1 << 14, 0.1).ok());
  std::ostringstream log;
  TrainOptions o = small(6, &log);
  o.data_dir = dir.path();
  o.eval_interval = 6;
  auto s = train_one_rank(o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_NEAR(s->first_loss, std::log(256.0), 0.1);
  EXPECT_EQ(s->val_losses.size(), 1u) << "val_*.bin shards are used for validation";

  o.data_dir = dir.file("missing");
  auto missing = train_one_rank(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(Trainer, ErrorsNameTheFlagOrKey) {
  std::ostringstream sink;
  TrainOptions o = small(2, &sink);
  o.seq_len = 33;
  auto s = train_one_rank(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--seq-len: 33 is outside [1, 32]"), std::string::npos);

  o = small(2, &sink);
  o.model_config.reset();
  o.model = "gpt2-tny";
  s = train_one_rank(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("did you mean 'gpt2-tiny'"), std::string::npos);

  // A flag that contradicts an explicit config value is an error naming the key.
  testing::TempDir dir;
  {
    std::ofstream(dir.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": 2,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.01}}})";
  }
  o = small(2, &sink);
  o.micro_batch.reset();
  o.deepspeed_config = dir.file("ds.json");
  s = train_one_rank(o);  // --lr 3e-3
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("optimizer.params.lr"), std::string::npos)
      << s.status().to_string();
  EXPECT_NE(s.status().message().find("ds.json"), std::string::npos);
}

// A user config's "auto" whose flag was not given takes the trainer's
// default; given flags resolve theirs; explicit values stay.
TEST(Trainer, UserConfigAutosTakeFlagsThenDefaults) {
  testing::TempDir dir;
  {
    std::ofstream(dir.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": "auto",
        "gradient_clipping": 0.5, "steps_per_print": 1, "wall_clock_breakdown": true,
        "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
        "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": "auto",
            "total_num_steps": "auto"}}})";
  }
  std::ostringstream log;
  TrainOptions o = small(3, &log);
  o.lr.reset();
  o.deepspeed_config = dir.file("ds.json");
  auto s = train_one_rank(o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string text = log.str();
  EXPECT_NE(text.find("\"lr\": 0.002"), std::string::npos) << text;                  // default
  EXPECT_NE(text.find("\"train_micro_batch_size_per_gpu\": 8"), std::string::npos);  // flag
  EXPECT_NE(text.find("\"total_num_steps\": 3"), std::string::npos);                 // --steps
  EXPECT_NE(text.find("\"gradient_clipping\": 0.5"), std::string::npos);             // explicit
  EXPECT_NE(text.find("step 2/3"), std::string::npos) << "steps_per_print 1";
  EXPECT_NE(text.find("[Rank 0] time (ms) | fwd_microstep: "), std::string::npos) << text;
}

TEST(TrainLog, StepLineFields) {
  const std::string l = format_step_line({.step = 10,
                                          .total_steps = 200,
                                          .loss = 2.5,
                                          .lr = 1e-3,
                                          .loss_scale = 65536,
                                          .grad_norm = 0.5,
                                          .skipped_steps = 2,
                                          .tokens_per_s = 12345.4,
                                          .step_ms = 41.48,
                                          .rss_bytes = 100 << 20,
                                          .memory = "dev 1.5 (p 1.5) MiB"});
  EXPECT_EQ(l,
            "[zerotrain] step 10/200 | loss 2.5000 | lr 1.000e-03 | loss_scale 65536 | "
            "grad_norm 0.500 | skipped 2 | 12345 tokens/s | 41.5 ms/step | rss 100.0 MiB | "
            "mem dev 1.5 (p 1.5) MiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_progress(15, 30, 1.0), "\r[===============>              ] 15/30  loss 1.0000");
  EXPECT_GT(rss_bytes(), 1 << 20);
}

}  // namespace
}  // namespace zerotrain::train

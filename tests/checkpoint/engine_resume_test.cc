// Engine::save_checkpoint / load_checkpoint in-process, ranks as threads over
// real Gloo TCP: bit-exact resume at every stage and precision, and
// re-partitioning to other world sizes and stages.
#include <gtest/gtest.h>

#include "checkpoint/engine_job.h"

namespace zerotrain::checkpoint::enginetest {
namespace {

// ---------------------------------------------------------------------------
// 1. Bit-exact resume: 3 steps, save, a new model (another seed) and engine,
// load, 3 more steps == 6 steps straight, at every stage and precision.

struct ResumeCase {
  std::string name;
  int stage = 0;
  std::string extra;
};

class Resume : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(Resume, BitExactAfterReloadIntoAFreshEngine) {
  const ResumeCase& p = GetParam();
  const Job j{.world = 2, .stage = p.stage, .extra = p.extra};
  constexpr int kSaved = 3, kSteps = 6;
  std::vector<std::vector<double>> losses(2);
  std::vector<Snap> at_saved(2), at_end(2);
  run_ranks(2, [&](Communicator& c) {
    auto r = make_rank(c, j, c.rank() == 0 ? 7 : 99);
    ASSERT_NE(r, nullptr);
    train(*r, c, j, 0, kSaved, &losses[c.rank()]);
    at_saved[c.rank()] = snapshot(*r);
    train(*r, c, j, kSaved, kSteps, &losses[c.rank()]);
    at_end[c.rank()] = snapshot(*r);
  });
  ASSERT_EQ(losses[0].size(), size_t{kSteps});
  if (p.extra == kFp16) {  // the scaler's state is not the initial one
    EXPECT_NE(at_saved[0].loss_scale, 4096.0);
    EXPECT_NE(at_end[0].loss_scale, at_saved[0].loss_scale);
  }

  TempDir dir;
  const std::string root = dir.file("ckpt");
  const json client{{"data_pos", 3}, {"seed", "x"}};
  run_ranks(2, [&](Communicator& c) {
    const int rank = c.rank();
    auto r = make_rank(c, j, rank == 0 ? 7 : 99);
    ASSERT_NE(r, nullptr);
    std::vector<double> first;
    train(*r, c, j, 0, kSaved, &first);
    EXPECT_EQ(first, slice(losses[rank], 0, kSaved));
    const Status saved = r->engine->save_checkpoint(root, "s3", client);
    ASSERT_TRUE(saved.ok()) << saved.to_string();
    r.reset();
    for (const std::string tag : {"s3", ""}) {
      const std::string what = p.name + " tag \"" + tag + "\" rank " + std::to_string(rank);
      auto fresh = make_rank(c, j, 1000 + rank);
      ASSERT_NE(fresh, nullptr);
      EXPECT_NE(snapshot(*fresh).weights, at_saved[rank].weights) << what << ": seed had no effect";
      StatusOr<json> got = fresh->engine->load_checkpoint(root, tag);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
      EXPECT_EQ(*got, client) << what;
      expect_same(snapshot(*fresh), at_saved[rank], what + " after load");
      std::vector<double> rest;
      train(*fresh, c, j, kSaved, kSteps, &rest);
      EXPECT_EQ(rest, slice(losses[rank], kSaved, kSteps)) << what;
      expect_same(snapshot(*fresh), at_end[rank], what + " after step 6");
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    StagesAndPrecisions, Resume,
    ::testing::Values(ResumeCase{"stage0", 0, ""}, ResumeCase{"stage1", 1, ""},
                      ResumeCase{"stage2", 2, ""}, ResumeCase{"stage3", 3, ""},
                      ResumeCase{"bf16_stage2", 2, kBf16}, ResumeCase{"fp16_stage1", 1, kFp16}),
    [](const ::testing::TestParamInfo<ResumeCase>& i) { return i.param.name; });

// ---------------------------------------------------------------------------
// 2. Re-partitioning: saved by 4 ranks at stage 2, loaded by 2 ranks at
// stage 3, 1 rank at stage 0 and 2 ranks at stage 1 (same global batch).

TEST(Repartition, LoadsAtOtherWorldSizesAndStages) {
  TempDir dir;
  const std::string root = dir.file("ckpt");
  const Job saver{.world = 4, .stage = 2};
  Snap saved, next;
  double next_loss = 0;
  run_ranks(4, [&](Communicator& c) {
    auto r = make_rank(c, saver, c.rank() == 0 ? 7 : 99);
    ASSERT_NE(r, nullptr);
    std::vector<double> losses;
    train(*r, c, saver, 0, 3, &losses);
    Snap s = snapshot(*r);
    const Status st = r->engine->save_checkpoint(root, "g3");
    ASSERT_TRUE(st.ok()) << st.to_string();
    train(*r, c, saver, 3, 4, &losses);
    if (c.rank() == 0) {
      saved = std::move(s);
      next = snapshot(*r);
      next_loss = losses.back();
    }
  });
  ASSERT_EQ(saved.global_steps, 3);

  struct Target {
    int world, stage, gas;
  };
  for (const Target t : {Target{2, 3, 1}, Target{1, 0, 1}, Target{2, 1, 1}, Target{2, 2, 2}}) {
    const Job j{.world = t.world, .stage = t.stage, .gas = t.gas};
    run_ranks(t.world, [&](Communicator& c) {
      const std::string what = "4 ranks stage 2 -> " + std::to_string(t.world) +
                               " ranks stage " + std::to_string(t.stage) + " gas " +
                               std::to_string(t.gas) + ", rank " + std::to_string(c.rank());
      auto r = make_rank(c, j, 500 + c.rank());
      ASSERT_NE(r, nullptr);
      StatusOr<json> got = r->engine->load_checkpoint(root, "g3");
      ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
      const Snap s = snapshot(*r);
      expect_bits(s.weights, saved.weights, what + " weights after load");
      EXPECT_EQ(s.global_steps, saved.global_steps) << what;
      EXPECT_EQ(s.step_count, saved.step_count) << what;
      EXPECT_EQ(s.lr, saved.lr) << what;
      std::vector<double> losses;
      train(*r, c, j, 3, 4, &losses);
      ASSERT_EQ(losses.size(), 1u);
      EXPECT_NEAR(losses[0], next_loss, 1e-5 * next_loss) << what << ": step 4 loss";
      EXPECT_LT(engine::testutil::relative_l2(snapshot(*r).weights, next.weights), 1e-5) << what;
    });
  }
}


}  // namespace
}  // namespace zerotrain::checkpoint::enginetest

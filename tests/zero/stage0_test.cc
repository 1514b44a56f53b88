// ZeRO stage 0 across ranks: 2 ranks (threads, real Gloo over TCP on
// 127.0.0.1) each taking half of every global batch follow the loss curve
// and weights of 1 rank taking the whole batch; rank 0's weights are
// broadcast at start.
#include <gtest/gtest.h>

#include <mutex>

#include "comm/gloo/gloo_communicator.h"
#include "comm/rank_threads.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace zerotrain::engine {
namespace {

using testutil::copy;
using testutil::make_model;
using testutil::parse;
using testutil::tokens;

constexpr int64_t kGlobalRows = 4, T = 16, kSteps = 10;

const char* kConfig = R"(, "gradient_clipping": 1.0,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.003, "weight_decay": 0.01}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 3,
        "warmup_type": "linear"}}})";

struct Curve {
  std::vector<double> losses;  // global mean loss per step
  std::vector<float> weights;  // after the last step
};

// Rank `rank` of `world` trains on rows [rank*B, (rank+1)*B) of each global batch.
void train(comm::Communicator& c, uint64_t model_seed, Curve* out) {
  const int world = c.world_size(), rank = c.rank();
  const int64_t rows = kGlobalRows / world;
  model::gpt2::GptModel m = make_model(rows, model_seed);
  config::Config cfg =
      parse(R"({"train_batch_size": )" + std::to_string(kGlobalRows) + kConfig, world);
  auto e = Engine::create(cfg, &m, &c);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  for (int s = 0; s < kSteps; ++s) {
    const auto x = tokens(kGlobalRows * T, 100 + s), y = tokens(kGlobalRows * T, 200 + s);
    auto loss = (*e)->forward(x.data() + rank * rows * T, y.data() + rank * rows * T, rows, T);
    ASSERT_TRUE(loss.ok());
    ASSERT_TRUE((*e)->backward().ok());
    ASSERT_TRUE((*e)->step().ok());
    float global = *loss;
    ASSERT_TRUE(c.allreduce(std::span<float>(&global, 1), comm::ReduceOp::kAvg).ok());
    out->losses.push_back(global);
  }
  out->weights = copy(m.parameters(), m.layout().total_numel());
}

TEST(DataParallel, TwoRanksMatchOneRankWithTheSameGlobalBatch) {
  Curve one;
  comm::testutil::run_ranks(1, [&](comm::Communicator& c) { train(c, 7, &one); });
  Curve two[2];
  // Rank 1 starts from other weights: the broadcast from rank 0 must fix that.
  comm::testutil::run_ranks(
      2, [&](comm::Communicator& c) { train(c, c.rank() == 0 ? 7 : 99, &two[c.rank()]); });
  ASSERT_EQ(one.losses.size(), size_t(kSteps));
  ASSERT_EQ(two[0].losses.size(), size_t(kSteps));
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(two[0].losses[s], one.losses[s], 1e-5 * one.losses[s]) << "step " << s;
  EXPECT_LT(one.losses.back(), one.losses.front());
  EXPECT_EQ(two[0].weights, two[1].weights) << "ranks stay identical";
  const double w = testutil::relative_l2(two[0].weights, one.weights);
  RecordProperty("weights_rel_l2", std::to_string(w));
  EXPECT_LT(w, 1e-5);
}

// One SGD step (lr 1) at 2 ranks: the weight change is minus the reduced
// gradient, so each reduction variant shows in it directly.
std::vector<float> sgd_update(const std::string& reduce_keys) {
  std::vector<float> update[2];
  comm::testutil::run_ranks(2, [&](comm::Communicator& c) {
    model::gpt2::GptModel m = make_model(2);
    const std::vector<float> w0 = copy(m.parameters(), m.layout().total_numel());
    auto e =
        Engine::create(parse(R"({"train_batch_size": 4, "gradient_clipping": 0, )" + reduce_keys +
                                 R"(, "optimizer": {"type": "SGD", "params": {"lr": 1}}})",
                             2),
                       &m, &c);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    const auto x = tokens(2 * T, 300 + c.rank()), y = tokens(2 * T, 400 + c.rank());
    ASSERT_TRUE((*e)->forward(x.data(), y.data(), 2, T).ok());
    ASSERT_TRUE((*e)->backward().ok());
    ASSERT_TRUE((*e)->step().ok());
    update[c.rank()] = testutil::delta(copy(m.parameters(), m.layout().total_numel()), w0);
  });
  EXPECT_EQ(update[0], update[1]);
  return update[0];
}

TEST(DataParallel, ReductionVariantsFollowDeepSpeed) {
  const std::vector<float> mean = sgd_update(R"("gradient_allreduce_op": "mean")");
  // sum: twice the mean at 2 ranks (exact: a power of two).
  std::vector<float> sum = sgd_update(R"("gradient_allreduce_op": "sum")");
  for (float& v : sum) v *= 0.5f;
  EXPECT_LT(testutil::relative_l2(sum, mean), 1e-6);
  // prescale (g/N, then sum) and predivide (g/f, sum, * f/N) are the mean.
  EXPECT_LT(testutil::relative_l2(sgd_update(R"("prescale_gradients": true)"), mean), 1e-6);
  EXPECT_LT(testutil::relative_l2(sgd_update(R"("gradient_predivide_factor": 8)"), mean), 1e-6);
}

}  // namespace
}  // namespace zerotrain::engine

// bf16 stage 0 with Adam: the optimizer reads the 16-bit gradient
// accumulator itself (no fp32 [Ψ] copy), at one rank and, all-reduced in
// place on the bf16 wire, at two. The step must be, bit for bit, the one
// an fp32 Adam takes over the exactly widened (and, at two ranks, the
// bf16-wire-reduced) gradients, with the norm of those gradients clipping.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "comm/rank_threads.h"
#include "core/half.h"
#include "device/device.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "optim/adam.h"
#include "optim/grad_utils.h"
#include "zero/stage0_strategy.h"

namespace zerotrain::engine {
namespace {

using testutil::half_accumulator;
using testutil::make_model;
using testutil::parse;
using testutil::tokens;

constexpr int64_t kRows = 2, kT = 16;
constexpr double kLr = 0.01, kDecay = 0.01, kClip = 1.0;

std::vector<float> host(const Tensor& t) {
  std::vector<float> v(t.numel);
  const Status s = device::copy_to_host(t, v.data());
  ZT_CHECK(s.ok(), s.to_string());
  return v;
}

std::unique_ptr<Engine> make_engine(model::gpt2::GptModel& m, comm::Communicator& c) {
  const int world = c.world_size();
  auto e = Engine::create(parse(R"({"train_batch_size": )" + std::to_string(kRows * world) +
                                    R"(, "gradient_clipping": 1.0, "bf16": {"enabled": true},
        "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "betas": [0.9, 0.999],
        "eps": 1e-8, "weight_decay": 0.01}}})",
                                world),
                          &m, &c);
  ZT_CHECK(e.ok(), e.status().to_string());
  return std::move(e).value();
}

// Step 2 (so the moments are not zero) of a world-rank run against the
// fp32 reference of that step, on every rank.
void check_second_step(int world) {
  std::mutex mu;
  std::vector<std::vector<float>> local(static_cast<size_t>(world));
  comm::testutil::run_ranks(world, [&](comm::Communicator& c) {
    model::gpt2::GptModel m = make_model(kRows);
    std::unique_ptr<Engine> e = make_engine(m, c);
    const auto pass = [&](int seed) {
      const auto x = tokens(kRows * kT, seed + 10 * c.rank());
      const auto y = tokens(kRows * kT, seed + 1000 + 10 * c.rank());
      ASSERT_TRUE(e->forward(x.data(), y.data(), kRows, kT).ok());
      ASSERT_TRUE(e->backward().ok());
    };
    pass(1);
    ASSERT_TRUE(e->step().ok());
    pass(2);
    const size_t n = static_cast<size_t>(m.layout().total_numel());
    std::vector<float> g(n);
    ASSERT_TRUE(half_accumulator(*e).read(0, std::span<float>(g)).ok());  // exact widening
    {
      const std::lock_guard<std::mutex> lock(mu);
      local[static_cast<size_t>(c.rank())] = g;
    }
    zero::ZeroStrategy& st = e->strategy();
    const std::vector<float> master0 = host(st.owned_master());
    std::vector<float> m0 = host(st.optimizer_states()[0]), v0 = host(st.optimizer_states()[1]);
    float barrier = 0;  // every rank has published its gradients
    ASSERT_TRUE(c.allreduce(std::span<float>(&barrier, 1), comm::ReduceOp::kSum).ok());
    ASSERT_TRUE(e->step().ok());
    ASSERT_FALSE(e->last_step().skipped);

    // The reference: the bf16 wire's mean of the ranks' sums, Σ g² in
    // double, the clip factor, then fp32 Adam over host memory.
    std::vector<float> reduced(n);
    double sq = 0;
    for (size_t i = 0; i < n; ++i) {
      float r = local[0][i];
      if (world == 2) r = to_float(to_bfloat16((local[0][i] + local[1][i]) / 2.0f));
      reduced[i] = r;
      sq += static_cast<double>(r) * r;
    }
    // The engine sums in fixed blocks; this sum runs in element order.
    const double norm = e->last_step().grad_norm;
    EXPECT_NEAR(norm, std::sqrt(sq), 1e-12 * norm);
    const float factor = optim::unscale_and_clip_factor(norm, 1.0, kClip);
    auto adam = optim::Adam::create({.lr = kLr, .weight_decay = kDecay});
    ASSERT_TRUE(adam.ok());
    adam->set_step_count(1);
    std::vector<float> want = master0;
    const optim::AdamTensors t{Tensor(std::span<float>(want)),
                               ConstTensor(std::span<const float>(reduced)),
                               Tensor(std::span<float>(m0)), Tensor(std::span<float>(v0)), factor};
    ASSERT_TRUE(adam->step(t).ok());
    const std::vector<float> got = host(st.owned_master());
    int64_t changed = 0;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], want[i]) << "world " << world << " rank " << c.rank() << " element " << i;
      changed += got[i] != master0[i];
    }
    EXPECT_GT(changed, static_cast<int64_t>(n / 2));
  });
}

TEST(HalfGradients, AdamStepsOnTheBf16AccumulatorAsOnItsFp32WideningAtOneRank) {
  check_second_step(1);
}

TEST(HalfGradients, AdamStepsOnTheBf16AccumulatorAllReducedInPlaceAtTwoRanks) {
  check_second_step(2);
}

// The hand-over itself: at one rank reduce_gradients() gives the
// accumulator, in bf16, and lends no activation memory for a copy.
TEST(HalfGradients, OneRankHandsTheAccumulatorOverWithNoFp32Copy) {
  comm::testutil::run_ranks(1, [&](comm::Communicator& c) {
    model::gpt2::GptModel m = make_model(kRows);
    std::unique_ptr<Engine> e = make_engine(m, c);
    const auto x = tokens(kRows * kT, 3), y = tokens(kRows * kT, 1003);
    ASSERT_TRUE(e->forward(x.data(), y.data(), kRows, kT).ok());
    ASSERT_TRUE(e->backward().ok());
    zero::ZeroStrategy& st = e->strategy();
    ASSERT_TRUE(st.reduce_gradients().ok());
    const Tensor g = st.owned_gradients();
    EXPECT_EQ(g.dtype, DType::kBFloat16);
    EXPECT_EQ(g.data, half_accumulator(*e).tensor().data);
    EXPECT_EQ(g.numel, static_cast<size_t>(m.layout().total_numel()));
    EXPECT_FALSE(m.activation_memory_lent());
    EXPECT_EQ(e->memory().model_states.buffers,
              dynamic_cast<zero::DataParallelStrategy&>(st).half_compute()->buffer_bytes());
    st.zero_gradients();
    ASSERT_TRUE(e->forward(x.data(), y.data(), kRows, kT).ok());
  });
}

}  // namespace
}  // namespace zerotrain::engine

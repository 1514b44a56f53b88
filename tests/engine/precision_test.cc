// Mixed precision in the engine: fp16 dynamic loss scaling with an injected
// overflow (skip, scheduler not stepped, hysteresis then halving), the fp16
// range overflow of a too-large scale, bf16 rounded compute weights over fp32
// masters, bf16 check_grad_overflow.
#include "engine/precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "comm/gloo/gloo_communicator.h"
#include "core/half.h"
#include "device/cpu/cpu_device.h"
#include "device/device.h"
#include "device/ops.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "zero/partition_array.h"
#include "zero/stage0_strategy.h"

namespace zerotrain::engine {
namespace {

using testutil::copy;
using testutil::make_model;
using testutil::parse;
using testutil::tokens;

constexpr int64_t B = 2, T = 16;

struct Rig {
  std::unique_ptr<comm::Communicator> comm;
  model::gpt2::GptModel model = make_model(B);
  std::unique_ptr<Engine> engine;
  explicit Rig(const std::string& precision,
               const std::string& optimizer = R"({"type": "AdamW", "params": {"lr": 0.01}})") {
    auto c = comm::create_gloo_communicator(comm::CommOptions{});
    ZT_CHECK(c.ok(), c.status().to_string());
    comm = std::move(c).value();
    auto e = Engine::create(parse(R"({"train_batch_size": 2, "gradient_clipping": 1.0, )" +
                                  precision + R"(, "optimizer": )" + optimizer +
                                  R"(, "scheduler": {"type": "WarmupLR", "params": {
        "warmup_min_lr": 0.001, "warmup_max_lr": 0.01, "warmup_num_steps": 10,
        "warmup_type": "linear"}}})"),
                            &model, comm.get());
    ZT_CHECK(e.ok(), e.status().to_string());
    engine = std::move(e).value();
  }
  // One micro-step (= one optimizer step, gas 1); poison a gradient first if asked.
  void step(int seed, bool inject_inf) {
    step_setting(seed, 5, inject_inf ? std::numeric_limits<float>::infinity() : 0.0f, inject_inf);
  }
  // The same, setting gradient `index` to `value` (when `set`) before the step.
  void step_setting(int seed, size_t index, float value, bool set = true) {
    const auto x = tokens(B * T, seed), y = tokens(B * T, seed + 1000);
    ASSERT_TRUE(engine->forward(x.data(), y.data(), B, T).ok());
    ASSERT_TRUE(engine->backward().ok());
    if (set) {
      ASSERT_TRUE(accumulator().write(index, std::span<const float>(&value, 1)).ok());
    }
    Status s = engine->step();
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  zero::PartitionArray& accumulator() { return testutil::half_accumulator(*engine); }
  std::vector<float> weights() const {
    std::vector<float> w(static_cast<size_t>(model.layout().total_numel()));
    const Status s = engine->strategy().gather_full_parameters(w);
    ZT_CHECK(s.ok(), s.to_string());
    return w;
  }
};

TEST(EnginePrecision, Fp16OverflowSkipsStepAndHalvesAfterHysteresis) {
  Rig r(R"("fp16": {"enabled": true, "initial_scale_power": 8, "hysteresis": 2,
      "loss_scale_window": 1000})");
  Engine& e = *r.engine;
  EXPECT_EQ(e.loss_scale(), 256.0);
  const double lr0 = e.get_lr();
  const std::vector<float> w0 = r.weights();

  r.step(1, /*inject_inf=*/true);  // hysteresis 2 -> 1: scale kept
  EXPECT_TRUE(e.last_step().overflow);
  EXPECT_TRUE(e.last_step().skipped);
  EXPECT_EQ(r.weights(), w0);
  EXPECT_EQ(e.global_steps(), 1);
  EXPECT_EQ(e.skipped_steps(), 1);
  EXPECT_EQ(e.scheduler()->last_batch_iteration(), -1);
  EXPECT_EQ(e.get_lr(), lr0);
  EXPECT_EQ(e.loss_scale(), 256.0);
  std::vector<float> g(static_cast<size_t>(r.model.layout().total_numel()));
  ASSERT_TRUE(r.accumulator().read(0, std::span<float>(g)).ok());
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_EQ(g[i], 0.0f) << "gradients dropped after a skipped step";

  r.step(2, /*inject_inf=*/true);  // hysteresis used up: halve
  EXPECT_EQ(r.weights(), w0);
  EXPECT_EQ(e.global_steps(), 2);
  EXPECT_EQ(e.skipped_steps(), 2);
  EXPECT_EQ(e.loss_scale(), 128.0);
  EXPECT_EQ(e.scheduler()->last_batch_iteration(), -1);

  r.step(3, /*inject_inf=*/false);  // clean: the step happens
  EXPECT_FALSE(e.last_step().skipped);
  EXPECT_EQ(e.last_step().loss_scale, 128.0);
  EXPECT_NE(r.weights(), w0);
  EXPECT_EQ(e.global_steps(), 3);
  EXPECT_EQ(e.skipped_steps(), 2);
  EXPECT_EQ(e.scheduler()->last_batch_iteration(), 0);
  EXPECT_TRUE(std::isfinite(e.last_step().grad_norm));
  // The compute weights are fp16 values.
  for (float w : r.weights()) ASSERT_EQ(w, to_float(to_half(w)));
}

// A scale of 2^40 pushes the scaled gradients past 65504: they overflow
// when rounded through fp16, as they would in real fp16, without injection.
TEST(EnginePrecision, Fp16ScaledGradientsBeyondRangeOverflow) {
  Rig r(R"("fp16": {"enabled": true, "initial_scale_power": 40, "hysteresis": 1})");
  const std::vector<float> w0 = r.weights();
  r.step(1, false);
  EXPECT_TRUE(r.engine->last_step().overflow);
  EXPECT_EQ(r.weights(), w0);
  EXPECT_EQ(r.engine->loss_scale(), std::ldexp(1.0, 39));
}

TEST(EnginePrecision, Bf16ComputesFromRoundedMasterWeights) {
  Rig r(R"("bf16": {"enabled": true})");
  r.step(1, false);
  r.step(2, false);
  std::vector<float> master(r.engine->strategy().owned_master().numel);
  ASSERT_TRUE(device::copy_to_host(r.engine->strategy().owned_master(), master.data()).ok());
  const std::vector<float> w = r.weights();
  int64_t differ = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const float rounded = to_float(to_bfloat16(master[i]));
    ASSERT_EQ(w[i], rounded) << i;
    differ += w[i] != master[i];
  }
  EXPECT_GT(differ, int64_t(w.size()) / 2) << "masters keep fp32 precision";
  EXPECT_EQ(r.engine->loss_scale(), 1.0);
}

TEST(EnginePrecision, Bf16CheckGradOverflowSkips) {
  Rig r(R"("bf16": {"enabled": true})");
  const std::vector<float> w0 = r.weights();
  r.step(1, true);
  EXPECT_TRUE(r.engine->last_step().skipped);
  EXPECT_EQ(r.weights(), w0);
  EXPECT_EQ(r.engine->skipped_steps(), 1);
}

// The overflow check comes from the gradients' Σ g² (summed in double):
// a NaN or an inf anywhere, first element, middle or last, skips the step,
// while a huge finite gradient (1e30, whose square overflows fp32 but not
// the double sum) is no overflow: the step runs, clipped.
TEST(EnginePrecision, Bf16OverflowIsANonFiniteGradientAnywhereAndOnlyThat) {
  Rig r(R"("bf16": {"enabled": true})");
  const size_t n = static_cast<size_t>(r.model.layout().total_numel());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  int seed = 1;
  for (auto [index, value] :
       {std::pair{size_t{0}, nan}, std::pair{n / 2, -inf}, std::pair{n - 1, nan}}) {
    const std::vector<float> w0 = r.weights();
    r.step_setting(seed++, index, value);
    EXPECT_TRUE(r.engine->last_step().skipped) << "gradient " << index << " = " << value;
    EXPECT_EQ(r.weights(), w0);
  }
  const std::vector<float> w0 = r.weights();
  r.step_setting(seed++, n / 3, 1e30f);
  EXPECT_FALSE(r.engine->last_step().skipped);
  EXPECT_NEAR(r.engine->last_step().grad_norm, 1e30, 1e28);  // 1e30 as stored in bf16
  EXPECT_NE(r.weights(), w0);
  EXPECT_EQ(r.engine->skipped_steps(), 3);
}

// bf16 stage 0's boundary step for an optimizer that reads only fp32
// gradients (SGD; Adam reads the accumulator itself, half_gradients_test):
// the fp32 copy of the 16-bit gradient sums (Ψ floats, for the all-reduce
// and the optimizer) is placed in the model's activation memory, idle
// after the backward, when that holds Ψ floats; the values are the
// accumulator's either way, a forward is refused while it is lent, and
// zero_gradients() returns it.
TEST(EnginePrecision, Bf16StageZeroPutsTheGradientCopyInIdleActivations) {
  Rig r(R"("bf16": {"enabled": true})", R"({"type": "SGD", "params": {"lr": 0.01}})");
  const auto n = static_cast<size_t>(r.model.layout().total_numel());
  const bool fits = r.model.memory().activation_bytes >= static_cast<int64_t>(n * sizeof(float));
  EXPECT_TRUE(fits) << "micro model at B 2 x T 16: the activations hold Ψ floats";
  const auto x = tokens(B * T, 3), y = tokens(B * T, 1003);
  ASSERT_TRUE(r.engine->forward(x.data(), y.data(), B, T).ok());
  ASSERT_TRUE(r.engine->backward().ok());
  ZeroStrategy& st = r.engine->strategy();
  ASSERT_TRUE(st.reduce_gradients().ok());  // world size 1: the copy alone
  EXPECT_EQ(r.model.activation_memory_lent(), fits);
  std::vector<float> sums(n);
  ASSERT_TRUE(r.accumulator().read(0, std::span<float>(sums)).ok());
  std::vector<float> g(st.owned_gradients().numel);
  ASSERT_TRUE(device::copy_to_host(st.owned_gradients(), g.data()).ok());
  ASSERT_EQ(g.size(), n);
  EXPECT_TRUE(std::equal(g.begin(), g.end(), sums.begin()));
  EXPECT_FALSE(r.engine->forward(x.data(), y.data(), B, T).ok()) << "activations lent out";
  st.zero_gradients();
  EXPECT_FALSE(r.model.activation_memory_lent());
  ASSERT_TRUE(r.engine->forward(x.data(), y.data(), B, T).ok());
}

TEST(EnginePrecision, RoundThroughMatchesScalarConversions) {
  std::vector<float> x(10000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * i) * std::pow(10.0f, int(i % 9) - 4);
  x[3] = 1e6f;  // beyond fp16: inf
  std::vector<float> b(x.size()), h(x.size());
  const device::Ops& ops = device::cpu::host_ops();
  ASSERT_TRUE(ops.round_through(DType::kBFloat16, x, std::span<float>(b)).ok());
  ASSERT_TRUE(ops.round_through(DType::kFloat16, x, std::span<float>(h)).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(b[i], to_float(to_bfloat16(x[i])));
    ASSERT_EQ(h[i], to_float(to_half(x[i])));
  }
  EXPECT_TRUE(std::isinf(h[3]));
}

}  // namespace
}  // namespace zerotrain::engine

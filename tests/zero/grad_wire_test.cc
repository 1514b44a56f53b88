// The gradient wire dtype (communication_data_type): the in-place narrowing
// and widening against the scalar conversions across block boundaries, and
// through the engine at 2 ranks, every stage's reduction exactly what the
// ring computes on the wire type: one SGD step at lr 1 moves each weight by
// minus wire((wire(g0) + wire(g1)) / 2), with g0, g1 the ranks' own
// gradients (16-bit partial sums rounded at each ring step; mean is kAvg).
#include <gtest/gtest.h>

#include <cstring>

#include "comm/rank_threads.h"
#include "core/half.h"
#include "device/cpu/cpu_device.h"
#include "device/cpu/kernels/reference.h"
#include "device/ops.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "zero/dtype_rounding.h"
#include "zero/options.h"

namespace zerotrain::zero {
namespace {

using engine::testutil::copy;
using engine::testutil::make_model;
using engine::testutil::parse;
using engine::testutil::tokens;
using testutil::rounded_through;

uint16_t bits_of(DType wire, float x) {
  return wire == DType::kBFloat16 ? fp32_to_bf16_bits(x) : fp32_to_fp16_bits(x);
}

// 10,000 elements: two whole 4096-element blocks and a tail.
TEST(GradWire, NarrowAndWidenInPlaceEqualTheScalarConversions) {
  for (DType wire : {DType::kBFloat16, DType::kFloat16}) {
    const size_t n = 10000;
    const std::vector<float> x = device::cpu::testing::random_floats(n, 5, 3.0f);
    const device::Ops& ops = device::cpu::host_ops();
    std::vector<float> buf = x;
    ASSERT_TRUE(ops.narrow_in_place(std::span<float>(buf), 0.5f, wire).ok());
    const auto* w = reinterpret_cast<const std::byte*>(buf.data());  // the first 2n bytes
    std::vector<uint16_t> bits(n);
    std::memcpy(bits.data(), w, 2 * n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(bits[i], bits_of(wire, 0.5f * x[i])) << i;
    // Widened back over the same bytes (dst == src), scaled by 4.
    ASSERT_TRUE(ops.widen_in_place(w, n, wire, 4.0f, buf.data()).ok());
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(buf[i], 4.0f * rounded_through(wire, 0.5f * x[i])) << i;
    // A chunk widened to where its fp32 slot lies (dst after src, overlapping),
    // as a rank's own reduce-scatter piece: chunk 1 of 2.
    buf = x;
    ASSERT_TRUE(ops.narrow_in_place(std::span<float>(buf), 1.0f, wire).ok());
    const size_t cc = n / 2;
    ASSERT_TRUE(ops.widen_in_place(w + cc * 2, cc, wire, 1.0f, buf.data() + cc).ok());
    for (size_t i = 0; i < cc; ++i)
      ASSERT_EQ(buf[cc + i], rounded_through(wire, x[cc + i])) << "chunk 1, " << i;
  }
  // fp32: narrowing only scales.
  std::vector<float> f = {1.0f, -3.0f, 0.25f};
  ASSERT_TRUE(
      device::cpu::host_ops().narrow_in_place(std::span<float>(f), 2.0f, DType::kFloat32).ok());
  EXPECT_EQ(f, (std::vector<float>{2.0f, -6.0f, 0.5f}));
}

// One SGD step (lr 1, no clipping) of an fp32 model at 2 ranks, each on its
// own micro-batch: the ranks' local gradients (from a twin of the model,
// in the rank's thread) and the weights before and after.
struct Step {
  std::vector<float> local[2];
  std::vector<float> before, after;
};

Step sgd_step(int stage, const std::string& keys, const std::string& zero = "") {
  Step out;
  comm::testutil::run_ranks(2, [&](comm::Communicator& c) {
    constexpr int64_t rows = 2, T = 16;
    model::gpt2::GptModel m = make_model(rows);
    const auto x = tokens(rows * T, 500 + c.rank()), y = tokens(rows * T, 600 + c.rank());
    const int64_t n = m.layout().total_numel();
    if (c.rank() == 0) out.before = copy(m.parameters(), n);
    auto e = engine::Engine::create(
        parse(R"({"train_batch_size": 4, "gradient_clipping": 0, )" + keys +
                  R"( "zero_optimization": {"stage": )" + std::to_string(stage) +
                  R"(, "reduce_bucket_size": 3000, "allgather_bucket_size": 5000)" + zero + R"(},
                  "optimizer": {"type": "SGD", "params": {"lr": 1}}})",
              2),
        &m, &c);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    // The local gradient from a twin model, after the engine set this
    // rank's compute threads (some kernels' sums depend on the count).
    model::gpt2::GptModel twin = make_model(rows);
    twin.zero_gradients();
    ASSERT_TRUE(twin.forward(x.data(), y.data(), rows, T).ok());
    ASSERT_TRUE(twin.backward().ok());
    out.local[c.rank()] = copy(twin.gradients(), n);
    ASSERT_TRUE((*e)->forward(x.data(), y.data(), rows, T).ok());
    ASSERT_TRUE((*e)->backward().ok());
    ASSERT_TRUE((*e)->step().ok());
    std::vector<float> w(static_cast<size_t>(n));
    ASSERT_TRUE((*e)->strategy().gather_full_parameters(w).ok());
    if (c.rank() == 0) out.after = std::move(w);
  });
  return out;
}

TEST(GradWire, EveryStageReducesInTheWireTypeExactly) {
  struct Case {
    const char* keys;
    DType wire;
  };
  const Case cases[] = {
      {"", DType::kFloat32},  // an fp32 model's default
      {R"("communication_data_type": "bf16",)", DType::kBFloat16},
      {R"("communication_data_type": "fp16",)", DType::kFloat16},
  };
  for (int stage : {0, 1, 2, 3})
    for (const Case& k : cases) {
      const Step s = sgd_step(stage, k.keys);
      ASSERT_EQ(s.after.size(), s.before.size());
      int64_t changed = 0;
      for (size_t i = 0; i < s.before.size(); ++i) {
        const float g0 = rounded_through(k.wire, s.local[0][i]),
                    g1 = rounded_through(k.wire, s.local[1][i]);
        const float reduced = rounded_through(k.wire, (g0 + g1) / 2.0f);
        ASSERT_EQ(s.after[i], s.before[i] - reduced)
            << "stage " << stage << " " << k.keys << " element " << i;
        changed += s.after[i] != s.before[i];
      }
      EXPECT_GT(changed, static_cast<int64_t>(s.before.size() / 2));
    }
}

// The other reduction routes of stages 1-2 — reduce_scatter false (the
// bucketed all-reduce) and overlap_comm (two buckets in flight) — and
// stage 3 with overlap: the same reduction, bit for bit.
TEST(GradWire, AllreduceBucketsAndOverlapReduceInTheWireTypeToo) {
  const char* bf16 = R"("communication_data_type": "bf16",)";
  struct Route {
    int stage;
    const char* zero;
  };
  for (const Route& r :
       {Route{1, R"(, "reduce_scatter": false)"}, Route{2, R"(, "reduce_scatter": false)"},
        Route{2, R"(, "overlap_comm": true)"}, Route{3, R"(, "overlap_comm": true)"}}) {
    const Step s = sgd_step(r.stage, bf16, r.zero);
    for (size_t i = 0; i < s.before.size(); ++i) {
      const DType w = DType::kBFloat16;
      const float reduced = rounded_through(
          w, (rounded_through(w, s.local[0][i]) + rounded_through(w, s.local[1][i])) / 2);
      ASSERT_EQ(s.after[i], s.before[i] - reduced) << "stage " << r.stage << r.zero << " " << i;
    }
  }
}

}  // namespace
}  // namespace zerotrain::zero

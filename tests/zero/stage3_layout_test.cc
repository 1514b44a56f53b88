// Stage3Layout: the owned pieces of all ranks tile Ψ exactly once, the
// lists tile each group, chunks are ceil(count/N), persistence follows the
// thresholds, and pack/unpack are inverse.
#include "zero/stage3_layout.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "model/gpt2/config.h"
#include "model/gpt2/layout.h"
#include "model/param_layout.h"

namespace zerotrain::zero {
namespace {

model::gpt2::GptConfig small_gpt() {
  return {.n_layer = 2, .n_head = 2, .n_embd = 32, .seq_len = 16, .vocab_size = 64,
          .padded_vocab = 64};
}

TEST(Stage3Layout, OwnedPiecesOfAllRanksTilePsiExactlyOnce) {
  const model::ParamLayout layout = model::gpt2::make_layout(small_gpt());
  const int64_t psi = layout.total_numel();
  for (int n : {1, 2, 3, 4, 7})
    for (int64_t threshold : {int64_t{0}, int64_t{100}, int64_t{1} << 40}) {
      std::vector<int> owner(static_cast<size_t>(psi), -1);
      int64_t total = 0;
      for (int r = 0; r < n; ++r) {
        const Stage3Layout plan(layout, n, r, threshold);
        int64_t expect_owned = 0;  // owned offsets run 0.. in flat order
        for (const Range& piece : plan.owned_ranges()) {
          for (int64_t i = piece.offset; i < piece.end(); ++i) {
            ASSERT_EQ(owner[i], -1) << "element " << i << " owned twice (n " << n << ")";
            owner[i] = r;
          }
          expect_owned += piece.count;
        }
        EXPECT_EQ(expect_owned, plan.owned_numel());
        total += plan.owned_numel();
        // Every piece's owned offset is the running total in flat order.
        std::vector<Piece> pieces;
        for (const GroupPlan& g : plan.groups())
          for (const CompactList* l : {&g.gathered, &g.persistent})
            pieces.insert(pieces.end(), l->mine.begin(), l->mine.end());
        std::sort(pieces.begin(), pieces.end(),
                  [](const Piece& a, const Piece& b) { return a.flat < b.flat; });
        int64_t next = 0;
        for (const Piece& p : pieces) {
          EXPECT_EQ(p.owned, next);
          next += p.count;
        }
      }
      EXPECT_EQ(total, psi) << "n " << n << " threshold " << threshold;
      EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0);
    }
}

TEST(Stage3Layout, ListsTileEachGroupAndChunksAreCeilOfCountOverN) {
  const model::ParamLayout layout = model::gpt2::make_layout(small_gpt());
  const Stage3Layout plan(layout, 3, 1, 100);
  for (const GroupPlan& g : plan.groups()) {
    const auto& gi = layout.groups()[g.index];
    EXPECT_EQ(g.gathered.count + g.persistent.count, gi.numel) << gi.name;
    for (const CompactList* l : {&g.gathered, &g.persistent}) {
      EXPECT_EQ(l->chunk, (l->count + 2) / 3);
      EXPECT_EQ(l->padded(), 3 * l->chunk);
    }
    std::vector<int> hit(static_cast<size_t>(gi.numel), 0);
    for (const CompactList* l : {&g.gathered, &g.persistent})
      for (const Range& e : l->extents)
        for (int64_t i = e.offset; i < e.end(); ++i) ++hit[i - gi.offset];
    EXPECT_EQ(std::count(hit.begin(), hit.end(), 1), gi.numel) << gi.name;
  }
  EXPECT_EQ(plan.persistent_numel(),
            std::accumulate(plan.groups().begin(), plan.groups().end(), int64_t{0},
                            [](int64_t a, const GroupPlan& g) { return a + g.persistent.count; }));
}

TEST(Stage3Layout, TensorsBelowTheThresholdArePersistentWithinTheModelLimit) {
  const model::ParamLayout layout = model::gpt2::make_layout(small_gpt());
  // C = 32: ln weights/biases (32), attn.c_proj.bias and mlp.c_proj.bias
  // (32) and ln_f are below 100; c_attn.bias (96) too; c_fc.bias (128) not.
  const Stage3Layout plan(layout, 2, 0, 100);
  const GroupPlan& block = plan.group(1);
  int persistent = 0;
  for (int t = 0; t < layout.groups()[1].tensor_count; ++t) {
    const model::TensorInfo& ti = layout.tensors()[layout.groups()[1].first_tensor + t];
    bool in_persistent = false;
    for (const Range& e : block.persistent.extents)
      in_persistent = in_persistent || (ti.offset >= e.offset && ti.offset < e.end());
    EXPECT_EQ(in_persistent, ti.numel < 100) << ti.name;
    persistent += in_persistent;
  }
  EXPECT_EQ(persistent, 7);
  EXPECT_EQ(plan.group(3).gathered.count, 0) << "ln_f is persistent whole";
  // A model-wide limit of one block's persistent elements: the first
  // block's small tensors only.
  const Stage3Layout capped(layout, 2, 0, 100, block.persistent.count);
  EXPECT_EQ(capped.persistent_numel(), block.persistent.count);
  EXPECT_EQ(capped.group(2).persistent.count, 0);
  EXPECT_EQ(Stage3Layout(layout, 2, 0, 0).persistent_numel(), 0);
}

TEST(Stage3Layout, PackAndUnpackAreInverse) {
  const model::ParamLayout layout = model::gpt2::make_layout(small_gpt());
  const Stage3Layout plan(layout, 4, 2, 100);
  const GroupPlan& g = plan.group(1);
  std::vector<float> full(static_cast<size_t>(g.numel));
  std::iota(full.begin(), full.end(), 1.0f);
  std::vector<float> back(full.size(), -1.0f);
  for (const CompactList* l : {&g.gathered, &g.persistent}) {
    std::vector<float> packed(static_cast<size_t>(l->padded()), -1.0f);
    ASSERT_TRUE(pack_list(*l, g.offset, full, packed).ok());
    for (int64_t i = l->count; i < l->padded(); ++i) EXPECT_EQ(packed[i], 0.0f) << "padding";
    // Rank 2's pieces address its own chunk of the packed list.
    for (const Piece& p : l->mine)
      for (int64_t k = 0; k < p.count; ++k)
        EXPECT_EQ(packed[2 * l->chunk + p.compact + k], full[p.flat - g.offset + k]);
    ASSERT_TRUE(unpack_list(*l, g.offset, packed, back).ok());
  }
  EXPECT_EQ(back, full);
}

}  // namespace
}  // namespace zerotrain::zero

// DataLoader: window contents, the per-epoch shuffle, rank assignment
// (world 1 × B=4 == world 2 × B=2 == world 4 × B=1, with and without
// gradient accumulation, across epoch boundaries), position save/restore
// (also into another world size), and refusals.
#include "train/data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "train/data/tokenizer.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

// Token i has value i, so a window's contents reveal where it came from.
std::shared_ptr<const TokenDataset> counting_dataset(uint64_t n) {
  std::vector<uint32_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), 0u);
  return std::make_shared<const TokenDataset>(
      TokenDataset::from_tokens(std::move(tokens), 1u << 20));
}

DataLoader make_loader(std::shared_ptr<const TokenDataset> ds, LoaderOptions o) {
  auto loader = DataLoader::create(std::move(ds), o);
  EXPECT_TRUE(loader.ok()) << loader.status().to_string();
  return std::move(loader).value();
}

// The windows of the next `micro_steps` micro-steps, all ranks of a world
// of `world` ranks with micro-batch `b` and `accum` accumulation steps, in
// (micro-step, rank, row) order.
std::vector<uint64_t> global_windows(std::shared_ptr<const TokenDataset> ds, int64_t world,
                                     int64_t b, int64_t accum, int micro_steps, uint64_t seed = 5) {
  std::vector<DataLoader> ranks;
  for (int64_t r = 0; r < world; ++r) {
    ranks.push_back(make_loader(ds, {.seq_len = 8,
                                     .micro_batch = b,
                                     .grad_accum_steps = accum,
                                     .world_size = world,
                                     .rank = r,
                                     .seed = seed}));
  }
  std::vector<uint64_t> out;
  TokenBatch batch;
  for (int m = 0; m < micro_steps; ++m) {
    for (auto& loader : ranks) {
      loader.next(&batch);
      out.insert(out.end(), batch.windows.begin(), batch.windows.end());
    }
  }
  return out;
}

TEST(Loader, WindowCountIsFloorOfTokensMinusOneOverT) {
  EXPECT_EQ(window_count(65, 64), 1u);
  EXPECT_EQ(window_count(64, 64), 0u);
  EXPECT_EQ(window_count(1000, 8), 124u);  // 999 / 8
  EXPECT_EQ(window_count(0, 8), 0u);
}

TEST(Loader, EpochOrderIsASeededPermutation) {
  const auto a = epoch_order(1000, 7, 0, true);
  std::vector<uint64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), uint64_t{0});
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
  EXPECT_EQ(a, epoch_order(1000, 7, 0, true));
  EXPECT_NE(a, epoch_order(1000, 7, 1, true));
  EXPECT_NE(a, epoch_order(1000, 8, 0, true));
  EXPECT_EQ(epoch_order(1000, 7, 3, false), identity);
}

TEST(Loader, BatchRowsAreWindowsOfTPlusOneWithShiftedTargets) {
  auto ds = counting_dataset(1001);
  DataLoader loader = make_loader(ds, {.seq_len = 8, .micro_batch = 3, .seed = 1});
  const TokenBatch batch = loader.next();
  ASSERT_EQ(batch.tokens.size(), 3u * 9);
  std::vector<int32_t> inputs, targets;
  batch.split(&inputs, &targets);
  ASSERT_EQ(inputs.size(), 24u);
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t start = static_cast<int64_t>(batch.windows[b]) * 8;
    for (int64_t t = 0; t <= 8; ++t) EXPECT_EQ(batch.row(b)[t], start + t);
    for (int64_t t = 0; t < 8; ++t) {
      EXPECT_EQ(inputs[b * 8 + t], start + t);
      EXPECT_EQ(targets[b * 8 + t], start + t + 1);
    }
  }
}

TEST(Loader, WorldSizesWithTheSameGlobalBatchSeeTheSameWindowsInRankOrder) {
  // 90 windows, global batch 4: 22 steps an epoch (2 windows dropped), so
  // 60 micro-steps cross two epoch boundaries.
  auto ds = counting_dataset(90 * 8 + 1);
  const auto one = global_windows(ds, 1, 4, 1, 60);
  EXPECT_EQ(global_windows(ds, 2, 2, 1, 60), one);
  EXPECT_EQ(global_windows(ds, 4, 1, 1, 60), one);
  // Accumulation: per optimizer step the same 4 windows in the same order.
  EXPECT_EQ(global_windows(ds, 1, 1, 4, 240), one);
  EXPECT_EQ(global_windows(ds, 2, 1, 2, 120), one);
  EXPECT_EQ(global_windows(ds, 1, 2, 2, 120), one);
  // And it is the documented order: slot s of epoch e is epoch_order(W, seed, e)[s].
  const auto order0 = epoch_order(90, 5, 0, true), order1 = epoch_order(90, 5, 1, true);
  for (size_t s = 0; s < 88; ++s) ASSERT_EQ(one[s], order0[s]) << s;
  for (size_t s = 0; s < 88; ++s) ASSERT_EQ(one[88 + s], order1[s]) << s;
}

TEST(Loader, EachEpochVisitsDistinctWindowsAndReshufflesDeterministically) {
  auto ds = counting_dataset(50 * 8 + 1);
  DataLoader loader = make_loader(ds, {.seq_len = 8, .micro_batch = 2, .world_size = 1, .seed = 3});
  EXPECT_EQ(loader.steps_per_epoch(), 25u);
  std::vector<std::vector<uint64_t>> epochs(3);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(loader.position(), (LoaderPosition{3, static_cast<uint64_t>(e), 0}));
    for (int s = 0; s < 25; ++s) {
      const TokenBatch b = loader.next();
      epochs[e].insert(epochs[e].end(), b.windows.begin(), b.windows.end());
    }
    EXPECT_EQ(std::set<uint64_t>(epochs[e].begin(), epochs[e].end()).size(), 50u);
    EXPECT_EQ(epochs[e], epoch_order(50, 3, e, true));
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
}

TEST(Loader, RanksTakeContiguousDisjointSlices) {
  auto ds = counting_dataset(64 * 8 + 1);
  std::set<uint64_t> seen;
  for (int64_t r = 0; r < 4; ++r) {
    DataLoader loader =
        make_loader(ds, {.seq_len = 8, .micro_batch = 2, .world_size = 4, .rank = r, .seed = 11});
    const auto order = epoch_order(64, 11, 0, true);
    for (int m = 0; m < 8; ++m) {
      const TokenBatch b = loader.next();
      EXPECT_EQ(b.windows[0], order[m * 8 + r * 2]);
      EXPECT_EQ(b.windows[1], order[m * 8 + r * 2 + 1]);
      seen.insert(b.windows.begin(), b.windows.end());
    }
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST(Loader, SavedPositionContinuesWithIdenticalBatches) {
  auto ds = counting_dataset(30 * 8 + 1);
  const LoaderOptions o{.seq_len = 8, .micro_batch = 3, .world_size = 2, .rank = 1, .seed = 42};
  DataLoader a = make_loader(ds, o);
  for (int i = 0; i < 7; ++i) a.next();  // 5 micro-steps an epoch: now in epoch 1
  const std::string saved = a.position().to_string();
  EXPECT_EQ(saved, "seed=42 epoch=1 window=12");
  std::vector<std::vector<int32_t>> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(a.next().tokens);

  DataLoader b =
      make_loader(ds, {.seq_len = 8, .micro_batch = 3, .world_size = 2, .rank = 1, .seed = 999});
  auto parsed = LoaderPosition::parse(saved);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  ASSERT_TRUE(b.restore(*parsed).ok());
  EXPECT_EQ(b.position(), *parsed);  // the saved seed replaces the loader's 999
  for (int i = 0; i < 12; ++i) EXPECT_EQ(b.next().tokens, expected[i]) << i;
  EXPECT_EQ(b.position(), a.position());
}

TEST(Loader, PositionFromOneRankRestoresAtFourRanks) {
  auto ds = counting_dataset(40 * 8 + 1);
  DataLoader solo = make_loader(ds, {.seq_len = 8, .micro_batch = 4, .seed = 6});
  for (int i = 0; i < 3; ++i) solo.next();
  const LoaderPosition pos = solo.position();
  std::vector<uint64_t> expected;
  for (int i = 0; i < 9; ++i) {
    const TokenBatch b = solo.next();
    expected.insert(expected.end(), b.windows.begin(), b.windows.end());
  }
  std::vector<DataLoader> ranks;
  for (int64_t r = 0; r < 4; ++r) {
    ranks.push_back(
        make_loader(ds, {.seq_len = 8, .micro_batch = 1, .world_size = 4, .rank = r, .seed = 6}));
    ASSERT_TRUE(ranks.back().restore(pos).ok());
  }
  std::vector<uint64_t> got;
  for (int i = 0; i < 9; ++i) {
    for (auto& l : ranks) got.push_back(l.next().windows[0]);
  }
  EXPECT_EQ(got, expected);
}

TEST(Loader, RestoreRejectsMisalignedOrOutOfRangeWindow) {
  auto ds = counting_dataset(30 * 8 + 1);
  DataLoader l = make_loader(ds, {.seq_len = 8, .micro_batch = 2, .world_size = 2, .seed = 1});
  Status st = l.restore({1, 0, 6});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("multiple of micro_batch × world_size = 4"), std::string::npos)
      << st.message();
  EXPECT_FALSE(l.restore({1, 0, 32}).ok());  // the epoch uses 28 of 30 windows
  ASSERT_TRUE(l.restore({1, 2, 28}).ok());   // the end of epoch 2 is the start of epoch 3
  EXPECT_EQ(l.position(), (LoaderPosition{1, 3, 0}));
}

TEST(Loader, PositionParseRoundTripsAndRejectsGarbage) {
  const LoaderPosition p{18446744073709551615ull, 12, 4096};
  auto back = LoaderPosition::parse(p.to_string());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, p);
  for (const char* bad :
       {"", "seed=1 epoch=2", "seed=1 epoch=2 window=x", "seed=1  epoch=2 window=3",
        "seed=1 epoch=2 window=3 ", "epoch=2 seed=1 window=3", "seed=-1 epoch=0 window=0"}) {
    auto r = LoaderPosition::parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(std::string("\"") + bad + "\""), std::string::npos);
  }
}

TEST(Loader, CreateRejectsBadOptionsAndTooSmallDatasets) {
  auto ds = counting_dataset(100);
  auto bad_rank = DataLoader::create(ds, {.seq_len = 8, .world_size = 2, .rank = 2});
  EXPECT_NE(bad_rank.status().message().find("rank 2 is outside [0, 2)"), std::string::npos);
  auto zero = DataLoader::create(ds, {.seq_len = 0});
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  // 100 tokens = 12 windows of 8 + 1; a global batch of 16 needs 129 tokens.
  auto small = DataLoader::create(
      ds, {.seq_len = 8, .micro_batch = 4, .grad_accum_steps = 2, .world_size = 2});
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("has 100 tokens, 12 windows"), std::string::npos)
      << small.status().message();
  EXPECT_NE(small.status().message().find("needs at least 129 tokens"), std::string::npos);
}

TEST(Loader, ShardBackedDatasetGivesTheSameBatchesAsInMemory) {
  testing::TempDir dir;
  std::vector<uint32_t> tokens(2000);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<uint32_t>((i * 31 + i / 7) % 256);
  ASSERT_TRUE(write_token_splits(tokens, 256, dir.path(), 333, 0.0).ok());  // 7 shards
  auto shards = TokenDataset::open_split(dir.path(), "train");
  ASSERT_TRUE(shards.ok()) << shards.status().to_string();
  auto on_disk = std::make_shared<const TokenDataset>(std::move(shards).value());
  auto in_memory = std::make_shared<const TokenDataset>(TokenDataset::from_tokens(tokens, 256));
  const LoaderOptions o{.seq_len = 16, .micro_batch = 4, .seed = 2};
  DataLoader a = make_loader(on_disk, o), b = make_loader(in_memory, o);
  for (int i = 0; i < 60; ++i) ASSERT_EQ(a.next().tokens, b.next().tokens) << i;
}

}  // namespace
}  // namespace zerotrain::train

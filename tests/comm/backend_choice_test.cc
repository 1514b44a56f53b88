// The GPU job's backend decision (src/comm/backend_choice.h): NCCL when
// every rank has a GPU of its own, staged Gloo when two ranks share one
// (same host, same PCI bus id) or the build has no NCCL, and
// ZEROTRAIN_COMM_BACKEND forcing either; and the (host, bus id) exchange
// through a store between rank threads.
#include "comm/backend_choice.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <thread>

namespace zerotrain::comm {
namespace {

using Gpus = std::vector<RankGpu>;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(BackendChoice, DistinctGpusChooseNccl) {
  Gpus gpus = {{"node-a", "0000:19:00.0"},
               {"node-a", "0000:3b:00.0"},
               {"node-b", "0000:19:00.0"},
               {"node-b", "0000:3b:00.0"}};
  StatusOr<BackendChoice> c = choose_gpu_backend(BackendPreference::kAuto, gpus, true);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->backend, GpuBackend::kNccl);
}

TEST(BackendChoice, TwoRanksOnOneGpuChooseStagedGlooNamingThem) {
  Gpus gpus = {{"node-a", "0000:19:00.0"},
               {"node-a", "0000:3b:00.0"},
               {"node-b", "0000:19:00.0"},
               {"node-a", "0000:3b:00.0"}};
  StatusOr<BackendChoice> c = choose_gpu_backend(BackendPreference::kAuto, gpus, true);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->backend, GpuBackend::kGloo);
  EXPECT_TRUE(contains(c->reason, "ranks 1 and 3 share GPU 0000:3b:00.0 on node-a")) << c->reason;
  EXPECT_TRUE(contains(c->reason, "staged")) << c->reason;
}

TEST(BackendChoice, SameBusIdOnDifferentHostsIsNccl) {
  Gpus gpus = {{"node-a", "0000:19:00.0"}, {"node-b", "0000:19:00.0"}};
  EXPECT_EQ(choose_gpu_backend(BackendPreference::kAuto, gpus, true)->backend, GpuBackend::kNccl);
}

TEST(BackendChoice, OneRankIsNccl) {
  EXPECT_EQ(choose_gpu_backend(BackendPreference::kAuto, {{"h", "0000:19:00.0"}}, true)->backend,
            GpuBackend::kNccl);
}

TEST(BackendChoice, NoNcclInTheBuildIsGloo) {
  StatusOr<BackendChoice> c = choose_gpu_backend(BackendPreference::kAuto, {}, false);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->backend, GpuBackend::kGloo);
  EXPECT_TRUE(contains(c->reason, "no NCCL")) << c->reason;
}

TEST(BackendChoice, ForcedGlooIsGlooOnDistinctGpus) {
  Gpus gpus = {{"node-a", "0000:19:00.0"}, {"node-a", "0000:3b:00.0"}};
  StatusOr<BackendChoice> c = choose_gpu_backend(BackendPreference::kGloo, gpus, true);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->backend, GpuBackend::kGloo);
  EXPECT_TRUE(contains(c->reason, "ZEROTRAIN_COMM_BACKEND=gloo")) << c->reason;
}

TEST(BackendChoice, ForcedNcclOnDistinctGpusIsNccl) {
  Gpus gpus = {{"node-a", "0000:19:00.0"}, {"node-a", "0000:3b:00.0"}};
  EXPECT_EQ(choose_gpu_backend(BackendPreference::kNccl, gpus, true)->backend, GpuBackend::kNccl);
}

TEST(BackendChoice, ForcedNcclOnASharedGpuIsRefusedNamingTheRanks) {
  Gpus gpus = {{"node-a", "0000:19:00.0"}, {"node-a", "0000:19:00.0"}};
  StatusOr<BackendChoice> c = choose_gpu_backend(BackendPreference::kNccl, gpus, true);
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(c.status().message(), "ranks 0 and 1 share GPU 0000:19:00.0"))
      << c.status().message();
}

TEST(BackendChoice, ForcedNcclWithoutNcclIsUnavailable) {
  EXPECT_EQ(choose_gpu_backend(BackendPreference::kNccl, {}, false).status().code(),
            StatusCode::kUnavailable);
}

TEST(BackendChoice, PreferenceFromTheEnvironment) {
  unsetenv("ZEROTRAIN_COMM_BACKEND");
  EXPECT_EQ(*backend_preference_from_env(), BackendPreference::kAuto);
  setenv("ZEROTRAIN_COMM_BACKEND", "gloo", 1);
  EXPECT_EQ(*backend_preference_from_env(), BackendPreference::kGloo);
  setenv("ZEROTRAIN_COMM_BACKEND", "nccl", 1);
  EXPECT_EQ(*backend_preference_from_env(), BackendPreference::kNccl);
  setenv("ZEROTRAIN_COMM_BACKEND", "mpi", 1);
  StatusOr<BackendPreference> bad = backend_preference_from_env();
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(bad.status().message(), "ZEROTRAIN_COMM_BACKEND=mpi"));
  unsetenv("ZEROTRAIN_COMM_BACKEND");
}

TEST(BackendChoice, RankGpuRoundTripsThroughItsStoreText) {
  RankGpu g{"node-a.example", "0000:19:00.0"};
  StatusOr<RankGpu> back = decode_rank_gpu(encode_rank_gpu(g));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->host, g.host);
  EXPECT_EQ(back->pci_bus_id, g.pci_bus_id);
  EXPECT_EQ(decode_rank_gpu("no tab").status().code(), StatusCode::kInvalidArgument);
}

CommOptions options_for(int rank, int n, std::shared_ptr<Store> store,
                        std::chrono::milliseconds timeout) {
  CommOptions o;
  o.rank = rank;
  o.world_size = n;
  o.store = std::move(store);
  o.timeout = timeout;
  return o;
}

TEST(BackendChoice, EveryRankReachesTheSameChoiceFromTheStore) {
  auto store = std::make_shared<MemoryStore>();
  const Gpus mine = {
      {"node-a", "0000:19:00.0"}, {"node-a", "0000:3b:00.0"}, {"node-a", "0000:19:00.0"}};
  std::vector<StatusOr<BackendChoice>> choices(3, internal_error("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      StatusOr<Gpus> all =
          gather_rank_gpus(*store, options_for(r, 3, store, std::chrono::seconds(5)), mine[r]);
      ASSERT_TRUE(all.ok()) << all.status().to_string();
      ASSERT_EQ(all->size(), 3u);
      choices[r] = choose_gpu_backend(BackendPreference::kAuto, *all, true);
    });
  for (auto& t : threads) t.join();
  for (const auto& c : choices) {
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->backend, GpuBackend::kGloo);
    EXPECT_TRUE(contains(c->reason, "ranks 0 and 2 share GPU 0000:19:00.0")) << c->reason;
  }
}

TEST(BackendChoice, GatherTimesOutNamingTheMissingRank) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<Status> results(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      results[r] =
          gather_rank_gpus(*store, options_for(r, 3, store, std::chrono::milliseconds(200)),
                           {"node-a", "0000:19:00.0"})
              .status();
    });
  for (auto& t : threads) t.join();
  for (const Status& st : results) {
    EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.to_string();
    EXPECT_TRUE(contains(st.message(), "rank 2 of world size 3 did not arrive")) << st.message();
  }
}

}  // namespace
}  // namespace zerotrain::comm

// The PyTorch peer's data side (bench/peer/zt_data.py) against the C++ loader:
// for shards written by write_default_corpus (several shards, so windows
// span files) and several (T, B, A, R, rank, seed) layouts over more than one
// epoch, the Python replica yields the same window ids and the same tokens,
// micro-step for micro-step, as train::DataLoader. This is what makes
// bench/compare's peer train on our batches; it needs /usr/bin/python3 but
// not torch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "train/data/corpus.h"
#include "train/data/dataset.h"
#include "train/data/loader.h"

namespace zerotrain::train {
namespace {

struct Layout {
  int64_t seq_len, micro_batch, grad_accum, world_size, rank;
  uint64_t seed;
};

// The Python side's output for `layout`: its stdout, exit status in *status.
std::string run_python(const std::string& dir, const Layout& l, int micro_steps, int* status) {
  const std::string cmd = "/usr/bin/python3 -B " ZT_SOURCE_DIR "/bench/peer/zt_data.py " + dir +
                          " --seq-len " + std::to_string(l.seq_len) + " --micro-batch " +
                          std::to_string(l.micro_batch) + " --grad-accum " +
                          std::to_string(l.grad_accum) + " --world-size " +
                          std::to_string(l.world_size) + " --rank " + std::to_string(l.rank) +
                          " --seed " + std::to_string(l.seed) + " --micro-steps " +
                          std::to_string(micro_steps) + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

// The same lines from the C++ loader.
std::string run_cpp(std::shared_ptr<const TokenDataset> ds, const Layout& l, int micro_steps,
                    uint64_t* windows_per_epoch) {
  StatusOr<DataLoader> loader =
      DataLoader::create(ds, {.seq_len = l.seq_len,
                              .micro_batch = l.micro_batch,
                              .grad_accum_steps = l.grad_accum,
                              .world_size = l.world_size,
                              .rank = l.rank,
                              .seed = l.seed});
  EXPECT_TRUE(loader.ok()) << loader.status().to_string();
  if (!loader.ok()) return "";
  *windows_per_epoch = loader->steps_per_epoch() * loader->global_batch_windows();
  std::ostringstream out;
  TokenBatch b;
  for (int m = 0; m < micro_steps; ++m) {
    loader->next(&b);
    out << "windows";
    for (uint64_t w : b.windows) out << ' ' << w;
    out << "\ntokens";
    for (int32_t t : b.tokens) out << ' ' << t;
    out << '\n';
  }
  return out.str();
}

class PeerData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("zt_peer_data_test." + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    // 6,000 bytes in shards of 1,000 tokens: windows cross shard boundaries.
    Status s = write_default_corpus(dir_.string(), {.seed = 1337, .target_bytes = 6000}, 1000, 0.1);
    ASSERT_TRUE(s.ok()) << s.to_string();
    StatusOr<TokenDataset> ds = TokenDataset::open_split(dir_.string(), "train");
    ASSERT_TRUE(ds.ok()) << ds.status().to_string();
    train_ = std::make_shared<TokenDataset>(std::move(*ds));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::shared_ptr<const TokenDataset> train_;
};

TEST_F(PeerData, PythonLoaderGivesTheCppBatchesAcrossEpochs) {
  const Layout layouts[] = {
      {.seq_len = 16, .micro_batch = 2, .grad_accum = 1, .world_size = 2, .rank = 1, .seed = 7},
      {.seq_len = 16, .micro_batch = 2, .grad_accum = 1, .world_size = 2, .rank = 0, .seed = 7},
      {.seq_len = 32, .micro_batch = 3, .grad_accum = 2, .world_size = 1, .rank = 0, .seed = 99},
      {.seq_len = 256, .micro_batch = 2, .grad_accum = 1, .world_size = 2, .rank = 1,
       .seed = 1234},
  };
  for (const Layout& l : layouts) {
    SCOPED_TRACE("T=" + std::to_string(l.seq_len) + " B=" + std::to_string(l.micro_batch) +
                 " A=" + std::to_string(l.grad_accum) + " R=" + std::to_string(l.world_size) +
                 " rank=" + std::to_string(l.rank) + " seed=" + std::to_string(l.seed));
    uint64_t per_epoch = 0;
    const int micro_steps = 200;
    const std::string want = run_cpp(train_, l, micro_steps, &per_epoch);
    // The micro-steps must reach the second epoch, or the reshuffle goes untested.
    ASSERT_GT(static_cast<uint64_t>(micro_steps * l.micro_batch * l.world_size), per_epoch);
    int status = 0;
    const std::string got = run_python(dir_.string(), l, micro_steps, &status);
    ASSERT_EQ(status, 0) << got;
    EXPECT_EQ(got, want);
  }
}

TEST_F(PeerData, PythonReaderRefusesADamagedShard) {
  const std::filesystem::path shard = dir_ / "train_000000.bin";
  {
    FILE* f = std::fopen(shard.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 100, SEEK_SET);  // inside the payload
    const unsigned char bad = 0xEE;
    std::fwrite(&bad, 1, 1, f);
    std::fclose(f);
  }
  int status = 0;
  const std::string out = run_python(
      dir_.string(),
      {.seq_len = 16, .micro_batch = 1, .grad_accum = 1, .world_size = 1, .rank = 0, .seed = 1}, 1,
      &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("train_000000.bin: payload checksum mismatch"), std::string::npos) << out;
}

}  // namespace
}  // namespace zerotrain::train

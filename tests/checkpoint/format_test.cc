// The sharded checkpoint format: manifest round trip and self-checksum,
// shard files with chunk CRCs, and the reader that re-partitions ranges
// written by one layout into any other.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/manifest.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/test_util.h"
#include "core/atomic_file.h"
#include "core/crc32.h"

namespace zerotrain::checkpoint {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

// Ψ = 1000 values split over three "ranks" as uneven ranges; state k of
// element i is 1000 * k + i, so any read can be checked by formula.
constexpr int64_t kNumel = 1000;
const std::vector<std::vector<Range>> kRanges = {
    {{0, 100}, {500, 200}}, {{100, 300}}, {{400, 100}, {700, 300}}};

// DIR/ck, created: the tag directory of these tests.
std::string root(const TempDir& dir) {
  std::filesystem::create_directories(dir.file("ck"));
  return dir.file("ck");
}

float value(int k, int64_t i) { return static_cast<float>(1000 * k + i); }

Manifest write_checkpoint(const std::string& dir) {
  Manifest m;
  m.tag = "t";
  m.world_size = 3;
  m.stage = 2;
  m.precision = "fp32";
  m.numel = kNumel;
  m.family = "gpt2";
  m.model_config = {{"model_type", "gpt2"},  {"n_layer", 1},     {"n_head", 1},
                    {"n_embd", 8},           {"n_positions", 4}, {"vocab_size", 5},
                    {"padded_vocab_size", 8}};
  m.layout = {{"a", 0, 600}, {"b", 600, 400}};
  m.state_names = {"exp_avg", "exp_avg_sq"};
  // The engine's own JSON (opaque to the manifest): a double must survive.
  m.engine_state = {{"optimizer", {{"name", "adamw"}, {"lr", 1.0 / 3.0}}},
                    {"counters", {{"global_steps", 7}}}};
  m.client_state = {{"train_loader", "seed=1 epoch=0 window=56"}};
  for (int r = 0; r < 3; ++r) {
    std::vector<std::vector<float>> data(3);
    for (int k = 0; k < 3; ++k)
      for (const Range& x : kRanges[r])
        for (int64_t i = x.offset; i < x.end(); ++i) data[k].push_back(value(k, i));
    const std::string file = "zero_rank_" + std::to_string(r) + "_states.ztshard";
    auto w = write_shard(dir + "/" + file, r, kRanges[r],
                         {{"master", data[0]}, {"exp_avg", data[1]}, {"exp_avg_sq", data[2]}});
    EXPECT_TRUE(w.ok()) << w.status().to_string();
    auto d = describe_shard(dir + "/" + file);
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(d->bytes, w->bytes);
    EXPECT_EQ(d->header_crc32, w->header_crc32);
    EXPECT_EQ(d->ranges, kRanges[r]);
    m.shards.push_back(*d);
  }
  EXPECT_TRUE(atomic_write_file(dir + "/" + kManifestName, manifest_to_json(m)).ok());
  return m;
}

TEST(Manifest, RoundTripsEveryFieldExactly) {
  TempDir dir;
  const Manifest m = write_checkpoint(root(dir));
  auto back = read_manifest(root(dir));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->format_version, 2);
  EXPECT_EQ(back->engine_state["optimizer"]["lr"].get<double>(), 1.0 / 3.0);  // bit for bit
  EXPECT_EQ(back->engine_state, m.engine_state);
  EXPECT_EQ(back->family, "gpt2");
  EXPECT_EQ(back->model_config, m.model_config);
  EXPECT_EQ(back->layout, m.layout);
  EXPECT_EQ(back->state_names, m.state_names);
  EXPECT_EQ(back->client_state, m.client_state);
  ASSERT_EQ(back->shards.size(), 3u);
  EXPECT_EQ(back->shards[2].ranges, kRanges[2]);
}

// A version-1 manifest, as the first checkpoint format wrote it (GPT-2
// dimensions and the engine's state as top-level objects), loads into the
// version-2 fields: the family and its HF config, the engine's JSON.
TEST(Manifest, AVersion1ManifestLoadsIntoVersion2Fields) {
  TempDir dir;
  nlohmann::json j;
  j["format"] = "zerotrain-checkpoint";
  j["format_version"] = 1;
  j["tag"] = "global_step3";
  j["world_size"] = 2;
  j["zero_stage"] = 3;
  j["precision"] = "bf16";
  j["numel"] = 100;
  j["model"] = {{"n_layer", 2},  {"n_head", 2},      {"n_embd", 32},
                {"seq_len", 16}, {"vocab_size", 50}, {"padded_vocab", 64}};
  j["param_layout"] = nlohmann::json::array({{"wte.weight", 0, 100}});
  j["optimizer"] = {{"name", "adamw"},
                    {"state_names", {"exp_avg", "exp_avg_sq"}},
                    {"step_count", 3},
                    {"lr", 0.25}};
  j["scheduler"] = {{"type", "WarmupLR"}, {"last_batch_iteration", 2}};
  j["loss_scaler"] = {
      {"cur_scale", 1.0}, {"cur_iter", 3}, {"last_overflow_iter", -1}, {"cur_hysteresis", 2}};
  j["engine"] = {{"global_steps", 3}, {"skipped_steps", 0}, {"micro_steps", 6}};
  j["client_state"] = nlohmann::json::object();
  j["shards"] = nlohmann::json::array(
      {{{"rank", 0}, {"file", "s0"}, {"bytes", 1}, {"header_crc32", 0}, {"ranges", {{0, 100}}}}});
  j["extra_files"] = nlohmann::json::array();
  const std::string canonical = j.dump();
  j["checksum"] = crc32(canonical.data(), canonical.size());
  write_bytes(root(dir) + "/" + kManifestName, j.dump(1) + "\n");
  auto m = read_manifest(root(dir));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->format_version, 1);
  EXPECT_EQ(m->family, "gpt2");
  EXPECT_EQ(m->model_config["model_type"], "gpt2");
  EXPECT_EQ(m->model_config["n_positions"], 16);
  EXPECT_EQ(m->model_config["padded_vocab_size"], 64);
  EXPECT_EQ(m->state_names, (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(m->engine_state["optimizer"]["lr"], 0.25);
  EXPECT_EQ(m->engine_state["scheduler"]["last_batch_iteration"], 2);
  EXPECT_EQ(m->engine_state["counters"]["micro_steps"], 6);
  EXPECT_EQ(m->engine_state["loss_scaler"]["cur_hysteresis"], 2);
  // What this build writes is version 2, whatever it read.
  const std::string again = manifest_to_json(*m);
  EXPECT_NE(again.find("\"format_version\": 2"), std::string::npos);
}

TEST(Manifest, AnEditedByteIsRefusedByItsChecksum) {
  TempDir dir;
  write_checkpoint(root(dir));
  std::string text = read_bytes(root(dir) + "/" + kManifestName);
  const size_t at = text.find("\"global_steps\": 7");
  ASSERT_NE(at, std::string::npos);
  text[at + 16] = '8';
  write_bytes(root(dir) + "/" + kManifestName, text);
  auto m = read_manifest(root(dir));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kCorruption);
  EXPECT_NE(m.status().message().find("checksum"), std::string::npos);
  EXPECT_NE(m.status().message().find(root(dir) + "/" + kManifestName), std::string::npos);
}

TEST(Manifest, OverlappingOrMissingRangesAreRefused) {
  Manifest m;
  m.numel = 100;
  m.layout = {{"a", 0, 100}};
  m.shards = {{0, "s0", 1, 0, {{0, 60}}}, {1, "s1", 1, 0, {{50, 50}}}};
  auto overlap = manifest_from_json(manifest_to_json(m), "m.json");
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.status().message().find("two shards hold element 50"), std::string::npos);
  m.shards[1].ranges = {{70, 30}};
  auto gap = manifest_from_json(manifest_to_json(m), "m.json");
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("no shard holds element 60 of tensor a"),
            std::string::npos);
}

TEST(CheckpointReader, ReadsAnyRangeAcrossShardsInAnyPartition) {
  TempDir dir;
  write_checkpoint(root(dir));
  auto r = CheckpointReader::open(root(dir));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // Another world size's partitions: 4 equal shards, and one range per tensor.
  for (int64_t n : {1, 4, 7}) {
    const int64_t size = (kNumel + n - 1) / n;
    for (int k = 0; k < 3; ++k) {
      const std::string name = r->tensor_names()[static_cast<size_t>(k)];
      for (int64_t off = 0; off < kNumel; off += size) {
        const int64_t count = std::min(size, kNumel - off);
        std::vector<float> got(static_cast<size_t>(count));
        ASSERT_TRUE(r->read(name, off, count, got.data()).ok());
        for (int64_t i = 0; i < count; ++i) ASSERT_EQ(got[i], value(k, off + i)) << name << off + i;
      }
    }
  }
}

TEST(CheckpointReader, RefusesACorruptValueAndATruncatedShardNamingThePath) {
  TempDir dir;
  write_checkpoint(root(dir));
  const std::string shard = root(dir) + "/zero_rank_1_states.ztshard";
  std::string bytes = read_bytes(shard);
  std::string flipped = bytes;
  flipped[flipped.size() - 10] ^= 0x01;  // a value of exp_avg_sq
  write_bytes(shard, flipped);
  auto r = CheckpointReader::open(root(dir));
  ASSERT_TRUE(r.ok());
  std::vector<float> out(300);
  EXPECT_TRUE(r->read("master", 100, 300, out.data()).ok());  // other chunks are intact
  Status s = r->read("exp_avg_sq", 100, 300, out.data());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find(shard), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("checksum mismatch in exp_avg_sq"), std::string::npos);

  write_bytes(shard, bytes.substr(0, bytes.size() - 3));
  auto t = CheckpointReader::open(root(dir));
  ASSERT_TRUE(t.ok());
  Status ts = t->check_shards();
  ASSERT_FALSE(ts.ok());
  EXPECT_NE(ts.message().find(shard), std::string::npos);
  EXPECT_NE(ts.message().find("(truncated)"), std::string::npos) << ts.message();
}

TEST(ShardFile, AHeaderEditIsRefusedAndValuesSpanManyChunks) {
  TempDir dir;
  const int64_t n = 3 * kChunkElements + 5;  // four chunks, the last short
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  auto w = write_shard(dir.file("s"), 0, {{0, n}}, {{"master", v}});
  ASSERT_TRUE(w.ok());
  auto e = describe_shard(dir.file("s"));
  ASSERT_TRUE(e.ok());
  auto r = ShardReader::open(dir.file("s"), *e, {"master"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::vector<float> got(static_cast<size_t>(2 * kChunkElements));
  ASSERT_TRUE(r->read(0, kChunkElements / 2, 2 * kChunkElements, got.data()).ok());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], v[kChunkElements / 2 + i]);
  EXPECT_FALSE(ShardReader::open(dir.file("s"), *e, {"exp_avg"}).ok());  // other tensors

  std::string bytes = read_bytes(dir.file("s"));
  bytes[20] ^= 0x20;  // inside the header JSON
  write_bytes(dir.file("s"), bytes);
  auto bad = ShardReader::open(dir.file("s"), *e, {"master"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("header checksum mismatch"), std::string::npos);
}

TEST(AtomicFile, NothingAppearsUntilCommitAndAnAbandonedWriteLeavesNoTrace) {
  TempDir dir;
  ASSERT_TRUE(atomic_write_file(dir.file("f"), "old").ok());
  {
    auto f = AtomicFile::create(dir.file("f"));
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->write("new", 3).ok());
    EXPECT_EQ(read_bytes(dir.file("f")), "old");  // not yet
  }
  EXPECT_EQ(read_bytes(dir.file("f")), "old");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f"});  // no .tmp left behind
  ASSERT_TRUE(atomic_write_file(dir.file("f"), "new").ok());
  EXPECT_EQ(read_bytes(dir.file("f")), "new");
}

}  // namespace
}  // namespace zerotrain::checkpoint

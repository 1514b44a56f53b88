// Engine::save_checkpoint / load_checkpoint in-process: corrupt or
// mismatched checkpoints refused on every rank with the engine unchanged,
// replacing a tag, leftover staging directories, reserved tag names, and
// the safetensors export (and stage 3's consolidated 16-bit weights).
#include <gtest/gtest.h>

#include "checkpoint/engine_job.h"

namespace zerotrain::checkpoint::enginetest {
namespace {

// ---------------------------------------------------------------------------
// 3. Refusal: corrupt or mismatched checkpoints are refused on every rank
// with the path and the reason, and the engine is left as it was.

void copy_tag(const std::string& root, const std::string& from, const std::string& to) {
  fs::copy(root + "/" + from, root + "/" + to, fs::copy_options::recursive);
}

// Expects load(root, tag) to fail with `code` and every one of `needles` in
// the message, and the engine to be unchanged (compared with `before`).
void expect_refused(Rank& r, const std::string& root, const std::string& tag, StatusCode code,
                    const std::vector<std::string>& needles, const Snap& before,
                    const std::string& what) {
  StatusOr<json> got = r.engine->load_checkpoint(root, tag);
  ASSERT_FALSE(got.ok()) << what << ": loaded";
  EXPECT_EQ(got.status().code(), code) << what << ": " << got.status().to_string();
  for (const std::string& n : needles)
    EXPECT_NE(got.status().message().find(n), std::string::npos)
        << what << ": \"" << n << "\" not in: " << got.status().message();
  expect_same(snapshot(r), before, what + ": engine changed by a refused load");
}

TEST(LoadRefusal, CorruptOrMismatchedCheckpointsLeaveTheEngineUnchanged) {
  TempDir dir;
  const std::string root = dir.file("ckpt"), empty = dir.file("empty");
  const Job j{.world = 2, .stage = 2};
  run_ranks(2, [&](Communicator& c) {
    auto r = make_rank(c, j, c.rank() == 0 ? 7 : 99);
    ASSERT_NE(r, nullptr);
    std::vector<double> losses;
    train(*r, c, j, 0, 2, &losses);
    ASSERT_TRUE(r->engine->save_checkpoint(root, "good").ok());
    train(*r, c, j, 2, 3, &losses);  // the engine now differs from the checkpoint
    const Snap before = snapshot(*r);
    if (c.rank() == 0) {
      copy_tag(root, "good", "flip");
      const std::string shard1 = root + "/flip/zero_rank_1_states.ztshard";
      std::string bytes = read_bytes(shard1);
      bytes[bytes.size() / 2] ^= 0x5a;
      write_bytes(shard1, bytes);

      copy_tag(root, "good", "trunc");
      const std::string shard0 = root + "/trunc/zero_rank_0_states.ztshard";
      fs::resize_file(shard0, fs::file_size(shard0) - 5);

      copy_tag(root, "good", "badman");
      const std::string man = root + "/badman/manifest.json";
      std::string text = read_bytes(man);
      const size_t at = text.find("\"global_steps\": ");
      ASSERT_NE(at, std::string::npos) << text;
      char& digit = text[at + std::string("\"global_steps\": ").size()];
      ASSERT_EQ(digit, '2');
      digit = '7';
      write_bytes(man, text);
      fs::create_directories(empty);
    }
    ASSERT_TRUE(c.barrier().ok());
    const std::string me = " (rank " + std::to_string(c.rank()) + ")";

    expect_refused(*r, root, "flip", StatusCode::kCorruption,
                   {root + "/flip/zero_rank_1_states.ztshard", "checksum"}, before, "flipped shard byte" + me);
    expect_refused(*r, root, "trunc", StatusCode::kCorruption,
                   {root + "/trunc/zero_rank_0_states.ztshard", "truncated"}, before,
                   "truncated shard" + me);
    expect_refused(*r, root, "badman", StatusCode::kCorruption,
                   {root + "/badman/manifest.json", "checksum"}, before, "edited manifest" + me);
    expect_refused(*r, empty, "", StatusCode::kNotFound, {empty + "/latest"}, before,
                   "no latest" + me);
    expect_refused(*r, root, "nope", StatusCode::kNotFound, {root + "/nope"}, before,
                   "no such tag" + me);

    // Another model size: 3 layers instead of 2.
    model::gpt2::GptConfig other = engine::testutil::micro_gpt();
    other.n_layer = 3;
    auto o = make_rank(c, j, 11, other);
    ASSERT_NE(o, nullptr);
    const Snap other_before = snapshot(*o);
    expect_refused(*o, root, "good", StatusCode::kInvalidArgument, {"another model", root + "/good"},
                   other_before, "another model" + me);

    // Still trains, and still loads a good checkpoint.
    train(*r, c, j, 3, 4, &losses);
    ASSERT_EQ(losses.size(), 4u);
    EXPECT_TRUE(std::isfinite(losses.back()));
    EXPECT_EQ(r->engine->global_steps(), 4);
    StatusOr<json> good = r->engine->load_checkpoint(root, "good");
    ASSERT_TRUE(good.ok()) << good.status().to_string();
    EXPECT_EQ(r->engine->global_steps(), 2);
  });
}

// A checkpoint the loading run's loss scaler does not accept (dynamic fp16
// scale into a static fp16.loss_scale) must, if refused, leave the engine
// unchanged and name the checkpoint, like any other refusal.
TEST(LoadRefusal, LossScalerMismatchIfRefusedLeavesTheEngineUnchanged) {
  TempDir dir;
  const std::string root = dir.file("ckpt");
  const Job dynamic{.world = 2, .stage = 1, .extra = kFp16};
  const Job fixed{.world = 2, .stage = 1,
                  .extra = R"("fp16": {"enabled": true, "loss_scale": 128},)"};
  run_ranks(2, [&](Communicator& c) {
    std::vector<double> losses;
    {
      auto r = make_rank(c, dynamic, c.rank() == 0 ? 7 : 99);
      ASSERT_NE(r, nullptr);
      train(*r, c, dynamic, 0, 3, &losses);
      ASSERT_TRUE(r->engine->save_checkpoint(root, "d").ok());
    }
    auto r = make_rank(c, fixed, c.rank() == 0 ? 7 : 99);
    ASSERT_NE(r, nullptr);
    train(*r, c, fixed, 0, 1, &losses);
    const Snap before = snapshot(*r);
    StatusOr<json> got = r->engine->load_checkpoint(root, "d");
    if (got.ok()) return;  // accepting it is a choice; a half-applied refusal is not
    const std::string what = "static scale vs dynamic checkpoint, rank " + std::to_string(c.rank());
    EXPECT_NE(got.status().message().find(root + "/d"), std::string::npos)
        << what << ": " << got.status().to_string();
    expect_same(snapshot(*r), before, what + ": engine changed by a refused load");
  });
}

// ---------------------------------------------------------------------------
// 4. Replacing a tag, leftover staging directories, DIR/latest.

bool exists(const std::string& p) { return fs::exists(p); }

std::string latest(const std::string& root) {
  StatusOr<std::string> tag = read_latest_tag(root);
  return tag.ok() ? *tag : tag.status().to_string();
}

void make_junk_staging(const std::string& root, const std::string& tag) {
  fs::create_directories(root + "/" + tag + ".partial");
  write_bytes(root + "/" + tag + ".partial/zero_rank_0_states.ztshard", "junk from a killed save");
  write_bytes(root + "/" + tag + ".partial/manifest.json", "{\"not\": \"a manifest\"");
}

TEST(SaveAtomicity, ReplacesTagsAndIgnoresLeftoverStaging) {
  TempDir dir;
  const std::string root = dir.file("ckpt");
  const Job j{.world = 2, .stage = 1};
  run_ranks(2, [&](Communicator& c) {
    const bool rank0 = c.rank() == 0;
    const std::string me = " (rank " + std::to_string(c.rank()) + ")";
    auto r = make_rank(c, j, rank0 ? 7 : 99);
    ASSERT_NE(r, nullptr);
    Engine& e = *r->engine;
    std::vector<double> losses;
    train(*r, c, j, 0, 1, &losses);
    ASSERT_TRUE(e.save_checkpoint(root, "t").ok());
    EXPECT_EQ(latest(root), "t") << me;

    if (rank0) make_junk_staging(root, "t");  // a killed save of the same tag
    ASSERT_TRUE(c.barrier().ok());
    train(*r, c, j, 1, 2, &losses);
    const Snap second = snapshot(*r);
    Status st = e.save_checkpoint(root, "t");
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_FALSE(exists(root + "/t.partial")) << me;
    EXPECT_FALSE(exists(root + "/t.replaced")) << me;

    if (rank0) make_junk_staging(root, "u");  // a killed save of a new tag
    ASSERT_TRUE(c.barrier().ok());
    train(*r, c, j, 2, 3, &losses);
    const Snap third = snapshot(*r);
    st = e.save_checkpoint(root, "u");
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_FALSE(exists(root + "/u.partial")) << me;
    EXPECT_EQ(read_bytes(root + "/latest"), "u\n") << me;

    if (rank0) make_junk_staging(root, "v");  // a save killed after the last one
    ASSERT_TRUE(c.barrier().ok());
    train(*r, c, j, 3, 4, &losses);
    StatusOr<json> got = e.load_checkpoint(root, "t");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_same(snapshot(*r), second, "tag t holds the second save" + me);
    got = e.load_checkpoint(root, "");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_same(snapshot(*r), third, "latest is u" + me);

    st = e.save_checkpoint(root, "v");
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(latest(root), "v") << me;
    ASSERT_TRUE(c.barrier().ok());
    if (rank0) {
      std::vector<std::string> names;
      for (const auto& d : fs::directory_iterator(root)) names.push_back(d.path().filename().string());
      std::sort(names.begin(), names.end());
      EXPECT_EQ(names, (std::vector<std::string>{"latest", "t", "u", "v"}));
    }
  });
}

// A tag must not be able to take DIR/latest's place: "latest" is refused and
// the checkpoints stay loadable through DIR/latest.
TEST(SaveAtomicity, TagNamedLatestDoesNotBreakLatest) {
  TempDir dir;
  const std::string root = dir.file("ckpt");
  const Job j{.world = 1, .stage = 0};
  run_ranks(1, [&](Communicator& c) {
    auto r = make_rank(c, j, 7);
    ASSERT_NE(r, nullptr);
    std::vector<double> losses;
    train(*r, c, j, 0, 1, &losses);
    ASSERT_TRUE(r->engine->save_checkpoint(root, "t").ok());
    train(*r, c, j, 1, 2, &losses);
    const Status st = r->engine->save_checkpoint(root, "latest");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();  // reserved
    StatusOr<json> got = r->engine->load_checkpoint(root, "");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(r->engine->global_steps(), 1);
  });
}

// Re-saving tag X sets the previous X aside as X.replaced between two
// renames. Tags cannot take the reserved suffixes, and a kill between the
// renames (latest -> X, only X.replaced on disk) loses nothing.
TEST(SaveAtomicity, AKillBetweenTheRenamesOfAReSaveLosesNothing) {
  TempDir dir;
  const std::string root = dir.file("ckpt");
  const Job j{.world = 1, .stage = 0};
  run_ranks(1, [&](Communicator& c) {
    auto r = make_rank(c, j, 7);
    ASSERT_NE(r, nullptr);
    std::vector<double> losses;
    train(*r, c, j, 0, 1, &losses);
    // Reserved names: the backup suffix and the staging suffix.
    EXPECT_EQ(r->engine->save_checkpoint(root, "x.replaced").code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r->engine->save_checkpoint(root, "x.partial").code(), StatusCode::kInvalidArgument);
    ASSERT_TRUE(r->engine->save_checkpoint(root, "x").ok());
    // What a re-save of "x" killed between moving x aside and moving the
    // new one in leaves: latest -> x, only x.replaced on disk.
    fs::rename(root + "/x", root + "/x.replaced");
    train(*r, c, j, 1, 2, &losses);
    StatusOr<json> got = r->engine->load_checkpoint(root, "");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(r->engine->global_steps(), 1);
    // The next save of x puts the old one back first, then replaces it.
    train(*r, c, j, 1, 2, &losses);
    ASSERT_TRUE(r->engine->save_checkpoint(root, "x").ok());
    EXPECT_FALSE(fs::exists(root + "/x.replaced"));
    ASSERT_TRUE(r->engine->load_checkpoint(root, "x").ok());
    EXPECT_EQ(r->engine->global_steps(), 2);
  });
}

// ---------------------------------------------------------------------------
// 5. Export to safetensors and import into a 1-rank model.

TEST(Export, SafetensorsHoldsTheGatheredWeights) {
  TempDir dir;
  const std::string root = dir.file("ckpt");
  model::gpt2::GptConfig mc = engine::testutil::micro_gpt();
  mc.vocab_size = 60;  // 4 padding rows in wte
  const model::ParamLayout layout = model::gpt2::make_layout(mc);
  const Job j{.world = 2, .stage = 3};
  std::vector<float> full;
  run_ranks(2, [&](Communicator& c) {
    auto r = make_rank(c, j, c.rank() == 0 ? 7 : 99, mc);
    ASSERT_NE(r, nullptr);
    std::vector<double> losses;
    train(*r, c, j, 0, 3, &losses, 60);
    Snap s = snapshot(*r);
    ASSERT_TRUE(r->engine->save_checkpoint(root, "e").ok());
    EXPECT_FALSE(exists(root + "/e/model_16bit.safetensors"));  // not asked for
    if (c.rank() == 0) full = std::move(s.weights);
  });
  ASSERT_EQ(full.size(), static_cast<size_t>(layout.total_numel()));

  const std::string file = dir.file("model.safetensors");
  const Status st = export_safetensors(root + "/e", file, DType::kFloat32);
  ASSERT_TRUE(st.ok()) << st.to_string();
  StatusOr<SafetensorsFile> f = SafetensorsFile::open(file);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().size(), layout.tensors().size());
  for (const model::TensorInfo& t : layout.tensors()) {
    const SafetensorsTensor* got = f->find(t.name);
    ASSERT_NE(got, nullptr) << t.name;
    EXPECT_EQ(got->dtype, DType::kFloat32) << t.name;
    EXPECT_EQ(got->shape, t.hf_shape) << t.name;
    std::vector<float> values(static_cast<size_t>(model::hf_numel(t)));
    std::vector<float> want(values.size());
    ASSERT_EQ(got->numel(), static_cast<int64_t>(values.size())) << t.name;
    ASSERT_TRUE(f->read_f32(*got, 0, got->numel(), values.data()).ok()) << t.name;
    model::copy_to_hf(t, full.data() + t.offset, want.data());
    expect_bits(values, want, t.name);
  }

  // Into a 1-rank stage-0 model: exactly the gathered weights (wte's
  // padding rows were zero in training and read back as zero).
  run_ranks(1, [&](Communicator& c) {
    auto r = make_rank(c, {.world = 1, .stage = 0}, 3, mc);
    ASSERT_NE(r, nullptr);
    std::fill_n(r->model.parameters(), layout.total_numel(), 1.0f);
    const Status ld = load_hf_gpt2(file, layout, r->model.parameters());
    ASSERT_TRUE(ld.ok()) << ld.to_string();
    expect_bits(engine::testutil::copy(r->model.parameters(), layout.total_numel()), full,
                "load_hf_gpt2 of the export");
  });
}

TEST(Export, Stage3Gathers16BitWeightsOnSaveWhenAsked) {
  TempDir dir;
  const std::string root = dir.file("ckpt");
  const Job j{.world = 2, .stage = 3, .extra = kBf16,
              .zero = R"(, "stage3_gather_16bit_weights_on_model_save": true)"};
  std::vector<float> full;
  run_ranks(2, [&](Communicator& c) {
    auto r = make_rank(c, j, c.rank() == 0 ? 7 : 99);
    ASSERT_NE(r, nullptr);
    std::vector<double> losses;
    train(*r, c, j, 0, 2, &losses);
    Snap s = snapshot(*r);  // bf16 values, as the model computes from
    ASSERT_TRUE(r->engine->save_checkpoint(root, "b").ok());
    if (c.rank() == 0) full = std::move(s.weights);
  });
  const std::string file = root + "/b/model_16bit.safetensors";
  StatusOr<Manifest> m = read_manifest(root + "/b");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->extra_files, std::vector<std::string>{"model_16bit.safetensors"});
  StatusOr<SafetensorsFile> f = SafetensorsFile::open(file);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const model::ParamLayout layout = model::gpt2::make_layout(engine::testutil::micro_gpt());
  EXPECT_EQ(f->tensors().size(), layout.tensors().size());
  for (const model::TensorInfo& t : layout.tensors()) {
    const SafetensorsTensor* got = f->find(t.name);
    ASSERT_NE(got, nullptr) << t.name;
    EXPECT_EQ(got->dtype, DType::kBFloat16) << t.name;
    std::vector<float> values(static_cast<size_t>(got->numel())), want(values.size());
    ASSERT_TRUE(f->read_f32(*got, 0, got->numel(), values.data()).ok()) << t.name;
    model::copy_to_hf(t, full.data() + t.offset, want.data());
    expect_bits(values, want, t.name + " (bf16)");
  }
}


}  // namespace
}  // namespace zerotrain::checkpoint::enginetest

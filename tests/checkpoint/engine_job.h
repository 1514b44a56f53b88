// Harness for the engine checkpoint tests: one rank's model + engine over
// zero_job.h's configs and per-step data, snapshots of everything a load
// must restore (weights, master, optimizer states, counters, lr, scale),
// and the fp16/bf16 config fragments.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/export.h"
#include "checkpoint/hf/gpt2.h"
#include "checkpoint/manifest.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/test_util.h"
#include "device/device.h"
#include "zero/zero_job.h"

namespace zerotrain::checkpoint::enginetest {

namespace fs = std::filesystem;
using comm::Communicator;
using comm::testutil::run_ranks;
using engine::Engine;
using nlohmann::json;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;
using zero::testutil::config_json;
using zero::testutil::Job;
using zero::testutil::kSeq;

const std::string kBf16 = R"("bf16": {"enabled": true},)";
// A short window, so the dynamic scale moves within a few steps.
const std::string kFp16 =
    R"("fp16": {"enabled": true, "initial_scale_power": 12, "loss_scale_window": 2},)";

// One rank's model and the engine over it (the engine goes first).
struct Rank {
  model::gpt2::GptModel model;
  std::unique_ptr<Engine> engine;
};

// A model initialised from `seed` and an engine over it for job j.
inline std::unique_ptr<Rank> make_rank(
    Communicator& c, const Job& j, uint64_t seed,
    const model::gpt2::GptConfig& mc = engine::testutil::micro_gpt()) {
  const int64_t mb = j.rows / (c.world_size() * j.gas);
  StatusOr<model::gpt2::GptModel> m = model::gpt2::GptModel::create(mc, {.max_batch = mb});
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  if (!m.ok()) return nullptr;
  const Status init = m->init_parameters(seed);
  EXPECT_TRUE(init.ok()) << init.to_string();
  if (!init.ok()) return nullptr;
  auto r = std::make_unique<Rank>(Rank{std::move(m).value(), nullptr});
  auto e = Engine::create(engine::testutil::parse(config_json(j), c.world_size()), &r->model, &c);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  if (!e.ok()) return nullptr;
  r->engine = std::move(e).value();
  return r;
}

// n token ids below `vocab`, as zero_job.h's tokens() for vocab 64.
inline std::vector<int32_t> batch(int64_t n, uint64_t seed, int32_t vocab) {
  std::vector<int32_t> t = engine::testutil::tokens(n, seed);
  for (int32_t& x : t) x %= vocab;
  return t;
}

// Optimizer steps [first, last) on zero_job.h's train_rank data (step s:
// tokens seed 100 + s, targets 200 + s); appends each step's global loss.
inline void train(Rank& r, Communicator& c, const Job& j, int first, int last,
           std::vector<double>* losses, int32_t vocab = 64) {
  const int64_t mb = j.rows / (c.world_size() * j.gas);
  for (int s = first; s < last; ++s) {
    const auto x = batch(j.rows * kSeq, 100 + s, vocab), y = batch(j.rows * kSeq, 200 + s, vocab);
    double local = 0;
    for (int k = 0; k < j.gas; ++k) {
      const int64_t row = (c.rank() * j.gas + k) * mb;
      StatusOr<float> loss =
          r.engine->forward(x.data() + row * kSeq, y.data() + row * kSeq, mb, kSeq);
      ASSERT_TRUE(loss.ok()) << loss.status().to_string();
      local += *loss / j.gas;
      ASSERT_TRUE(r.engine->backward().ok());
      const Status st = r.engine->step();
      ASSERT_TRUE(st.ok()) << st.to_string();
    }
    float global = static_cast<float>(local);
    ASSERT_TRUE(c.allreduce(std::span<float>(&global, 1), comm::ReduceOp::kAvg).ok());
    losses->push_back(global);
  }
}

// What a resumed engine must reproduce.
struct Snap {
  int64_t global_steps = 0, skipped_steps = 0, step_count = 0;
  double lr = 0, loss_scale = 0;
  std::vector<float> weights;  // the full weights the model computes from
  std::vector<float> master;   // this rank's fp32 master partition, then its states
};

// Collective (stage 3 gathers the weights).
inline Snap snapshot(Rank& r) {
  Engine& e = *r.engine;
  Snap s;
  s.global_steps = e.global_steps();
  s.skipped_steps = e.skipped_steps();
  s.step_count = e.optimizer().step_count();
  s.lr = e.get_lr();
  s.loss_scale = e.loss_scale();
  const int64_t numel = r.model.layout().total_numel();
  s.weights.resize(static_cast<size_t>(numel));
  const Status st = e.strategy().gather_full_parameters(s.weights);
  EXPECT_TRUE(st.ok()) << st.to_string();
  // The owned arrays through the device (they may be device memory).
  auto append = [&](const Tensor& t) {
    const size_t at = s.master.size();
    s.master.resize(at + t.numel);
    EXPECT_TRUE(device::copy_to_host(t, s.master.data() + at).ok());
  };
  append(e.strategy().owned_master());
  for (const Tensor& st : e.strategy().optimizer_states()) append(st);
  return s;
}

// Bit for bit; reports the first few differences only.
inline void expect_bits(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) && bad++ < 3)
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": elements differ";
}

inline void expect_same(const Snap& got, const Snap& want, const std::string& what) {
  EXPECT_EQ(got.global_steps, want.global_steps) << what;
  EXPECT_EQ(got.skipped_steps, want.skipped_steps) << what;
  EXPECT_EQ(got.step_count, want.step_count) << what;
  EXPECT_EQ(got.lr, want.lr) << what;
  EXPECT_EQ(got.loss_scale, want.loss_scale) << what;
  expect_bits(got.weights, want.weights, what + " weights");
  expect_bits(got.master, want.master, what + " master and optimizer states");
}

inline std::vector<double> slice(const std::vector<double>& v, int first, int last) {
  return {v.begin() + first, v.begin() + last};
}

}  // namespace zerotrain::checkpoint::enginetest

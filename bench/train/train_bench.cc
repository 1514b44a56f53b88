// The training-step benchmark (train_bench.h): config, model, engine, timed steps.
#include "train/train_bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <span>

#include "config/config.h"
#include "device/device.h"
#include "engine/engine.h"
#include "model/registry.h"

namespace zerotrain::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Step times: best = fastest (smallest), unlike summarize's rates.
nlohmann::json time_summary(const std::vector<double>& seconds) {
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  const double median = s.empty() ? 0 : s[s.size() / 2];
  const double best = s.empty() ? 0 : s.front(), worst = s.empty() ? 0 : s.back();
  return {{"median", median},
          {"best", best},
          {"worst", worst},
          {"spread", median > 0 ? (worst - best) / median : 0},
          {"values", seconds}};
}

// Uniform random tokens for one micro-batch: x = ids[0..T), y = ids[1..T].
void fill_batch(std::mt19937_64& rng, int64_t vocab, int64_t B, int64_t T, std::vector<int32_t>* x,
                std::vector<int32_t>* y) {
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab - 1));
  x->resize(B * T), y->resize(B * T);
  for (int64_t b = 0; b < B; ++b) {
    int32_t prev = id(rng);
    for (int64_t t = 0; t < T; ++t) {
      const int32_t next = id(rng);
      (*x)[b * T + t] = prev, (*y)[b * T + t] = next, prev = next;
    }
  }
}

// One optimizer step (no accumulation): forward, backward, boundary step.
StatusOr<float> train_step(engine::Engine& e, const std::vector<int32_t>& x,
                           const std::vector<int32_t>& y, int64_t B, int64_t T) {
  ZT_ASSIGN_OR_RETURN(float loss, e.forward(x.data(), y.data(), B, T));
  ZT_RETURN_IF_ERROR(e.backward());
  ZT_RETURN_IF_ERROR(e.step());
  return loss;
}

}  // namespace

TrainCase with_default_shape(TrainCase c, int world_size) {
  const bool tiny = c.model == "gpt2-tiny" || c.model == "llama-tiny",
             small = c.model == "gpt2-small-ish";
  const int64_t global = tiny ? 8 : small ? 2 : 1;
  if (c.B <= 0) c.B = std::max<int64_t>(1, global / std::max(1, world_size));
  if (c.T <= 0) {
    StatusOr<model::ModelSpec> spec = model::model_spec(c.model);
    StatusOr<model::ModelInfo> info =
        spec.ok() ? spec->family->info(spec->config) : StatusOr<model::ModelInfo>(spec.status());
    c.T = tiny ? 128 : small ? 256 : info.ok() ? std::min<int64_t>(info->max_seq, 1024) : 0;
  }
  return c;
}

std::string train_ds_config(const TrainCase& c) {
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", c.B},
      {"gradient_accumulation_steps", 1},
      {"gradient_clipping", 1.0},
      {"bf16", {{"enabled", c.bf16}}},
      {"optimizer",
       {{"type", "AdamW"},
        {"params", {{"lr", 1e-4}, {"betas", {0.9, 0.95}}, {"eps", 1e-8}, {"weight_decay", 0.01}}}}},
      {"zero_optimization", {{"stage", 0}}}};
  return j.dump();
}

StatusOr<TrainResult> run_train_case(const TrainCase& in, comm::Communicator* comm) {
  TrainResult r;
  r.c = with_default_shape(in, comm->world_size());
  const TrainCase& c = r.c;
  if (c.steps < 1) return invalid_argument("--steps: must be >= 1, got " + std::to_string(c.steps));
  ZT_ASSIGN_OR_RETURN(model::ModelSpec spec, model::model_spec(c.model));
  ZT_ASSIGN_OR_RETURN(model::ModelInfo info, spec.family->info(spec.config));
  if (c.T < 1 || c.T > info.max_seq)
    return invalid_argument("--seq: " + std::to_string(c.T) + " is outside [1, " +
                            std::to_string(info.max_seq) + "], " + c.model + "'s block size");
  config::TrainerArgs args;
  args.world_size = comm->world_size();
  args.hidden_size = info.hidden_size;
  ZT_ASSIGN_OR_RETURN(config::Config cfg, config::parse_config(train_ds_config(c), args));
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<model::Module> m,
                      model::create_module(spec, {.max_batch = c.B,
                                                  .max_seq = c.T,
                                                  .bf16_compute = c.bf16,
                                                  .checkpoint_layers = c.checkpoint}));
  ZT_RETURN_IF_ERROR(m->init_parameters(c.seed));
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> e,
                      engine::Engine::create(cfg, m.get(), comm));
  r.params = info.parameters;
  r.numel = e->memory().numel;
  r.flops_per_token = info.flops_per_token(c.T);
  r.activation_bytes = m->memory().activation_bytes;
  r.ranks = comm->world_size();
  r.threads = omp_get_max_threads();

  std::mt19937_64 rng(c.seed + static_cast<uint64_t>(comm->rank()));
  std::vector<int32_t> x, y;
  for (int i = 0; i < c.warmup + c.steps; ++i) {
    if (i == c.warmup) e->reset_timings();
    fill_batch(rng, info.vocab_size, c.B, c.T, &x, &y);
    const auto t0 = Clock::now();
    ZT_ASSIGN_OR_RETURN(float loss, train_step(*e, x, y, c.B, c.T));
    // A GPU may still run the step's last kernels: the step ends when they do.
    ZT_RETURN_IF_ERROR(device::default_device().synchronize());
    float dt = std::chrono::duration<float>(Clock::now() - t0).count();
    // The step ends when the slowest rank ends it (outside the timed region).
    if (r.ranks > 1)
      ZT_RETURN_IF_ERROR(comm->allreduce(std::span<float>(&dt, 1), comm::ReduceOp::kMax));
    if (i == 0) r.loss_first = loss;
    r.loss_last = loss;
    if (i >= c.warmup) r.step_seconds.push_back(dt);
  }
  const engine::PhaseTimes& t = e->timings();
  const double n = static_cast<double>(std::max<int64_t>(1, t.boundaries));
  r.phases = {t.forward / n, t.backward / n, t.reduce / n, t.step / n};
  return r;
}

int64_t tokens_per_step(const TrainResult& r) { return r.c.B * r.c.T * r.ranks; }

Samples tokens_per_second(const TrainResult& r) {
  std::vector<double> rates;
  for (double s : r.step_seconds) rates.push_back(s > 0 ? tokens_per_step(r) / s : 0);
  return summarize(rates);
}

nlohmann::json train_result_json(const TrainResult& r) {
  const Samples tps = tokens_per_second(r);
  const double f = static_cast<double>(r.flops_per_token);
  // AdamW reads p, g, m, v and writes p, m, v: 28 B a parameter at least.
  const double adamw_gbps = r.phases.step > 0 ? 28.0 * r.numel / r.phases.step / 1e9 : 0;
  return {{"bench", "train_step"},
          {"model", r.c.model},
          {"params", r.params},
          {"numel", r.numel},
          {"precision", r.c.bf16 ? "bf16" : "fp32"},
          {"checkpoint", r.c.checkpoint},
          {"activation_bytes", r.activation_bytes},
          {"ranks", r.ranks},
          {"threads", r.threads},
          {"B", r.c.B},
          {"T", r.c.T},
          {"warmup", r.c.warmup},
          {"steps", r.c.steps},
          {"tokens_per_step", tokens_per_step(r)},
          {"flops_per_token", r.flops_per_token},
          {"step_seconds", time_summary(r.step_seconds)},
          {"tokens_per_s", {{"median", tps.median}, {"best", tps.best}, {"spread", tps.spread}}},
          {"model_flops", {{"median", tps.median * f}, {"best", tps.best * f}}},
          {"phase_ms",
           {{"forward", 1e3 * r.phases.forward},
            {"backward", 1e3 * r.phases.backward},
            {"reduce", 1e3 * r.phases.reduce},
            {"step", 1e3 * r.phases.step}}},
          {"adamw_gbps", adamw_gbps},
          {"loss_first", r.loss_first},
          {"loss_last", r.loss_last}};
}

}  // namespace zerotrain::bench

// The training-step benchmark: builds the real training path (typed
// ds_config, the preset's model::Module, engine::Engine over a Communicator)
// for one case (model preset, fp32 or bf16, activation checkpointing,
// micro-batch B, sequence length T),
// runs warm-up optimizer steps, then times each of `steps` optimizer steps
// by the wall clock (the slowest rank's time, so tokens/s is global) and
// splits it into the engine's phases. Tokens are uniform random ids from a
// fixed seed: the cost of a step does not depend on the data.
//
//   TrainCase c{.model = "gpt2-tiny", .bf16 = false, .B = 16, .T = 128};
//   ZT_ASSIGN_OR_RETURN(TrainResult r, run_train_case(c, comm.get()));
//   std::puts(train_result_json(r).dump().c_str());
//
// Thread-safety: run_train_case drives one engine from the calling thread
// (its OpenMP team does the compute); the other functions are pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "probes/stats.h"

namespace zerotrain::bench {

struct TrainCase {
  std::string model = "gpt2-tiny";  // a model preset (model/registry.h)
  bool bf16 = false;                // bf16 mixed precision (else fp32)
  bool checkpoint = false;          // activation checkpointing of every block
  int64_t B = 0, T = 0;             // micro-batch per rank, sequence length; 0: default
  int warmup = 2;                   // untimed optimizer steps first
  int steps = 5;                    // timed optimizer steps
  uint64_t seed = 1234;
};

// Per optimizer step means over the timed steps, seconds (engine.timings()).
struct PhaseSeconds {
  double forward = 0, backward = 0, reduce = 0, step = 0;
};

struct TrainResult {
  TrainCase c;
  int64_t params = 0;                // ModelInfo::parameters (the N of 6N)
  int64_t numel = 0;                 // elements of the flat buffer the optimizer steps
  int64_t flops_per_token = 0;       // ModelInfo::flops_per_token(T)
  int64_t activation_bytes = 0;      // the module's activation memory
  int ranks = 1, threads = 1;        // world size, OpenMP threads per rank
  std::vector<double> step_seconds;  // one per timed step, slowest rank
  PhaseSeconds phases;               // rank 0's
  double loss_first = 0, loss_last = 0;
};

// Defaults sized for ~0.1-1 s steps on 2 idle cores (about twice that under
// this machine's usual load), as a global batch split over the ranks so
// 1 × 2 and 2 × 1 do the same work a step: gpt2-tiny and llama-tiny 8
// sequences of T=128, gpt2-small-ish 2 of T=256, others 1 at the block size
// (at most 1024); B = that /
// world_size, at least 1. A B or T already set is kept.
TrainCase with_default_shape(TrainCase c, int world_size = 1);

// The ds_config text the bench trains with: AdamW, constant lr, clipping
// 1.0, stage 0, micro-batch B, no accumulation, bf16 when asked.
std::string train_ds_config(const TrainCase& c);

// Builds and runs the case on every rank of `comm` (all ranks call it).
// InvalidArgument for an unknown model, T above its block size, or
// steps < 1; any engine error is returned.
StatusOr<TrainResult> run_train_case(const TrainCase& c, comm::Communicator* comm);

// Global tokens per optimizer step: B · T · ranks.
int64_t tokens_per_step(const TrainResult& r);

// Rates from step times: tokens/s and model FLOP/s (tokens/s × flops/token),
// best = fastest step.
Samples tokens_per_second(const TrainResult& r);

// One JSON object: model, params, precision, ranks, threads, B, T,
// tokens_per_step, flops_per_token, step_seconds {median, best, worst,
// spread, values}, tokens_per_s {median, best, spread}, model_flops
// {median, best} (FLOP/s), phase_ms {forward, backward, reduce, step},
// adamw_gbps (28 B a parameter over the step phase), losses.
nlohmann::json train_result_json(const TrainResult& r);

}  // namespace zerotrain::bench

// Engine: DeepSpeed's engine for one rank — built from a typed ds_config, a
// model::Module (any family, on its Device) and a Communicator (like
// deepspeed.initialize), it runs
// forward / backward / step with gradient accumulation, data parallelism
// (ZeRO stage 0: all-reduce), loss scaling and clipping:
//
//   ZT_ASSIGN_OR_RETURN(auto engine, Engine::create(cfg, &model, comm.get()));
//   for (;;) {                                    // one micro-batch per pass
//     ZT_ASSIGN_OR_RETURN(float loss, engine->forward(tokens, targets, B, T));
//     ZT_RETURN_IF_ERROR(engine->backward());     // d(loss * scale / gas)
//     ZT_RETURN_IF_ERROR(engine->step());         // acts at the boundary only
//   }
//
// step() at a gradient-accumulation boundary (DeepSpeed's engine.step):
//   1. reduce gradients over ranks (ZeroStrategy; stage 0: all-reduce mean);
//      fp16: round them through fp16 (so > 65504 overflows; Ops::round_through)
//   2. overflow = any inf/nan (ZeroStrategy::gradient_stats, over ranks); the loss
//      scaler's update(overflow) decides a skip: then grads are zeroed,
//      global_steps and skipped_steps count it, the scheduler does NOT step
//   3. norm = global L2 norm of the scaled grads; one multiply unscales and
//      clips: g *= 1 / (max(1, (norm/scale + 1e-6) / gradient_clipping) * scale)
//   4. optimizer step on the fp32 master weights; scheduler step; new lr
//   5. publish: the compute copy gets the master weights rounded to the
//      model dtype, every parameter (as DeepSpeed's 16-bit module holds
//      them): for bf16/fp16 a 16-bit array the strategy owns (stages 0-2:
//      zero/half_compute.h; stage 3: the 16-bit partitions) that the model
//      reads through per-stage fp32 expansions. For bf16 build the model
//      with bf16_compute so its GEMMs also round their inputs (the trainer
//      does); fp16 computes in fp32 from the fp16 weights.
// Precision: fp32 (the model buffer is the master), bf16 and fp16 (fp32
// master weights and optimizer states; 16-bit gradient accumulators, fp32
// in the reduction and the step). fp32 and bf16 (with
// check_grad_overflow) also skip a step whose gradients are not finite.
//
// zero_optimization.stage chooses the strategy (zero/factory.h): stage 0
// is data parallel, stages 1 and 2 shard optimizer states and gradients,
// stage 3 also the parameters (the model's flat buffers are then freed and
// its groups gathered by the strategy's hooks). The optimizer runs over
// the owned partition, in its memory (device, or host when offloaded), in
// chunks of the strategy's optimizer_sub_group_size(). The engine never
// touches device memory or the communicator itself: the strategy reduces
// and reports, the Ops compute.
// Thread-safety: none; one engine per rank, driven by one thread. Create()
// sets this thread's OpenMP thread count (see threads.h) unless disabled.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/manifest.h"
#include "comm/communicator.h"
#include "config/config.h"
#include "core/status.h"
#include "engine/engine_state.h"
#include "model/module.h"
#include "optim/loss_scaler.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "zero/options.h"
#include "zero/zero_strategy.h"

namespace zerotrain::engine {

using zero::ModelStateBytes;
using zero::zero_formula_bytes;
using zero::ZeroStrategy;

struct EngineOptions {
  // Set OpenMP threads to cores / local ranks unless OMP_NUM_THREADS is set.
  bool configure_threads = true;
  int local_ranks = 0;  // 0: LOCAL_WORLD_SIZE, else the world size
  // The initial weights by flat range (zero::InitialWeights): at stage 3
  // each rank reads only its partition's (the model may then own no
  // parameter or gradient buffer); below, they fill the model's buffer.
  // Unset: the model's buffer as rank 0 holds it.
  zero::InitialWeights initial_weights;
};

// Per-rank memory the engine accounts for.
struct MemoryReport {
  ModelStateBytes model_states;       // in compute (device) memory
  ModelStateBytes host_model_states;  // offloaded to host memory
  int64_t activation_bytes = 0;  // the model's saved activations + scratch (max B, T)
  int64_t numel = 0;             // Ψ: elements of the flat parameter buffer
  // zero_formula_bytes for this stage and world size (stage 0: 16Ψ).
  int64_t formula_bytes = 0;
  // Host bytes the device holds page-locked (pin_memory), all strategies.
  int64_t pinned_host_bytes = 0;
  // Device memory in use by category, its high-water mark, and the
  // device's capacity (0: unlimited), as the Device counts them.
  device::MemoryUsage device_usage;
  int64_t device_capacity = 0;
  // LoRA: the frozen base (fp32 and 4-bit) on the device — whole on every
  // rank, or stage 3's partition — and in host memory (stage 3 with
  // offload_param).
  int64_t frozen_bytes = 0;
  int64_t host_frozen_bytes = 0;
  int64_t device_total() const { return model_states.total() + frozen_bytes + activation_bytes; }
  int64_t host_total() const { return host_model_states.total() + host_frozen_bytes; }
  int64_t total() const { return device_total() + host_total(); }
};

// What the last boundary step did.
struct StepInfo {
  bool overflow = false;  // gradients were not finite (max over ranks)
  bool skipped = false;   // no optimizer step was taken
  double grad_norm = 0;   // unscaled global L2 norm before clipping (NaN on overflow)
  double loss_scale = 1;  // scale the gradients carried
  double lr = 0;          // lr the optimizer step used
};

// Seconds spent in each phase since the last reset_timings() (for
// wall_clock_breakdown). backward: the model's pass (with whatever the
// strategy's hooks reduce inside it); reduce: the strategy's work after the
// pass and the boundary step's reduce_gradients(); step: the rest of the
// boundary step.
struct PhaseTimes {
  double forward = 0, backward = 0, reduce = 0, step = 0;
  int64_t boundaries = 0;
};

class Engine {
 public:
  // The model must have flat parameter and gradient buffers with the
  // initial weights in them (rank 0's are broadcast; stage 3 frees them).
  // InvalidArgument for a config solved for another world size, or no
  // optimizer.
  static StatusOr<std::unique_ptr<Engine>> create(const config::Config& config,
                                                  model::Module* model, comm::Communicator* comm,
                                                  const EngineOptions& options = {});
  ~Engine();

  // The micro-batch's mean loss (unscaled). tokens, targets: [B, T];
  // doc_starts: packed documents (Module::forward), or null.
  StatusOr<float> forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                          const int32_t* doc_starts = nullptr);
  // Backward of the last forward with dloss = loss_scale / gas.
  Status backward();
  // Counts the micro-step; at the boundary, the step described above.
  Status step();
  // Forward only, no state change (validation). The model's activations
  // are overwritten: call it between optimizer steps, not mid-micro-step.
  StatusOr<float> evaluate(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                           const int32_t* doc_starts = nullptr);

  // True while the current micro-batch (forward/backward/step not yet
  // called) is the last of its optimizer step, as in DeepSpeed.
  bool is_gradient_accumulation_boundary() const;
  int64_t micro_steps() const { return micro_steps_; }
  int64_t global_steps() const { return global_steps_; }  // boundaries, skipped included
  int64_t skipped_steps() const { return skipped_steps_; }
  double get_lr() const { return optimizer_->lr(); }  // lr of the next step
  double loss_scale() const { return scaler_->loss_scale(); }
  const StepInfo& last_step() const { return last_step_; }
  int64_t gradient_accumulation_steps() const { return gas_; }
  MemoryReport memory() const;
  // LoRA: the frozen base from `read` (a reader over the model's
  // base_layout()), as the strategy holds it: stage 3 streams it into its
  // partition, the others load it whole into the model.
  Status load_frozen(const model::ReadFlatFn& read) { return strategy_->load_frozen(*model_, read); }
  const PhaseTimes& timings() const { return times_; }
  void reset_timings() { times_ = {}; }

  // Checkpoints (engine_checkpoint.cc; the format is checkpoint/'s). Both
  // are collective: every rank calls them at the same optimizer-step
  // boundary with the same tag. save writes this rank's shard of master
  // weights and optimizer states into DIR/TAG, rank 0 the manifest (with
  // the scheduler, loss scaler, counters and `client_state`), then moves
  // DIR/TAG into place and points DIR/latest at it; a crash at any moment
  // leaves the previous checkpoint loadable. load re-partitions a
  // checkpoint written at any world size and stage (empty tag: DIR/latest),
  // refuses a corrupt or mismatched one on every rank with the path and
  // the reason (the engine is unchanged then), and returns client_state.
  Status save_checkpoint(const std::string& dir, const std::string& tag,
                         const nlohmann::json& client_state = nlohmann::json::object());
  StatusOr<nlohmann::json> load_checkpoint(const std::string& dir, const std::string& tag = "");

  // The optimizer, scheduler, loss scaler and counters a checkpoint keeps.
  EngineState state() const;
  const config::Config& config() const { return config_; }
  model::Module& model() { return *model_; }
  comm::Communicator& comm() { return *comm_; }
  ZeroStrategy& strategy() { return *strategy_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  optim::LrScheduler* scheduler() { return scheduler_.get(); }  // null: constant lr
  optim::LossScaler& scaler() { return *scaler_; }

 private:
  Engine() = default;
  Status boundary_step();
  Status update_in_sub_groups(Tensor grads, float grad_scale);
  // Checkpoint loading (engine_checkpoint.cc): the checkpoint fits this
  // model, optimizer and scheduler; its step state applied.
  Status check_compatible(const checkpoint::Manifest& m, const EngineState& saved,
                          const std::string& where) const;
  Status apply_state(const EngineState& saved);

  config::Config config_;
  model::Module* model_ = nullptr;
  comm::Communicator* comm_ = nullptr;
  std::unique_ptr<ZeroStrategy> strategy_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::LrScheduler> scheduler_;
  std::unique_ptr<optim::LossScaler> scaler_;
  int64_t gas_ = 1;
  int64_t micro_steps_ = 0;
  int64_t global_steps_ = 0;
  int64_t skipped_steps_ = 0;
  bool backward_pending_ = false;  // forward done, backward not yet
  StepInfo last_step_;
  PhaseTimes times_;
};

// deepspeed.initialize's counterpart: Engine::create.
inline StatusOr<std::unique_ptr<Engine>> initialize(const config::Config& config,
                                                    model::Module* model, comm::Communicator* comm,
                                                    const EngineOptions& options = {}) {
  return Engine::create(config, model, comm, options);
}

}  // namespace zerotrain::engine

// The trainer loop: config, model, data, engine, then steps with logging.
#include "train/trainer.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "config/config.h"
#include "core/env.h"
#include "device/device.h"
#include "engine/engine.h"
#include "model/registry.h"
#include "train/activation_checkpointing.h"
#include "train/data/corpus.h"
#include "train/data/loader.h"
#include "train/default_config.h"
#include "train/flops_profile.h"
#include "checkpoint/peft_adapter.h"
#include "train/initial_weights.h"
#include "train/memory_log.h"
#include "train/monitor.h"
#include "train/setup.h"
#include "train/step_timers.h"
#include "train/train_log.h"
#include "zero/options.h"

namespace zerotrain::train {
namespace {

using Clock = std::chrono::steady_clock;

// One rank's run: everything the loop needs, built once.
class Run {
 public:
  Run(const TrainOptions& o, comm::Communicator& comm, Setup setup)
      : o_(o), comm_(comm), s_(std::move(setup)), out_(o.out ? *o.out : std::cout) {
    rank0_ = comm.rank() == 0;
    progress_ = rank0_ && o.progress.value_or(isatty(STDERR_FILENO) == 1);
  }
  Status init();
  StatusOr<TrainSummary> loop();

 private:
  Status train_step(double* loss);
  Status resume();
  Status save(int64_t step);
  void write_metrics(int64_t step, double loss);
  void enable_comms_logger();
  Status write_monitors(int64_t step, double loss, double seconds);
  Status write_flops_profile(int64_t step);
  StatusOr<double> validate();
  void print_start();
  void print_step(int64_t step, double loss, double seconds);

  const TrainOptions& o_;
  comm::Communicator& comm_;
  Setup s_;
  std::ostream& out_;
  bool rank0_ = false, progress_ = false;
  std::unique_ptr<model::Module> model_;
  std::unique_ptr<engine::Engine> engine_;
  std::optional<DataLoader> loader_, val_loader_;
  TokenBatch batch_;
  std::vector<int32_t> x_, y_;
  TrainSummary summary_;
  int64_t first_step_ = 1;
  std::unique_ptr<std::ofstream> metrics_;
  Monitors monitors_;
  StepTimes step_times_;        // the last optimizer step's phases
  StepTimes last_micro_times_;  // and its last micro-step's
  std::vector<double> profiled_stage_seconds_;  // the flops profiler's step
  InitialWeights initial_weights_;
};

Status Run::init() {
  const int64_t B = s_.cfg.batch.train_micro_batch_size_per_gpu;
  ZT_ASSIGN_OR_RETURN(CorpusSplits data, load_data(o_, s_.info));
  device::Device& device = device::default_device();
  if (o_.device_memory) device.set_capacity(*o_.device_memory);
  // Stage 3 reads the initial weights a partition per rank (no whole-model
  // buffer anywhere); below, every rank holds the model. bf16: the GEMMs
  // read bf16 operands too (the engine keeps the weights bf16-rounded).
  const bool partitioned = s_.cfg.zero.stage == 3;
  std::shared_ptr<const model::LoraConfig> lora = o_.lora;
  if (!lora && s_.cfg.lora.r > 0) {  // the config file's "lora" section
    const config::LoraSectionConfig& c = s_.cfg.lora;
    model::LoraConfig l{.r = c.r,
                        .alpha = c.lora_alpha.value_or(2.0 * static_cast<double>(c.r)),
                        .dropout = c.lora_dropout,
                        .use_rslora = c.use_rslora,
                        .modules_to_save = c.modules_to_save,
                        .gaussian_init = c.init_lora_weights == "gaussian"};
    l.set_targets(c.target_modules);
    lora = std::make_shared<const model::LoraConfig>(std::move(l));
  }
  if (!lora && !o_.init_adapter.empty()) {
    ZT_ASSIGN_OR_RETURN(model::LoraConfig c, checkpoint::read_peft_config(o_.init_adapter));
    lora = std::make_shared<const model::LoraConfig>(std::move(c));
  }
  std::optional<device::Quant4Options> base_4bit = o_.base_4bit;
  if (!base_4bit && s_.cfg.lora.load_in_4bit) {
    ZT_ASSIGN_OR_RETURN(const device::Quant4Type type,
                        device::parse_quant4_type(s_.cfg.lora.bnb_4bit_quant_type));
    base_4bit = device::Quant4Options{.type = type,
                                      .double_quant = s_.cfg.lora.bnb_4bit_use_double_quant};
  }
  if (base_4bit && !lora)
    return invalid_argument(
        "4-bit base weights (--load-in-4bit, lora.load_in_4bit) are QLoRA: they train LoRA "
        "adapters over the frozen 4-bit base; give --lora-r R (or a \"lora\" section with r > 0)");
  const model::ModuleOptions mo{
      .max_batch = B,
      .max_seq = s_.T,
      .own_parameters = !partitioned,
      .own_gradients = !partitioned,
      .bf16_compute = s_.cfg.bf16.enabled,
      .checkpoint_layers = checkpointing_on(s_.cfg, o_),
      .checkpoint_synchronize = s_.cfg.activation_checkpointing.synchronize_checkpoint_boundary,
      .device = &device,
      .lora = lora,
      .base_4bit = base_4bit};
  // A device too small for the model itself says what would fit.
  ZT_ASSIGN_OR_RETURN(const model::ParamLayout layout, s_.model.family->layout(s_.model.config));
  ZT_ASSIGN_OR_RETURN(const int64_t activations,
                      s_.model.family->activation_bytes(s_.model.config, mo));
  const zero::ModelStateSetup setup =
      zero::model_state_setup(s_.cfg, layout.total_numel(), comm_.world_size());
  device.set_oom_advice([setup, activations, &device] {
    return zero::capacity_advice(setup, activations, device.capacity());
  });
  ZT_ASSIGN_OR_RETURN(model_, model::create_module(s_.model, mo));
  const std::string& weights = o_.init_weights.empty() ? s_.model_weights : o_.init_weights;
  StatusOr<InitialWeights> init = initial_weights(weights, *model_, o_.seed, o_.init_adapter);
  if (!init.ok()) return init.status().with_context(o_.init_weights.empty() ? "--model" : "--init");
  initial_weights_ = *init;
  if (s_.cfg.comms_logger.enabled) enable_comms_logger();
  engine::EngineOptions eo;
  eo.initial_weights = init->read;
  eo.local_ranks = o_.local_ranks;
  if (o_.threads > 0) {
    omp_set_num_threads(o_.threads);
    eo.configure_threads = false;
  }
  ZT_ASSIGN_OR_RETURN(engine_, engine::Engine::create(s_.cfg, model_.get(), &comm_, eo));
  // LoRA: the frozen base, whole on every rank or stage 3's partition.
  ZT_RETURN_IF_ERROR(engine_->load_frozen(init->base));
  LoaderOptions lo{.seq_len = s_.T,
                   .micro_batch = B,
                   .grad_accum_steps = s_.cfg.batch.gradient_accumulation_steps,
                   .world_size = comm_.world_size(),
                   .rank = comm_.rank(),
                   .seed = o_.seed};
  ZT_ASSIGN_OR_RETURN(DataLoader train_loader, DataLoader::create(data.train, lo));
  loader_.emplace(std::move(train_loader));
  if (o_.eval_interval > 0 && data.val && data.val->size() > 0) {
    lo.grad_accum_steps = 1;
    lo.shuffle = false;
    ZT_ASSIGN_OR_RETURN(DataLoader v, DataLoader::create(data.val, lo));
    val_loader_.emplace(std::move(v));
  }
  if (!o_.load_dir.empty()) ZT_RETURN_IF_ERROR(resume());
  if (rank0_ && !o_.metrics_file.empty()) {
    metrics_ = std::make_unique<std::ofstream>(o_.metrics_file, std::ios::app);
    if (!*metrics_) return io_error("--metrics " + o_.metrics_file + ": cannot open for appending");
  }
  if (rank0_) {
    ZT_ASSIGN_OR_RETURN(monitors_, Monitors::create(s_.cfg));
  }
  summary_.tokens_per_step =
      B * s_.T * s_.cfg.batch.gradient_accumulation_steps * comm_.world_size();
  summary_.effective_config = config::effective_config_json(s_.cfg);
  if (rank0_) print_start();
  return Status();
}

// Engine state from the checkpoint, then the loaders where it left them.
Status Run::resume() {
  ZT_ASSIGN_OR_RETURN(nlohmann::json client, engine_->load_checkpoint(o_.load_dir, o_.load_tag));
  first_step_ = engine_->global_steps() + 1;
  const auto restore = [&](const char* key, std::optional<DataLoader>& loader) -> Status {
    if (!loader) return ok_status();
    if (!client.contains(key) || !client[key].is_string())
      return invalid_argument("checkpoint in " + o_.load_dir + " has no " + key + " position");
    ZT_ASSIGN_OR_RETURN(LoaderPosition p, LoaderPosition::parse(client[key].get<std::string>()));
    return loader->restore(p).with_context(std::string("restoring the ") + key + " position");
  };
  ZT_RETURN_IF_ERROR(restore("train_loader", loader_));
  if (client.contains("val_loader")) ZT_RETURN_IF_ERROR(restore("val_loader", val_loader_));
  if (first_step_ > s_.steps)
    return invalid_argument("the checkpoint is at step " + std::to_string(first_step_ - 1) +
                            ", not before the last step " + std::to_string(s_.steps) +
                            " (raise --steps)");
  return ok_status();
}

Status Run::save(int64_t step) {
  nlohmann::json client{{"train_loader", loader_->position().to_string()},
                        {"seed", o_.seed},
                        {"step", step}};
  if (val_loader_) client["val_loader"] = val_loader_->position().to_string();
  return engine_->save_checkpoint(o_.save_dir, "global_step" + std::to_string(step), client);
}

void Run::write_metrics(int64_t step, double loss) {
  const engine::StepInfo& info = engine_->last_step();
  *metrics_ << format_metrics_line(step, loss, info.lr, info.loss_scale, info.grad_norm,
                                   info.skipped)
            << std::flush;
}

// From here on the communicator times its collectives (the engine's first
// broadcast included, as DeepSpeed logs its own); the summary is printed
// after the last step.
void Run::enable_comms_logger() {
  const config::CommsLoggerConfig& c = s_.cfg.comms_logger;
  std::vector<comm::OpType> ops;
  if (!c.prof_all) {
    for (const std::string& name : c.prof_ops) {
      for (int t = 0; t < comm::kNumOpTypes; ++t) {
        const auto type = static_cast<comm::OpType>(t);
        const std::string ds = comm::deepspeed_op_name(type);
        if (name == ds || name == ds + "_tensor" || name == ds + "_into_tensor")
          ops.push_back(type);
      }
    }
    // prof_all off and nothing listed: DeepSpeed times nothing.
    if (ops.empty()) return;
  }
  comm_.enable_op_log(std::move(ops), c.verbose);
}

// DeepSpeed's monitor events (train_loss, lr, and loss_scale under fp16),
// then what DeepSpeed leaves to other tools: grad norm, throughput, model
// FLOP/s (MFU against ZEROTRAIN_PEAK_TFLOPS when set: a CPU's peak is not
// knowable portably) and memory.
Status Run::write_monitors(int64_t step, double loss, double seconds) {
  const engine::StepInfo& info = engine_->last_step();
  const int64_t samples = step * s_.cfg.batch.train_batch_size;
  const double tokens_per_s = summary_.tokens_per_step / seconds;
  const double flops = tokens_per_s * static_cast<double>(s_.info.flops_per_token(s_.T));
  const engine::MemoryReport mem = engine_->memory();
  std::vector<MonitorEvent> events = {{"Train/Samples/train_loss", loss, samples},
                                      {"Train/Samples/lr", info.lr, samples}};
  if (s_.cfg.fp16.enabled) events.push_back({"Train/Samples/loss_scale", info.loss_scale, samples});
  events.push_back({"Train/Samples/grad_norm", info.grad_norm, samples});
  events.push_back({"Train/Samples/tokens_per_second", tokens_per_s, samples});
  events.push_back({"Train/Samples/model_tflops", flops * 1e-12, samples});
  ZT_ASSIGN_OR_RETURN(const double peak, env::get_double("ZEROTRAIN_PEAK_TFLOPS", 0));
  if (peak > 0) events.push_back({"Train/Samples/mfu", flops * 1e-12 / peak, samples});
  events.push_back({"Train/Samples/device_memory_bytes",
                    static_cast<double>(mem.device_usage.total()), samples});
  events.push_back({"Train/Samples/device_memory_peak_bytes",
                    static_cast<double>(mem.device_usage.peak), samples});
  events.push_back({"Train/Samples/host_rss_bytes", static_cast<double>(rss_bytes()), samples});
  if (s_.cfg.wall_clock_breakdown || s_.cfg.flops_profiler.enabled) {
    const std::vector<MonitorEvent> timed = timer_events(step_times_, samples);
    events.insert(events.end(), timed.begin(), timed.end());
  }
  return monitors_.write(events);
}

// The profile of the step just taken (its last micro-step's forward and
// backward), to the log or to output_file.
Status Run::write_flops_profile(int64_t step) {
  const config::FlopsProfilerConfig& c = s_.cfg.flops_profiler;
  const std::vector<double>& stage_s = profiled_stage_seconds_;
  FlopsProfile p{.step = step - 1,
                 .world_size = comm_.world_size(),
                 .micro_batch = batch_.batch,
                 .cost = model_->cost(batch_.batch, s_.T),
                 .stage_fwd_s = {stage_s.begin(), stage_s.end()},
                 .fwd_s = last_micro_times_.fwd_ms * 1e-3,
                 .bwd_s = last_micro_times_.bwd_ms() * 1e-3,
                 .step_s = step_times_.step_ms * 1e-3,
                 .train_flops = s_.info.flops_per_token(s_.T) * batch_.batch * s_.T,
                 .peak_flops = 0};
  ZT_ASSIGN_OR_RETURN(const double peak_tflops, env::get_double("ZEROTRAIN_PEAK_TFLOPS", 0));
  p.peak_flops = peak_tflops * 1e12;
  return emit_flops_profile(p, c, step, out_);
}

void Run::print_start() {
  const engine::MemoryReport mem = engine_->memory();
  out_ << "[zerotrain] environment: " << env::describe() << "\n";
  for (const std::string& w : s_.cfg.warnings)
    out_ << "[zerotrain] ds_config warning: " << w << "\n";
  const config::FlopsProfilerConfig& fp = s_.cfg.flops_profiler;
  if (fp.enabled && (fp.profile_step + 1 < first_step_ || fp.profile_step + 1 > s_.steps))
    out_ << "[zerotrain] ds_config warning: flops_profiler.profile_step " << fp.profile_step
         << " is optimizer step " << fp.profile_step + 1 << ", outside this run's steps "
         << first_step_ << ".." << s_.steps << ": no profile\n";
  out_ << "[zerotrain] effective ds_config"
       << (o_.deepspeed_config.empty() ? " (embedded default)" : " (" + o_.deepspeed_config + ")")
       << ":\n"
       << summary_.effective_config << "\n";
  out_ << "[zerotrain] model " << (o_.model_config ? "custom" : o_.model) << " ("
       << s_.model.family->name << "): " << s_.info.parameters << " parameters (" << mem.numel
       << " in the flat buffer), seq_len " << s_.T << ", " << comm_.world_size()
       << " rank(s), micro-batch " << s_.cfg.batch.train_micro_batch_size_per_gpu << ", grad accum "
       << s_.cfg.batch.gradient_accumulation_steps << ", global batch "
       << s_.cfg.batch.train_batch_size << " x " << s_.T << " tokens, " << s_.steps << " steps\n";
  if (const model::AdapterPlan* plan = model_->adapters()) {
    const int64_t frozen = mem.frozen_bytes + mem.host_frozen_bytes;
    char pct[32];
    std::snprintf(pct, sizeof(pct), "%.4f",
                  100.0 * static_cast<double>(model_->layout().total_numel()) /
                      static_cast<double>(model_->layout().total_numel() + plan->frozen_params));
    out_ << "[zerotrain] LoRA: " << plan->config.describe() << "; " << plan->adapted_linears
         << " Linear modules adapted; trainable " << model_->layout().total_numel()
         << " || frozen " << plan->frozen_params << " (trainable% " << pct << "); frozen store "
         << format_bytes(frozen) << " (" << frozen << " bytes) per rank";
    if (s_.cfg.zero.stage == 3)
      out_ << " (stage 3's partition of " << model::frozen_store_bytes(*plan) << " bytes: "
           << mem.frozen_bytes << " on the device, " << mem.host_frozen_bytes
           << " in host memory)";
    if (const auto& q = plan->quant4)
      out_ << "; 4-bit " << device::describe(*q) << ": " << plan->quantized.size()
           << " Linear weights, " << plan->quantized_params << " parameters";
    out_ << "\n";
  }
  out_ << format_initial_weights_line(initial_weights_, mem.numel);
  out_ << describe_checkpointing(s_.cfg, o_, s_.info.num_layers);
  out_ << format_memory_report(mem, s_.cfg.zero.stage);
  out_.flush();
}

Status Run::train_step(double* loss) {
  const int64_t gas = engine_->gradient_accumulation_steps();
  const bool micro_timers = rank0_ && s_.cfg.wall_clock_breakdown;
  // The flops profiler turns the optimizer-step lines on, as in DeepSpeed.
  const bool timers = rank0_ && (s_.cfg.wall_clock_breakdown || s_.cfg.flops_profiler.enabled);
  const engine::PhaseTimes at_start = engine_->timings();
  double sum = 0;
  for (int64_t k = 0; k < gas; ++k) {
    loader_->next(&batch_);
    batch_.split(&x_, &y_);
    const engine::PhaseTimes micro_start = engine_->timings();
    ZT_ASSIGN_OR_RETURN(float l, engine_->forward(x_.data(), y_.data(), batch_.batch, s_.T,
                                                  batch_.doc_starts_or_null()));
    ZT_RETURN_IF_ERROR(engine_->backward());
    ZT_RETURN_IF_ERROR(engine_->step());
    sum += l;
    last_micro_times_ = StepTimes::between(micro_start, engine_->timings());
    if (micro_timers) out_ << format_timers(last_micro_times_, true) << "\n";
  }
  step_times_ = StepTimes::between(at_start, engine_->timings());
  if (timers) out_ << format_timers(step_times_, false) << "\n";
  float mean = static_cast<float>(sum / static_cast<double>(gas));
  if (comm_.world_size() > 1)
    ZT_RETURN_IF_ERROR(comm_.allreduce(std::span<float>(&mean, 1), comm::ReduceOp::kAvg));
  *loss = mean;
  return Status();
}

StatusOr<double> Run::validate() {
  double sum = 0;
  for (int64_t i = 0; i < o_.eval_batches; ++i) {
    val_loader_->next(&batch_);
    batch_.split(&x_, &y_);
    ZT_ASSIGN_OR_RETURN(float l, engine_->evaluate(x_.data(), y_.data(), batch_.batch, s_.T,
                                                   batch_.doc_starts_or_null()));
    sum += l;
  }
  float mean = static_cast<float>(sum / static_cast<double>(std::max<int64_t>(1, o_.eval_batches)));
  if (comm_.world_size() > 1)
    ZT_RETURN_IF_ERROR(comm_.allreduce(std::span<float>(&mean, 1), comm::ReduceOp::kAvg));
  return mean;
}

void Run::print_step(int64_t step, double loss, double seconds) {
  const engine::StepInfo& info = engine_->last_step();
  StepLine l{.step = step,
             .total_steps = s_.steps,
             .loss = loss,
             .lr = info.lr,
             .loss_scale = info.loss_scale,
             .grad_norm = info.grad_norm,
             .skipped_steps = engine_->skipped_steps(),
             .tokens_per_s = summary_.tokens_per_step / seconds,
             .step_ms = seconds * 1e3,
             .rss_bytes = rss_bytes(),
             .memory = format_memory_compact(engine_->memory())};
  if (progress_) std::cerr << "\r\033[K" << std::flush;
  out_ << format_step_line(l) << "\n";
  out_ << std::flush;
}

StatusOr<TrainSummary> Run::loop() {
  const int64_t every = s_.cfg.steps_per_print.value_or(10);  // DeepSpeed's default
  double timed_seconds = 0;
  const auto start = Clock::now();
  for (int64_t step = first_step_; step <= s_.steps; ++step) {
    const auto t0 = Clock::now();
    double loss = 0;
    // DeepSpeed profiles when its global_steps (0-based) equals profile_step;
    // the stages are timed (and the device synchronised) in that step only.
    const bool profile =
        s_.cfg.flops_profiler.enabled && step - 1 == s_.cfg.flops_profiler.profile_step;
    if (profile) model_->set_stage_timing(true);
    const int64_t recomputed = model_->recomputed_stages();
    const double recompute_seconds = model_->recompute_seconds();
    ZT_RETURN_IF_ERROR(train_step(&loss));
    if (rank0_ && s_.cfg.activation_checkpointing.profile && checkpointing_on(s_.cfg, o_))
      out_ << format_recompute_line(model_->recomputed_stages() - recomputed,
                                    model_->recompute_seconds() - recompute_seconds);
    if (profile) {
      const std::span<const double> st = model_->forward_stage_seconds();
      profiled_stage_seconds_.assign(st.begin(), st.end());
      model_->set_stage_timing(false);
    }
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (step > first_step_ || s_.steps == first_step_) timed_seconds += dt;
    summary_.losses.push_back(loss);
    if (metrics_) write_metrics(step, loss);
    if (monitors_.enabled()) ZT_RETURN_IF_ERROR(write_monitors(step, loss, dt));
    if (rank0_ && profile) ZT_RETURN_IF_ERROR(write_flops_profile(step));
    if (rank0_ && (step == first_step_ || step == s_.steps || (every > 0 && step % every == 0)))
      print_step(step, loss, dt);
    if (val_loader_ && step % o_.eval_interval == 0) {
      ZT_ASSIGN_OR_RETURN(double v, validate());
      summary_.val_losses.push_back(v);
      if (rank0_) {
        if (progress_) std::cerr << "\r\033[K" << std::flush;
        char buf[64];
        std::snprintf(buf, sizeof(buf), " | val_loss %.4f\n", v);
        out_ << "[zerotrain] step " << step << buf << std::flush;
      }
    }
    if (!o_.save_dir.empty() &&
        (step == s_.steps || (o_.save_interval > 0 && step % o_.save_interval == 0)))
      ZT_RETURN_IF_ERROR(save(step));
    if (progress_) std::cerr << format_progress(step, s_.steps, loss) << std::flush;
  }
  if (progress_) std::cerr << "\n";
  const int64_t run_steps = s_.steps - first_step_ + 1;
  const int64_t timed_steps = run_steps > 1 ? run_steps - 1 : 1;
  summary_.steps = s_.steps;
  summary_.first_step = first_step_;
  summary_.skipped_steps = engine_->skipped_steps();
  summary_.first_loss = summary_.losses.front();
  summary_.last_loss = summary_.losses.back();
  summary_.mean_tokens_per_s = summary_.tokens_per_step * timed_steps / timed_seconds;
  if (rank0_) {
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "[zerotrain] done: %lld steps (%lld skipped) in %.1f s | loss %.4f -> %.4f | "
                  "mean %.0f tokens/s",
                  static_cast<long long>(summary_.steps),
                  static_cast<long long>(summary_.skipped_steps), total, summary_.first_loss,
                  summary_.last_loss, summary_.mean_tokens_per_s);
    out_ << buf;
    if (!summary_.val_losses.empty()) {
      std::snprintf(buf, sizeof(buf), " | val_loss %.4f", summary_.val_losses.back());
      out_ << buf;
    }
    out_ << "\n" << format_device_peak(engine_->memory()) << std::flush;
    if (const std::optional<comm::OpLog> log = comm_.op_log())
      out_ << "[zerotrain] comms logger (rank 0):\n" << log->summary() << std::flush;
  }
  summary_.device_peak_bytes = engine_->memory().device_usage.peak;
  return summary_;
}

}  // namespace

StatusOr<TrainSummary> train(const TrainOptions& options, comm::Communicator& comm) {
  ZT_ASSIGN_OR_RETURN(Setup setup, make_setup(options, comm.world_size()));
  Run run(options, comm, std::move(setup));
  ZT_RETURN_IF_ERROR(run.init());
  return run.loop();
}

}  // namespace zerotrain::train

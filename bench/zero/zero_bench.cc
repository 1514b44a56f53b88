// The ZeRO bench (zero_bench.h): real steps, compute alone, communication alone.
#include "zero_bench.h"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <utility>

#include "bench_comms.h"
#include "config/config.h"
#include "engine/engine.h"
#include "model/gpt2/config.h"
#include "model/gpt2/gpt_model.h"

namespace zerotrain::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

nlohmann::json summary(const std::vector<double>& v) {
  return {{"median", median(v)}, {"values", v}};
}

// CPU seconds (user + system, every thread) this process has used.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// Seconds since t0, the slowest rank's (the sync is outside the timing).
StatusOr<double> slowest(Clock::time_point t0, comm::Communicator* comm,
                         Clock::time_point end = Clock::now()) {
  float dt = std::chrono::duration<float>(end - t0).count();
  if (comm->world_size() > 1)
    ZT_RETURN_IF_ERROR(comm->allreduce(std::span<float>(&dt, 1), comm::ReduceOp::kMax));
  return dt;
}

// The engine keeps a pointer to the model: both on the heap.
struct Job {
  std::unique_ptr<model::gpt2::GptModel> model;
  std::unique_ptr<engine::Engine> engine;
};

StatusOr<Job> make_job(const ZeroCase& c, const model::gpt2::GptConfig& gpt,
                       comm::Communicator* comm) {
  config::TrainerArgs args;
  args.world_size = comm->world_size();
  args.hidden_size = gpt.n_embd;
  ZT_ASSIGN_OR_RETURN(config::Config cfg, config::parse_config(zero_ds_config(c), args));
  ZT_ASSIGN_OR_RETURN(model::gpt2::GptModel m,
                      model::gpt2::GptModel::create(
                          gpt, {.max_batch = c.B, .max_seq = c.T, .bf16_compute = c.bf16}));
  ZT_RETURN_IF_ERROR(m.init_parameters(c.seed));
  Job j{std::make_unique<model::gpt2::GptModel>(std::move(m)), nullptr};
  ZT_ASSIGN_OR_RETURN(j.engine, engine::Engine::create(cfg, j.model.get(), comm));
  return j;
}

// Uniform random next-token pairs for one micro-batch.
void fill_batch(std::mt19937_64& rng, int64_t vocab, int64_t n, std::vector<int32_t>* x,
                std::vector<int32_t>* y) {
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab - 1));
  x->resize(n), y->resize(n);
  for (int64_t i = 0; i < n; ++i) (*x)[i] = id(rng), (*y)[i] = id(rng);
}

StatusOr<float> one_step(engine::Engine& e, std::mt19937_64& rng, const ZeroCase& c,
                         int64_t vocab) {
  std::vector<int32_t> x, y;
  fill_batch(rng, vocab, c.B * c.T, &x, &y);
  ZT_ASSIGN_OR_RETURN(float loss, e.forward(x.data(), y.data(), c.B, c.T));
  ZT_RETURN_IF_ERROR(e.backward());
  ZT_RETURN_IF_ERROR(e.step());
  return loss;
}

// The real job over `rec` (which records the first timed step's
// collectives into *ops); fills step times, memory, bytes, losses.
Status run_real(const ZeroCase& c, const model::gpt2::GptConfig& gpt, comm::Communicator* gloo,
                RecordingCommunicator* rec, std::vector<RecordedOp>* ops, ZeroResult* r) {
  ZT_ASSIGN_OR_RETURN(Job j, make_job(c, gpt, rec));
  std::mt19937_64 rng(c.seed + static_cast<uint64_t>(gloo->rank()));
  // The last warm-up step (the first step without warm-up) is recorded,
  // from and to a settled state: overlap_comm's parameter all-gather
  // otherwise runs on into the next step's forward. Steps are timed back to
  // back (each interval ends where the next begins, the per-step sync
  // included), and the sync goes through the engine's communicator, behind
  // whatever the step left in flight, so every rank issues the same order.
  const int recorded = std::max(c.warmup - 1, 0);
  auto mark = Clock::now();
  for (int i = 0; i < c.warmup + c.steps; ++i) {
    const bool record = i == recorded;
    if (record) {
      ZT_RETURN_IF_ERROR(j.engine->strategy().wait_communication());
      rec->start_recording();
      gloo->reset_counters();
      mark = Clock::now();
    }
    ZT_ASSIGN_OR_RETURN(float loss, one_step(*j.engine, rng, c, gpt.vocab_size));
    if (record) {
      ZT_RETURN_IF_ERROR(j.engine->strategy().wait_communication());
      *ops = rec->stop_recording();
      r->wire_bytes_sent = gloo->counters().total().bytes_sent;
    }
    const auto t0 = std::exchange(mark, Clock::now());
    ZT_ASSIGN_OR_RETURN(double dt, slowest(t0, rec, mark));
    if (i == 0) r->loss_first = loss;
    r->loss_last = loss;
    if (i >= c.warmup) r->step_seconds.push_back(dt);
  }
  const engine::MemoryReport m = j.engine->memory();
  r->numel = m.numel;
  r->device_bytes = m.device_total();
  r->host_bytes = m.host_total();
  r->model_state_device = m.model_states.total();
  r->model_state_host = m.host_model_states.total();
  return Status();
}

// The same steps with every collective a no-op: compute alone.
Status run_compute_alone(const ZeroCase& c, const model::gpt2::GptConfig& gpt,
                         comm::Communicator* gloo, ZeroResult* r) {
  NullCommunicator null(gloo->rank(), gloo->world_size());
  ZT_ASSIGN_OR_RETURN(Job j, make_job(c, gpt, &null));
  std::mt19937_64 rng(c.seed + static_cast<uint64_t>(gloo->rank()));
  for (int i = 0; i < c.warmup + c.steps; ++i) {
    ZT_RETURN_IF_ERROR(gloo->barrier());  // both ranks compute at the same time
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    ZT_RETURN_IF_ERROR(one_step(*j.engine, rng, c, gpt.vocab_size).status());
    const double cpu = process_cpu_seconds() - cpu0;
    ZT_ASSIGN_OR_RETURN(double dt, slowest(t0, gloo));
    if (i >= c.warmup) {
      r->compute_seconds.push_back(dt);
      r->compute_cpu_seconds.push_back(cpu);
    }
  }
  r->compute_skipped = j.engine->skipped_steps();
  return Status();
}

Status run_comm_alone(const ZeroCase& c, const std::vector<RecordedOp>& ops,
                      comm::Communicator* gloo, ZeroResult* r) {
  for (int i = 0; i < c.warmup + c.steps; ++i) {
    ZT_RETURN_IF_ERROR(gloo->barrier());
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    ZT_RETURN_IF_ERROR(replay_collectives(ops, gloo));
    const double cpu = process_cpu_seconds() - cpu0;
    ZT_ASSIGN_OR_RETURN(double dt, slowest(t0, gloo));
    if (i >= c.warmup) {
      r->comm_seconds.push_back(dt);
      r->comm_cpu_seconds.push_back(cpu);
    }
  }
  return Status();
}

}  // namespace

double vm_hwm_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

std::string zero_ds_config(const ZeroCase& c) {
  nlohmann::json zero = {{"stage", c.stage},
                         {"overlap_comm", c.overlap},
                         {"reduce_bucket_size", c.bucket},
                         {"allgather_bucket_size", c.bucket}};
  if (c.offload) {
    zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    if (c.stage == 3) zero["offload_param"] = {{"device", "cpu"}};
  }
  if (c.stage == 3) zero["stage3_prefetch_bucket_size"] = c.bucket;
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", c.B},
      {"gradient_accumulation_steps", 1},
      {"gradient_clipping", 1.0},
      {"bf16", {{"enabled", c.bf16}}},
      {"optimizer",
       {{"type", "AdamW"},
        {"params", {{"lr", 1e-4}, {"betas", {0.9, 0.95}}, {"eps", 1e-8}, {"weight_decay", 0.01}}}}},
      {"zero_optimization", zero}};
  return j.dump();
}

StatusOr<ZeroResult> run_zero_case(const ZeroCase& c, comm::Communicator* gloo) {
  if (c.steps < 1) return invalid_argument("--steps: must be >= 1, got " + std::to_string(c.steps));
  if (c.stage == 0 && c.offload)
    return invalid_argument("--offload: stage 0 has no optimizer partition to offload");
  ZT_ASSIGN_OR_RETURN(model::gpt2::GptConfig gpt, model::gpt2::preset(c.model));
  ZeroResult r;
  r.c = c;
  r.ranks = gloo->world_size();
  r.threads = omp_get_max_threads();
  r.cores = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<RecordedOp> ops;
  {
    RecordingCommunicator rec(gloo);
    ZT_RETURN_IF_ERROR(run_real(c, gpt, gloo, &rec, &ops, &r));
  }
  r.collectives_per_step = static_cast<int>(ops.size());
  // Peak of the real job only: taken before the decomposition allocates.
  std::vector<float> hwm(static_cast<size_t>(r.ranks));
  float mine = static_cast<float>(vm_hwm_mib());
  ZT_RETURN_IF_ERROR(gloo->allgather(std::span<const float>(&mine, 1), hwm));
  r.vm_hwm_mib.assign(hwm.begin(), hwm.end());
  if (c.decompose) {
    ZT_RETURN_IF_ERROR(run_compute_alone(c, gpt, gloo, &r));
    ZT_RETURN_IF_ERROR(run_comm_alone(c, ops, gloo, &r));
  }
  return r;
}

double cpu_floor_seconds(const ZeroResult& r) {
  if (r.compute_cpu_seconds.empty() || r.comm_cpu_seconds.empty()) return 0;
  const double cores_per_rank =
      std::max(1.0, double(std::max(r.cores, 1)) / double(std::max(r.ranks, 1)));
  return (median(r.compute_cpu_seconds) + median(r.comm_cpu_seconds)) / cores_per_rank;
}

nlohmann::json zero_result_json(const ZeroResult& r) {
  nlohmann::json j = {{"bench", "zero_step"},
                      {"model", r.c.model},
                      {"precision", r.c.bf16 ? "bf16" : "fp32"},
                      {"stage", r.c.stage},
                      {"offload", r.c.offload},
                      {"overlap_comm", r.c.overlap},
                      {"ranks", r.ranks},
                      {"threads", r.threads},
                      {"B", r.c.B},
                      {"T", r.c.T},
                      {"bucket", r.c.bucket},
                      {"numel", r.numel},
                      {"steps", r.c.steps},
                      {"step_seconds", summary(r.step_seconds)},
                      {"vm_hwm_mib", r.vm_hwm_mib},
                      {"device_bytes", r.device_bytes},
                      {"host_bytes", r.host_bytes},
                      {"model_state_device", r.model_state_device},
                      {"model_state_host", r.model_state_host},
                      {"wire_bytes_sent", r.wire_bytes_sent},
                      {"collectives_per_step", r.collectives_per_step},
                      {"loss_first", r.loss_first},
                      {"loss_last", r.loss_last}};
  if (r.c.decompose) {
    const double step = median(r.step_seconds), compute = median(r.compute_seconds),
                 comm = median(r.comm_seconds);
    j["compute_seconds"] = summary(r.compute_seconds);
    j["comm_seconds"] = summary(r.comm_seconds);
    j["compute_skipped"] = r.compute_skipped;
    j["overlap_ratio"] = std::max(compute, comm) > 0 ? step / std::max(compute, comm) : 0;
    // The CPUs bound an overlapped step too: every rank's compute and
    // communication work share the machine's cores.
    const double cpu_floor = cpu_floor_seconds(r);
    j["compute_cpu_seconds"] = summary(r.compute_cpu_seconds);
    j["comm_cpu_seconds"] = summary(r.comm_cpu_seconds);
    j["cores"] = r.cores;
    j["cpu_floor_seconds"] = cpu_floor;
    j["floor_ratio"] = step / std::max({compute, comm, cpu_floor, 1e-12});
  }
  return j;
}

}  // namespace zerotrain::bench

// `zerotrain train [--deepspeed ds_config.json] [--model M] [--data DIR] ...`:
// the built-in trainer on this process's rank, from whatever started it
// (`zerotrain run`, torchrun, mpirun, mpiexec, srun, ...: comm/job_env.h;
// alone it is rank 0 of 1). With no arguments it
// trains gpt2-tiny on the generated corpus with the embedded ds_config.
#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "cli/commands.h"
#include "cli/adapter_flags.h"
#include "comm/factory.h"
#include "comm/job_env.h"
#include "core/env.h"
#include "core/log.h"
#include "device/device.h"
#include "train/default_config.h"
#include "train/trainer.h"

namespace zerotrain::cli {
namespace {

struct TrainFlags {
  train::TrainOptions o;
  int64_t steps = 0, micro_batch = 0, grad_accum = 0, seq_len = 0, warmup_steps = 0;
  double lr = 0, weight_decay = 0, max_grad_norm = 0, eps = 0;
  std::vector<double> betas;
  bool bf16 = false, fp16 = false, print_default_config = false;
  std::string device_memory;
  std::string device;  // --device; empty: ZEROTRAIN_DEVICE, else auto
  std::string rdzv_file;
  LoraFlags lora;
  Quant4Flags quant4;  // QLoRA
};

int run_train(const CLI::App* cmd, TrainFlags& f) {
  if (f.print_default_config) {
    std::cout << train::kDefaultDsConfig << "\n";
    return 0;
  }
  train::TrainOptions& o = f.o;
  o.steps = given(cmd, "--steps", f.steps);
  o.micro_batch = given(cmd, "--micro-batch", f.micro_batch);
  o.grad_accum = given(cmd, "--grad-accum", f.grad_accum);
  o.seq_len = given(cmd, "--seq-len", f.seq_len);
  o.warmup_steps = given(cmd, "--warmup-steps", f.warmup_steps);
  o.lr = given(cmd, "--lr", f.lr);
  o.weight_decay = given(cmd, "--weight-decay", f.weight_decay);
  o.max_grad_norm = given(cmd, "--max-grad-norm", f.max_grad_norm);
  o.eps = given(cmd, "--eps", f.eps);
  if (f.betas.size() == 2) o.betas = std::array<double, 2>{f.betas[0], f.betas[1]};
  o.bf16 = given(cmd, "--bf16", f.bf16);
  o.fp16 = given(cmd, "--fp16", f.fp16);
  if (f.lora.r > 0) o.lora = std::make_shared<const model::LoraConfig>(lora_config(f.lora));
  if (auto q = quant4_options(cmd, f.quant4); q.ok()) {
    o.base_4bit = *q;
  } else {
    std::cerr << "zerotrain train: " << q.status().message() << "\n";
    return 2;
  }

  StatusOr<comm::JobEnv> job = comm::job_from_env(comm::process_env(), f.rdzv_file);
  if (!job.ok()) {
    std::cerr << "zerotrain train: " << job.status().to_string() << "\n";
    return 2;
  }
  const comm::CommOptions* copts = &job->options;
  log::set_rank(copts->world_size > 1 ? copts->rank : -1);
  if (copts->world_size > 1 || job->placement.external)
    log::info(job->placement.describe(), "; store at ", job->rendezvous);
  for (const std::string& w : job->warnings) log::warn(w);
  // A restarted job (zerotrain run --max_restarts) resumes where its
  // checkpoints got to.
  StatusOr<int64_t> restart = env::get_int("ZEROTRAIN_RESTART_COUNT", 0);
  if (!restart.ok()) {
    std::cerr << "zerotrain train: " << restart.status().message() << "\n";
    return 2;
  }
  if (*restart > 0 && o.load_dir.empty()) {
    if (!o.save_dir.empty() && std::filesystem::exists(o.save_dir + "/latest")) {
      o.load_dir = o.save_dir;
      log::info("restart ", *restart, ": resuming from the latest checkpoint in ", o.save_dir);
    } else {
      log::warn("restart ", *restart, ": no checkpoint ",
                o.save_dir.empty() ? std::string("(no --save)") : "in " + o.save_dir,
                ", so training starts again from step 1");
    }
  }
  // Compute threads share this host's cores among its ranks.
  if (job->placement.local_world_size) o.local_ranks = *job->placement.local_world_size;
  if (!f.device_memory.empty()) {
    StatusOr<int64_t> bytes = device::parse_bytes(f.device_memory);
    if (!bytes.ok()) {
      std::cerr << "zerotrain train: --device-memory: " << bytes.status().message() << "\n";
      return 2;
    }
    o.device_memory = *bytes;
  }
  // The device before anything allocates: the worker's GPU when it has one.
  const std::string device_text =
      !f.device.empty() ? f.device : env::get("ZEROTRAIN_DEVICE").value_or("auto");
  StatusOr<device::DeviceChoice> choice = device::parse_device_choice(device_text);
  if (!choice.ok()) {
    std::cerr << "zerotrain train: --device: " << choice.status().message() << "\n";
    return 2;
  }
  StatusOr<device::Device*> dev =
      device::select_default_device(*choice, job->placement.local_rank.value_or(0));
  if (!dev.ok()) {
    std::cerr << "zerotrain train: " << dev.status().to_string() << "\n";
    return 1;
  }
  if ((*dev)->type() != device::DeviceType::kCpu) log::info("training on ", (*dev)->name());
  StatusOr<std::unique_ptr<comm::Communicator>> comm = comm::create_communicator(*copts, **dev);
  if (!comm.ok()) {
    std::cerr << "zerotrain train: " << comm.status().to_string() << "\n";
    return 1;
  }
  StatusOr<train::TrainSummary> s = train::train(o, **comm);
  if (!s.ok()) {
    std::cerr << "zerotrain train: " << s.status().to_string() << "\n";
    return s.status().code() == StatusCode::kInvalidArgument ||
                   s.status().code() == StatusCode::kNotFound
               ? 2
               : 1;
  }
  return 0;
}

}  // namespace

Runner add_train_command(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand("train",
                                     "train a GPT-2 or Llama-family model on the generated corpus "
                                     "or token shards (the built-in trainer)");
  cmd->add_option("--deepspeed,--deepspeed_config", f->o.deepspeed_config,
                  "ds_config.json (default: the embedded config, see --print-default-config)");
  cmd->add_option("--rdzv-file,--rdzv_file", f->rdzv_file,
                  "rendezvous through this file on a file system every rank shares, when the "
                  "launcher gives no address (ZEROTRAIN_RDZV_FILE; id from ZEROTRAIN_RDZV_ID or "
                  "the Slurm/Flux job id)");
  cmd->add_option("--device", f->device,
                  "auto (default, or ZEROTRAIN_DEVICE): this worker's GPU when the build has the "
                  "CUDA backend and the driver shows one, else the CPU; cpu or cuda to force one")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--device-memory", f->device_memory,
                  "capacity of the device's memory, e.g. 512MiB (default: unlimited, or "
                  "ZEROTRAIN_DEVICE_MEMORY); an allocation beyond it fails naming what would fit");
  cmd->add_option("--model", f->o.model,
                  "a preset (`zerotrain models` lists them), a Hugging Face model directory "
                  "(config.json + safetensors: its weights are the initial ones) or a "
                  "config.json")
      ->capture_default_str();
  cmd->add_option("--data", f->o.data_dir,
                  "directory of train_*.bin/val_*.bin shards (zerotrain data tokenize); "
                  "default: the generated corpus");
  cmd->add_option("--steps", f->steps,
                  "optimizer steps (default: scheduler total_num_steps, "
                  "else " +
                      std::to_string(train::DefaultTrainerArgs::kSteps) + ")");
  cmd->add_option("--seed", f->o.seed, "seed for init and data order")->capture_default_str();
  cmd->add_option("--lr", f->lr, "learning rate (resolves \"auto\")");
  cmd->add_option("--micro-batch", f->micro_batch, "train_micro_batch_size_per_gpu");
  cmd->add_option("--grad-accum", f->grad_accum, "gradient_accumulation_steps");
  cmd->add_option("--seq-len", f->seq_len,
                  "tokens per sequence (<= the model's block size; default min(block, " +
                      std::to_string(train::DefaultTrainerArgs::kSeqLen) + "))");
  cmd->add_option("--warmup-steps", f->warmup_steps, "scheduler warmup_num_steps");
  cmd->add_option("--weight-decay", f->weight_decay, "AdamW weight decay");
  cmd->add_option("--betas", f->betas, "Adam betas, two numbers")->expected(2);
  cmd->add_option("--eps", f->eps, "Adam epsilon");
  cmd->add_option("--max-grad-norm", f->max_grad_norm, "gradient_clipping");
  cmd->add_flag("--bf16", f->bf16, "bf16 mixed precision (resolves bf16.enabled: auto)");
  cmd->add_flag("--fp16", f->fp16, "fp16 with dynamic loss scaling (fp16.enabled: auto)");
  f->o.eval_interval = 100;
  cmd->add_option("--eval-interval", f->o.eval_interval, "validation loss every N steps (0: off)")
      ->capture_default_str();
  cmd->add_option("--eval-batches", f->o.eval_batches, "validation micro-batches per rank")
      ->capture_default_str();
  cmd->add_option("--corpus-bytes", f->o.corpus_bytes, "size of the generated corpus")
      ->capture_default_str();
  cmd->add_option("--save", f->o.save_dir,
                  "save checkpoints into DIR (tag global_step<N>; DIR/latest names the newest)");
  cmd->add_option("--save-interval", f->o.save_interval,
                  "save every N steps (default 0: only after the last step)");
  cmd->add_option("--load", f->o.load_dir,
                  "resume from the checkpoint DIR/latest names (any world size and stage)");
  cmd->add_option("--load-tag", f->o.load_tag, "resume from DIR/TAG instead of DIR/latest");
  cmd->add_option("--init", f->o.init_weights,
                  "initial weights from a safetensors file or an HF model directory (HF tensor "
                  "names, e.g. an export), instead of --model DIR's or the seeded init");
  add_lora_flags(cmd, f->lora, "train");
  add_quant4_flags(cmd, f->quant4);
  cmd->add_option("--init-adapter", f->o.init_adapter,
                  "start from a PEFT LoRA adapter directory (its adapter_config.json is the "
                  "run's LoRA config unless --lora-r is given)");
  cmd->add_flag("--gradient-checkpointing,--gradient_checkpointing", f->o.gradient_checkpointing,
                "activation checkpointing of every block, as HF's flag (also on when the "
                "ds_config has an activation_checkpointing section)");
  cmd->add_option("--metrics", f->o.metrics_file,
                  "append one JSON line a step (step, exact loss, lr, loss scale, grad norm)");
  cmd->add_flag("--print-default-config", f->print_default_config,
                "print the embedded ds_config and exit");
  return [cmd, f]() { return run_train(cmd, *f); };
}

}  // namespace zerotrain::cli

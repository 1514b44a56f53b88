// `zerotrain config check FILE...`: validate ds_config files and print the
// effective config (defaults filled, "auto" resolved) or every error (exit 2).
#include <algorithm>
#include <array>
#include <iostream>
#include <memory>
#include <optional>

#include "checkpoint/hf/model_dir.h"
#include "cli/commands.h"
#include "config/config.h"
#include "model/registry.h"
#include "train/default_config.h"

namespace zerotrain::cli {
namespace {

struct ConfigCheckFlags {
  std::vector<std::string> files;
  int64_t world_size = 1;
  // Trainer arguments "auto" values resolve from, as the Hugging Face
  // integration resolves them from TrainingArguments.
  double lr = 0, eps = 0, weight_decay = 0, max_grad_norm = 0;
  std::vector<double> betas;
  int64_t warmup_steps = 0, micro_batch = 0, grad_accum = 0, hidden_size = 0;
  int64_t steps = train::DefaultTrainerArgs::kSteps;
  std::string model = "gpt2-tiny";
};

config::TrainerArgs trainer_args(const CLI::App* check, const ConfigCheckFlags& f) {
  config::TrainerArgs t;
  t.world_size = f.world_size;
  t.lr = given(check, "--lr", f.lr);
  t.eps = given(check, "--eps", f.eps);
  if (f.betas.size() == 2) t.betas = std::array<double, 2>{f.betas[0], f.betas[1]};
  t.weight_decay = given(check, "--weight-decay", f.weight_decay);
  t.max_grad_norm = given(check, "--max-grad-norm", f.max_grad_norm);
  t.warmup_steps = given(check, "--warmup-steps", f.warmup_steps);
  t.micro_batch_per_gpu = given(check, "--micro-batch", f.micro_batch);
  t.gradient_accumulation_steps = given(check, "--grad-accum", f.grad_accum);
  t.hidden_size = given(check, "--hidden-size", f.hidden_size);
  if (check->count("--fp16") > 0) t.fp16 = true;
  if (check->count("--bf16") > 0) t.bf16 = true;
  return t;
}

// Each value an "auto" became, and where from: a flag, a flag's default,
// the batch triangle, or DeepSpeed's default.
void print_resolved(const std::string& path, const config::Config& c) {
  const nlohmann::ordered_json effective = nlohmann::ordered_json::parse(effective_config_json(c));
  for (const auto& [key, source] : c.auto_sources) {
    const nlohmann::ordered_json* node = &effective;
    for (size_t start = 0; node != nullptr && start <= key.size();) {
      size_t dot = std::min(key.find('.', start), key.size());
      auto it = node->find(key.substr(start, dot - start));
      node = it == node->end() ? nullptr : &*it;
      start = dot + 1;
    }
    std::cerr << path << ": auto: " << key << " = " << (node ? node->dump() : "(unset)") << " ("
              << source << ")\n";
  }
}

int check_files(const CLI::App* check, const ConfigCheckFlags& flags) {
  config::TrainerArgs args = trainer_args(check, flags);
  // The same defaults `zerotrain train` uses, for the same model and steps.
  StatusOr<checkpoint::ResolvedModel> model = checkpoint::resolve_model(flags.model);
  StatusOr<model::ModelInfo> info = model.ok() ? model->spec.family->info(model->spec.config)
                                               : StatusOr<model::ModelInfo>(model.status());
  if (!info.ok()) {
    std::cerr << "zerotrain config check: --model: " << info.status().message() << "\n";
    return 2;
  }
  const config::TrainerArgs defaults = train::default_trainer_args(flags.steps, info->hidden_size);
  // As `train` does: the model's width is known, so it counts as given.
  if (!args.hidden_size) args.hidden_size = info->hidden_size;
  int exit_code = 0;
  for (const std::string& path : flags.files) {
    StatusOr<config::Config> parsed = config::load_config_file(path, args, defaults);
    if (!parsed.ok()) {
      std::cerr << parsed.status().message() << "\n";
      exit_code = 2;
      continue;
    }
    for (const std::string& w : parsed->warnings) std::cerr << path << ": warning: " << w << "\n";
    print_resolved(path, *parsed);
    if (flags.files.size() > 1) std::cout << "# " << path << "\n";
    std::cout << config::effective_config_json(*parsed) << "\n";
  }
  return exit_code;
}

}  // namespace

Runner add_config_command(CLI::App& app) {
  auto flags = std::make_shared<ConfigCheckFlags>();
  CLI::App* cfg = app.add_subcommand("config", "work with ds_config.json files");
  cfg->require_subcommand(1);
  CLI::App* check = cfg->add_subcommand(
      "check", "validate ds_config files; print the effective config, or the errors (exit 2)");
  check->add_option("files", flags->files, "ds_config.json files")->required();
  check
      ->add_option("--world-size,--world_size", flags->world_size,
                   "data-parallel world size for the batch-size arithmetic")
      ->capture_default_str();
  check->add_option("--lr", flags->lr, "learning rate (resolves optimizer.params.lr: auto)");
  check->add_option("--betas", flags->betas, "Adam betas, two numbers")->expected(2);
  check->add_option("--eps", flags->eps, "Adam epsilon");
  check->add_option("--weight-decay", flags->weight_decay, "weight decay");
  check->add_option("--warmup-steps", flags->warmup_steps, "warmup steps");
  check->add_option("--steps,--total-steps", flags->steps, "training steps (as for train)")
      ->capture_default_str();
  check
      ->add_option(
          "--model", flags->model,
          "model (preset, HF model directory or config.json) whose hidden size the autos use")
      ->capture_default_str();
  check->add_option("--micro-batch", flags->micro_batch, "micro-batch size per worker");
  check->add_option("--grad-accum", flags->grad_accum, "gradient accumulation steps");
  check->add_option("--max-grad-norm", flags->max_grad_norm, "gradient clipping norm");
  check->add_option("--hidden-size", flags->hidden_size, "model hidden size (bucket-size autos)");
  check->add_flag("--fp16")->description("trainer runs in fp16 (resolves fp16.enabled: auto)");
  check->add_flag("--bf16")->description("trainer runs in bf16 (resolves bf16.enabled: auto)");
  return [check, flags]() { return check_files(check, *flags); };
}

}  // namespace zerotrain::cli

// Trainer set-up: config with autos, model shape, steps, data (setup.h).
#include "train/setup.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "train/data/dataset.h"
#include "train/data/tokenizer.h"
#include "train/default_config.h"

namespace zerotrain::train {
namespace {

StatusOr<model::ModelSpec> model_spec(const TrainOptions& o) {
  if (o.model_config) return model::model_spec_from_config(*o.model_config);
  return model::model_spec(o.model);
}

// The trainer's own values for every argument the user did not give.
config::TrainerArgs with_defaults(config::TrainerArgs a, int64_t steps) {
  using D = DefaultTrainerArgs;
  if (!a.total_steps) a.total_steps = steps;
  if (!a.lr) a.lr = D::kLr;
  if (!a.betas) a.betas = std::array<double, 2>{D::kBeta1, D::kBeta2};
  if (!a.eps) a.eps = D::kEps;
  if (!a.weight_decay) a.weight_decay = D::kWeightDecay;
  if (!a.max_grad_norm) a.max_grad_norm = D::kMaxGradNorm;
  if (!a.micro_batch_per_gpu) a.micro_batch_per_gpu = D::kMicroBatch;
  if (!a.gradient_accumulation_steps) a.gradient_accumulation_steps = D::kGradAccum;
  if (!a.warmup_steps) a.warmup_steps = std::clamp<int64_t>(steps / 10, 1, 50);
  if (!a.bf16) a.bf16 = false;
  if (!a.fp16) a.fp16 = false;
  return a;
}

config::TrainerArgs given_args(const TrainOptions& o, int world, int64_t hidden) {
  config::TrainerArgs a;
  a.world_size = world;
  a.hidden_size = hidden;
  a.lr = o.lr;
  a.weight_decay = o.weight_decay;
  a.max_grad_norm = o.max_grad_norm;
  a.eps = o.eps;
  a.betas = o.betas;
  a.micro_batch_per_gpu = o.micro_batch;
  a.gradient_accumulation_steps = o.grad_accum;
  a.warmup_steps = o.warmup_steps;
  a.bf16 = o.bf16;
  a.fp16 = o.fp16;

  return a;
}

// A user config gets the arguments the user gave (a non-auto value that
// disagrees with one is an error, as in HF). An "auto" whose argument was
// not given takes the trainer's default, and only that one: explicit
// values are never compared with defaults the user did not choose.
StatusOr<config::Config> load_user_config(const std::string& path, config::TrainerArgs args,
                                          int64_t steps) {
  StatusOr<config::Config> first = config::load_config_file(path, args);
  if (first.ok() || first.status().code() != StatusCode::kInvalidArgument) return first;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  using Args = config::TrainerArgs;
  // ds_config path of an "auto" -> copies the default of its argument.
  static const std::pair<const char*, void (*)(Args&, const Args&)> kFill[] = {
      {"optimizer.params.lr", [](Args& a, const Args& d) { a.lr = d.lr; }},
      {"scheduler.params.warmup_max_lr", [](Args& a, const Args& d) { a.lr = d.lr; }},
      {"optimizer.params.betas", [](Args& a, const Args& d) { a.betas = d.betas; }},
      {"optimizer.params.eps", [](Args& a, const Args& d) { a.eps = d.eps; }},
      {"optimizer.params.weight_decay",
       [](Args& a, const Args& d) { a.weight_decay = d.weight_decay; }},
      {"gradient_clipping", [](Args& a, const Args& d) { a.max_grad_norm = d.max_grad_norm; }},
      {"train_micro_batch_size_per_gpu",
       [](Args& a, const Args& d) { a.micro_batch_per_gpu = d.micro_batch_per_gpu; }},
      {"gradient_accumulation_steps",
       [](Args& a, const Args& d) {
         a.gradient_accumulation_steps = d.gradient_accumulation_steps;
       }},
      {"scheduler.params.warmup_num_steps",
       [](Args& a, const Args& d) { a.warmup_steps = d.warmup_steps; }},
      {"scheduler.params.total_num_steps",
       [](Args& a, const Args& d) { a.total_steps = d.total_steps; }},
      {"bf16.enabled", [](Args& a, const Args& d) { a.bf16 = d.bf16; }},
      {"fp16.enabled", [](Args& a, const Args& d) { a.fp16 = d.fp16; }},
  };
  const Args defaults = with_defaults(args, steps);
  const std::vector<config::ConfigError> errors = config::parse_config_detailed(text, args).errors;
  bool filled = false;
  for (const config::ConfigError& e : errors) {
    if (e.message.find("was not given") == std::string::npos) continue;
    for (const auto& [path, fill] : kFill) {
      if (e.path != path) continue;
      fill(args, defaults);
      filled = true;
    }
  }
  if (!filled) return first;
  return config::load_config_file(path, args);
}

}  // namespace

StatusOr<Setup> make_setup(const TrainOptions& o, int world) {
  Setup s;
  ZT_ASSIGN_OR_RETURN(s.model, model_spec(o));
  ZT_ASSIGN_OR_RETURN(s.info, s.model.family->info(s.model.config));
  const bool embedded = o.deepspeed_config.empty();
  const int64_t default_steps = o.steps.value_or(DefaultTrainerArgs::kSteps);
  const config::TrainerArgs args = given_args(o, world, s.info.hidden_size);
  if (embedded) {
    StatusOr<config::Config> c =
        config::parse_config(kDefaultDsConfig, with_defaults(args, default_steps));
    if (!c.ok()) return Status(c.status().code(), "embedded ds_config: " + c.status().message());
    s.cfg = std::move(c).value();
  } else {
    ZT_ASSIGN_OR_RETURN(s.cfg, load_user_config(o.deepspeed_config, args, default_steps));
  }
  s.steps = o.steps ? *o.steps : s.cfg.scheduler.total_num_steps.value_or(default_steps);
  if (s.steps < 1) return invalid_argument("--steps: must be >= 1, got " + std::to_string(s.steps));
  s.T = o.seq_len.value_or(std::min(s.info.max_seq, DefaultTrainerArgs::kSeqLen));
  if (s.T < 1 || s.T > s.info.max_seq)
    return invalid_argument("--seq-len: " + std::to_string(s.T) + " is outside [1, " +
                            std::to_string(s.info.max_seq) + "], the model's block size");
  return s;
}

StatusOr<CorpusSplits> load_data(const TrainOptions& o, const model::ModelInfo& info) {
  CorpusSplits d;
  if (o.data_dir.empty()) {
    ZT_ASSIGN_OR_RETURN(
        d, default_corpus_splits({.target_bytes = o.corpus_bytes}, kDefaultValFraction));
  } else {
    ZT_ASSIGN_OR_RETURN(TokenDataset train_set, TokenDataset::open_split(o.data_dir, "train"));
    d.train = std::make_shared<const TokenDataset>(std::move(train_set));
    StatusOr<TokenDataset> val = TokenDataset::open_split(o.data_dir, "val");
    if (val.ok()) d.val = std::make_shared<const TokenDataset>(std::move(val).value());
  }
  if (d.train->vocab_size() > static_cast<uint32_t>(info.vocab_size))
    return invalid_argument("the data's vocabulary (" + std::to_string(d.train->vocab_size()) +
                            ") is larger than the model's (" + std::to_string(info.vocab_size) +
                            ")");
  return d;
}

}  // namespace zerotrain::train

// Trainer set-up: config with autos, model shape, steps, data (setup.h).
#include "train/setup.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/hf/model_dir.h"
#include "train/data/dataset.h"
#include "train/data/tokenizer.h"
#include "train/default_config.h"

namespace zerotrain::train {
namespace {

StatusOr<model::ModelSpec> model_spec(const TrainOptions& o, std::string* weights) {
  if (o.model_config) return model::model_spec_from_config(*o.model_config);
  StatusOr<checkpoint::ResolvedModel> r = checkpoint::resolve_model(o.model);
  if (!r.ok()) return r.status().with_context("--model");
  *weights = r->weights;
  return r->spec;
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

}  // namespace

StatusOr<Setup> make_setup(const TrainOptions& o, int world) {
  Setup s;
  ZT_ASSIGN_OR_RETURN(s.model, model_spec(o, &s.model_weights));
  ZT_ASSIGN_OR_RETURN(s.info, s.model.family->info(s.model.config));
  const bool embedded = o.deepspeed_config.empty();
  const int64_t default_steps = o.steps.value_or(DefaultTrainerArgs::kSteps);
  const config::TrainerArgs args = given_args(o, world, s.info.hidden_size);
  const config::TrainerArgs defaults = default_trainer_args(default_steps, s.info.hidden_size);
  if (embedded) {
    StatusOr<config::Config> c = config::parse_config(kDefaultDsConfig, args, defaults);
    if (!c.ok()) return Status(c.status().code(), "embedded ds_config: " + c.status().message());
    s.cfg = std::move(c).value();
  } else {
    ZT_ASSIGN_OR_RETURN(s.cfg, config::load_config_file(o.deepspeed_config, args, defaults));
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

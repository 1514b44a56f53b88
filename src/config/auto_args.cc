// Which TrainerArgs field each "auto" key comes from, and how (the HF
// integration's rules, transformers/integrations/deepspeed.py). Also used to refuse config values
// that contradict a trainer argument, as HF does.
#include "config/auto_args.h"

namespace zerotrain::config {
namespace {

template <typename T>
std::optional<Json> opt(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return Json(*v);
}

std::optional<Json> pair(const std::optional<std::array<double, 2>>& v) {
  if (!v) return std::nullopt;
  return Json::array({(*v)[0], (*v)[1]});
}

std::optional<Json> hidden(const TrainerArgs& a, int64_t num, int64_t den, int power) {
  if (!a.hidden_size) return std::nullopt;
  int64_t h = *a.hidden_size;
  // Integer arithmetic: HF's int(0.9 * h * h) for h = 768 is 530841.
  return Json(power == 2 ? h * h * num / den : h * num / den);
}

const AutoRule kRules[] = {
    {"train_micro_batch_size_per_gpu", "micro_batch_per_gpu", "--micro-batch", true,
     [](const TrainerArgs& a) { return opt(a.micro_batch_per_gpu); }},
    {"gradient_accumulation_steps", "gradient_accumulation_steps", "--grad-accum", true,
     [](const TrainerArgs& a) { return opt(a.gradient_accumulation_steps); }},
    {"gradient_clipping", "max_grad_norm", "--max-grad-norm", true,
     [](const TrainerArgs& a) { return opt(a.max_grad_norm); }},
    {"fp16.enabled", "fp16", "--fp16", true, [](const TrainerArgs& a) { return opt(a.fp16); }},
    {"bf16.enabled", "bf16", "--bf16", true, [](const TrainerArgs& a) { return opt(a.bf16); }},
    {"optimizer.params.lr", "lr", "--lr", true, [](const TrainerArgs& a) { return opt(a.lr); }},
    {"optimizer.params.betas", "betas", "--betas", true,
     [](const TrainerArgs& a) { return pair(a.betas); }},
    {"optimizer.params.eps", "eps", "--eps", true, [](const TrainerArgs& a) { return opt(a.eps); }},
    {"optimizer.params.weight_decay", "weight_decay", "--weight-decay", true,
     [](const TrainerArgs& a) { return opt(a.weight_decay); }},
    {"scheduler.params.warmup_min_lr", "", "", false,
     [](const TrainerArgs&) { return std::optional<Json>(Json(0.0)); }},
    {"scheduler.params.warmup_max_lr", "lr", "--lr", true,
     [](const TrainerArgs& a) { return opt(a.lr); }},
    {"scheduler.params.warmup_num_steps", "warmup_steps", "--warmup-steps", true,
     [](const TrainerArgs& a) { return opt(a.warmup_steps); }},
    {"scheduler.params.total_num_steps", "total_steps", "--steps", true,
     [](const TrainerArgs& a) { return opt(a.total_steps); }},
    // Sized from the model after it is built: filled, never compared (HF fill_only).
    {"zero_optimization.reduce_bucket_size", "hidden_size", "--model", false,
     [](const TrainerArgs& a) { return hidden(a, 1, 1, 2); }},
    {"zero_optimization.stage3_prefetch_bucket_size", "hidden_size", "--model", false,
     [](const TrainerArgs& a) { return hidden(a, 9, 10, 2); }},
    {"zero_optimization.stage3_param_persistence_threshold", "hidden_size", "--model", false,
     [](const TrainerArgs& a) { return hidden(a, 10, 1, 1); }},
};

}  // namespace

const AutoRule* find_auto_rule(std::string_view path) {
  for (const AutoRule& r : kRules)
    if (r.path == path) return &r;
  return nullptr;
}

std::span<const AutoRule> auto_rules() { return kRules; }

}  // namespace zerotrain::config

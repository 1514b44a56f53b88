// Cross-field rules: combinations of individually valid values that
// DeepSpeed asserts on (or silently mishandles). A rule is skipped when one
// of its inputs was already reported, so one mistake gives one error.
#include <string>

#include "config/resolve.h"

namespace zerotrain::config {
namespace {

class Rules {
 public:
  Rules(const Config& c, const RuleContext& ctx, std::vector<ConfigError>* errors,
        std::vector<ConfigError>* warnings)
      : c_(c), ctx_(ctx), errors_(errors), warnings_(warnings) {}

  void run() {
    precision();
    offload();
    reduction();
    optimizer();
    scheduler();
    stage3_keys_below_stage3();
  }

 private:
  void error(const std::string& path, std::string msg) {
    errors_->push_back({ctx_.walk.shown(path), std::move(msg)});
  }
  std::string stage() const { return std::to_string(c_.zero.stage); }

  void precision() {
    if (c_.fp16.enabled && c_.bf16.enabled && ctx_.ok({"fp16.enabled", "bf16.enabled"}))
      error("bf16.enabled", "fp16 and bf16 are both enabled; enable at most one");
  }

  void offload() {
    const char* kStage = "zero_optimization.stage";
    // offload_param below stage 3: ignored, as DeepSpeed does (rules_unsupported.cc).
    if (c_.zero.offload_optimizer.enabled() && c_.zero.stage == 0 &&
        ctx_.ok({kStage, "zero_optimization.offload_optimizer.device"}))
      error("zero_optimization.offload_optimizer.device",
            "offload_optimizer requires zero_optimization.stage 1, 2 or 3 (stage is 0)");
  }

  void reduction() {
    if (c_.zero.allgather_bucket_size % 2 != 0 &&
        ctx_.ok({"zero_optimization.allgather_bucket_size"}))
      error("zero_optimization.allgather_bucket_size",
            "must be a multiple of 2, got " + std::to_string(c_.zero.allgather_bucket_size));
    bool scaled = c_.prescale_gradients || c_.gradient_predivide_factor != 1.0;
    if ((c_.zero.stage == 1 || c_.zero.stage == 2) && c_.zero.reduce_scatter && scaled &&
        ctx_.ok({"gradient_predivide_factor", "prescale_gradients", "zero_optimization.stage"}))
      error(c_.prescale_gradients ? "prescale_gradients" : "gradient_predivide_factor",
            "ZeRO stage " + stage() +
                " with reduce_scatter requires prescale_gradients false and "
                "gradient_predivide_factor 1.0 (as DeepSpeed does)");
    if (c_.gradient_allreduce_op == AllreduceOp::kSum && c_.zero.stage == 3 &&
        ctx_.ok({"gradient_allreduce_op", "zero_optimization.stage"}))
      error("gradient_allreduce_op", "\"sum\" is not supported with ZeRO stage 3; use \"mean\"");
  }

  void optimizer() {
    const OptimizerConfig& o = c_.optimizer;
    if (o.type == OptimizerType::kAdamW && !o.adam_w_mode &&
        ctx_.given("optimizer.params.adam_w_mode"))
      error("optimizer.params.adam_w_mode",
            "AdamW always decouples weight decay; for coupled (L2) decay use type Adam "
            "with adam_w_mode false");
    if (o.type == OptimizerType::kSgd && o.nesterov && (o.momentum <= 0 || o.dampening != 0) &&
        ctx_.ok({"optimizer.params.momentum", "optimizer.params.dampening"}))
      error("optimizer.params.nesterov",
            "Nesterov momentum requires momentum > 0 and dampening 0 (momentum " +
                Json(o.momentum).dump() + ", dampening " + Json(o.dampening).dump() + ")");
  }

  void scheduler() {
    const SchedulerConfig& s = c_.scheduler;
    if (s.type == SchedulerType::kWarmupDecayLR && s.total_num_steps &&
        *s.total_num_steps < s.warmup_num_steps)
      warnings_->push_back({"scheduler.params.total_num_steps",
                            "total_num_steps " + std::to_string(*s.total_num_steps) +
                                " < warmup_num_steps " + std::to_string(s.warmup_num_steps) +
                                ": the lr never finishes warming up"});
    if (s.type == SchedulerType::kOneCycle && s.cycle_min_lr && s.cycle_max_lr &&
        *s.cycle_min_lr > *s.cycle_max_lr)
      error("scheduler.params.cycle_min_lr", "cycle_min_lr " + Json(*s.cycle_min_lr).dump() +
                                                 " > cycle_max_lr " + Json(*s.cycle_max_lr).dump());
  }

  // Harmless in DeepSpeed, but usually a sign the stage is not what was meant.
  void stage3_keys_below_stage3() {
    if (c_.zero.stage == 3) return;
    for (const auto& [path, v] : ctx_.walk.leaves) {
      if (path.rfind("zero_optimization.stage3_", 0) != 0 || v.is_auto) continue;
      const KeySpec* spec = find_key(path);
      if (spec && v.value != default_value(*spec))
        warnings_->push_back(
            {v.shown, "has no effect at zero_optimization.stage " + stage() + " (stage 3 only)"});
    }
  }

  const Config& c_;
  const RuleContext& ctx_;
  std::vector<ConfigError>* errors_;
  std::vector<ConfigError>* warnings_;
};

}  // namespace

void check_cross_field_rules(const Config& c, const RuleContext& ctx,
                             std::vector<ConfigError>* errors, std::vector<ConfigError>* warnings) {
  Rules(c, ctx, errors, warnings).run();
}

}  // namespace zerotrain::config

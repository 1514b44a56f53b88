// Keys whose verdict depends on the rest of the config, sorted into the
// classes DeepSpeed itself has: ignored in this context (accepted with a
// note), refused by DeepSpeed too (say so, with its reason), or a real
// DeepSpeed feature zerotrain lacks ("not supported by zerotrain").
#include <string>

#include "config/resolve.h"

namespace zerotrain::config {
namespace {

class ContextRules {
 public:
  ContextRules(Config& c, const RuleContext& ctx, std::vector<ConfigError>* errors,
               std::vector<ConfigError>* warnings)
      : c_(c), ctx_(ctx), errors_(errors), warnings_(warnings) {}

  void run() {
    offload_param_below_stage3();
    legacy_stage1();
    partial_offload();
    low_precision_masters();
  }

 private:
  // The value of a rule_checked key as given; nullptr when absent or at its default.
  const Json* set(const char* path) const {
    auto it = ctx_.walk.leaves.find(path);
    if (it == ctx_.walk.leaves.end() || it->second.is_auto) return nullptr;
    const KeySpec* spec = find_key(path);
    return it->second.value == default_value(*spec) ? nullptr : &it->second.value;
  }
  std::string shown(const char* path) const { return ctx_.walk.shown(path); }
  bool stage_known() const { return ctx_.ok({"zero_optimization.stage"}); }
  std::string stage() const { return std::to_string(c_.zero.stage); }

  void deepspeed_refuses(const char* path, const std::string& why) {
    errors_->push_back({shown(path), "DeepSpeed refuses this too: " + why +
                                         "; remove it or set it to its default"});
  }
  void not_supported_here(const char* path, const std::string& tail) {
    errors_->push_back({shown(path), not_supported(*find_key(path)) + "; " + tail});
  }

  // DeepSpeed hands offload_param only to the stage-3 optimizer; stages 0-2
  // never read it, and neither does zerotrain.
  void offload_param_below_stage3() {
    const char* kDevice = "zero_optimization.offload_param.device";
    if (!c_.zero.offload_param.enabled() || c_.zero.stage == 3 || !stage_known()) return;
    warnings_->push_back(
        {shown(kDevice), "ignored at zero_optimization.stage " + stage() +
                             ": DeepSpeed reads offload_param only at stage 3, where parameters "
                             "are partitioned; parameters stay on the device, as under "
                             "DeepSpeed (offload_optimizer works at stages 1-3)"});
    c_.zero.offload_param.device = OffloadDevice::kNone;
  }

  // Read only where DeepSpeed builds a ZeRO optimizer, which refuses it.
  void legacy_stage1() {
    const char* kPath = "zero_optimization.legacy_stage1";
    if (!set(kPath) || !stage_known()) return;
    if (c_.zero.stage == 0)
      warnings_->push_back({shown(kPath),
                            "ignored at zero_optimization.stage 0 (DeepSpeed reads it only when "
                            "it builds a ZeRO optimizer, at stages 1-3)"});
    else
      deepspeed_refuses(kPath,
                        "its pre-0.5.9 stage-1 implementation was removed in 0.5.9, and asking "
                        "for it raises an exception at stages 1-3");
  }

  void partial_offload() {
    const char* kPath = "zero_optimization.offload_optimizer.ratio";
    if (!set(kPath) || !stage_known()) return;
    if (c_.zero.stage != 3)
      deepspeed_refuses(kPath,
                        "partial offloading (ratio < 1) is only supported at stage 3 (stage "
                        "is " +
                            stage() + ")");
    else
      not_supported_here(kPath,
                         "zerotrain offloads all of the optimizer states or none; set ratio 1.0");
  }

  // DeepSpeed's restrictions first (runtime/config.py _do_error_check and
  // stage_1_and_2.py), so a config DeepSpeed would refuse is told so.
  void low_precision_masters() {
    const char* kFp16 = "fp16.fp16_master_weights_and_grads";
    const char* kBf16 = "bf16.bf16_master_weights_and_grads";
    const char* kBf16States = "bf16.bf16_optimizer_states";
    const std::string kKeepsFp32 =
        "zerotrain keeps fp32 master weights and gradients, so it would train with other "
        "numerics than asked; set it false";
    if (set(kFp16) && stage_known()) {
      if (c_.zero.stage == 0)
        deepspeed_refuses(kFp16,
                          "fp16_master_weights_and_grads is only supported with ZeRO "
                          "stage 1, 2 or 3");
      else if (c_.zero.stage < 3 && !c_.zero.offload_optimizer.enabled())
        deepspeed_refuses(kFp16,
                          "at stages 1-2 fp16_master_weights_and_grads needs ZeRO-Offload "
                          "(offload_optimizer.device cpu) with DeepSpeedCPUAdam");
      else
        not_supported_here(kFp16, kKeepsFp32);
    }
    if (set(kBf16) && stage_known()) {
      if (c_.zero.stage == 0)
        deepspeed_refuses(kBf16,
                          "bf16_master_weights_and_grads is only supported with ZeRO "
                          "stage 1, 2 or 3");
      else
        not_supported_here(kBf16, kKeepsFp32);
    }
    if (set(kBf16States) && stage_known()) {
      if (c_.zero.stage == 0)
        deepspeed_refuses(kBf16States,
                          "bf16_optimizer_states is only supported with ZeRO stage 1, 2 or 3");
      else if (!set(kBf16))
        deepspeed_refuses(kBf16States,
                          "bf16_optimizer_states requires bf16_master_weights_and_grads");
      else
        not_supported_here(kBf16States, "zerotrain keeps Adam's moments in fp32; set it false");
    }
  }

  Config& c_;
  const RuleContext& ctx_;
  std::vector<ConfigError>* errors_;
  std::vector<ConfigError>* warnings_;
};

}  // namespace

void check_context_rules(Config& c, const RuleContext& ctx, std::vector<ConfigError>* errors,
                         std::vector<ConfigError>* warnings) {
  ContextRules(c, ctx, errors, warnings).run();
}

}  // namespace zerotrain::config

// `zerotrain estimate`, `zerotrain gpus`, `zerotrain holders`: flags onto
// tools/ (memory formulas, NVML, /proc scan); no logic of their own.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "checkpoint/hf/model_dir.h"
#include "cli/adapter_flags.h"
#include "cli/commands.h"
#include "model/adapters.h"
#include "model/registry.h"
#include "tools/estimate.h"
#include "tools/estimate_format.h"
#include "tools/gpus.h"
#include "tools/holders.h"

namespace zerotrain::cli {
namespace {

struct EstimateFlags {
  std::string params, model, offload = "all", dtype = "bf16", largest_layer, layout = "design";
  int64_t ranks = 1, nodes = 1;
  double abf = 1.5;
  LoraFlags lora;
  Quant4Flags quant4;
  const CLI::App* cmd = nullptr;
};

// LoRA/QLoRA: zerotrain's Ψ is the trainable layout's; the frozen base is
// a per-rank cost of its own, whole or (stage 3) partitioned over `world`
// ranks (model/adapters.h).
Status apply_adapters(const EstimateFlags& f, const checkpoint::ResolvedModel& m,
                      const model::ParamLayout& base, int64_t world,
                      tools::EstimateRequest& r) {
  ZT_ASSIGN_OR_RETURN(std::optional<device::Quant4Options> q, quant4_options(f.cmd, f.quant4));
  if (f.lora.r <= 0) {
    if (q) return invalid_argument("--load-in-4bit is QLoRA: give --lora-r R too");
    return ok_status();
  }
  if (q) ZT_RETURN_IF_ERROR(model::check_4bit_base(m.spec.family->name, "--load-in-4bit"));
  ZT_ASSIGN_OR_RETURN(model::AdapterPlan plan,
                      model::plan_adapters(base, lora_config(f.lora),
                                           model::family_hf_prefix(m.spec.family->name), q));
  const tools::ModelCounts t = tools::model_counts(plan.trainable);
  r.params = t.buffer_numel;
  r.stage3_persistent_numel = t.stage3_persistent_numel;
  r.largest_group = t.largest_group;
  r.largest_group_name = t.largest_group_name;
  r.frozen_bytes = model::frozen_store_bytes(plan);
  r.frozen_stage3_bytes = model::frozen_partition_bytes(plan, static_cast<int>(world));
  r.frozen_fixed_bytes = model::frozen_code_table_bytes(plan);
  for (int64_t b : plan.frozen_group_bytes)
    r.frozen_largest_block = std::max(r.frozen_largest_block, b);
  r.adapter_note = "LoRA " + plan.config.describe() + ": " + std::to_string(plan.adapted_linears) +
                   " Linear modules adapted; " + std::to_string(plan.frozen_params) +
                   " frozen parameters" +
                   (q ? " (" + std::to_string(plan.quantized_params) + " of them 4-bit " +
                            device::describe(*q) + ")"
                      : std::string(" (fp32)"));
  return ok_status();
}

// Whole numbers, also in e-notation: "124439808", "7.5e9".
StatusOr<int64_t> parse_count(const char* flag, const std::string& text, double min) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= min) || v > 9e18 || std::floor(v) != v)
    return invalid_argument(std::string(flag) + ": expected a whole number >= " +
                            std::to_string(static_cast<int>(min)) + " (e.g. 7.5e9), got '" + text +
                            "'");
  return static_cast<int64_t>(v);
}

StatusOr<std::string> estimate_text(const EstimateFlags& f) {
  tools::EstimateRequest r;
  if (!f.model.empty()) {
    ZT_ASSIGN_OR_RETURN(checkpoint::ResolvedModel m, checkpoint::resolve_model(f.model));
    ZT_ASSIGN_OR_RETURN(model::ParamLayout layout, m.spec.family->layout(m.spec.config));
    r = tools::request_for_model(f.model, tools::model_counts(layout));
    ZT_RETURN_IF_ERROR(apply_adapters(f, m, layout, f.ranks * f.nodes, r));
  } else {
    if (f.lora.r > 0)
      return invalid_argument("--lora-r: give --model (the adapters need its layout)");
    ZT_ASSIGN_OR_RETURN(int64_t n, parse_count("--params", f.params, 1));
    int64_t largest = 0;
    if (!f.largest_layer.empty()) {
      ZT_ASSIGN_OR_RETURN(largest, parse_count("--largest-layer-params", f.largest_layer, 0));
    }
    r = tools::request_for_params(n, largest);
  }
  r.ranks_per_node = f.ranks;
  r.nodes = f.nodes;
  r.additional_buffer_factor = f.abf;
  StatusOr<DType> dtype = parse_dtype(f.dtype);
  if (!dtype.ok()) return dtype.status().with_context("--dtype");
  r.dtype = *dtype;
  ZT_ASSIGN_OR_RETURN(r.offload, tools::parse_offload_filter(f.offload));
  ZT_ASSIGN_OR_RETURN(r.layout, zero::parse_storage_layout(f.layout));
  return tools::format_estimate(r);
}

Runner add_estimate(CLI::App& app) {
  auto f = std::make_shared<EstimateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "estimate",
      "model-state memory per rank and per node for ZeRO stages 0-3 (zerotrain's "
      "accounting and DeepSpeed's estimator)");
  auto* params = cmd->add_option("--params", f->params, "parameter count (e.g. 7.5e9)");
  auto* model = cmd->add_option(
      "--model", f->model, "model preset (zerotrain models), HF model directory or config.json");
  params->excludes(model);
  cmd->add_option("--ranks", f->ranks, "ranks (GPUs) per node")->capture_default_str();
  cmd->add_option("--nodes", f->nodes, "nodes")->capture_default_str();
  cmd->add_option("--offload", f->offload, "rows to show: cpu (offload), none, all")
      ->capture_default_str();
  cmd->add_option("--dtype", f->dtype, "training dtype: bf16, fp16, fp32")->capture_default_str();
  cmd->add_option(
         "--layout", f->layout,
         "zerotrain's storage: design (the ZeRO formulas' 16-bit layout) or engine (what the "
         "engine allocates today)")
      ->capture_default_str();
  cmd->add_option("--additional-buffer-factor,--additional_buffer_factor", f->abf,
                  "DeepSpeed estimator's CPU buffer factor")
      ->capture_default_str();
  cmd->add_option("--largest-layer-params", f->largest_layer,
                  "with --params: largest layer's parameters (DeepSpeed's L, e.g. 2e8)")
      ->excludes(model);
  add_lora_flags(cmd, f->lora, "count");
  add_quant4_flags(cmd, f->quant4);
  f->cmd = cmd;
  return [f, cmd] {
    if (f->model.empty() && f->params.empty()) {
      std::cerr << "zerotrain estimate: give --params N or --model PRESET\n";
      return 2;
    }
    StatusOr<std::string> text = estimate_text(*f);
    if (!text.ok()) {
      std::cerr << "zerotrain estimate: " << text.status().message() << "\n";
      return 2;
    }
    std::cout << *text;
    return 0;
  };
}

Runner add_gpus(CLI::App& app) {
  auto library = std::make_shared<std::string>(tools::kNvmlLibrary);
  CLI::App* cmd = app.add_subcommand(
      "gpus",
      "memory, utilisation and processes of each NVIDIA GPU (NVML); exit 1 without a driver");
  cmd->add_option("--nvml-library", *library, "NVML library to load")->capture_default_str();
  return [library] {
    StatusOr<std::vector<tools::GpuInfo>> gpus = tools::query_gpus(*library);
    if (!gpus.ok()) {
      std::cerr << "zerotrain gpus: " << gpus.status().message() << "\n";
      return 1;
    }
    std::cout << tools::format_gpus(*gpus);
    return 0;
  };
}

struct HoldersFlags {
  bool kill = false;
  std::string signal = "TERM", pattern = tools::kDefaultHolderPattern;
  double wait_s = 2;
};

Runner add_holders(CLI::App& app) {
  auto f = std::make_shared<HoldersFlags>();
  CLI::App* cmd = app.add_subcommand(
      "holders",
      "processes holding device files (like fuser -v /dev/nvidia*); --kill signals them");
  cmd->add_flag("--kill", f->kill, "signal every holder (never this process or its parent)");
  cmd->add_option("--signal", f->signal, "signal for --kill: name or number")
      ->capture_default_str();
  cmd->add_option("--pattern", f->pattern, "glob of the files to look for")->capture_default_str();
  cmd->add_option("--wait", f->wait_s, "seconds to wait for signalled holders to end")
      ->capture_default_str();
  return [f] {
    StatusOr<int> sig = tools::parse_signal(f->signal);
    if (!sig.ok()) {
      std::cerr << "zerotrain holders: " << sig.status().message() << "\n";
      return 2;
    }
    StatusOr<tools::HolderScan> scan = tools::find_holders({.pattern = f->pattern});
    if (!scan.ok()) {
      std::cerr << "zerotrain holders: " << scan.status().message() << "\n";
      return 1;
    }
    std::cout << tools::format_holders(*scan, f->pattern);
    if (!f->kill || scan->holders.empty()) return 0;
    const auto wait = std::chrono::milliseconds(static_cast<int64_t>(f->wait_s * 1000));
    std::vector<tools::KillResult> results = tools::kill_holders(scan->holders, *sig, wait);
    std::cout << tools::format_kill_results(results, *sig);
    for (const tools::KillResult& r : results)
      if (r.signalled && !r.ended) return 1;
    return 0;
  };
}

}  // namespace

Runner add_tools_commands(CLI::App& app) {
  // main() maps every subcommand added here to this runner: dispatch on which one parsed.
  Runner estimate = add_estimate(app);
  CLI::App* estimate_cmd = app.get_subcommand("estimate");
  Runner gpus = add_gpus(app);
  CLI::App* gpus_cmd = app.get_subcommand("gpus");
  Runner holders = add_holders(app);
  return [=] {
    if (estimate_cmd->parsed()) return estimate();
    if (gpus_cmd->parsed()) return gpus();
    return holders();
  };
}

}  // namespace zerotrain::cli

// `zerotrain checkpoint export DIR [--tag T] --to FILE.safetensors|OUT_DIR
// [--dtype fp32|bf16|fp16] [--max-shard-size BYTES] [--adapter | --merge --base HF_DIR]` (DeepSpeed's
// zero_to_fp32.py: a sharded checkpoint as one safetensors file, or as a
// Hugging Face model directory, streamed) and `zerotrain checkpoint show DIR [--tag T]` (its
// manifest checked, summarised). DIR is the save directory (the tag from --tag or DIR/latest) or a
// tag directory itself.
#include <filesystem>
#include <iostream>
#include <memory>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/export.h"
#include "checkpoint/manifest.h"
#include "cli/commands.h"
#include "engine/engine_state.h"

namespace zerotrain::cli {
namespace {

struct CheckpointFlags {
  std::string dir, tag, to, dtype = "fp32", base;
  bool adapter = false, merge = false;
  int64_t max_shard_bytes = checkpoint::kDefaultMaxShardBytes;
};

StatusOr<std::string> tag_directory(const CheckpointFlags& f) {
  std::error_code ec;
  if (f.tag.empty() && std::filesystem::exists(f.dir + "/" + checkpoint::kManifestName, ec))
    return f.dir;
  std::string tag = f.tag;
  if (tag.empty()) {
    ZT_ASSIGN_OR_RETURN(tag, checkpoint::read_latest_tag(f.dir));
  }
  return f.dir + "/" + tag;
}

int fail(const Status& s) {
  std::cerr << "zerotrain checkpoint: " << s.to_string() << "\n";
  return s.code() == StatusCode::kIoError ? 1 : 2;
}

int run_export(const CheckpointFlags& f) {
  StatusOr<DType> dtype = parse_dtype(f.dtype);
  if (!dtype.ok()) return fail(dtype.status().with_context("--dtype"));
  StatusOr<std::string> tag_dir = tag_directory(f);
  if (!tag_dir.ok()) return fail(tag_dir.status());
  const bool file = f.to.ends_with(".safetensors");
  if (f.adapter || f.merge) {
    if (f.adapter == f.merge)
      return fail(invalid_argument("--adapter and --merge: pick one"));
    if (f.merge && f.base.empty())
      return fail(invalid_argument("--merge needs --base HF_DIR (the model the adapter trained on)"));
    Status s = f.adapter ? checkpoint::export_peft_adapter(*tag_dir, f.to)
                         : checkpoint::export_merged_model(*tag_dir, f.base, f.to, *dtype,
                                                           f.max_shard_bytes);
    if (!s.ok()) return fail(s);
    std::cout << "wrote " << (f.adapter ? "PEFT adapter " : "merged model ") << f.to << " from "
              << *tag_dir << "\n";
    return 0;
  }
  Status s = file ? checkpoint::export_safetensors(*tag_dir, f.to, *dtype)
                  : checkpoint::export_hf_model(*tag_dir, f.to, *dtype, f.max_shard_bytes);
  if (!s.ok()) return fail(s);
  std::cout << "wrote " << f.to << " (" << dtype_name(*dtype) << ") from " << *tag_dir << "\n";
  return 0;
}

int run_show(const CheckpointFlags& f) {
  StatusOr<std::string> tag_dir = tag_directory(f);
  if (!tag_dir.ok()) return fail(tag_dir.status());
  StatusOr<checkpoint::CheckpointReader> r = checkpoint::CheckpointReader::open(*tag_dir);
  if (!r.ok()) return fail(r.status());
  if (Status s = r->check_shards(); !s.ok()) return fail(s);
  const checkpoint::Manifest& m = r->manifest();
  StatusOr<engine::EngineState> e = engine::engine_state_from_json(m.engine_state, *tag_dir);
  if (!e.ok()) return fail(e.status());
  std::cout << *tag_dir << ": tag " << m.tag << " (format " << m.format_version << "), global step "
            << e->global_steps << " (" << e->skipped_steps << " skipped), written by "
            << m.world_size << " rank(s) at ZeRO stage " << m.stage << ", " << m.precision
            << "\n  model: " << m.family << " " << m.model_config.dump() << "; " << m.numel
            << " elements\n  optimizer " << e->optimizer << " (step " << e->optimizer_step_count
            << ", lr " << e->lr << ")"
            << (e->scheduler_type.empty() ? "" : ", scheduler " + e->scheduler_type)
            << ", loss scale " << e->loss_scaler.cur_scale << "\n  " << m.shards.size()
            << " shard(s):";
  for (const checkpoint::ShardEntry& s : m.shards) std::cout << " " << s.file << " (" << s.bytes << " B)";
  std::cout << "\n";
  return 0;
}

}  // namespace

Runner add_checkpoint_command(CLI::App& app) {
  auto f = std::make_shared<CheckpointFlags>();
  CLI::App* ck = app.add_subcommand("checkpoint", "inspect and export sharded checkpoints");
  ck->require_subcommand(1);
  CLI::App* ex = ck->add_subcommand(
      "export",
      "consolidate a checkpoint's weights into one safetensors file, or into a Hugging Face "
      "model directory (config.json + weights, sharded past --max-shard-size)");
  CLI::App* show = ck->add_subcommand("show", "check a checkpoint and summarise its manifest");
  for (CLI::App* c : {ex, show}) {
    c->add_option("dir", f->dir, "save directory (uses --tag or DIR/latest) or a tag directory")
        ->required();
    c->add_option("--tag", f->tag, "checkpoint tag, e.g. global_step100");
  }
  ex->add_option("--to", f->to,
                 "output: FILE.safetensors, or a directory (HF layout: config.json, "
                 "model.safetensors or model-0000i-of-0000N.safetensors + index)")
      ->required();
  ex->add_option("--max-shard-size", f->max_shard_bytes,
                 "largest weights file of a directory export, in bytes (as HF's max_shard_size)")
      ->capture_default_str();
  ex->add_option("--dtype", f->dtype, "fp32, bf16 or fp16")->capture_default_str();
  ex->add_flag("--adapter", f->adapter,
               "a LoRA run's checkpoint as a PEFT adapter directory (adapter_config.json + "
               "adapter_model.safetensors, PeftModel.from_pretrained loads it)");
  ex->add_flag("--merge", f->merge,
               "a LoRA run's checkpoint merged into its base (--base) as an HF model directory");
  ex->add_option("--base", f->base, "with --merge: the HF model directory the adapter trained on");
  return [ex, f]() { return ex->parsed() ? run_export(*f) : run_show(*f); };
}

}  // namespace zerotrain::cli

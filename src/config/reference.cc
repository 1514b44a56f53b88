// docs/config.md, generated from the schema so the two cannot drift
// (tests/config/docs_test.cc compares them).
#include <string>

#include "config/config.h"
#include "config/schema.h"

namespace zerotrain::config {
namespace {

constexpr std::string_view kIntro = R"(# ds_config.json reference

Generated from the schema in `src/config/schema_*.cc` by
`config_reference_markdown()`; do not edit by hand (regenerate with
`build/tests/config/config_docgen > docs/config.md`).

zerotrain reads DeepSpeed's `ds_config.json`. Unlike DeepSpeed it checks
every key: `zerotrain config check FILE` prints the effective config, or every problem
at once, each with its JSON path and line.

## Rules

- **Unknown keys are errors**, with a "did you mean" from the keys valid at
  that level (a misspelling, or the same words in another order:
  `comm_overlap` → `overlap_comm`), or the level the key belongs to. Where
  DeepSpeed never looks keys up (the top level, `aio`, `checkpoint`, ...) an
  unknown key that resembles no known one is ignored with a warning, as
  DeepSpeed ignores it.
- **Known DeepSpeed options zerotrain lacks** (status *default only*) are
  accepted at their default value; any other value is refused as "'KEY' is
  not supported by zerotrain", with what the key does in DeepSpeed. That includes
  tensor and sequence parallelism (`tensor_parallel.autotp_size` > 1,
  `sequence_parallel_size` > 1): zerotrain never trains with less
  parallelism than the config asks for. Keys with status *accepted, no
  effect* are validated and ignored (PyTorch/CUDA implementation knobs).
- **What DeepSpeed ignores in context is accepted with a note**:
  `offload_param` below stage 3, stage-3 keys below stage 3, fp16 keys in
  the bf16 section, `legacy_stage1` at stage 0, and the legacy
  `"zero_optimization": true` (read as stage 1 with the top-level
  `allgather_size` as `allgather_bucket_size`, as DeepSpeed reads it).
- **What DeepSpeed itself refuses is refused with its reason** ("DeepSpeed
  refuses this too: ..."): `offload_optimizer.ratio` < 1 below stage 3,
  `legacy_stage1` at stages 1-3, `fp16_master_weights_and_grads` at stage 0
  or at stages 1-2 without ZeRO-Offload, `bf16_master_weights_and_grads` or
  `bf16_optimizer_states` at stage 0, `bf16_optimizer_states` without
  `bf16_master_weights_and_grads`. Where DeepSpeed accepts these
  low-precision master options zerotrain refuses them, since it keeps fp32
  master weights, gradients and moments and would train with other numerics.
- **Numbers** may be JSON numbers or numeric strings: `2e8`, `"2e8"`, `500`,
  `"500"`. Integer keys refuse fractions (`1.5`).
- **Booleans** are `true`/`false`; the strings `"true"`/`"false"` are also
  accepted (hand-written configs use them); `0`, `1`, `"yes"` are not.
- **Comments** (`//`, `/* */`) are allowed, as in DeepSpeed's hjson.
  **Duplicate keys** are errors.
- **`"auto"`** is accepted only by keys marked *auto* below and is resolved
  from the trainer's arguments exactly as the Hugging Face integration does;
  an `auto` the trainer cannot resolve is an error naming the argument, never
  a silent default. A non-auto value that contradicts a trainer argument is an
  error too. `reduce_bucket_size` = h², `stage3_prefetch_bucket_size` =
  ⌊0.9·h²⌋, `stage3_param_persistence_threshold` = 10·h (h = hidden size).
- **Batch sizes**: `train_batch_size` = `train_micro_batch_size_per_gpu` ×
  `gradient_accumulation_steps` × world size. Any two determine the third;
  `train_batch_size` or the micro batch alone sets accumulation to 1. A
  contradiction or a non-divisible derivation is an error (DeepSpeed rounds
  down silently).
- **Old spellings** (status *deprecated*) are accepted with a warning; giving
  an old and a new spelling of the same key is an error.
- Cross-field rules: fp16 and bf16 not both enabled; `offload_param` needs
  stage 3, `offload_optimizer` stage 1-3; `allgather_bucket_size` even;
  stage 1/2 `reduce_scatter` needs no prescaling and predivide factor 1;
  `gradient_allreduce_op: "sum"` not with stage 3; parameters must belong to
  the chosen optimizer/scheduler type.
)";

std::string code(std::string_view s) {
  std::string out(1, '`');  // not "`" + ...: GCC 12 -Wrestrict false positive
  out += s;
  out += '`';
  return out;
}

std::string bound(double b) {
  Json j =
      b == static_cast<double>(static_cast<int64_t>(b)) ? Json(static_cast<int64_t>(b)) : Json(b);
  return j.dump();
}

std::string allowed(const KeySpec& k) {
  std::string out;
  if (!k.choices.empty()) {
    std::string c(k.choices);
    for (size_t p = 0; (p = c.find('|', p)) != std::string::npos;) c.replace(p, 1, ", ");
    out = c;
    if (!k.unsupported.empty() && k.unsupported.find('|') == std::string_view::npos)
      out += " (" + std::string(k.unsupported) + ": not yet)";
  }
  if (k.min && k.max) {
    out = bound(*k.min) + (k.min_exclusive ? " < x ≤ " : " ≤ x ≤ ") + bound(*k.max);
  } else if (k.min) {
    out = (k.min_exclusive ? "> " : "≥ ") + bound(*k.min);
  }
  if (k.nullable && k.type != ValueType::kSection) out += out.empty() ? "null" : ", null";
  if (k.auto_ok) out += out.empty() ? "auto" : ", auto";
  return out;
}

std::string description(const KeySpec& k) {
  std::string d;
  if (!k.applies_to.empty()) {
    std::string a(k.applies_to);
    for (size_t p = 0; (p = a.find('|', p)) != std::string::npos;) a.replace(p, 1, ", ");
    d = "*" + a + ".* ";
  }
  if (!k.alias_of.empty()) d += "Same as " + code(k.alias_of) + ". ";
  if (k.support == Support::kRejected)
    return d + "Refused: `" + std::string(leaf_name(k.path)) + "` " + std::string(k.help) + ".";
  return d + std::string(k.help);
}

void section_table(std::string& out, std::string_view section) {
  out += "| Key | Type | Default | Allowed | Status | Description |\n";
  out += "|---|---|---|---|---|---|\n";
  for (const KeySpec* k : children_of(section)) {
    if (k->type == ValueType::kSection) continue;
    std::string def =
        k->alias_of.empty() && k->support != Support::kRejected && k->type != ValueType::kOpaque
            ? code(default_value(*k).dump())
            : "";
    out += "| " + code(leaf_name(k->path)) + " | " + std::string(type_name(k->type)) + " | " + def +
           " | " + allowed(*k) + " | " + std::string(support_name(k->support)) + " | " +
           description(*k) + " |\n";
  }
}

}  // namespace

std::string config_reference_markdown() {
  std::string out(kIntro);
  out += "\n## Top level\n\n";
  section_table(out, "");
  for (const KeySpec& k : schema()) {
    if (k.type != ValueType::kSection) continue;
    out += "\n## " + code(k.path) + "\n\n" + std::string(k.help);
    if (!k.alias_of.empty()) {
      out += " Same as " + code(k.alias_of) + " (" + std::string(support_name(k.support)) + ").\n";
      continue;
    }
    out += "\n\n";
    section_table(out, k.path);
  }
  return out;
}

}  // namespace zerotrain::config

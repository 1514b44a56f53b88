// Manifest: what a checkpoint DIR/TAG holds, written by rank 0 after every
// rank's shard is on disk (manifest.json, atomically). It names the format
// version, the world size and stage that wrote it, the model and its flat
// parameter layout, the optimizer / scheduler / loss-scaler / engine
// counters, the trainer's client state (data-loader position, seed), and
// for every shard file its size, header checksum and the flat ranges of Ψ
// it holds, so any world size and stage can re-partition from it. The JSON
// carries a CRC-32 of its own canonical text: a flipped byte is refused.
//
//   ZT_ASSIGN_OR_RETURN(Manifest m, read_manifest(dir + "/" + tag));
//   for (const ShardEntry& s : m.shards) ...
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "model/gpt_config.h"
#include "model/param_layout.h"
#include "optim/loss_scaler.h"
#include "core/range.h"

namespace zerotrain::checkpoint {

inline constexpr int kFormatVersion = 1;
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kLatestName = "latest";

// One tensor of the parameter layout, as the writer had it.
struct LayoutEntry {
  std::string name;
  int64_t offset = 0, numel = 0;
  bool operator==(const LayoutEntry&) const = default;
};

struct ShardEntry {
  int rank = 0;
  std::string file;          // relative to the tag directory
  int64_t bytes = 0;         // exact file size
  uint32_t header_crc32 = 0;  // of the shard's header bytes
  std::vector<Range> ranges;  // flat ranges of Ψ, in the order stored
};

struct Manifest {
  int format_version = kFormatVersion;
  std::string tag;
  int world_size = 1;
  int stage = 0;
  std::string precision;  // "fp32", "bf16", "fp16" (master weights are fp32 always)
  int64_t numel = 0;      // Ψ: the flat buffer, alignment gaps included
  model::GptConfig model;
  std::vector<LayoutEntry> layout;
  // Optimizer.
  std::string optimizer;                 // "adamw", "adam", "sgd"
  std::vector<std::string> state_names;  // per-element fp32 states, shard tensors after "master"
  int64_t optimizer_step_count = 0;
  double lr = 0;
  // Scheduler: absent ("" type) for a constant lr.
  std::string scheduler_type;
  int64_t scheduler_last_batch_iteration = -1;
  optim::LossScalerState loss_scaler;
  // Engine counters.
  int64_t global_steps = 0, skipped_steps = 0, micro_steps = 0;
  nlohmann::json client_state = nlohmann::json::object();
  std::vector<ShardEntry> shards;
  // Files written besides the shards (consolidated 16-bit weights).
  std::vector<std::string> extra_files;
};

std::vector<LayoutEntry> layout_entries(const model::ParamLayout& layout);

// JSON text with its "checksum" field (CRC-32 of the text without it).
std::string manifest_to_json(const Manifest& m);
// Parses and checks `text` read from `path` (for messages): the checksum,
// the format name and version, and internal consistency (shard ranges
// inside [0, numel), disjoint, covering every layout tensor).
StatusOr<Manifest> manifest_from_json(const std::string& text, const std::string& path);
// DIR/TAG/manifest.json; NotFound (naming the path) when there is none.
StatusOr<Manifest> read_manifest(const std::string& tag_dir);

// The tag in DIR/latest (NotFound naming it when absent).
StatusOr<std::string> read_latest_tag(const std::string& dir);

}  // namespace zerotrain::checkpoint

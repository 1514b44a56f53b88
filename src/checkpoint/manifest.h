// Manifest: what a checkpoint DIR/TAG holds, written by rank 0 after every
// rank's shard is on disk (manifest.json, atomically). It names the format
// version, the world size and stage that wrote it, the model's family and
// config JSON and its flat parameter layout, the names of the shard
// tensors, the engine's state as the engine's own JSON (optimizer,
// scheduler, loss scaler, counters), the trainer's client state
// (data-loader position, seed), and for every shard file its size, header
// checksum and the flat ranges of Ψ it holds, so any world size and stage
// can re-partition from it. The JSON carries a CRC-32 of its own canonical
// text: a flipped byte is refused. Version 2 is written; version 1 (GPT-2
// only: its dimensions and the engine state as top-level objects) is read
// into the same struct.
//
//   ZT_ASSIGN_OR_RETURN(Manifest m, read_manifest(dir + "/" + tag));
//   for (const ShardEntry& s : m.shards) ...
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/range.h"
#include "core/status.h"
#include "model/param_layout.h"

namespace zerotrain::checkpoint {

inline constexpr int kFormatVersion = 2;  // written; 1 and 2 are read
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
  std::string file;             // relative to the tag directory
  int64_t bytes = 0;            // exact file size
  uint32_t header_crc32 = 0;    // of the shard's header bytes
  std::vector<Range> ranges{};  // flat ranges of Ψ, in the order stored
};

struct Manifest {
  int format_version = kFormatVersion;  // as read (1 or 2); always written as 2
  std::string tag;
  int world_size = 1;
  int stage = 0;
  std::string precision;  // "fp32", "bf16", "fp16" (master weights are fp32 always)
  int64_t numel = 0;      // Ψ: the flat buffer, alignment gaps included
  std::string family;     // the model family (model/registry.h): "gpt2"
  nlohmann::json model_config = nlohmann::json::object();  // its config (HF config.json form)
  // A LoRA run's adapter (Module::adapter_json: PEFT config, base CRC);
  // null for full fine-tuning. The shards then hold the trainable state only.
  nlohmann::json adapter = nullptr;
  std::vector<LayoutEntry> layout;
  std::vector<std::string> state_names;  // per-element fp32 states, shard tensors after "master"
  // The engine's state as it writes it: {"optimizer", "scheduler",
  // "loss_scaler", "counters"} (engine/engine_state.h reads it).
  nlohmann::json engine_state = nlohmann::json::object();
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

// Manifest <-> JSON, its self-checksum and consistency checks.
#include "checkpoint/manifest.h"

#include <algorithm>
#include <cstdio>

#include "core/crc32.h"
#include "core/file_read.h"

namespace zerotrain::checkpoint {
namespace {

using nlohmann::json;

constexpr const char* kFormatName = "zerotrain-checkpoint";

uint32_t text_crc(const json& j) {
  const std::string text = j.dump();
  return crc32(text.data(), text.size());
}

json ranges_json(const std::vector<Range>& ranges) {
  json a = json::array();
  for (const Range& r : ranges) a.push_back({r.offset, r.count});
  return a;
}

// Version 1 (GPT-2 only) held the model's dimensions and the engine's
// state as top-level objects: the same facts in version 2's form.
void read_v1_model_and_engine(const json& j, Manifest* m) {
  const json& mo = j.at("model");
  m->family = "gpt2";
  m->model_config = {{"model_type", "gpt2"},
                     {"n_layer", mo.at("n_layer").get<int64_t>()},
                     {"n_head", mo.at("n_head").get<int64_t>()},
                     {"n_embd", mo.at("n_embd").get<int64_t>()},
                     {"n_positions", mo.at("seq_len").get<int64_t>()},
                     {"n_ctx", mo.at("seq_len").get<int64_t>()},
                     {"vocab_size", mo.at("vocab_size").get<int64_t>()},
                     {"padded_vocab_size", mo.at("padded_vocab").get<int64_t>()}};
  m->state_names = j.at("optimizer").at("state_names").get<std::vector<std::string>>();
  m->engine_state = {{"optimizer", j.at("optimizer")},
                     {"scheduler", j.at("scheduler")},
                     {"loss_scaler", j.at("loss_scaler")},
                     {"counters", j.at("engine")}};
}

// Throws json::exception on a missing or mistyped field.
ShardEntry shard_from_json(const json& s) {
  ShardEntry e{.rank = s.at("rank").get<int>(),
               .file = s.at("file").get<std::string>(),
               .bytes = s.at("bytes").get<int64_t>(),
               .header_crc32 = s.at("header_crc32").get<uint32_t>()};
  for (const json& r : s.at("ranges"))
    e.ranges.push_back({r.at(0).get<int64_t>(), r.at(1).get<int64_t>()});
  return e;
}

// Shard ranges: inside [0, numel), pairwise disjoint, covering every tensor.
Status check_shard_ranges(const Manifest& m, const std::string& where) {
  std::vector<Range> all;
  for (const ShardEntry& s : m.shards) {
    if (s.file.empty() || s.file.find('/') != std::string::npos || s.file[0] == '.')
      return corruption(where + "shard file name \"" + s.file + "\" is not a plain file name");
    for (const Range& r : s.ranges) {
      if (r.offset < 0 || r.count < 0 || r.end() > m.numel) {
        return corruption(where + "shard " + s.file + " range [" + std::to_string(r.offset) + ", " +
                          std::to_string(r.end()) + ") outside [0, " + std::to_string(m.numel) +
                          ")");
      }
      all.push_back(r);
    }
  }
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].offset < all[i - 1].end())
      return corruption(where + "two shards hold element " + std::to_string(all[i].offset));
  }
  for (const LayoutEntry& t : m.layout) {
    int64_t at = t.offset;
    for (const Range& r : all) {
      if (r.offset <= at && at < r.end()) at = r.end();
    }
    if (at < t.offset + t.numel) {
      return corruption(where + "no shard holds element " + std::to_string(at) + " of tensor " +
                        t.name);
    }
  }
  return ok_status();
}

}  // namespace

std::vector<LayoutEntry> layout_entries(const model::ParamLayout& layout) {
  std::vector<LayoutEntry> out;
  for (const model::TensorInfo& t : layout.tensors()) out.push_back({t.name, t.offset, t.numel});
  return out;
}

std::string manifest_to_json(const Manifest& m) {
  json j;
  j["format"] = kFormatName;
  j["format_version"] = kFormatVersion;
  j["tag"] = m.tag;
  j["world_size"] = m.world_size;
  j["zero_stage"] = m.stage;
  j["precision"] = m.precision;
  j["numel"] = m.numel;
  j["model"] = {{"family", m.family}, {"config", m.model_config}};
  if (!m.adapter.is_null()) j["adapter"] = m.adapter;
  json layout = json::array();
  for (const LayoutEntry& e : m.layout) layout.push_back({e.name, e.offset, e.numel});
  j["param_layout"] = layout;
  j["state_names"] = m.state_names;
  j["engine_state"] = m.engine_state;
  j["client_state"] = m.client_state;
  json shards = json::array();
  for (const ShardEntry& s : m.shards) {
    shards.push_back({{"rank", s.rank},
                      {"file", s.file},
                      {"bytes", s.bytes},
                      {"header_crc32", s.header_crc32},
                      {"ranges", ranges_json(s.ranges)}});
  }
  j["shards"] = shards;
  j["extra_files"] = m.extra_files;
  j["checksum"] = text_crc(j);
  return j.dump(1) + "\n";
}

StatusOr<Manifest> manifest_from_json(const std::string& text, const std::string& path) {
  const std::string where = "checkpoint manifest " + path + ": ";
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corruption(where + "not valid JSON");
  if (j.value("format", "") != kFormatName)
    return invalid_argument(where + "not a zerotrain checkpoint manifest");
  if (!j.contains("checksum") || !j["checksum"].is_number_unsigned())
    return corruption(where + "no checksum field");
  const uint32_t stored = j["checksum"].get<uint32_t>();
  j.erase("checksum");
  if (text_crc(j) != stored) return corruption(where + "checksum mismatch (the file was modified)");
  Manifest m;
  try {
    m.format_version = j.at("format_version").get<int>();
    if (m.format_version != 1 && m.format_version != kFormatVersion) {
      return invalid_argument(where + "format version " + std::to_string(m.format_version) +
                              ", this build reads versions 1 and " +
                              std::to_string(kFormatVersion));
    }
    m.tag = j.at("tag").get<std::string>();
    m.world_size = j.at("world_size").get<int>();
    m.stage = j.at("zero_stage").get<int>();
    m.precision = j.at("precision").get<std::string>();
    m.numel = j.at("numel").get<int64_t>();
    for (const json& e : j.at("param_layout"))
      m.layout.push_back(
          {e.at(0).get<std::string>(), e.at(1).get<int64_t>(), e.at(2).get<int64_t>()});
    if (m.format_version == 1) {
      read_v1_model_and_engine(j, &m);
    } else {
      m.family = j.at("model").at("family").get<std::string>();
      m.model_config = j.at("model").at("config");
      m.state_names = j.at("state_names").get<std::vector<std::string>>();
      m.engine_state = j.at("engine_state");
    }
    m.client_state = j.at("client_state");
    if (j.contains("adapter")) m.adapter = j.at("adapter");
    for (const json& s : j.at("shards")) m.shards.push_back(shard_from_json(s));
    m.extra_files = j.at("extra_files").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    return corruption(where + "missing or mistyped field (" + e.what() + ")");
  }
  ZT_RETURN_IF_ERROR(check_shard_ranges(m, where));
  return m;
}

StatusOr<Manifest> read_manifest(const std::string& tag_dir) {
  const std::string path = tag_dir + "/" + kManifestName;
  ZT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return manifest_from_json(text, path);
}

StatusOr<std::string> read_latest_tag(const std::string& dir) {
  const std::string path = dir + "/" + kLatestName;
  ZT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty() || text.find('/') != std::string::npos || text.find('\n') != std::string::npos)
    return corruption(path + ": does not hold one checkpoint tag");
  return text;
}

}  // namespace zerotrain::checkpoint

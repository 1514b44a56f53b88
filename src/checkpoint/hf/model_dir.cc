// HF model directories (see model_dir.h).
#include "checkpoint/hf/model_dir.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string_view>

#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_header.h"
#include "core/atomic_file.h"
#include "core/file_read.h"

namespace zerotrain::checkpoint {
namespace {

namespace fs = std::filesystem;
constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

StatusOr<nlohmann::json> read_json(const std::string& path) {
  ZT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corruption(path + ": not valid JSON");
  return j;
}

// Tensors a file may carry that are not parameters.
bool is_buffer(std::string_view name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") ||
         name.ends_with(".rotary_emb.inv_freq");
}

// The layout's index of a file tensor name: exact, or (GPT-2) without
// "transformer.".
int find_tensor(const model::ParamLayout& layout, std::string_view name) {
  if (StatusOr<int> i = layout.find(name); i.ok()) return *i;
  constexpr std::string_view kTransformer = "transformer.";
  if (name.starts_with(kTransformer)) {
    if (StatusOr<int> i = layout.find(name.substr(kTransformer.size())); i.ok()) return *i;
  }
  return -1;
}

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i, n);
  return buf;
}

}  // namespace

StatusOr<HfModelDir> open_hf_model(const std::string& path) {
  std::error_code ec;
  HfModelDir d;
  d.path = path;
  if (!fs::exists(path, ec)) return not_found("model " + path + ": no such file or directory");
  if (!fs::is_directory(path, ec)) {  // a bare config.json
    ZT_ASSIGN_OR_RETURN(d.config, read_json(path));
    return d;
  }
  const fs::path dir(path);
  if (!fs::exists(dir / "config.json", ec))
    return not_found("model directory " + path + " has no config.json");
  ZT_ASSIGN_OR_RETURN(d.config, read_json((dir / "config.json").string()));
  const bool single = fs::exists(dir / kSingle, ec), index = fs::exists(dir / kIndex, ec);
  if (single && index)
    return corruption("model directory " + path + " has both " + kSingle + " and " + kIndex +
                      "; remove the stale one");
  if (single) d.weight_files.push_back((dir / kSingle).string());
  if (index) {
    const std::string index_path = (dir / kIndex).string();
    ZT_ASSIGN_OR_RETURN(nlohmann::json j, read_json(index_path));
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      return corruption(index_path + ": no \"weight_map\" object");
    std::set<std::string> files;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos)
        return corruption(index_path + ": weight_map[\"" + name + "\"] is not a file name");
      files.insert(file.get<std::string>());
    }
    for (const std::string& f : files) {
      if (!fs::exists(dir / f, ec))
        return corruption(index_path + " names " + f + ", which is not in " + path);
      d.weight_files.push_back((dir / f).string());
    }
  }
  return d;
}

StatusOr<HfWeights> HfWeights::open(const HfModelDir& dir, const model::ParamLayout& layout) {
  if (dir.weight_files.empty())
    return invalid_argument("model " + dir.path + " has no weights (" + kSingle + " or " + kIndex +
                            ")");
  HfWeights w;
  w.layout_ = &layout;
  for (const std::string& f : dir.weight_files) {
    ZT_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(f));
    w.files_.push_back(std::move(file));
  }
  ZT_RETURN_IF_ERROR(w.locate());
  return w;
}

// Every layout tensor's place in the files, checked as model_dir.h says.
Status HfWeights::locate() {
  const model::ParamLayout& layout = *layout_;
  where_.assign(layout.tensors().size(), {});
  std::vector<std::string> unknown;
  for (size_t fi = 0; fi < files_.size(); ++fi) {
    const SafetensorsFile& f = files_[fi];
    for (const SafetensorsTensor& t : f.tensors()) {
      const int i = find_tensor(layout, t.name);
      if (i < 0) {
        if (!is_buffer(t.name) && t.name != "lm_head.weight")
          unknown.push_back(f.path() + ": '" + t.name + "'");
        continue;
      }
      Located& w = where_[static_cast<size_t>(i)];
      if (w.tensor != nullptr)
        return invalid_argument("HF weights: tensor '" + layout.tensors()[i].name +
                                "' appears twice ('" + w.tensor->name + "' in " +
                                files_[w.file].path() + " and '" + t.name + "' in " + f.path() +
                                ")");
      w = {fi, &t};
    }
  }
  const std::string files_named = files_.size() == 1
                                      ? "HF file " + files_.front().path()
                                      : "HF weights (" + std::to_string(files_.size()) + " files)";
  for (size_t i = 0; i < where_.size(); ++i) {
    const model::TensorInfo& info = layout.tensors()[i];
    if (where_[i].tensor == nullptr)
      return invalid_argument(files_named + " has no tensor '" + info.name + "' (expected shape " +
                              shape_string(info.hf_shape) + ")");
    if (where_[i].tensor->shape != info.hf_shape)
      return invalid_argument(files_named + ": tensor '" + info.name + "' has shape " +
                              shape_string(where_[i].tensor->shape) + ", expected " +
                              shape_string(info.hf_shape) + " (a file for another model size?)");
  }
  if (!unknown.empty())
    return invalid_argument(files_named + ": tensor " + unknown.front() +
                            " is not a parameter of this " +
                            std::to_string(layout.num_groups() - 2) + "-layer model (" +
                            std::to_string(unknown.size()) + " unknown tensors in all)");
  return ok_status();
}

Status HfWeights::read(int64_t begin, int64_t end, float* out) const {
  ZT_CHECK(0 <= begin && begin <= end && end <= layout_->total_numel(), "load range [", begin,
           ", ", end, ") outside the layout");
  std::fill(out, out + (end - begin), 0.0f);  // alignment gaps
  for (size_t i = 0; i < where_.size(); ++i)
    ZT_RETURN_IF_ERROR(read_overlap(where_[i], layout_->tensors()[i], begin, end, out));
  return ok_status();
}

// Reads the part of tensor `info` inside flat [begin, end) into out.
Status HfWeights::read_overlap(const Located& w, const model::TensorInfo& info, int64_t begin,
                               int64_t end, float* out) const {
  const int64_t lo = std::max(begin, info.offset), hi = std::min(end, info.offset + info.numel);
  if (lo >= hi) return ok_status();
  const SafetensorsFile& file = files_[w.file];
  float* dst = out + (lo - begin);
  if (info.hf_transposed) {  // GPT-2's Conv1D: the whole tensor, transposed
    std::vector<float> hf(static_cast<size_t>(model::hf_numel(info)));
    std::vector<float> ours(static_cast<size_t>(info.numel));
    ZT_RETURN_IF_ERROR(file.read_f32(*w.tensor, 0, model::hf_numel(info), hf.data()));
    model::copy_from_hf(info, hf.data(), ours.data());
    std::copy(ours.begin() + (lo - info.offset), ours.begin() + (hi - info.offset), dst);
    return ok_status();
  }
  // Same row-major order; rows past HF's (a padded vocabulary) are zero.
  const int64_t first = lo - info.offset, live = model::hf_numel(info);
  const int64_t n = std::max<int64_t>(0, std::min(hi - info.offset, live) - first);
  if (n > 0) ZT_RETURN_IF_ERROR(file.read_f32(*w.tensor, first, n, dst));
  std::fill(dst + n, dst + (hi - lo), 0.0f);
  return ok_status();
}

Status load_hf_range(const HfModelDir& dir, const model::ParamLayout& layout, int64_t begin,
                     int64_t end, float* out) {
  ZT_ASSIGN_OR_RETURN(HfWeights w, HfWeights::open(dir, layout));
  return w.read(begin, end, out);
}

StatusOr<HfModelDir> open_hf_weights(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return open_hf_model(path);
  return HfModelDir{.path = path, .config = {}, .weight_files = {path}};
}

StatusOr<ResolvedModel> resolve_model(const std::string& m) {
  std::error_code ec;
  const bool path = m.find('/') != std::string::npos || m.ends_with(".json") || fs::exists(m, ec);
  if (!path) {
    ZT_ASSIGN_OR_RETURN(model::ModelSpec spec, model::model_spec(m));
    return ResolvedModel{.spec = std::move(spec), .weights = {}};
  }
  ZT_ASSIGN_OR_RETURN(HfModelDir dir, open_hf_model(m));
  StatusOr<model::ModelSpec> spec = model::model_spec_from_config(dir.config);
  if (!spec.ok()) return spec.status().with_context("model " + m);
  spec->name = m;
  return ResolvedModel{.spec = std::move(spec).value(),
                       .weights = dir.weight_files.empty() ? std::string() : m};
}

Status load_hf_weights(const std::string& path, const model::ParamLayout& layout, float* out) {
  ZT_ASSIGN_OR_RETURN(HfModelDir dir, open_hf_weights(path));
  return load_hf_range(dir, layout, 0, layout.total_numel(), out);
}

Status write_hf_model(const std::string& dir, const nlohmann::json& config,
                      const model::ParamLayout& layout, DType dtype, const ReadFlatFn& read_flat,
                      int64_t max_shard_bytes, const std::map<std::string, std::string>& metadata) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create " + dir + ": " + ec.message());
  // Split the tensors, in layout order, into shards of at most
  // max_shard_bytes (a tensor larger than that gets a shard of its own).
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  std::vector<std::vector<const model::TensorInfo*>> shards(1);
  int64_t in_shard = 0, total = 0;
  for (const model::TensorInfo& t : layout.tensors()) {
    const int64_t bytes = model::hf_numel(t) * elem;
    if (max_shard_bytes > 0 && in_shard > 0 && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&t);
    in_shard += bytes;
    total += bytes;
  }
  // Old weights would make the directory ambiguous (open_hf_model refuses
  // a single file beside an index) or stale.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == kSingle || name == kIndex ||
        (name.starts_with("model-") && name.ends_with(".safetensors")))
      fs::remove(e.path(), ec);
  }
  const int n = static_cast<int>(shards.size());
  nlohmann::json weight_map = nlohmann::json::object();
  for (int i = 0; i < n; ++i) {
    const std::string file = n == 1 ? kSingle : shard_name(i + 1, n);
    for (const model::TensorInfo* t : shards[static_cast<size_t>(i)]) weight_map[t->name] = file;
    ZT_RETURN_IF_ERROR(write_hf_tensors((fs::path(dir) / file).string(),
                                        shards[static_cast<size_t>(i)], dtype, read_flat,
                                        metadata));
  }
  if (n > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", total}}},
                                  {"weight_map", weight_map}};
    ZT_RETURN_IF_ERROR(atomic_write_file((fs::path(dir) / kIndex).string(), index.dump(2) + "\n"));
  }
  return atomic_write_file((fs::path(dir) / "config.json").string(), config.dump(2) + "\n");
}

}  // namespace zerotrain::checkpoint

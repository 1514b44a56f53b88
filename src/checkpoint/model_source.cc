#include "checkpoint/model_source.h"

#include <filesystem>
#include <memory>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/hf/model_dir.h"
#include "checkpoint/manifest.h"
#include "checkpoint/safetensors.h"

namespace zerotrain::checkpoint {

namespace fs = std::filesystem;

namespace {

StatusOr<ModelSource> from_checkpoint(const std::string& tag_dir) {
  ZT_ASSIGN_OR_RETURN(CheckpointReader r, CheckpointReader::open(tag_dir));
  nlohmann::json config = r.manifest().model_config;
  if (!config.contains("model_type")) config["model_type"] = r.manifest().family;
  StatusOr<model::ModelSpec> spec = model::model_spec_from_config(config);
  if (!spec.ok()) return spec.status().with_context("checkpoint " + tag_dir);
  auto reader = std::make_shared<CheckpointReader>(std::move(r));
  return ModelSource{*spec,
                     [reader](int64_t offset, int64_t count, float* out) {
                       return reader->read("master", offset, count, out);
                     },
                     "checkpoint " + tag_dir};
}

// A safetensors file without a config.json beside it: zerotrain's GPT-2
// export, whose metadata carries the config's integers and strings.
StatusOr<nlohmann::json> config_from_metadata(const std::string& path) {
  ZT_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(path));
  nlohmann::json config = nlohmann::json::object();
  for (const auto& [key, value] : f.metadata()) {
    if (key == "format" || key.starts_with("zerotrain_")) continue;
    const nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
    config[key] = v.is_discarded() || !v.is_primitive() ? nlohmann::json(value) : v;
  }
  if (!config.contains("n_layer")) {
    return not_found(path +
                     ": a safetensors file without a config.json beside it or a model "
                     "config in its metadata (zerotrain's GPT-2 export has one)");
  }
  if (!config.contains("model_type")) config["model_type"] = "gpt2";
  return config;
}

StatusOr<ModelSource> from_hf(const model::ModelSpec& spec, const std::string& weights,
                              const std::string& description) {
  ZT_ASSIGN_OR_RETURN(HfModelDir dir, open_hf_weights(weights));
  ZT_ASSIGN_OR_RETURN(auto family_layout, spec.family->layout(spec.config));
  auto layout = std::make_shared<model::ParamLayout>(std::move(family_layout));
  ZT_ASSIGN_OR_RETURN(HfWeights w, HfWeights::open(dir, *layout));
  auto held = std::make_shared<HfWeights>(std::move(w));
  return ModelSource{spec,
                     [held, layout](int64_t offset, int64_t count, float* out) {
                       return held->read(offset, offset + count, out);
                     },
                     description};
}

}  // namespace

StatusOr<ModelSource> open_model_source(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / kManifestName)) return from_checkpoint(path);
    if (fs::exists(fs::path(path) / kLatestName)) {
      ZT_ASSIGN_OR_RETURN(std::string tag, read_latest_tag(path));
      return from_checkpoint((fs::path(path) / tag).string());
    }
  }
  if (path.ends_with(".safetensors") && fs::is_regular_file(path, ec)) {
    const fs::path beside = fs::path(path).parent_path() / "config.json";
    nlohmann::json config;
    if (fs::exists(beside)) {
      ZT_ASSIGN_OR_RETURN(HfModelDir dir, open_hf_model(fs::path(path).parent_path().string()));
      config = dir.config;
    } else {
      ZT_ASSIGN_OR_RETURN(config, config_from_metadata(path));
    }
    StatusOr<model::ModelSpec> spec = model::model_spec_from_config(config);
    if (!spec.ok()) return spec.status().with_context(path);
    return from_hf(*spec, path, "safetensors " + path);
  }
  ZT_ASSIGN_OR_RETURN(ResolvedModel r, resolve_model(path));
  if (r.weights.empty()) return ModelSource{r.spec, nullptr, "model " + path + " (no weights)"};
  return from_hf(r.spec, r.weights, "HF model " + r.weights);
}

}  // namespace zerotrain::checkpoint

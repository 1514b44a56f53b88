// HF GPT-2 export/import over SafetensorsWriter / SafetensorsFile, one
// tensor at a time, converting layouts with model::copy_to_hf/copy_from_hf.
#include "checkpoint/hf/gpt2.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_header.h"

namespace zerotrain::checkpoint {
namespace {

constexpr std::string_view kTransformerPrefix = "transformer.";

// HF's GPT2Attention registers its causal mask as "h.N.attn.bias" (and, in
// older versions, "h.N.attn.masked_bias"); some exports keep these buffers.
bool is_attention_mask_buffer(std::string_view name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

std::string_view strip_prefix(std::string_view name) {
  if (name.starts_with(kTransformerPrefix)) name.remove_prefix(kTransformerPrefix.size());
  return name;
}

// File tensors by our name (prefix stripped); the tied head and mask buffers
// are dropped, duplicates and unknown names refused.
StatusOr<std::unordered_map<std::string_view, const SafetensorsTensor*>> match_names(
    const SafetensorsFile& file, const model::ParamLayout& layout) {
  std::unordered_map<std::string_view, const SafetensorsTensor*> by_name;
  std::vector<std::string> unknown;
  for (const SafetensorsTensor& t : file.tensors()) {
    const std::string_view name = strip_prefix(t.name);
    if (!layout.find(name).ok()) {
      if (name != "lm_head.weight" && !is_attention_mask_buffer(name)) unknown.push_back(t.name);
      continue;
    }
    auto [it, inserted] = by_name.emplace(name, &t);
    if (!inserted) {
      return invalid_argument("HF GPT-2 file " + file.path() + ": tensor '" + std::string(name) +
                              "' appears twice ('" + it->second->name + "' and '" + t.name + "')");
    }
  }
  // Missing and misshapen tensors first: for a file of another model size
  // they say more than the names it has beyond ours.
  for (const model::TensorInfo& info : layout.tensors()) {
    auto it = by_name.find(info.name);
    if (it == by_name.end()) {
      return invalid_argument("HF GPT-2 file " + file.path() + " has no tensor '" + info.name +
                              "' (expected shape " + shape_string(info.hf_shape) + ")");
    }
    if (it->second->shape != info.hf_shape) {
      return invalid_argument("HF GPT-2 file " + file.path() + ": tensor '" + info.name +
                              "' has shape " + shape_string(it->second->shape) + ", expected " +
                              shape_string(info.hf_shape) + " (a file for another model size?)");
    }
  }
  if (!unknown.empty()) {
    return invalid_argument("HF GPT-2 file " + file.path() + ": tensor '" + unknown.front() +
                            "' is not a parameter of this " +
                            std::to_string(layout.num_groups() - 2) + "-layer model (" +
                            std::to_string(unknown.size()) + " unknown tensors in all)");
  }
  return by_name;
}

}  // namespace

Status write_hf_gpt2(const std::string& path, const model::ParamLayout& layout, DType dtype,
                     const ReadFlatFn& read_flat,
                     const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsTensor> specs;
  for (const model::TensorInfo& t : layout.tensors()) {
    specs.push_back({.name = t.name, .dtype = dtype, .shape = t.hf_shape});
  }
  std::map<std::string, std::string> file_metadata = metadata;
  file_metadata.emplace("format", "pt");  // kept if the caller set one
  ZT_ASSIGN_OR_RETURN(SafetensorsWriter writer,
                      SafetensorsWriter::create(path, std::move(specs), file_metadata));
  std::vector<float> ours, hf;  // one tensor, ours then HF's layout
  for (const model::TensorInfo& t : layout.tensors()) {
    ours.resize(static_cast<size_t>(t.numel));
    hf.resize(static_cast<size_t>(model::hf_numel(t)));
    Status read = read_flat(t.offset, t.numel, ours.data());
    if (!read.ok()) return read.with_context("exporting " + t.name + " to " + path);
    model::copy_to_hf(t, ours.data(), hf.data());
    ZT_RETURN_IF_ERROR(writer.write(hf));
  }
  return writer.finish();
}

Status load_hf_gpt2(const std::string& path, const model::ParamLayout& layout, float* params) {
  ZT_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  ZT_ASSIGN_OR_RETURN(auto by_name, match_names(file, layout));
  std::fill(params, params + layout.total_numel(), 0.0f);  // alignment gaps
  std::vector<float> hf;
  for (const model::TensorInfo& info : layout.tensors()) {
    const SafetensorsTensor& t = *by_name.at(info.name);
    hf.resize(static_cast<size_t>(t.numel()));
    ZT_RETURN_IF_ERROR(file.read_f32(t, 0, t.numel(), hf.data()));
    model::copy_from_hf(info, hf.data(), params + info.offset);  // zeroes wte padding
  }
  return ok_status();
}

}  // namespace zerotrain::checkpoint

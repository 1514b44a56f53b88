// HF GPT-2 export/import over SafetensorsWriter / SafetensorsFile, one
// tensor at a time, converting layouts with model::copy_to_hf/copy_from_hf.
#include "checkpoint/hf/gpt2.h"

#include <vector>

#include "checkpoint/hf/model_dir.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_header.h"

namespace zerotrain::checkpoint {
Status write_hf_tensors(const std::string& path,
                        const std::vector<const model::TensorInfo*>& tensors, DType dtype,
                        const ReadFlatFn& read_flat,
                        const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsTensor> specs;
  for (const model::TensorInfo* t : tensors) {
    specs.push_back({.name = t->name, .dtype = dtype, .shape = t->hf_shape});
  }
  std::map<std::string, std::string> file_metadata = metadata;
  file_metadata.emplace("format", "pt");  // kept if the caller set one
  ZT_ASSIGN_OR_RETURN(SafetensorsWriter writer,
                      SafetensorsWriter::create(path, std::move(specs), file_metadata));
  std::vector<float> ours, hf;  // one tensor, ours then HF's layout
  for (const model::TensorInfo* t : tensors) {
    ours.resize(static_cast<size_t>(t->numel));
    hf.resize(static_cast<size_t>(model::hf_numel(*t)));
    Status read = read_flat(t->offset, t->numel, ours.data());
    if (!read.ok()) return read.with_context("exporting " + t->name + " to " + path);
    model::copy_to_hf(*t, ours.data(), hf.data());
    ZT_RETURN_IF_ERROR(writer.write(hf));
  }
  return writer.finish();
}

Status write_hf_gpt2(const std::string& path, const model::ParamLayout& layout, DType dtype,
                     const ReadFlatFn& read_flat,
                     const std::map<std::string, std::string>& metadata) {
  std::vector<const model::TensorInfo*> all;
  for (const model::TensorInfo& t : layout.tensors()) all.push_back(&t);
  return write_hf_tensors(path, all, dtype, read_flat, metadata);
}

Status load_hf_gpt2(const std::string& path, const model::ParamLayout& layout, float* params) {
  return load_hf_weights(path, layout, params);
}

}  // namespace zerotrain::checkpoint

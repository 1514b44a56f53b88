// export_safetensors: CheckpointReader ("master") -> write_hf_gpt2.
#include "checkpoint/export.h"

#include <map>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/hf_gpt2.h"
#include "model/param_layout.h"

namespace zerotrain::checkpoint {

Status export_safetensors(const std::string& tag_dir, const std::string& out_path,
                          DType dtype) {
  ZT_ASSIGN_OR_RETURN(CheckpointReader reader, CheckpointReader::open(tag_dir));
  const Manifest& m = reader.manifest();
  ZT_RETURN_IF_ERROR(model::validate(m.model).with_context("checkpoint " + tag_dir));
  const model::ParamLayout layout(m.model);
  if (layout_entries(layout) != m.layout)
    return corruption("checkpoint " + tag_dir + ": its parameter layout does not follow its model");
  const std::map<std::string, std::string> metadata{
      {"format", "pt"},
      {"zerotrain_tag", m.tag},
      {"zerotrain_global_steps", std::to_string(m.global_steps)},
      {"n_layer", std::to_string(m.model.n_layer)},
      {"n_head", std::to_string(m.model.n_head)},
      {"n_embd", std::to_string(m.model.n_embd)},
      {"n_positions", std::to_string(m.model.seq_len)},
      {"vocab_size", std::to_string(m.model.vocab_size)}};
  return write_hf_gpt2(
      out_path, layout, dtype,
      [&](int64_t offset, int64_t count, float* out) {
        return reader.read("master", offset, count, out);
      },
      metadata);
}

}  // namespace zerotrain::checkpoint

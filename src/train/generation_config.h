// A Hugging Face generation_config.json beside a model: the keys
// `zerotrain generate` takes from it (HF's GenerationConfig names). Keys a
// file does not give stay unset (HF's own defaults, such as top_k 50, are
// not assumed); other keys are ignored.
//
//   ZT_ASSIGN_OR_RETURN(GenerationConfig g, read_generation_config(model_dir));
//   if (g.temperature) o.temperature = *g.temperature;
//
// Thread-safety: pure function (reads the file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace zerotrain::train {

struct GenerationConfig {
  std::string path;               // the file read; empty when there is none
  std::vector<uint32_t> eos_ids;  // eos_token_id: an id or a list of ids
  std::optional<bool> do_sample;
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k, max_new_tokens;
};

// The file in `dir` (empty dir or no file: an empty config). InvalidArgument
// naming the file and the key for a value of the wrong type.
StatusOr<GenerationConfig> read_generation_config(const std::string& dir);

}  // namespace zerotrain::train

#include "train/generation_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace zerotrain::train {

StatusOr<GenerationConfig> read_generation_config(const std::string& dir) {
  GenerationConfig g;
  if (dir.empty()) return g;
  const std::filesystem::path path = std::filesystem::path(dir) / "generation_config.json";
  if (!std::filesystem::exists(path)) return g;
  g.path = path.string();
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalid_argument(g.path + ": not a JSON object");
  const auto bad = [&](const char* key, const char* want) {
    return invalid_argument(g.path + ": " + key + " must be " + want + ", got " + j[key].dump());
  };
  const auto given = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  if (given("eos_token_id")) {
    const nlohmann::json& e = j["eos_token_id"];
    for (const nlohmann::json& id : e.is_array() ? e : nlohmann::json::array({e})) {
      if (!id.is_number_unsigned()) return bad("eos_token_id", "an id or a list of ids");
      const uint32_t v = id.get<uint32_t>();
      if (std::find(g.eos_ids.begin(), g.eos_ids.end(), v) == g.eos_ids.end())
        g.eos_ids.push_back(v);
    }
  }
  if (given("do_sample")) {
    if (!j["do_sample"].is_boolean()) return bad("do_sample", "true or false");
    g.do_sample = j["do_sample"].get<bool>();
  }
  for (auto [key, out] : {std::pair{"temperature", &g.temperature}, std::pair{"top_p", &g.top_p},
                          std::pair{"repetition_penalty", &g.repetition_penalty}}) {
    if (!given(key)) continue;
    if (!j[key].is_number()) return bad(key, "a number");
    *out = j[key].get<double>();
  }
  for (auto [key, out] :
       {std::pair{"top_k", &g.top_k}, std::pair{"max_new_tokens", &g.max_new_tokens}}) {
    if (!given(key)) continue;
    if (!j[key].is_number_integer()) return bad(key, "an integer");
    *out = j[key].get<int64_t>();
  }
  return g;
}

}  // namespace zerotrain::train

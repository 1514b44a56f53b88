// LoraConfig: PEFT's scale, matching rules and adapter_config.json (see
// lora_config.h).
#include "model/lora_config.h"

#include <cmath>
#include <regex>

namespace zerotrain::model {
namespace {

bool ends_with_module(const std::string& name, const std::string& key) {
  if (name == key) return true;
  return name.size() > key.size() && name.compare(name.size() - key.size(), key.size(), key) == 0 &&
         name[name.size() - key.size() - 1] == '.';
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

}  // namespace

double LoraConfig::scale() const {
  return use_rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
}

bool LoraConfig::targets(const std::string& name, bool is_output_layer) const {
  if (!target_regex.empty()) return std::regex_match(name, std::regex(target_regex));
  if (all_linear) return !is_output_layer;
  for (const std::string& k : target_modules)
    if (ends_with_module(name, k)) return true;
  return false;
}

bool LoraConfig::saves(const std::string& name) const {
  for (const std::string& k : modules_to_save)
    if (ends_with_module(name, k)) return true;
  return false;
}

void LoraConfig::set_targets(const std::vector<std::string>& names) {
  all_linear = false;
  target_regex.clear();
  target_modules.clear();
  if (names.size() == 1 && (names[0] == "all" || names[0] == "all-linear"))
    all_linear = true;
  else if (names.size() == 1 && names[0].find_first_of("*(|\\") != std::string::npos)
    target_regex = names[0];
  else
    target_modules = names;
}

std::string LoraConfig::describe() const {
  char s[64];
  std::snprintf(s, sizeof(s), "%g", scale());
  std::string t = !target_regex.empty() ? "regex " + target_regex
                  : all_linear          ? std::string("all-linear")
                                        : join(target_modules);
  char a[32];
  std::snprintf(a, sizeof(a), "%g", alpha);
  std::string d = "r=" + std::to_string(r) + " alpha=" + a + (use_rslora ? " rslora" : "") +
                  " (scale " + s + ") targets " + t;
  if (!modules_to_save.empty()) d += "; modules_to_save " + join(modules_to_save);
  return d;
}

Status validate(const LoraConfig& c) {
  if (c.r < 1) return invalid_argument("lora: r must be >= 1, got " + std::to_string(c.r));
  if (!(c.alpha > 0.0)) return invalid_argument("lora: lora_alpha must be > 0");
  if (!(c.dropout >= 0.0 && c.dropout < 1.0))
    return invalid_argument("lora: lora_dropout must be in [0, 1), got " +
                            std::to_string(c.dropout));
  if (c.target_regex.empty() && !c.all_linear && c.target_modules.empty())
    return invalid_argument(
        "lora: target_modules is empty (name modules, e.g. q_proj,v_proj, or all-linear)");
  if (!c.target_regex.empty()) {
    try {
      std::regex re(c.target_regex);
    } catch (const std::regex_error& e) {
      return invalid_argument("lora: target_modules regex '" + c.target_regex +
                              "' is invalid: " + e.what());
    }
  }
  return ok_status();
}

nlohmann::json to_peft_json(const LoraConfig& c) {
  nlohmann::json j;
  j["peft_type"] = "LORA";
  j["task_type"] = "CAUSAL_LM";
  j["base_model_name_or_path"] = c.base_model.empty() ? nullptr : nlohmann::json(c.base_model);
  j["r"] = c.r;
  j["lora_alpha"] = c.alpha;
  j["lora_dropout"] = c.dropout;
  j["use_rslora"] = c.use_rslora;
  j["use_dora"] = false;
  j["bias"] = "none";
  j["fan_in_fan_out"] = false;  // set by the exporter for GPT-2's Conv1D
  j["inference_mode"] = true;
  j["init_lora_weights"] = c.gaussian_init ? nlohmann::json("gaussian") : nlohmann::json(true);
  if (!c.target_regex.empty())
    j["target_modules"] = c.target_regex;
  else if (c.all_linear)
    j["target_modules"] = "all-linear";
  else
    j["target_modules"] = c.target_modules;
  j["modules_to_save"] =
      c.modules_to_save.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.modules_to_save);
  j["layers_to_transform"] = nullptr;
  j["layers_pattern"] = nullptr;
  j["rank_pattern"] = nlohmann::json::object();
  j["alpha_pattern"] = nlohmann::json::object();
  return j;
}

StatusOr<LoraConfig> lora_from_peft_json(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& why) { return invalid_argument(where + ": " + why); };
  if (!j.is_object()) return bad("not a JSON object");
  auto str = [&](const char* k) -> std::string {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  if (j.contains("peft_type") && str("peft_type") != "LORA")
    return bad("peft_type " + j["peft_type"].dump() + " is not LORA (only LoRA adapters load)");
  for (const char* k : {"r", "lora_alpha", "target_modules"})
    if (!j.contains(k) || j[k].is_null()) return bad("missing config key '" + std::string(k) + "'");
  if (!j["r"].is_number_integer()) return bad("r must be an integer");
  if (!j["lora_alpha"].is_number()) return bad("lora_alpha must be a number");
  LoraConfig c;
  c.r = j["r"].get<int64_t>();
  c.alpha = j["lora_alpha"].get<double>();
  if (j.contains("lora_dropout") && j["lora_dropout"].is_number())
    c.dropout = j["lora_dropout"].get<double>();
  if (j.contains("use_rslora") && j["use_rslora"].is_boolean())
    c.use_rslora = j["use_rslora"].get<bool>();
  if (j.contains("bias") && str("bias") != "none")
    return bad("bias " + j["bias"].dump() + " is not supported (only \"none\")");
  if (j.value("use_dora", false) == true) return bad("use_dora (DoRA) is not supported");
  for (const char* k : {"rank_pattern", "alpha_pattern"})
    if (j.contains(k) && !j[k].is_null() && !j[k].empty())
      return bad(std::string(k) + " (per-module ranks/alphas) is not supported");
  if (j.contains("layers_to_transform") && !j["layers_to_transform"].is_null())
    return bad("layers_to_transform is not supported");
  const nlohmann::json& t = j["target_modules"];
  if (t.is_string()) {
    if (t.get<std::string>() == "all-linear")
      c.all_linear = true;
    else
      c.target_regex = t.get<std::string>();
  } else if (t.is_array()) {
    for (const auto& x : t) {
      if (!x.is_string()) return bad("target_modules entries must be strings");
      c.target_modules.push_back(x.get<std::string>());
    }
  } else {
    return bad("target_modules must be a list of names or a regex string");
  }
  if (j.contains("modules_to_save") && j["modules_to_save"].is_array())
    for (const auto& x : j["modules_to_save"]) c.modules_to_save.push_back(x.get<std::string>());
  if (j.contains("init_lora_weights")) {
    const auto& init = j["init_lora_weights"];
    if (init.is_string() && init.get<std::string>() == "gaussian")
      c.gaussian_init = true;
    else if (!init.is_boolean())
      return bad("init_lora_weights " + init.dump() + " is not supported (true or \"gaussian\")");
  }
  c.base_model = str("base_model_name_or_path");
  if (Status s = validate(c); !s.ok()) return bad(s.message());
  return c;
}

}  // namespace zerotrain::model

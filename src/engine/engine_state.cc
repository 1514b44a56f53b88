// EngineState <-> JSON (see engine_state.h).
#include "engine/engine_state.h"

namespace zerotrain::engine {

using nlohmann::json;

json to_json(const EngineState& s) {
  json j;
  j["optimizer"] = {{"name", s.optimizer},
                    {"state_names", s.state_names},
                    {"step_count", s.optimizer_step_count},
                    {"lr", s.lr}};
  j["scheduler"] = s.scheduler_type.empty()
                       ? json(nullptr)
                       : json{{"type", s.scheduler_type},
                              {"last_batch_iteration", s.scheduler_last_batch_iteration}};
  j["loss_scaler"] = {{"cur_scale", s.loss_scaler.cur_scale},
                      {"cur_iter", s.loss_scaler.cur_iter},
                      {"last_overflow_iter", s.loss_scaler.last_overflow_iter},
                      {"cur_hysteresis", s.loss_scaler.cur_hysteresis}};
  j["counters"] = {{"global_steps", s.global_steps},
                   {"skipped_steps", s.skipped_steps},
                   {"micro_steps", s.micro_steps}};
  return j;
}

StatusOr<EngineState> engine_state_from_json(const json& j, const std::string& where) {
  EngineState s;
  try {
    const json& o = j.at("optimizer");
    s.optimizer = o.at("name").get<std::string>();
    s.state_names = o.at("state_names").get<std::vector<std::string>>();
    s.optimizer_step_count = o.at("step_count").get<int64_t>();
    s.lr = o.at("lr").get<double>();
    if (!j.at("scheduler").is_null()) {
      s.scheduler_type = j["scheduler"].at("type").get<std::string>();
      s.scheduler_last_batch_iteration = j["scheduler"].at("last_batch_iteration").get<int64_t>();
    }
    const json& ls = j.at("loss_scaler");
    s.loss_scaler = {ls.at("cur_scale").get<double>(), ls.at("cur_iter").get<int64_t>(),
                     ls.at("last_overflow_iter").get<int64_t>(),
                     ls.at("cur_hysteresis").get<int>()};
    const json& c = j.at("counters");
    s.global_steps = c.at("global_steps").get<int64_t>();
    s.skipped_steps = c.at("skipped_steps").get<int64_t>();
    s.micro_steps = c.at("micro_steps").get<int64_t>();
  } catch (const json::exception& e) {
    return corruption(where + ": engine state: missing or mistyped field (" + e.what() + ")");
  }
  return s;
}

}  // namespace zerotrain::engine

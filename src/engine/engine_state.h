// EngineState: the engine's part of a checkpoint — optimizer, scheduler,
// loss scaler and step counters — and its JSON form, which the manifest
// stores opaquely (checkpoint/manifest.h, "engine_state").
//
//   nlohmann::json j = to_json(state);
//   ZT_ASSIGN_OR_RETURN(EngineState s, engine_state_from_json(j, "checkpoint ckpt/global_step3"));
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "optim/loss_scaler.h"

namespace zerotrain::engine {

struct EngineState {
  std::string optimizer;                 // "adamw", "adam", "sgd"
  std::vector<std::string> state_names;  // its per-element fp32 states
  int64_t optimizer_step_count = 0;
  double lr = 0;
  std::string scheduler_type;  // "" for a constant lr
  int64_t scheduler_last_batch_iteration = -1;
  optim::LossScalerState loss_scaler;
  int64_t global_steps = 0, skipped_steps = 0, micro_steps = 0;
};

// {"optimizer": {name, state_names, step_count, lr}, "scheduler": null |
// {type, last_batch_iteration}, "loss_scaler": {cur_scale, cur_iter,
// last_overflow_iter, cur_hysteresis}, "counters": {global_steps,
// skipped_steps, micro_steps}}.
nlohmann::json to_json(const EngineState& s);
// Corruption naming `where` and the field when one is missing or mistyped.
StatusOr<EngineState> engine_state_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace zerotrain::engine

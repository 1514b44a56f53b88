// Conversions between validated JSON values and typed Config fields, used by
// the schema bindings (ZT_FIELD). Values reaching `assign` were already
// checked and normalised by the walker, so a mismatch here is a bug.
// Internal to src/config/.
//
//   json_value::assign(cfg.zero.stage, Json(2));
//   Json j = json_value::to_json(cfg.zero.offload_param.device);  // "cpu"
//
// Thread-safety: stateless.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "config/schema.h"
#include "core/status.h"

namespace zerotrain::config {

// Enum <-> JSON spelling; a nullptr name means JSON null.
template <typename E>
struct EnumNames;

#define ZT_ENUM_NAMES(E, ...)                                            \
  template <>                                                            \
  struct EnumNames<E> {                                                  \
    static constexpr std::pair<E, const char*> kNames[] = {__VA_ARGS__}; \
  }

ZT_ENUM_NAMES(DType, {DType::kFloat32, "fp32"}, {DType::kFloat16, "fp16"},
              {DType::kBFloat16, "bf16"});
ZT_ENUM_NAMES(OffloadDevice, {OffloadDevice::kNone, "none"}, {OffloadDevice::kCpu, "cpu"},
              {OffloadDevice::kNvme, "nvme"});
ZT_ENUM_NAMES(OptimizerType, {OptimizerType::kNone, nullptr}, {OptimizerType::kAdam, "Adam"},
              {OptimizerType::kAdamW, "AdamW"}, {OptimizerType::kSgd, "SGD"});
ZT_ENUM_NAMES(SchedulerType, {SchedulerType::kNone, nullptr},
              {SchedulerType::kWarmupLR, "WarmupLR"},
              {SchedulerType::kWarmupDecayLR, "WarmupDecayLR"},
              {SchedulerType::kWarmupCosineLR, "WarmupCosineLR"},
              {SchedulerType::kOneCycle, "OneCycle"}, {SchedulerType::kLRRangeTest, "LRRangeTest"});
ZT_ENUM_NAMES(WarmupType, {WarmupType::kLog, "log"}, {WarmupType::kLinear, "linear"});
ZT_ENUM_NAMES(AllreduceOp, {AllreduceOp::kMean, "mean"}, {AllreduceOp::kSum, "sum"});
ZT_ENUM_NAMES(TagValidation, {TagValidation::kIgnore, "Ignore"}, {TagValidation::kWarn, "Warn"},
              {TagValidation::kFail, "Fail"});
#undef ZT_ENUM_NAMES

namespace json_value {

template <typename T>
void assign(T& field, const Json& v);

template <typename E>
requires std::is_enum_v<E>
void assign_enum(E& field, const Json& v) {
  for (const auto& [value, name] : EnumNames<E>::kNames) {
    if (name == nullptr ? v.is_null() : (v.is_string() && v.get<std::string>() == name)) {
      field = value;
      return;
    }
  }
  ZT_CHECK(false, "no enum value for validated JSON ", v.dump());
}

template <typename T>
void assign(T& field, const Json& v) {
  if constexpr (std::is_enum_v<T>) {
    assign_enum(field, v);
  } else if constexpr (std::is_same_v<T, bool>) {
    field = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    field = static_cast<T>(v.get<int64_t>());
  } else if constexpr (std::is_same_v<T, std::array<double, 2>>) {
    field = {v.at(0).get<double>(), v.at(1).get<double>()};
  } else {
    field = v.get<T>();
  }
}

template <typename T>
void assign(std::optional<T>& field, const Json& v) {
  if (v.is_null()) {
    field.reset();
    return;
  }
  T value{};
  assign(value, v);
  field = value;
}

template <typename T>
Json to_json(const T& field) {
  if constexpr (std::is_enum_v<T>) {
    for (const auto& [value, name] : EnumNames<T>::kNames)
      if (value == field) return name == nullptr ? Json(nullptr) : Json(name);
    return Json(nullptr);
  } else if constexpr (std::is_same_v<T, std::array<double, 2>>) {
    return Json::array({field[0], field[1]});
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return Json(static_cast<int64_t>(field));
  } else {
    return Json(field);
  }
}

template <typename T>
Json to_json(const std::optional<T>& field) {
  return field ? to_json(*field) : Json(nullptr);
}

}  // namespace json_value

// Binds a KeySpec to a Config member: `.set = ..., .get = ...`.
#define ZT_FIELD(member)                                                    \
  .set = [](Config& c, const Json& v) { json_value::assign(c.member, v); }, \
  .get = [](const Config& c) { return json_value::to_json(c.member); }

}  // namespace zerotrain::config

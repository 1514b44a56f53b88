// Legacy spellings that reshape the document before the walk (see walk.h).
#include "config/walk.h"

namespace zerotrain::config {

std::optional<Json> rewrite_legacy_forms(const Json& doc, std::vector<ConfigError>* warnings) {
  if (!doc.is_object()) return std::nullopt;
  auto zero = doc.find("zero_optimization");
  if (zero == doc.end() || !zero->is_boolean()) return std::nullopt;
  // DeepSpeed's read_zero_config_deprecated: true is stage 1 with the
  // top-level allgather_size as its bucket, false is stage 0.
  Json out = doc;
  Json section = {{"stage", zero->get<bool>() ? 1 : 0}};
  if (zero->get<bool>()) {
    auto size = doc.find("allgather_size");
    section["allgather_bucket_size"] = size != doc.end() ? *size : Json(500000000);
    if (size != doc.end()) out.erase("allgather_size");
  }
  warnings->push_back({"zero_optimization", "deprecated boolean form; DeepSpeed reads " +
                                                zero->dump() + " as " + section.dump() +
                                                " (and so does zerotrain); write that"});
  out["zero_optimization"] = std::move(section);
  return out;
}

}  // namespace zerotrain::config

// The "auto" rules: for each key that may be "auto", the TrainerArgs field
// it is resolved from and whether an explicit config value must agree with
// that argument. train_batch_size is not here: its "auto" is solved by the
// batch triangle. Internal to src/config/.
//
//   if (const AutoRule* r = find_auto_rule(path)) value = r->from(args);
//
// Thread-safety: a constant table.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "config/config.h"
#include "config/schema.h"

namespace zerotrain::config {

struct AutoRule {
  std::string_view path;
  std::string_view arg;   // TrainerArgs field; "" = a constant
  std::string_view flag;  // the `zerotrain train` flag that sets it ("--lr")
  bool must_match;       // a non-auto config value must equal the argument
  std::optional<Json> (*from)(const TrainerArgs&);  // nullopt: argument not given
};

const AutoRule* find_auto_rule(std::string_view path);
std::span<const AutoRule> auto_rules();

}  // namespace zerotrain::config

// Line numbers of the keys in a ds_config text, so every error can say
// where to look. A small tokenizer of its own, because nlohmann's parser
// callback does not expose positions. Internal to src/config/.
//
//   std::map<std::string, int> lines = key_lines(text);
//   lines["zero_optimization.stage"];  // 1-based line of that key
//
// Thread-safety: pure function.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace zerotrain::config {

// Dotted key path (as spelled in the text; array elements add "[]") -> the
// 1-based line of the key's last occurrence. Best effort: stops quietly at
// malformed input (the JSON parser reports that).
std::map<std::string, int> key_lines(std::string_view text);

}  // namespace zerotrain::config

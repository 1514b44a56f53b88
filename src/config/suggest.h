// "Did you mean" for unknown config keys: edit distance among the keys valid
// at the same level, else the same key declared at another level. Internal
// to src/config/.
//
//   std::string m = unknown_key_message("zero_optimization.offload_optimizer", "pin_memroy");
//   // "unknown key 'pin_memroy'; did you mean 'pin_memory'?"
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerotrain::config {

// Optimal-string-alignment distance (a transposition counts as one edit),
// case-insensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate within a length-dependent threshold, if unique enough.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// The message for `key` found in `section` ("" = top level) but not declared.
std::string unknown_key_message(std::string_view section, std::string_view key);

// "did you mean 'X'?" or "'X' belongs under Y" when `key` looks like a
// declared key (a near spelling at this level, or a key of another level);
// nullopt when it looks like nothing zerotrain knows.
std::optional<std::string> known_key_hint(std::string_view section, std::string_view key);

}  // namespace zerotrain::config

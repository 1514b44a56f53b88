// The `zerotrain` subcommands. Each add_* registers its flags on the CLI11
// app and returns a runner that main() calls after parsing; runners return
// the process exit code. No logic lives here beyond mapping flags onto the
// layers' option structs.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>

namespace zerotrain::cli {

using Runner = std::function<int()>;

// The value of option `name` if the user gave it, else nullopt (CLI11 2.1
// has no std::optional binding; unset trainer arguments must stay unset so
// "auto" and explicit config values are judged correctly).
template <typename T>
std::optional<T> given(const CLI::App* app, const char* name, T value) {
  if (app->count(name) == 0) return std::nullopt;
  return value;
}

// Stands in for the first `--` after `run` while CLI11 parses (see main.cc).
inline constexpr const char* kDashDashMarker = "\x01zerotrain--";

Runner add_run_command(CLI::App& app);
Runner add_config_command(CLI::App& app);
Runner add_train_command(CLI::App& app);
Runner add_data_command(CLI::App& app);
Runner add_checkpoint_command(CLI::App& app);  // export, show
Runner add_models_command(CLI::App& app);
Runner add_generate_command(CLI::App& app);
Runner add_eval_command(CLI::App& app);
Runner add_tools_commands(CLI::App& app);  // estimate, gpus, holders

}  // namespace zerotrain::cli

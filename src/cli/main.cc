// zerotrain: one binary, DeepSpeed-style subcommands.
//   zerotrain run --include localhost:1 -- PROG ARGS
//   zerotrain config check examples/ds_config_zero2.json
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "core/log.h"

int main(int argc, char** argv) {
  CLI::App app{"zerotrain: ZeRO-style distributed training (DeepSpeed-compatible configs and launcher)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "zerotrain 0.1.0");

  if (zerotrain::Status s = zerotrain::log::set_level_from_env(); !s.ok()) {
    std::cerr << "zerotrain: " << s.message() << "\n";
    return 2;
  }
  std::map<CLI::App*, zerotrain::cli::Runner> runners;
  auto add = [&](zerotrain::cli::Runner (*adder)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    zerotrain::cli::Runner runner = adder(app);
    auto subs = app.get_subcommands({});
    for (size_t i = before; i < subs.size(); ++i) runners[subs[i]] = runner;
  };
  add(&zerotrain::cli::add_run_command);
  add(&zerotrain::cli::add_config_command);
  add(&zerotrain::cli::add_train_command);
  add(&zerotrain::cli::add_data_command);
  add(&zerotrain::cli::add_checkpoint_command);
  add(&zerotrain::cli::add_tools_commands);
  add(&zerotrain::cli::add_models_command);
  add(&zerotrain::cli::add_generate_command);
  add(&zerotrain::cli::add_eval_command);

  // `zerotrain run [flags] -- PROG ARGS`: CLI11 hands what follows `--` to the
  // top-level app, which rejects it. Swap the first `--` after `run` for a
  // marker the run subcommand stops at; run_command.cc drops it again (or
  // turns it back into `--` when it came after PROG, as in `run prog -- x`).
  std::vector<char*> args(argv, argv + argc);
  std::string marker(zerotrain::cli::kDashDashMarker);
  if (args.size() > 1 && std::string_view(args[1]) == "run") {
    auto dashes = std::find_if(args.begin() + 2, args.end(),
                               [](const char* a) { return std::string_view(a) == "--"; });
    if (dashes != args.end()) *dashes = marker.data();
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;  // usage errors exit 2, like config errors
  }
  for (CLI::App* sub : app.get_subcommands()) {
    auto it = runners.find(sub);
    if (it != runners.end()) return it->second();
  }
  std::cerr << app.help();
  return 2;
}

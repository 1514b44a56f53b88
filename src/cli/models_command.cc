// `zerotrain models [NAME]`: the model presets every family registers
// (model/registry.h), one a line with its model_type and parameter count;
// with NAME, that preset's Hugging Face config.json on stdout (a starting
// point for `zerotrain train --model config.json`, or a reference's input).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "model/registry.h"

namespace zerotrain::cli {
namespace {

int run_models(const std::string& name) {
  if (!name.empty()) {
    StatusOr<model::ModelSpec> spec = model::model_spec(name);
    if (!spec.ok()) {
      std::cerr << "zerotrain models: " << spec.status().message() << "\n";
      return 2;
    }
    std::cout << spec->config.dump(2) << "\n";
    return 0;
  }
  for (const model::ModelFamily* f : model::families()) {
    for (const model::ModelPreset& p : f->presets) {
      StatusOr<model::ModelInfo> info = f->info(p.config);
      char params[32];
      std::snprintf(params, sizeof params, "%.1f M",
                    info.ok() ? static_cast<double>(info->parameters) / 1e6 : 0.0);
      std::printf("%-16s %-8s %10s  %s\n", p.name.c_str(), f->name.c_str(), params,
                  p.description.c_str());
    }
  }
  return 0;
}

}  // namespace

Runner add_models_command(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "models", "list the model presets; with a name, print its Hugging Face config.json");
  cmd->add_option("name", *name, "a preset: print its config.json");
  return [name]() { return run_models(*name); };
}

}  // namespace zerotrain::cli

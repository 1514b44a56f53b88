// zt_train_bench: tokens/s and model FLOP/s of a training step (train_bench.h)
// for each model × precision given. Rank 0 prints one JSON line per case
// (and appends it to --json FILE); the ranks × threads layout is the
// caller's: one process uses OMP_NUM_THREADS (or every core), and
// `zerotrain run --num_gpus 2` gives 2 ranks of cores/2 threads each.
//
//   zt_train_bench --model gpt2-tiny --model gpt2-small-ish --precision fp32 --precision bf16
//   zerotrain run --num_gpus 2 -- zt_train_bench --model gpt2-tiny --json train.json
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "comm/gloo/gloo_communicator.h"
#include "core/log.h"
#include "train/train_bench.h"

namespace zb = zerotrain::bench;

int main(int argc, char** argv) {
  CLI::App app{"zt_train_bench: training-step tokens/s and model FLOP/s"};
  std::vector<std::string> models = {"gpt2-tiny", "gpt2-small-ish"};
  std::vector<std::string> precisions = {"fp32", "bf16"};
  zb::TrainCase base;
  std::string json_path;
  app.add_option("--model", models, "model preset (repeatable)");
  app.add_option("--precision", precisions, "fp32 or bf16 (repeatable)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--batch", base.B, "micro-batch per rank (default: per model)");
  app.add_option("--seq", base.T, "sequence length (default: per model)");
  app.add_option("--warmup", base.warmup, "untimed optimizer steps")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", base.steps, "timed optimizer steps")->check(CLI::PositiveNumber);
  app.add_flag("--checkpoint", base.checkpoint, "activation checkpointing of every block");
  app.add_option("--json", json_path, "append each case's JSON line to this file (rank 0)");
  CLI11_PARSE(app, argc, argv);

  auto options = zerotrain::comm::comm_options_from_env();
  if (!options.ok()) {
    zerotrain::log::error("zt_train_bench: ", options.status().to_string());
    return 1;
  }
  auto comm = zerotrain::comm::create_gloo_communicator(*options);
  if (!comm.ok()) {
    zerotrain::log::error("zt_train_bench: ", comm.status().to_string());
    return 1;
  }
  const bool rank0 = (*comm)->rank() == 0;
  for (const std::string& model : models) {
    for (const std::string& precision : precisions) {
      zb::TrainCase c = base;
      c.model = model, c.bf16 = precision == "bf16";
      auto r = zb::run_train_case(c, comm->get());
      if (!r.ok()) {
        zerotrain::log::error("zt_train_bench: ", model, " ", precision, ": ",
                              r.status().to_string());
        return 1;
      }
      if (!rank0) continue;
      const std::string line = zb::train_result_json(*r).dump();
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      if (!json_path.empty()) {
        std::ofstream out(json_path, std::ios::app);
        out << line << "\n";
        if (!out) {
          zerotrain::log::error("zt_train_bench: cannot write ", json_path);
          return 1;
        }
      }
    }
  }
  return 0;
}

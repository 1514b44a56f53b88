// zt_train_bench: tokens/s and model FLOP/s of a training step (train_bench.h)
// for each model × precision given. Rank 0 prints one JSON line per case
// (and appends it to --json FILE); the ranks × threads layout is the
// caller's: one process uses OMP_NUM_THREADS (or every core), and
// `zerotrain run --num_gpus 2` gives 2 ranks of cores/2 threads each.
//
// --device cuda runs on this process's GPU (the model, the engine, the
// communicator's backend); --gemm-ceiling first times the device's own
// bf16 GEMM (8192³, cuBLASLt on a GPU) for MFU against what the GEMM alone
// reaches.
//
//   zt_train_bench --model gpt2-tiny --model gpt2-small-ish --precision fp32 --precision bf16
//   zerotrain run --num_gpus 2 -- zt_train_bench --model gpt2-tiny --json train.json
//   zt_train_bench --device cuda --gemm-ceiling --model gpt2 --precision bf16 --batch 16 --seq 1024
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "comm/factory.h"
#include "core/env.h"
#include "core/log.h"
#include "device/device.h"
#include "train/gemm_ceiling.h"
#include "train/train_bench.h"

namespace zb = zerotrain::bench;

int main(int argc, char** argv) {
  CLI::App app{"zt_train_bench: training-step tokens/s and model FLOP/s"};
  std::vector<std::string> models = {"gpt2-tiny", "gpt2-small-ish"};
  std::vector<std::string> precisions = {"fp32", "bf16"};
  zb::TrainCase base;
  std::string json_path, device_name = "auto";
  bool gemm_ceiling = false;
  app.add_option("--model", models, "model preset (repeatable)");
  app.add_option("--precision", precisions, "fp32 or bf16 (repeatable)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--batch", base.B, "micro-batch per rank (default: per model)");
  app.add_option("--seq", base.T, "sequence length (default: per model)");
  app.add_option("--warmup", base.warmup, "untimed optimizer steps")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", base.steps, "timed optimizer steps")->check(CLI::PositiveNumber);
  app.add_flag("--checkpoint", base.checkpoint, "activation checkpointing of every block");
  app.add_option("--json", json_path, "append each case's JSON line to this file (rank 0)");
  app.add_option("--device", device_name, "auto, cpu or cuda (as zerotrain train --device)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_flag("--gemm-ceiling", gemm_ceiling,
               "first time the device's bf16 GEMM (8192^3) and print its TFLOP/s");
  CLI11_PARSE(app, argc, argv);

  auto write_line = [&](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    if (json_path.empty()) return true;
    std::ofstream out(json_path, std::ios::app);
    out << line << "\n";
    if (!out) zerotrain::log::error("zt_train_bench: cannot write ", json_path);
    return static_cast<bool>(out);
  };

  auto options = zerotrain::comm::comm_options_from_env();
  if (!options.ok()) {
    zerotrain::log::error("zt_train_bench: ", options.status().to_string());
    return 1;
  }
  auto choice = zerotrain::device::parse_device_choice(device_name);
  auto local_rank = zerotrain::env::get_int("LOCAL_RANK", 0);
  auto device = zerotrain::device::select_default_device(
      *choice, local_rank.ok() ? static_cast<int>(*local_rank) : 0);
  if (!device.ok()) {
    zerotrain::log::error("zt_train_bench: ", device.status().to_string());
    return 1;
  }
  auto comm = zerotrain::comm::create_communicator(*options, **device);
  if (!comm.ok()) {
    zerotrain::log::error("zt_train_bench: ", comm.status().to_string());
    return 1;
  }
  const bool rank0 = (*comm)->rank() == 0;
  if (gemm_ceiling && rank0) {
    // 8192³ on a GPU (as the H200's measured ceiling); a CPU takes ~1 s at 1024³.
    const int64_t n = (*device)->type() == zerotrain::device::DeviceType::kCuda ? 8192 : 1024;
    auto g = zb::measure_gemm_ceiling(**device, n);
    if (!g.ok()) {
      zerotrain::log::error("zt_train_bench: --gemm-ceiling: ", g.status().to_string());
      return 1;
    }
    if (!write_line(zb::gemm_ceiling_json(*g).dump())) return 1;
  }
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
      if (!write_line(zb::train_result_json(*r).dump())) return 1;
    }
  }
  return 0;
}

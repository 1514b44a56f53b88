// zt_zero_bench: one ZeRO case per process (zero_bench.h), since each
// rank's peak RSS (VmHWM) must be that case's alone. Rank 0 prints the
// case's JSON line and appends it to --json FILE; --report FILE renders
// RESULTS.md's ZeRO section from such a file instead (no communicator).
//
//   zerotrain run --num_gpus 2 -- zt_zero_bench --stage 2 --overlap --decompose --json zero.json
//   zt_zero_bench --report zero.json > zero_section.md
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "comm/gloo/gloo_communicator.h"
#include "core/log.h"
#include "zero_bench.h"
#include "zero_report.h"

namespace zb = zerotrain::bench;

int main(int argc, char** argv) {
  CLI::App app{"zt_zero_bench: ZeRO stage x offload x overlap_comm step time and peak memory"};
  zb::ZeroCase c;
  std::string json_path, report_path, precision = "bf16";
  app.add_option("--model", c.model, "model preset")->capture_default_str();
  app.add_option("--precision", precision, "fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--stage", c.stage, "ZeRO stage")->check(CLI::Range(0, 3));
  app.add_flag("--offload", c.offload, "offload_optimizer cpu (stage 3: also offload_param)");
  app.add_flag("--overlap", c.overlap, "overlap_comm true");
  app.add_flag("--decompose", c.decompose, "also time compute alone and communication alone");
  app.add_option("--batch", c.B, "micro-batch per rank")->capture_default_str();
  app.add_option("--seq", c.T, "sequence length")->capture_default_str();
  app.add_option("--bucket", c.bucket, "reduce/allgather bucket size, elements")
      ->capture_default_str();
  app.add_option("--warmup", c.warmup, "untimed steps")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", c.steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "append the case's JSON line to this file (rank 0)");
  app.add_option("--report", report_path, "render the Markdown section from this JSON-lines file");
  CLI11_PARSE(app, argc, argv);
  c.bf16 = precision == "bf16";

  if (!report_path.empty()) {
    auto md = zb::zero_section_from_file(report_path);
    if (!md.ok()) {
      std::cerr << "zt_zero_bench: " << md.status().message() << "\n";
      return 1;
    }
    std::cout << *md;
    return 0;
  }
  auto options = zerotrain::comm::comm_options_from_env();
  if (!options.ok()) {
    zerotrain::log::error("zt_zero_bench: ", options.status().to_string());
    return 1;
  }
  auto comm = zerotrain::comm::create_gloo_communicator(*options);
  if (!comm.ok()) {
    zerotrain::log::error("zt_zero_bench: ", comm.status().to_string());
    return 1;
  }
  auto r = zb::run_zero_case(c, comm->get());
  if (!r.ok()) {
    zerotrain::log::error("zt_zero_bench: stage ", c.stage, ": ", r.status().to_string());
    return 1;
  }
  if ((*comm)->rank() != 0) return 0;
  const std::string line = zb::zero_result_json(*r).dump();
  std::printf("%s\n", line.c_str());
  if (!json_path.empty()) {
    std::ofstream out(json_path, std::ios::app);
    out << line << "\n";
    if (!out) {
      zerotrain::log::error("zt_zero_bench: cannot write ", json_path);
      return 1;
    }
  }
  return 0;
}

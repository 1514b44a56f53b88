// Test helpers for tests that drive the `zerotrain` binary: run a command
// on one OpenMP thread (results independent of the machine's cores) and
// read the per-step losses of a --metrics file.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "integration/subprocess.h"

namespace zerotrain::train::testing {

inline zerotrain::testing::ProcessResult run_cli(const std::vector<std::string>& argv,
                                                 int seconds = 180) {
  return zerotrain::testing::run_process(argv, std::chrono::seconds(seconds),
                                         {"OMP_NUM_THREADS=1"});
}

// The command's stdout; a non-zero exit fails the test (printing its output).
inline std::string run_cli_ok(const std::vector<std::string>& argv, int seconds = 180) {
  auto r = run_cli(argv, seconds);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r.out;
}

// The "loss" of each line of a `train --metrics` file, in order.
inline std::vector<double> metrics_losses(const std::string& metrics) {
  std::vector<double> v;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);)
    v.push_back(nlohmann::json::parse(line)["loss"].get<double>());
  return v;
}

}  // namespace zerotrain::train::testing

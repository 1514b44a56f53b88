// `zerotrain config check` through the binary: exit codes and what a user
// sees for a good file, a typo deep in the tree, and a missing file.
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "integration/subprocess.h"

namespace zerotrain::testing {
namespace {

using namespace std::chrono_literals;

std::string write_temp_config(const std::string& text) {
  char path[] = "/tmp/zt_config_XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigCheckCli, ShippedExampleWithAutosPrintsEffectiveConfig) {
  ProcessResult r = run_process(
      {ZT_BIN, "config", "check", std::string(ZT_SOURCE_DIR) + "/examples/ds_config_zero3.json",
       "--world-size", "2", "--lr", "3e-4", "--betas", "0.9", "0.999", "--eps", "1e-8", "--weight-decay", "0.01", "--warmup-steps", "10",
       "--total-steps", "100", "--micro-batch", "4", "--grad-accum", "2", "--max-grad-norm", "1",
       "--hidden-size", "768"},
      30s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 4 micro x 2 accumulation x 2 ranks; h^2 and 0.9 h^2 for h = 768.
  EXPECT_NE(r.out.find("\"train_batch_size\": 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("589824"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("530841"), std::string::npos) << r.out;
}

TEST(ConfigCheckCli, TypoAtDepthThreeExitsTwoNamingPathAndSuggestion) {
  std::string path = write_temp_config(R"({
    "train_micro_batch_size_per_gpu": 2,
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memroy": true}}
  })");
  ProcessResult r = run_process({ZT_BIN, "config", "check", path}, 30s);
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("zero_optimization.offload_optimizer.pin_memroy"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("pin_memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

TEST(ConfigCheckCli, MissingFileExitsTwoNamingThePath) {
  ProcessResult r = run_process({ZT_BIN, "config", "check", "/nonexistent/ds_config.json"}, 30s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/ds_config.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace zerotrain::testing

// The shipped ZeRO-3 example trains unchanged through the binary:
// `zerotrain run --num_gpus 2|4 -- zerotrain train --deepspeed
// examples/ds_config_zero3.json` (bf16, offload_optimizer and offload_param
// to the CPU, overlap_comm, "auto" prefetch / persistence) exits 0 with a
// falling loss and the stage-3 memory line; the same file without the
// offload blocks keeps everything in compute memory.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "integration/subprocess.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

using testing::logged_losses;
using zerotrain::testing::run_process;

const std::string kZero3 = std::string(ZT_SOURCE_DIR) + "/examples/ds_config_zero3.json";

std::string trains(const std::string& config, int ranks, int steps) {
  auto r = run_process({ZT_BIN, "run", "--num_gpus", std::to_string(ranks), "--", ZT_BIN, "train",
                        "--deepspeed", config, "--steps", std::to_string(steps)},
                       std::chrono::seconds(240));
  const std::string what = config + " at " + std::to_string(ranks) + " ranks";
  EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find(std::to_string(ranks) + " rank(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage 3 formula"), std::string::npos) << what << "\n" << r.out;
  const std::vector<double> losses = logged_losses(r.out);
  EXPECT_GE(losses.size(), 2u) << r.out;
  if (losses.size() >= 2) {
    EXPECT_GT(losses.front(), 5.0) << what;
    EXPECT_LT(losses.back(), losses.front() - 1.0) << what << "\n" << r.out;
  }
  return r.out;
}

TEST(Zero3ExampleCli, TrainsWithParamAndOptimizerOffloadAt2And4Ranks) {
  for (int ranks : {2, 4}) {
    const std::string out = trains(kZero3, ranks, 40);
    EXPECT_NE(out.find("memory per rank: host "), std::string::npos) << out;
  }
}

TEST(Zero3ExampleCli, WithoutOffloadBlocksEverythingStaysInComputeMemory) {
  std::stringstream text;
  text << std::ifstream(kZero3).rdbuf();
  // Drop the two offload blocks as a user would.
  const std::string json = std::regex_replace(
      text.str(), std::regex(R"re("offload_(optimizer|param)": \{[^}]*\},)re"), "");
  ASSERT_EQ(json.find("offload"), std::string::npos) << json;
  testing::TempDir dir;
  std::ofstream(dir.file("zero3_no_offload.json")) << json;
  const std::string out = trains(dir.file("zero3_no_offload.json"), 2, 40);
  EXPECT_NE(out.find("(nothing offloaded)"), std::string::npos) << out;
}

}  // namespace
}  // namespace zerotrain::train

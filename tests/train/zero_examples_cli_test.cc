// The shipped ZeRO-2 example configs train unchanged through the binary:
// `zerotrain run --num_gpus 2|4 -- zerotrain train --deepspeed examples/...`
// exits 0 with a falling loss, for ds_config_zero2.json (bf16, CPU
// optimizer offload, overlap_comm), ds_config_zero2_fp16.json (fp16 dynamic
// loss scale, overlap_comm) and that file with offload_optimizer added.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "integration/subprocess.h"
#include "train/test_util.h"

namespace zerotrain::train {
namespace {

using testing::logged_losses;
using zerotrain::testing::run_process;

std::string example(const std::string& name) {
  return std::string(ZT_SOURCE_DIR) + "/examples/" + name;
}

// Trains `config` for `steps` at `ranks` ranks; the loss of the last
// logged step must be well below the first (ln 256 ≈ 5.5 at the start).
void expect_trains(const std::string& config, int ranks, int steps, const std::string& memory) {
  auto r = run_process({ZT_BIN, "run", "--num_gpus", std::to_string(ranks), "--", ZT_BIN, "train",
                        "--deepspeed", config, "--steps", std::to_string(steps)},
                       std::chrono::seconds(240));
  const std::string what = config + " at " + std::to_string(ranks) + " ranks";
  ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find(std::to_string(ranks) + " rank(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(memory), std::string::npos) << what << ": memory line\n" << r.out;
  const std::vector<double> losses = logged_losses(r.out);
  ASSERT_GE(losses.size(), 2u) << r.out;
  EXPECT_GT(losses.front(), 5.0) << what;
  EXPECT_LT(losses.back(), losses.front() - 1.0) << what << "\n" << r.out;
}

TEST(ZeroExamplesCli, Zero2Bf16WithOffloadAndOverlapTrainsAt2And4Ranks) {
  for (int ranks : {2, 4})
    expect_trains(example("ds_config_zero2.json"), ranks, 40, "memory per rank: host ");
}

TEST(ZeroExamplesCli, Zero2Fp16TrainsAt2And4RanksAlsoWithOffload) {
  for (int ranks : {2, 4})
    expect_trains(example("ds_config_zero2_fp16.json"), ranks, 40, "(nothing offloaded)");
  // The same file with offload_optimizer added, as a user would.
  testing::TempDir dir;
  std::stringstream text;
  text << std::ifstream(example("ds_config_zero2_fp16.json")).rdbuf();
  std::string json = text.str();
  const std::string key = "\"zero_optimization\": {";
  const size_t at = json.find(key);
  ASSERT_NE(at, std::string::npos);
  json.insert(at + key.size(), R"( "offload_optimizer": {"device": "cpu", "pin_memory": true},)");
  std::ofstream(dir.file("zero2_fp16_offload.json")) << json;
  expect_trains(dir.file("zero2_fp16_offload.json"), 2, 40, "memory per rank: host ");
}

}  // namespace
}  // namespace zerotrain::train

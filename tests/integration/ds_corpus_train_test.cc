// Every config of the real-world corpus (../shared/reference/ds-configs/)
// that `zerotrain config check` accepts trains 3 steps at 2 ranks under
// `zerotrain run --num_gpus 2 -- zerotrain train --deepspeed FILE --steps 3`
// with no trainer flag (issue #21; --seq-len 16 only sizes the run for CI),
// and the effective config the trainer
// starts from is, byte for byte, the one `config check --world-size 2
// --steps 3` prints: the two resolve "auto" from the same defaults.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "integration/subprocess.h"

namespace zerotrain::testing {
namespace {

using namespace std::chrono_literals;

std::string corpus_dir() {
  if (const char* env = std::getenv("ZEROTRAIN_DS_CONFIG_CORPUS")) return env;
  return std::string(ZT_SOURCE_DIR) + "/../shared/reference/ds-configs";
}

// The JSON after "[zerotrain] effective ds_config (...):" up to the next log line.
std::string printed_effective_config(const std::string& out) {
  const size_t head = out.find("[zerotrain] effective ds_config");
  if (head == std::string::npos) return "";
  const size_t start = out.find('\n', head) + 1;
  const size_t end = out.find("\n[zerotrain]", start);
  return out.substr(start, end - start);
}

TEST(DsConfigCorpusTraining, EveryAcceptedConfigTrainsThreeStepsAtTwoRanks) {
  const std::string dir = corpus_dir();
  if (!std::filesystem::is_directory(dir))
    GTEST_SKIP() << "the ds_config corpus is not on this machine (" << dir
                 << "; set ZEROTRAIN_DS_CONFIG_CORPUS): it lives beside the repository, not in it";
  int accepted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string file = entry.path().string();
    SCOPED_TRACE(entry.path().filename().string());
    ProcessResult check =
        run_process({ZT_BIN, "config", "check", file, "--world-size", "2", "--steps", "3"}, 30s);
    if (check.exit_code != 0) continue;  // refused: config_test states why, per file
    ++accepted;
    // --seq-len 16 only sizes the run for CI (it is not a ds_config key):
    // bing_bert's config alone is 128 micro-batches of 16 a step.
    ProcessResult r = run_process({ZT_BIN, "run", "--num_gpus", "2", "--", ZT_BIN, "train",
                                   "--deepspeed", file, "--steps", "3", "--seq-len", "16"},
                                  180s, {"OMP_NUM_THREADS=1"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("[zerotrain] done: 3 steps"), std::string::npos) << r.out;
    EXPECT_EQ(printed_effective_config(r.out) + "\n", check.out);
    static const std::regex kLoss(
        R"(\[zerotrain\] done: 3 steps .*\| loss ([0-9.]+) -> ([0-9.]+))");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, kLoss)) << r.out;
    EXPECT_TRUE(std::isfinite(std::stod(m[1])) && std::isfinite(std::stod(m[2]))) << r.out;
  }
  EXPECT_GE(accepted, 27) << "fewer corpus configs are accepted than config_test states";
}

}  // namespace
}  // namespace zerotrain::testing

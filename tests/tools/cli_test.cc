// `zerotrain estimate`, `gpus` and `holders` through the binary: exit codes
// and what a user sees.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "integration/subprocess.h"
#include "tools/test_util.h"

namespace zerotrain::tools {
namespace {

using namespace std::chrono_literals;
using testing::ProcessResult;
using testing::run_process;

TEST(ToolsCli, EstimatePaperExampleRows) {
  // 7.5B params on 8 x 8 ranks; GB = 2^30: 120e9 -> 111.76, 31.41e9 -> 29.25, 1.875e9 -> 1.75.
  ProcessResult r = run_process({ZT_BIN, "estimate", "--params", "7.5e9", "--ranks", "8", "--nodes",
                                 "8", "--offload", "none"},
                                30s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("    0.00GB | 111.76GB | stage=0, offload=none"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    0.00GB |  29.25GB | stage=1, offload=none"), std::string::npos);
  EXPECT_NE(r.out.find("    0.00GB |   1.75GB | stage=3, offload=none"), std::string::npos);
  EXPECT_NE(r.out.find("SW: Model with 7500M total params."), std::string::npos);
  EXPECT_EQ(r.out.find("offload=cpu"), std::string::npos);

  // DeepSpeed's L in e-notation: GPU 4L + 18P/64 = 0.8e9 + 2.109e9 bytes = 2.71 GiB.
  ProcessResult l = run_process({ZT_BIN, "estimate", "--params", "7.5e9", "--ranks", "8", "--nodes",
                                 "8", "--offload", "none", "--largest-layer-params", "2e8"},
                                30s);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("200M largest layer params."), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("|   2.71GB | offload_param=none, offload_optimizer=none, zero_init=1"),
            std::string::npos)
      << l.out;
}

TEST(ToolsCli, EstimateSaysWhichLayoutItPrints) {
  ProcessResult d = run_process({ZT_BIN, "estimate", "--model", "gpt2-tiny", "--offload", "none"}, 30s);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("layout design: the ZeRO formulas' storage"), std::string::npos) << d.out;
  ProcessResult e = run_process(
      {ZT_BIN, "estimate", "--model", "gpt2-tiny", "--layout", "engine", "--offload", "none"}, 30s);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("layout engine: what the engine allocates"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("bf16 training, stages 0-2: the design layout"), std::string::npos)
      << e.out;
  ProcessResult f = run_process({ZT_BIN, "estimate", "--model", "gpt2-tiny", "--layout", "engine",
                                 "--offload", "none", "--dtype", "fp32"},
                                30s);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_NE(f.out.find("stage 0: 16Psi; 1: 8Psi + 8Psi/N; 2: 4Psi + 12Psi/N (4Psi + 16Psi/N"), std::string::npos)
      << f.out;
  ProcessResult bad = run_process({ZT_BIN, "estimate", "--model", "gpt2", "--layout", "x"}, 30s);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("layout: expected design or engine, got 'x'"), std::string::npos)
      << bad.err;
}

TEST(ToolsCli, EstimateErrorsExitTwo) {
  ProcessResult bad = run_process({ZT_BIN, "estimate", "--params", "0"}, 30s);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--params"), std::string::npos) << bad.err;
  ProcessResult model = run_process({ZT_BIN, "estimate", "--model", "gpt9"}, 30s);
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_NE(model.err.find("gpt9"), std::string::npos) << model.err;
  ProcessResult none = run_process({ZT_BIN, "estimate"}, 30s);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--params N or --model PRESET"), std::string::npos);
  ProcessResult layer =
      run_process({ZT_BIN, "estimate", "--params", "1e9", "--largest-layer-params", "big"}, 30s);
  EXPECT_EQ(layer.exit_code, 2);
  EXPECT_NE(layer.err.find("--largest-layer-params"), std::string::npos) << layer.err;
  ProcessResult dtype =
      run_process({ZT_BIN, "estimate", "--model", "gpt2", "--dtype", "int8"}, 30s);
  EXPECT_EQ(dtype.exit_code, 2);
  EXPECT_NE(dtype.err.find("int8"), std::string::npos);
}

TEST(ToolsCli, GpusWithoutDriverSaysSoAndExitsOne) {
  ProcessResult r = run_process({ZT_BIN, "gpus", "--nvml-library", "libzt-no-such-nvml.so.1"}, 30s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("zerotrain gpus: no NVIDIA driver: libzt-no-such-nvml.so.1 not found"),
            std::string::npos)
      << r.err;
}

TEST(ToolsCli, GpusWithFakeNvmlListsDevices) {
  ProcessResult r = run_process({ZT_BIN, "gpus", "--nvml-library", ZT_FAKE_NVML}, 30s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Fake H200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pid 4242"), std::string::npos);
}

TEST(ToolsCli, HoldersKillEndsTheHolder) {
  TempDir dir;
  const std::string dev = dir.path() + "/ztdev0";
  std::ofstream(dev) << "x";
  HeldChild child({dev}, {});
  ProcessResult r = run_process(
      {ZT_BIN, "holders", "--pattern", dir.path() + "/ztdev*", "--kill", "--signal", "INT"}, 30s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(std::to_string(child.pid())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dev + " (F)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pid " + std::to_string(child.pid()) + ": sent"), std::string::npos);
  EXPECT_NE(r.out.find("ended"), std::string::npos);
  EXPECT_EQ(child.reap(), 128 + SIGINT);

  ProcessResult bad = run_process({ZT_BIN, "holders", "--signal", "NOPE"}, 30s);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'NOPE'"), std::string::npos);
}

}  // namespace
}  // namespace zerotrain::tools

// The trainer's memory report: every device and host category appears with
// its bytes, totals add up, the compact form drops zero categories and the
// host part when nothing is offloaded.
#include "train/memory_log.h"

#include <gtest/gtest.h>

#include <string>

namespace zerotrain::train {
namespace {

constexpr int64_t kMiB = 1 << 20;

engine::MemoryReport offloaded() {
  engine::MemoryReport m;
  m.model_states = {.parameters = 8 * kMiB, .buffers = 3 * kMiB};
  m.host_model_states = {.gradients = kMiB, .master_weights = kMiB, .optimizer_states = 2 * kMiB};
  m.activation_bytes = 5 * kMiB;
  m.formula_bytes = 20 * kMiB;
  m.pinned_host_bytes = 4 * kMiB;
  return m;
}

TEST(MemoryLog, ReportNamesEveryCategoryOnDeviceAndHost) {
  const std::string s = format_memory_report(offloaded(), 2);
  EXPECT_EQ(s,
            "[zerotrain] memory per rank: device 16.0 MiB (params 8.0 MiB, grads 0 B, master 0 B, "
            "optimizer 0 B, buffers 3.0 MiB, activations 5.0 MiB)\n"
            "[zerotrain] memory per rank: host 4.0 MiB (params 0 B, grads 1.0 MiB, master 1.0 MiB, "
            "optimizer 2.0 MiB, buffers 0 B), pinned 4.0 MiB; model states 15.0 MiB, stage 2 "
            "formula 20.0 MiB\n");
}

TEST(MemoryLog, CompactFormSkipsZerosAndAbsentHost) {
  EXPECT_EQ(format_memory_compact(offloaded()),
            "dev 16.0 (p 8.0 b 3.0 a 5.0) host 4.0 (g 1.0 m 1.0 o 2.0) MiB");
  engine::MemoryReport device_only = offloaded();
  device_only.host_model_states = {};
  EXPECT_EQ(format_memory_compact(device_only), "dev 16.0 (p 8.0 b 3.0 a 5.0) MiB");
  EXPECT_NE(format_memory_report(device_only, 1)
                .find("host 0 B (nothing offloaded); model states 11.0 MiB, stage 1 formula"),
            std::string::npos)
      << format_memory_report(device_only, 1);
}

}  // namespace
}  // namespace zerotrain::train

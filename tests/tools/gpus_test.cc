// `zerotrain gpus` internals: no driver, a library that is not NVML, and a
// fake NVML library with known devices and processes.
#include "tools/gpus.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace zerotrain::tools {
namespace {

TEST(Gpus, MissingLibraryIsNoDriverNotACrash) {
  StatusOr<std::vector<GpuInfo>> g = query_gpus("libzt-no-such-nvml.so.1");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(g.status().message().rfind("no NVIDIA driver: libzt-no-such-nvml.so.1 not found", 0),
            0u)
      << g.status().message();
}

TEST(Gpus, NonNvmlLibraryNamesTheMissingSymbol) {
  StatusOr<std::vector<GpuInfo>> g = query_gpus("libm.so.6");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("libm.so.6 has no entry point nvmlInit_v2"),
            std::string::npos)
      << g.status().message();
}

TEST(Gpus, DefaultLibraryOnAMachineWithoutDriver) {
  if (void* h = dlopen(kNvmlLibrary, RTLD_NOW)) {
    dlclose(h);
    GTEST_SKIP() << "an NVIDIA driver is installed here";
  }
  StatusOr<std::vector<GpuInfo>> g = query_gpus();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("no NVIDIA driver: libnvidia-ml.so.1 not found"),
            std::string::npos);
}

TEST(Gpus, FakeNvmlDevicesMemoryUtilisationAndProcesses) {
  StatusOr<std::vector<GpuInfo>> g = query_gpus(ZT_FAKE_NVML);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->size(), 4u);
  const GpuInfo& d0 = (*g)[0];
  EXPECT_EQ(d0.name, "Fake H200");
  EXPECT_EQ(d0.memory_used, 300ULL << 20);
  EXPECT_EQ(d0.memory_total, 1000ULL << 20);
  EXPECT_TRUE(d0.utilization_known);
  EXPECT_EQ(d0.utilization_gpu, 42u);
  EXPECT_EQ(d0.utilization_memory, 17u);
  // The 24-byte nvmlProcessInfo_v2_t entries decode field by field.
  ASSERT_EQ(d0.processes.size(), 2u);
  EXPECT_EQ(d0.processes[0].pid, 4242u);
  EXPECT_TRUE(d0.processes[0].used_known);
  EXPECT_EQ(d0.processes[0].used_bytes, 200ULL << 20);
  EXPECT_EQ(d0.processes[1].pid, 4343u);
  EXPECT_FALSE(d0.processes[1].used_known);
  // 20 processes: more than the first buffer; fetched again at the size NVML asks for.
  ASSERT_EQ((*g)[1].processes.size(), 20u);
  EXPECT_EQ((*g)[1].processes[19].pid, 5019u);
  EXPECT_EQ((*g)[1].processes[19].used_bytes, 20ULL << 20);
  EXPECT_FALSE((*g)[2].processes_known);
  EXPECT_TRUE((*g)[3].processes_known);
  EXPECT_TRUE((*g)[3].processes.empty());

  const std::string text = format_gpus(*g);
  EXPECT_NE(text.find("Fake H200"), std::string::npos) << text;
  EXPECT_NE(text.find("300MiB /   1000MiB   42%   17%"), std::string::npos) << text;
  EXPECT_NE(text.find("pid 4242          200MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("pid 4343          n/a"), std::string::npos) << text;
  EXPECT_NE(text.find("no compute processes"), std::string::npos) << text;
  EXPECT_NE(text.find("compute processes: n/a"), std::string::npos) << text;
  EXPECT_EQ(format_gpus({}), "no GPUs found (NVML reports 0 devices)\n");
}

}  // namespace
}  // namespace zerotrain::tools

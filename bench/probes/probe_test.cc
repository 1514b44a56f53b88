// Tests of the probes' closed forms: the peak kernels do all their work (the
// checksum equals a scalar model), FLOP counts match the kernel shapes, the
// STREAM kernels and byte counts follow STREAM, and the statistics summary.
#include <gtest/gtest.h>

#include <vector>

#include "probes/compute_probe.h"
#include "probes/cpu_info.h"
#include "probes/stats.h"
#include "probes/stream_probe.h"

namespace zerotrain::bench {
namespace {

TEST(ComputeProbe, FlopsPerIterationMatchKernelShapes) {
  EXPECT_EQ(flops_per_iteration(ComputeIsa::kAvx2Fma), 12 * 8 * 2);
  EXPECT_EQ(flops_per_iteration(ComputeIsa::kAvx512Fma), 16 * 16 * 2);
  EXPECT_EQ(flops_per_iteration(ComputeIsa::kAvx512Bf16), 16 * 16 * 2 * 2);
  EXPECT_EQ(flops_per_iteration(ComputeIsa::kAmxBf16), 4 * 16 * 16 * 32 * 2);
}

TEST(ComputeProbe, ScalarModelHasClosedForms) {
  // x = 0.5x + 1 from x0 = j: after 3 steps x = 2 + (j - 2)/8, summed over
  // 12 accumulators x 8 lanes.
  double want = 0;
  for (int j = 0; j < 12; ++j) want += 8 * (2.0 + (j - 2.0) / 8.0);
  EXPECT_EQ(compute_checksum_expected(ComputeIsa::kAvx2Fma, 3, {}), want);
  // Fixed point 2 for every lane after enough steps.
  EXPECT_EQ(compute_checksum_expected(ComputeIsa::kAvx512Fma, 1 << 20, {}), 2.0 * 16 * 16);
  // bf16 dot: +0.75 an iteration (0.5 + 0.25); AMX: +16 * 0.75 = 12.
  const KernelParams p{.init = 1.0f};
  want = 0;
  for (int j = 0; j < 16; ++j) want += 16 * (1.0 + j + 0.75 * 10);
  EXPECT_EQ(compute_checksum_expected(ComputeIsa::kAvx512Bf16, 10, p), want);
  want = 0;
  for (int t = 0; t < 4; ++t) want += 256 * (1.0 + t + 12.0 * 10);
  EXPECT_EQ(compute_checksum_expected(ComputeIsa::kAmxBf16, 10, p), want);
}

// Every usable kernel returns exactly the model's checksum.
TEST(ComputeProbe, KernelsMatchScalarModel) {
  const KernelParams params{.init = 1.0f};
  for (ComputeIsa isa : {ComputeIsa::kAvx2Fma, ComputeIsa::kAvx512Fma, ComputeIsa::kAvx512Bf16,
                         ComputeIsa::kAmxBf16}) {
    if (!isa_usable(isa).ok()) continue;
    for (int64_t iterations : {0, 1, 7, 1000}) {
      EXPECT_EQ(run_compute_kernel(isa, iterations, params),
                compute_checksum_expected(isa, iterations, params))
          << isa_name(isa) << " after " << iterations;
    }
  }
}

TEST(ComputeProbe, MeasurePeakReportsPositiveRateOrUnavailable) {
  auto r =
      measure_peak(ComputeIsa::kAvx2Fma, {.threads = 1, .repeats = 2, .seconds_per_repeat = 0.01});
  if (!detect_cpu().avx2_fma) {
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    return;
  }
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->gflops.values.size(), 2u);
  EXPECT_GT(r->gflops.worst, 0.0);
  EXPECT_LE(r->gflops.worst, r->gflops.best);
}

TEST(ComputeProbe, MeasurePeakRejectsBadOptions) {
  auto r = measure_peak(ComputeIsa::kAvx2Fma, {.threads = 0});
  if (!detect_cpu().avx2_fma) GTEST_SKIP();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(StreamProbe, BytesCountedStreamsWayAndWithWriteAllocate) {
  EXPECT_EQ(stream_bytes(StreamKernel::kCopy, 1000, false), 16000);
  EXPECT_EQ(stream_bytes(StreamKernel::kScale, 1000, false), 16000);
  EXPECT_EQ(stream_bytes(StreamKernel::kAdd, 1000, false), 24000);
  EXPECT_EQ(stream_bytes(StreamKernel::kTriad, 1000, false), 24000);
  EXPECT_EQ(stream_bytes(StreamKernel::kCopy, 1000, true), 24000);
  EXPECT_EQ(stream_bytes(StreamKernel::kTriad, 1000, true), 32000);
}

TEST(StreamProbe, ExpectedValuesFollowStreamRecurrence) {
  // One pass from a=2, b=2, c=0: c=2, b=6, c=8, a=6+24=30.
  const StreamValues v = stream_expected(1);
  EXPECT_EQ(v.a, 30.0);
  EXPECT_EQ(v.b, 6.0);
  EXPECT_EQ(v.c, 8.0);
  EXPECT_EQ(stream_expected(2).a, 30.0 * 15.0);  // a grows 15x a pass
}

TEST(StreamProbe, KernelsProduceExpectedArraysAndCheckNamesBadElement) {
  const int64_t n = 1001;
  std::vector<double> a(n, 2.0), b(n, 2.0), c(n, 0.0);
  for (int pass = 0; pass < 3; ++pass) {
    for (StreamKernel k : kStreamKernels) run_stream_kernel(k, a.data(), b.data(), c.data(), n);
  }
  EXPECT_TRUE(check_stream_arrays(a.data(), b.data(), c.data(), n, 3).ok());
  b[517] = 0.0;
  const Status s = check_stream_arrays(a.data(), b.data(), c.data(), n, 3);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("b[517]"), std::string::npos) << s.message();
}

TEST(StreamProbe, SmallMeasurementIsConsistent) {
  auto r = measure_stream({.array_bytes = 4 << 20, .repeats = 2, .threads = 1, .sweep = true});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->array_bytes, 4 << 20);
  for (const StreamKernelResult& k : r->kernels) {
    ASSERT_EQ(k.gbps.values.size(), 2u);
    // Same times, bigger byte count: ratio (words + 1) / words exactly.
    const double words =
        (k.kernel == StreamKernel::kCopy || k.kernel == StreamKernel::kScale) ? 2 : 3;
    EXPECT_DOUBLE_EQ(k.gbps_write_allocate.best / k.gbps.best, (words + 1) / words);
  }
  ASSERT_EQ(r->triad_sweep.size(), 2u);  // 1 MiB, then the full 4 MiB
  EXPECT_EQ(r->triad_sweep[0].array_bytes, 1 << 20);
  EXPECT_EQ(r->triad_sweep[1].triad_gbps, r->kernels[3].gbps.best);
}

TEST(Stats, SummarizeOrdersAndSpreads) {
  const Samples s = summarize({9.0, 10.0, 8.0, 12.0});
  EXPECT_EQ(s.best, 12.0);
  EXPECT_EQ(s.worst, 8.0);
  EXPECT_EQ(s.median, 9.5);
  EXPECT_DOUBLE_EQ(s.spread, 4.0 / 9.5);
  EXPECT_EQ(s.values.size(), 4u);
  EXPECT_EQ(summarize({}).best, 0.0);
}

TEST(CpuInfo, ReportsMachine) {
  const CpuInfo& cpu = detect_cpu();
  EXPECT_GE(cpu.logical_cpus, 1);
  EXPECT_GT(cpu.mem_total_bytes, 0);
  EXPECT_LE(cpu.mem_available_bytes, cpu.mem_total_bytes);
  if (cpu.avx512_bf16) {
    EXPECT_TRUE(cpu.avx512f);
  }
  EXPECT_GE(load_average().one, 0.0);
}

}  // namespace
}  // namespace zerotrain::bench

// STREAM kernels, validation, and the timed measurement.
#include "probes/stream_probe.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "probes/cpu_info.h"

namespace zerotrain::bench {
namespace {

struct FreeDeleter {
  void operator()(double* p) const { std::free(p); }
};
using Array = std::unique_ptr<double[], FreeDeleter>;

// Uninitialised on purpose: the first touch happens in the OpenMP init loop,
// so pages land near the threads that use them.
StatusOr<Array> allocate(int64_t n) {
  const size_t bytes = (static_cast<size_t>(n) * 8 + 4095) / 4096 * 4096;
  auto* p = static_cast<double*>(std::aligned_alloc(4096, bytes));
  if (p == nullptr)
    return internal_error("STREAM: cannot allocate " + std::to_string(bytes) + " B");
  return Array(p);
}

void initialise(double* a, double* b, double* c, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n; ++j) a[j] = 1.0, b[j] = 2.0, c[j] = 0.0;
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n; ++j) a[j] = 2.0 * a[j];
}

double time_pass(StreamKernel kernel, double* a, double* b, double* c, int64_t n) {
  const double t0 = now_seconds();
  run_stream_kernel(kernel, a, b, c, n);
  return now_seconds() - t0;
}

// Best triad GB/s over the first n elements, repeated to >= ~0.1 s of work.
double sweep_point(double* a, double* b, double* c, int64_t n) {
  double best = 0;
  const int passes = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 27) / n, 3, 400));
  for (int r = 0; r < passes; ++r) {
    const double t = time_pass(StreamKernel::kTriad, a, b, c, n);
    best = std::max(best, stream_bytes(StreamKernel::kTriad, n, false) / t / 1e9);
  }
  return best;
}

}  // namespace

const char* stream_kernel_name(StreamKernel kernel) {
  switch (kernel) {
    case StreamKernel::kCopy:
      return "copy";
    case StreamKernel::kScale:
      return "scale";
    case StreamKernel::kAdd:
      return "add";
    case StreamKernel::kTriad:
      return "triad";
  }
  return "?";
}

int64_t stream_bytes(StreamKernel kernel, int64_t n, bool write_allocate) {
  const int64_t words = (kernel == StreamKernel::kCopy || kernel == StreamKernel::kScale) ? 2 : 3;
  return 8 * n * (words + (write_allocate ? 1 : 0));
}

void run_stream_kernel(StreamKernel kernel, double* a, double* b, double* c, int64_t n) {
  const double s = kStreamScalar;
  switch (kernel) {
    case StreamKernel::kCopy:
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < n; ++j) c[j] = a[j];
      break;
    case StreamKernel::kScale:
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < n; ++j) b[j] = s * c[j];
      break;
    case StreamKernel::kAdd:
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < n; ++j) c[j] = a[j] + b[j];
      break;
    case StreamKernel::kTriad:
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < n; ++j) a[j] = b[j] + s * c[j];
      break;
  }
}

StreamValues stream_expected(int passes) {
  StreamValues v{.a = 2.0, .b = 2.0, .c = 0.0};
  for (int k = 0; k < passes; ++k) {
    v.c = v.a;
    v.b = kStreamScalar * v.c;
    v.c = v.a + v.b;
    v.a = v.b + kStreamScalar * v.c;
  }
  return v;
}

Status check_stream_arrays(const double* a, const double* b, const double* c, int64_t n,
                           int passes) {
  const StreamValues want = stream_expected(passes);
  int64_t bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
  for (int64_t j = 0; j < n; ++j) {
    if (a[j] != want.a || b[j] != want.b || c[j] != want.c) bad = std::min(bad, j);
  }
  if (bad == n) return ok_status();
  const char* name = a[bad] != want.a ? "a" : b[bad] != want.b ? "b" : "c";
  const double got = *name == 'a' ? a[bad] : *name == 'b' ? b[bad] : c[bad];
  const double expected = *name == 'a' ? want.a : *name == 'b' ? want.b : want.c;
  return corruption("STREAM: " + std::string(name) + "[" + std::to_string(bad) +
                    "] = " + std::to_string(got) + ", expected " + std::to_string(expected) +
                    " after " + std::to_string(passes) + " passes");
}

int64_t default_stream_array_bytes() {
  const CpuInfo& cpu = detect_cpu();
  int64_t bytes = std::max<int64_t>(4 * cpu.llc_bytes, int64_t{64} << 20);
  bytes = std::min(bytes, kMaxDefaultStreamArrayBytes);
  if (cpu.mem_available_bytes > 0) bytes = std::min(bytes, cpu.mem_available_bytes / 8);
  return bytes / 4096 * 4096;
}

StatusOr<StreamResult> measure_stream(const StreamOptions& options) {
  if (options.repeats < 1) return invalid_argument("STREAM: repeats must be >= 1");
  StreamResult result;
  result.array_bytes = options.array_bytes > 0 ? options.array_bytes : default_stream_array_bytes();
  const int64_t n = result.array_bytes / 8;
  if (options.threads > 0) omp_set_num_threads(options.threads);
  result.threads = omp_get_max_threads();
  ZT_ASSIGN_OR_RETURN(Array a, allocate(n));
  ZT_ASSIGN_OR_RETURN(Array b, allocate(n));
  ZT_ASSIGN_OR_RETURN(Array c, allocate(n));
  initialise(a.get(), b.get(), c.get(), n);
  std::array<std::vector<double>, 4> seconds;
  for (int r = 0; r < options.repeats; ++r) {
    for (size_t k = 0; k < kStreamKernels.size(); ++k) {
      seconds[k].push_back(time_pass(kStreamKernels[k], a.get(), b.get(), c.get(), n));
    }
  }
  ZT_RETURN_IF_ERROR(check_stream_arrays(a.get(), b.get(), c.get(), n, options.repeats));
  for (size_t k = 0; k < kStreamKernels.size(); ++k) {
    std::vector<double> plain, allocating;
    for (double t : seconds[k]) {
      plain.push_back(stream_bytes(kStreamKernels[k], n, false) / t / 1e9);
      allocating.push_back(stream_bytes(kStreamKernels[k], n, true) / t / 1e9);
    }
    result.kernels[k] = {kStreamKernels[k], summarize(plain), summarize(allocating)};
  }
  if (options.sweep) {
    for (int64_t bytes = int64_t{1} << 20; bytes < result.array_bytes; bytes *= 4) {
      result.triad_sweep.push_back({bytes, sweep_point(a.get(), b.get(), c.get(), bytes / 8)});
    }
    result.triad_sweep.push_back({result.array_bytes, result.kernels[3].gbps.best});
  }
  return result;
}

}  // namespace zerotrain::bench

// STREAM memory-bandwidth probe (McCalpin's copy/scale/add/triad on double
// arrays, OpenMP static schedule, first-touch initialisation by the same
// threads). Each array defaults to 4x the last-level cache, as STREAM's
// rules ask, but at most 512 MiB and 1/8 of available memory: a VM reports
// the host's LLC (480 MiB here) while its own share is far smaller (the
// triad sweep reaches DRAM speed at 64 MiB arrays), and 3 x 2 GiB arrays
// cost ~30 s of page faults on a loaded 2-core machine. Bytes are counted STREAM's
// way (8 B for each word read or written: copy/scale 16 B an element,
// add/triad 24 B) and also with write-allocate (+8 B: the line read for each
// store without non-temporal hints). A triad sweep over smaller arrays shows
// where the caches end. Values are checked against STREAM's closed form
// after the timed passes.
//
//   ZT_ASSIGN_OR_RETURN(StreamResult r, measure_stream({.repeats = 5}));
//   double triad = r.kernels[3].gbps.best;  // GB/s (1e9 B/s), STREAM counting
//
// Thread-safety: measure_stream runs its own OpenMP team; one call at a time.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "probes/stats.h"

namespace zerotrain::bench {

enum class StreamKernel { kCopy, kScale, kAdd, kTriad };
inline constexpr std::array<StreamKernel, 4> kStreamKernels = {
    StreamKernel::kCopy, StreamKernel::kScale, StreamKernel::kAdd, StreamKernel::kTriad};
inline constexpr double kStreamScalar = 3.0;

const char* stream_kernel_name(StreamKernel kernel);  // "copy", "scale", "add", "triad"

// Bytes one pass over n elements moves: STREAM's count, or with the
// write-allocate read of the destination added.
int64_t stream_bytes(StreamKernel kernel, int64_t n, bool write_allocate);

// One pass, OpenMP over [0, n): copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c.
void run_stream_kernel(StreamKernel kernel, double* a, double* b, double* c, int64_t n);

// Values every element holds after STREAM's start (a=1, b=2, c=0, a*=2) and
// `passes` rounds of copy, scale, add, triad.
struct StreamValues {
  double a = 0, b = 0, c = 0;
};
StreamValues stream_expected(int passes);

// Corruption naming the array and first bad index if any element differs.
Status check_stream_arrays(const double* a, const double* b, const double* c, int64_t n,
                           int passes);

struct StreamOptions {
  int64_t array_bytes = 0;  // per array; 0 = default_stream_array_bytes()
  int repeats = 5;          // timed rounds of all four kernels
  int threads = 0;          // 0 = OpenMP default
  bool sweep = true;        // also time triad at smaller sizes
};

inline constexpr int64_t kMaxDefaultStreamArrayBytes = int64_t{512} << 20;

// max(4 x LLC, 64 MiB), at most kMaxDefaultStreamArrayBytes and 1/8 of
// available memory, a multiple of 4 KiB.
int64_t default_stream_array_bytes();

struct StreamKernelResult {
  StreamKernel kernel = StreamKernel::kCopy;
  Samples gbps;                 // STREAM byte count
  Samples gbps_write_allocate;  // same times, write-allocate byte count
};

struct SweepPoint {
  int64_t array_bytes = 0;
  double triad_gbps = 0;  // best, STREAM count
};

struct StreamResult {
  int64_t array_bytes = 0;
  int threads = 0;
  std::array<StreamKernelResult, 4> kernels;
  std::vector<SweepPoint> triad_sweep;
};

StatusOr<StreamResult> measure_stream(const StreamOptions& options);

}  // namespace zerotrain::bench

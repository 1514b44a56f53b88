// zt_comm_bench: nccl-tests-style bandwidth of the Gloo collectives
// (allreduce, reduce_scatter, allgather; fp32 sum) over a size sweep. Every
// iteration refills the inputs with a rank- and iteration-dependent pattern
// and checks every output element (nccl-tests' -c), outside the timed
// region; the communicator's byte counters are held to the ring formulas
// (bus_math.h) exactly. Time per iteration is the slowest rank's; the table
// reports the mean (nccl-tests' convention) and the median over iterations
// (the machine is shared: a few preempted iterations dominate the mean),
// algbw = size / time and busbw = algbw x bus_factor; the JSON adds the
// best. Rank 0 prints the table and one JSON line (also --json FILE).
//
//   zerotrain run --num_gpus 2 build/bin/zt_comm_bench
//   zerotrain run --num_gpus 2 build/bin/zt_comm_bench --ops allreduce --max_bytes 64M
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "comm/bus_math.h"
#include "comm/gloo/gloo_communicator.h"
#include "core/log.h"
#include "probes/stats.h"

namespace zb = zerotrain::bench;
namespace zc = zerotrain::comm;
using nlohmann::json;
using zerotrain::Status;

namespace {

struct Options {
  std::vector<std::string> ops = {"allreduce", "reduce_scatter", "allgather"};
  int64_t min_bytes = 4 << 10, max_bytes = int64_t{256} << 20, factor = 4;
  int warmup = 1, min_iters = 3, max_iters = 100;
  double seconds = 0.25;  // timed seconds per size (at least min_iters)
  std::string json_path;
};

struct Buffers {
  std::vector<float> in, out;
};

// Sizes the buffers and fills the inputs for iteration `it` (untimed).
void fill(zb::BenchOp op, int64_t count, int rank, int n, int it, Buffers& b) {
  const int64_t chunk = count / n;
  if (op == zb::BenchOp::kAllreduce) {
    b.in.resize(count);
    for (int64_t g = 0; g < count; ++g) b.in[g] = zb::reduce_input_value(rank, g, it);
  } else if (op == zb::BenchOp::kReduceScatter) {
    b.in.resize(count), b.out.assign(chunk, -1.0f);
    for (int64_t g = 0; g < count; ++g) b.in[g] = zb::reduce_input_value(rank, g, it);
  } else {
    b.in.resize(chunk), b.out.assign(count, -1.0f);
    for (int64_t j = 0; j < chunk; ++j) b.in[j] = zb::gather_value(rank, rank * chunk + j, it);
  }
}

Status run_op(zc::Communicator& comm, zb::BenchOp op, Buffers& b) {
  switch (op) {
    case zb::BenchOp::kAllreduce:
      return comm.allreduce(std::span<float>(b.in), zc::ReduceOp::kSum);
    case zb::BenchOp::kReduceScatter:
      return comm.reduce_scatter(std::span<const float>(b.in), std::span<float>(b.out),
                                 zc::ReduceOp::kSum);
    case zb::BenchOp::kAllgather:
      return comm.allgather(std::span<const float>(b.in), std::span<float>(b.out));
  }
  return zerotrain::internal_error("unknown op");
}

// Number of wrong elements; the first is described in `first`.
int64_t check(zb::BenchOp op, int64_t count, int rank, int n, int it, const Buffers& b,
              std::string& first) {
  const int64_t chunk = count / n;
  const std::vector<float>& got = op == zb::BenchOp::kAllreduce ? b.in : b.out;
  int64_t bad = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i) {
    float want;
    if (op == zb::BenchOp::kAllreduce)
      want = zb::reduce_expected_value(n, i, it);
    else if (op == zb::BenchOp::kReduceScatter)
      want = zb::reduce_expected_value(n, rank * chunk + i, it);
    else
      want = zb::gather_value(i / chunk, i, it);
    if (got[i] != want && bad++ == 0) {
      first = "element " + std::to_string(i) + " = " + std::to_string(got[i]) + ", expected " +
              std::to_string(want);
    }
  }
  return bad;
}

zc::OpType op_type(zb::BenchOp op) {
  return op == zb::BenchOp::kAllreduce       ? zc::OpType::kAllreduce
         : op == zb::BenchOp::kReduceScatter ? zc::OpType::kReduceScatter
                                             : zc::OpType::kAllgather;
}

// Adds the counter delta of one op call to `sum`.
void add_delta(const zc::OpCounters& before, const zc::OpCounters& after, zc::OpCounters& sum) {
  sum.calls += after.calls - before.calls;
  sum.bytes_sent += after.bytes_sent - before.bytes_sent;
  sum.bytes_received += after.bytes_received - before.bytes_received;
}

// Slowest rank's time per iteration, and wrong elements over all ranks.
Status agree(zc::Communicator& comm, std::vector<double>& times, int64_t& errors) {
  std::vector<float> t(times.begin(), times.end()), e = {static_cast<float>(errors)};
  ZT_RETURN_IF_ERROR(comm.allreduce(std::span<float>(t), zc::ReduceOp::kMax));
  ZT_RETURN_IF_ERROR(comm.allreduce(std::span<float>(e), zc::ReduceOp::kSum));
  times.assign(t.begin(), t.end());
  errors = static_cast<int64_t>(e[0]);
  return zerotrain::ok_status();
}

// One size of one op: warmup, calibrated timed iterations, checks, counters.
zerotrain::StatusOr<json> bench_size(zc::Communicator& comm, zb::BenchOp op, int64_t bytes,
                                     const Options& o) {
  const int rank = comm.rank(), n = comm.world_size();
  const int64_t count = zb::bench_count(op, bytes, n, sizeof(float));
  const std::string what =
      std::string(zb::bench_op_name(op)) + " of " + std::to_string(count * sizeof(float)) + " B";
  Buffers b;
  zc::OpCounters moved;
  std::vector<double> times;
  int64_t errors = 0;
  std::string first_error;
  int iters = o.warmup + o.min_iters;
  for (int it = 0; it < iters; ++it) {
    fill(op, count, rank, n, it, b);
    ZT_RETURN_IF_ERROR(comm.barrier());
    const zc::OpCounters before = comm.counters().op(op_type(op));
    const double t0 = zb::now_seconds();
    ZT_RETURN_IF_ERROR(run_op(comm, op, b));
    const double t = zb::now_seconds() - t0;
    add_delta(before, comm.counters().op(op_type(op)), moved);
    errors += check(op, count, rank, n, it, b, first_error);
    if (it >= o.warmup) times.push_back(t);
    if (it == o.warmup) {  // the first timed iteration sets the count; ranks take the minimum
      std::vector<float> want = {static_cast<float>(o.seconds / std::max(t, 1e-6))};
      ZT_RETURN_IF_ERROR(comm.allreduce(std::span<float>(want), zc::ReduceOp::kMin));
      iters = o.warmup + std::clamp(static_cast<int>(want[0]), o.min_iters, o.max_iters);
    }
  }
  if (errors > 0) {
    return zerotrain::corruption(what + ": " + std::to_string(errors) + " wrong elements, first " +
                                 first_error);
  }
  const zb::WireBytes want = zb::expected_wire_bytes(op, count, sizeof(float), n, rank);
  ZT_RETURN_IF_ERROR(zb::check_wire_bytes(
      what, {moved.calls, moved.bytes_sent, moved.bytes_received}, iters, want));
  ZT_RETURN_IF_ERROR(agree(comm, times, errors));
  if (errors > 0) return zerotrain::corruption(what + ": wrong elements on another rank");
  double sum = 0;
  for (double t : times) sum += t;
  // summarize() ranks rates; times rank the other way, so worst is the fastest.
  const zb::Samples order = zb::summarize(times);
  const double mean = sum / times.size(), median = order.median, best = order.worst;
  const double size = static_cast<double>(count) * sizeof(float), factor = zb::bus_factor(op, n);
  return json{{"op", zb::bench_op_name(op)},
              {"size", static_cast<int64_t>(size)},
              {"count", count},
              {"iters", times.size()},
              {"time_us", mean * 1e6},
              {"median_time_us", median * 1e6},
              {"best_time_us", best * 1e6},
              {"algbw_gbps", size / mean / 1e9},
              {"busbw_gbps", size / mean / 1e9 * factor},
              {"median_busbw_gbps", size / median / 1e9 * factor},
              {"best_busbw_gbps", size / best / 1e9 * factor},
              {"bytes_sent_per_iter", want.sent},
              {"checked", true},
              {"bytes_ok", true}};
}

void print_header(int n) {
  std::printf("# zt_comm_bench: %d ranks, fp32, sum; every iteration checked; counters = formula\n",
              n);
  std::printf("# %-14s %12s %11s %6s %11s %11s %11s %11s %11s\n", "op", "size(B)", "count", "iters",
              "time(us)", "median(us)", "algbw(GB/s)", "busbw(GB/s)", "med_busbw");
}

void print_row(const json& r) {
  std::printf("  %-14s %12lld %11lld %6d %11.1f %11.1f %11.3f %11.3f %11.3f\n",
              r["op"].get<std::string>().c_str(), r["size"].get<long long>(),
              r["count"].get<long long>(), r["iters"].get<int>(), r["time_us"].get<double>(),
              r["median_time_us"].get<double>(), r["algbw_gbps"].get<double>(),
              r["busbw_gbps"].get<double>(), r["median_busbw_gbps"].get<double>());
  std::fflush(stdout);
}

zerotrain::StatusOr<json> run(const Options& o) {
  ZT_ASSIGN_OR_RETURN(zc::CommOptions options, zc::comm_options_from_env());
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<zc::Communicator> comm,
                      zc::create_gloo_communicator(options));
  const bool root = comm->rank() == 0;
  if (root) print_header(comm->world_size());
  json results = json::array(), peak = json::object();
  for (const std::string& name : o.ops) {
    const zb::BenchOp op = name == "allreduce"        ? zb::BenchOp::kAllreduce
                           : name == "reduce_scatter" ? zb::BenchOp::kReduceScatter
                                                      : zb::BenchOp::kAllgather;
    double best = 0;
    for (int64_t bytes : zb::size_sweep(o.min_bytes, o.max_bytes, o.factor)) {
      ZT_ASSIGN_OR_RETURN(json r, bench_size(*comm, op, bytes, o));
      if (root) print_row(r);
      best = std::max(best, r["busbw_gbps"].get<double>());
      results.push_back(std::move(r));
    }
    peak[name] = best;
  }
  return json{{"bench", "zt_comm_bench"},         {"rank", comm->rank()},
              {"world_size", comm->world_size()}, {"dtype", "fp32"},
              {"peak_busbw_gbps", peak},          {"results", results}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "zt_comm_bench: allreduce/reduce_scatter/allgather bandwidth (run under zerotrain run)"};
  Options o;
  app.add_option("--ops", o.ops, "collectives to time")
      ->check(CLI::IsMember({"allreduce", "reduce_scatter", "allgather"}))
      ->delimiter(',');
  app.add_option("--min_bytes", o.min_bytes, "smallest size")->transform(CLI::AsSizeValue(false));
  app.add_option("--max_bytes", o.max_bytes, "largest size")->transform(CLI::AsSizeValue(false));
  app.add_option("--factor", o.factor, "size multiplier between rows")->check(CLI::Range(2, 1024));
  app.add_option("--warmup", o.warmup, "untimed iterations per size")->check(CLI::Range(0, 100));
  app.add_option("--min_iters", o.min_iters, "fewest timed iterations")
      ->check(CLI::Range(1, 100000));
  app.add_option("--max_iters", o.max_iters, "most timed iterations")->check(CLI::Range(1, 100000));
  app.add_option("--seconds", o.seconds, "target timed seconds per size")
      ->check(CLI::Range(0.0, 60.0));
  app.add_option("--json", o.json_path, "also write rank 0's JSON here");
  CLI11_PARSE(app, argc, argv);
  if (o.max_iters < o.min_iters) o.max_iters = o.min_iters;

  zerotrain::StatusOr<json> doc = run(o);
  if (!doc.ok()) {
    zerotrain::log::error("zt_comm_bench: ", doc.status().to_string());
    return 1;
  }
  if ((*doc)["rank"].get<int>() == 0) {
    const std::string line = doc->dump();
    std::printf("%s\n", line.c_str());
    if (!o.json_path.empty()) std::ofstream(o.json_path) << line << "\n";
  }
  return 0;
}

// zt_probe: measures the machine's ceilings and prints them as one JSON
// document — fp32 FMA peak (AVX2 and AVX-512, one core and all cores), bf16
// dot-product peak (AVX512_BF16, AMX-BF16 when Linux grants tile data), and
// STREAM bandwidth. bench/RESULTS.md divides GEMM, MFU and AdamW numbers by
// these. Compute peaks are reported by thread CPU time ("*_gflops", the
// reference) and by wall time ("*_gflops_wall"); on a shared machine the
// wall figure drops whenever another process takes the core, the CPU-time
// one does not.
//
//   zt_probe                         # everything, ~20 s on 2 cores
//   zt_probe --skip stream --repeats 3 --seconds 0.1
//   zt_probe --stream_mib 512        # per-array size instead of 4x LLC
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "probes/compute_probe.h"
#include "probes/cpu_info.h"
#include "probes/stream_probe.h"

namespace zb = zerotrain::bench;
using nlohmann::json;

namespace {

json samples_json(const zb::Samples& s) {
  return {{"best", s.best},
          {"median", s.median},
          {"worst", s.worst},
          {"spread", s.spread},
          {"values", s.values}};
}

json machine_json() {
  const zb::CpuInfo& cpu = zb::detect_cpu();
  const zb::LoadAverage load = zb::load_average();
  return {{"model", cpu.model},
          {"logical_cpus", cpu.logical_cpus},
          {"omp_max_threads", omp_get_max_threads()},
          {"l2_bytes", cpu.l2_bytes},
          {"llc_bytes", cpu.llc_bytes},
          {"mem_total_bytes", cpu.mem_total_bytes},
          {"mem_available_bytes", cpu.mem_available_bytes},
          {"load_average", {load.one, load.five, load.fifteen}},
          {"features",
           {{"avx2_fma", cpu.avx2_fma},
            {"avx512f", cpu.avx512f},
            {"avx512_bf16", cpu.avx512_bf16},
            {"amx_bf16", cpu.amx_bf16}}}};
}

// One ISA: one core, then all threads. {"available": false, "reason"} if not usable.
json compute_json(zb::ComputeIsa isa, int threads, int repeats, double seconds) {
  if (zerotrain::Status s = zb::isa_usable(isa); !s.ok()) {
    return {{"available", false}, {"reason", s.message()}};
  }
  json out = {{"available", true}, {"flops_per_iteration", zb::flops_per_iteration(isa)}};
  for (int t : {1, threads}) {
    auto r =
        zb::measure_peak(isa, {.threads = t, .repeats = repeats, .seconds_per_repeat = seconds});
    if (!r.ok()) return {{"available", false}, {"reason", r.status().to_string()}};
    json j = samples_json(r->gflops);
    j["threads"] = t;
    j["iterations"] = r->iterations;
    j["per_core_best"] = r->gflops.best / t;
    json wall = samples_json(r->gflops_wall);
    const std::string key = t == 1 ? "one_core_gflops" : "all_cores_gflops";
    out[key] = j;
    out[key + "_wall"] = wall;
    if (threads == 1) {
      out["all_cores_gflops"] = j;
      out["all_cores_gflops_wall"] = wall;
      break;
    }
  }
  return out;
}

// The headline peak of a family: the fastest available ISA's numbers.
json headline(const json& compute, std::initializer_list<const char*> isas) {
  json best = {{"isa", nullptr}};
  for (const char* isa : isas) {
    const json& c = compute[isa];
    if (!c["available"].get<bool>()) continue;
    const double one = c["one_core_gflops"]["best"].get<double>();
    if (best["isa"].is_null() || one > best["one_core_gflops"].get<double>()) {
      best = {{"isa", isa},
              {"one_core_gflops", one},
              {"all_cores_gflops", c["all_cores_gflops"]["best"]},
              {"one_core_gflops_wall", c["one_core_gflops_wall"]["best"]},
              {"all_cores_gflops_wall", c["all_cores_gflops_wall"]["best"]},
              {"threads", c["all_cores_gflops"]["threads"]}};
    }
  }
  return best;
}

json stream_json(int64_t array_mib, int repeats) {
  auto r = zb::measure_stream({.array_bytes = array_mib << 20, .repeats = repeats});
  if (!r.ok()) return {{"error", r.status().to_string()}};
  json out = {{"array_bytes", r->array_bytes}, {"threads", r->threads}, {"repeats", repeats}};
  for (const zb::StreamKernelResult& k : r->kernels) {
    out[zb::stream_kernel_name(k.kernel)] = {
        {"gbps", samples_json(k.gbps)},
        {"gbps_write_allocate", samples_json(k.gbps_write_allocate)}};
  }
  json sweep = json::array();
  for (const zb::SweepPoint& p : r->triad_sweep) {
    sweep.push_back({{"array_bytes", p.array_bytes}, {"triad_gbps", p.triad_gbps}});
  }
  out["triad_sweep"] = sweep;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zt_probe: fp32/bf16 compute peaks and STREAM bandwidth, as JSON"};
  int repeats = 10, threads = omp_get_max_threads();
  double seconds = 0.1;
  int64_t stream_mib = 0;
  int stream_repeats = 5;
  std::set<std::string> skip;
  app.add_option("--repeats", repeats, "timed repeats of each compute probe")
      ->check(CLI::Range(1, 100));
  app.add_option("--seconds", seconds, "seconds per compute repeat")
      ->check(CLI::Range(0.001, 10.0));
  app.add_option("--stream_repeats", stream_repeats, "timed rounds of the STREAM kernels")
      ->check(CLI::Range(1, 100));
  app.add_option("--threads", threads, "threads for the all-cores runs")
      ->check(CLI::Range(1, 1024));
  app.add_option("--stream_mib", stream_mib,
                 "MiB per STREAM array (0: max(4x LLC, 64), <= 1/8 RAM)");
  app.add_option("--skip", skip, "probes to skip: fp32, bf16, amx, stream")
      ->check(CLI::IsMember({"fp32", "bf16", "amx", "stream"}));
  CLI11_PARSE(app, argc, argv);

  json doc = {{"machine", machine_json()}};
  json compute = json::object();
  const auto add = [&](zb::ComputeIsa isa, const char* family) {
    compute[zb::isa_name(isa)] = skip.count(family)
                                     ? json{{"available", false}, {"reason", "skipped"}}
                                     : compute_json(isa, threads, repeats, seconds);
  };
  add(zb::ComputeIsa::kAvx2Fma, "fp32");
  add(zb::ComputeIsa::kAvx512Fma, "fp32");
  add(zb::ComputeIsa::kAvx512Bf16, "bf16");
  add(zb::ComputeIsa::kAmxBf16, "amx");
  doc["compute"] = compute;
  doc["fp32_fma_peak"] = headline(compute, {"avx2_fma", "avx512_fma"});
  doc["bf16_dot_peak"] = headline(compute, {"avx512_bf16"});
  doc["bf16_amx_peak"] = headline(compute, {"amx_bf16"});
  if (!skip.count("stream")) doc["stream"] = stream_json(stream_mib, stream_repeats);
  std::printf("%s\n", doc.dump(2).c_str());
  return doc.contains("stream") && doc["stream"].contains("error") ? 1 : 0;
}

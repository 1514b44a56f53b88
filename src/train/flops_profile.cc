// DeepSpeed's flops profiler report (see flops_profile.h).
#include "train/flops_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/atomic_file.h"
#include "train/monitor.h"

namespace zerotrain::train {
namespace {

std::string round2(double x) { return python_float(std::round(x * 100.0) / 100.0); }

// value / 10^(3k) with the largest k whose quotient is >= 1, as DeepSpeed's
// `num // 10**k > 0` ladders; `suffixes` from 10^0 up.
std::string scaled(double n, const std::vector<std::string>& suffixes) {
  for (size_t k = suffixes.size(); k-- > 1;) {
    const double unit = std::pow(10.0, 3.0 * static_cast<double>(k));
    if (std::floor(n / unit) > 0) return round2(n / unit) + " " + suffixes[k];
  }
  // Below the first step DeepSpeed prints str(n): an integral count without ".0".
  const std::string small = n == std::floor(n) && std::fabs(n) < 1e15
                                ? std::to_string(static_cast<int64_t>(n))
                                : round2(n);
  return small + (suffixes[0].empty() ? "" : " " + suffixes[0]);
}

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string summary_line(const std::string& label, const std::string& value) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-60s  %-8s\n", label.c_str(), value.c_str());
  return buf;
}

// One module's fields in DeepSpeed's detailed order.
std::string fields(double params, double macs, double seconds, double total_params,
                   double total_macs, double total_seconds) {
  return params_to_string(params) + ", " + percent(params, total_params) + " Params, " +
         macs_to_string(macs) + ", " + percent(macs, total_macs) + " MACs, " +
         duration_to_string(seconds) + ", " + percent(seconds, total_seconds) + " latency, " +
         flops_to_string(seconds > 0 ? 2.0 * macs / seconds : 0.0);
}

// "{'GPT2Block': '85.05 M', ...}": the top `k` module types of a depth by
// `value`, summed over the modules of each type, largest first.
std::string top_dict(const std::map<std::string, double>& by_type, int64_t k,
                     std::string (*fmt)(double)) {
  std::vector<std::pair<std::string, double>> v(by_type.begin(), by_type.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out = "{";
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < k; ++i)
    out += (i ? ", '" : "'") + v[i].first + "': '" + fmt(v[i].second) + "'";
  return out + "}";
}

}  // namespace

std::string params_to_string(double n) { return scaled(n, {"", "K", "M", "B"}); }
std::string macs_to_string(double n) {
  return scaled(n, {"MACs", "KMACs", "MMACs", "GMACs", "TMACs"});
}
std::string flops_to_string(double f) {
  return scaled(f, {"FLOPS", "KFLOPS", "MFLOPS", "GFLOPS", "TFLOPS"});
}
std::string duration_to_string(double s) {
  if (s >= 1) return round2(s) + " s";
  if (s * 1e3 >= 1) return round2(s * 1e3) + " ms";
  return round2(s * 1e6) + " us";
}

std::string format_flops_profile(const FlopsProfile& p, const config::FlopsProfilerConfig& cfg) {
  double params = 0, macs = 0;
  for (const model::StageCost& s : p.cost.stages) {
    params += static_cast<double>(s.params);
    macs += static_cast<double>(s.macs);
  }
  const double flops = 2.0 * macs;
  const double bwd_factor = 2.0 + cfg.recompute_fwd_factor;
  const double iter_s = p.fwd_s + p.bwd_s + p.step_s;
  char g[32];
  auto factor = [&](double f) {
    std::snprintf(g, sizeof(g), "%g", f);
    return std::string(g);
  };
  std::string out =
      "\n-------------------------- DeepSpeed Flops Profiler --------------------------\n";
  out += "Profile Summary at step " + std::to_string(p.step) + ":\n";
  out +=
      "Notations:\n"
      "data parallel size (dp_size), model parallel size(mp_size),\n"
      "number of parameters (params), number of multiply-accumulate operations(MACs),\n"
      "number of floating-point operations (flops), floating-point operations per second "
      "(FLOPS),\n"
      "fwd latency (forward propagation latency), bwd latency (backward propagation latency),\n"
      "step (weights update latency), iter latency (sum of fwd, bwd and step latency)\n\n";
  out += summary_line("world size: ", std::to_string(p.world_size));
  out += summary_line("data parallel size: ", std::to_string(p.world_size));
  out += summary_line("model parallel size: ", "1");
  out += summary_line("batch size per GPU: ", std::to_string(p.micro_batch));
  out += summary_line("params per GPU: ", params_to_string(params));
  out += summary_line("params of model = params per GPU * mp_size: ", params_to_string(params));
  out += summary_line("fwd MACs per GPU: ", macs_to_string(macs));
  out += summary_line("fwd flops per GPU: ", scaled(flops, {"", "K", "M", "G", "T"}));
  out += summary_line("fwd flops of model = fwd flops per GPU * mp_size: ",
                      scaled(flops, {"", "K", "M", "G", "T"}));
  out += summary_line("fwd latency: ", duration_to_string(p.fwd_s));
  out += summary_line("fwd FLOPS per GPU = fwd flops per GPU / fwd latency: ",
                      flops_to_string(flops / p.fwd_s));
  out += summary_line("bwd latency: ", duration_to_string(p.bwd_s));
  out += summary_line(
      "bwd FLOPS per GPU = " + factor(bwd_factor) + " * fwd flops per GPU / bwd latency: ",
      flops_to_string(bwd_factor * flops / p.bwd_s));
  out += summary_line("fwd+bwd FLOPS per GPU = " + factor(bwd_factor + 1) +
                          " * fwd flops per GPU / (fwd+bwd latency): ",
                      flops_to_string((bwd_factor + 1) * flops / (p.fwd_s + p.bwd_s)));
  out += summary_line("step latency: ", duration_to_string(p.step_s));
  out += summary_line("iter latency: ", duration_to_string(iter_s));
  out += summary_line(
      "FLOPS per GPU = " + factor(bwd_factor + 1) + " * fwd flops per GPU / iter latency: ",
      flops_to_string((bwd_factor + 1) * flops / iter_s));
  char sps[32];
  std::snprintf(sps, sizeof(sps), "%-8.2f",
                static_cast<double>(p.micro_batch * p.world_size) / iter_s);
  out += summary_line("samples/second: ", sps);
  // zerotrain's additions: the model's formula, exact, and the MFU it gives.
  out += summary_line("train flops per GPU = (6N + 12LCT) per token * tokens: ",
                      scaled(static_cast<double>(p.train_flops), {"", "K", "M", "G", "T"}) + " (" +
                          std::to_string(p.train_flops) + ")");
  const double achieved = static_cast<double>(p.train_flops) / iter_s;
  out += summary_line("model FLOPS per GPU = train flops per GPU / iter latency: ",
                      flops_to_string(achieved));
  out += summary_line("MFU = model FLOPS per GPU / peak: ",
                      p.peak_flops > 0
                          ? percent(achieved, p.peak_flops) + " of " + flops_to_string(p.peak_flops)
                          : std::string("unknown (set ZEROTRAIN_PEAK_TFLOPS)"));

  const bool depth1 = cfg.module_depth != 0;
  out +=
      "\n----------------------------- Aggregated Profile per GPU -----------------------------\n";
  out += "Top " + std::to_string(cfg.top_modules) +
         " modules in terms of params, MACs or fwd latency at different model depths:\n";
  auto depth_block = [&](int depth, const std::map<std::string, double>& pr,
                         const std::map<std::string, double>& mc,
                         const std::map<std::string, double>& lat) {
    out += "depth " + std::to_string(depth) + ":\n";
    out += "    params      - " + top_dict(pr, cfg.top_modules, params_to_string) + "\n";
    out += "    MACs        - " + top_dict(mc, cfg.top_modules, macs_to_string) + "\n";
    out += "    fwd latency - " + top_dict(lat, cfg.top_modules, duration_to_string) + "\n";
  };
  depth_block(0, {{p.cost.type, params}}, {{p.cost.type, macs}}, {{p.cost.type, p.fwd_s}});
  if (depth1) {
    std::map<std::string, double> pr, mc, lat;
    for (size_t i = 0; i < p.cost.stages.size(); ++i) {
      const model::StageCost& s = p.cost.stages[i];
      pr[s.type] += static_cast<double>(s.params);
      mc[s.type] += static_cast<double>(s.macs);
      lat[s.type] += i < p.stage_fwd_s.size() ? p.stage_fwd_s[i] : 0.0;
    }
    depth_block(1, pr, mc, lat);
  }

  if (cfg.detailed) {
    out +=
        "\n------------------------------ Detailed Profile per GPU "
        "------------------------------\n";
    out +=
        "Each module profile is listed after its name in the following order: \n"
        "params, percentage of total params, MACs, percentage of total MACs, fwd latency, "
        "percentage of total fwd latency, fwd FLOPS\n\n"
        "Note: 1. zerotrain's modules are its pipeline stages (embeddings, each block, the "
        "head); the model's latency also holds the ZeRO hooks between them, so the stages "
        "need not add up to it.\n"
        "2. MACs count every GEMM and attention's two matmuls over the full sequence; "
        "element-wise work is not counted.\n\n";
    out += p.cost.type + "(\n  " + fields(params, macs, p.fwd_s, params, macs, p.fwd_s) + ", \n";
    if (depth1) {
      for (size_t i = 0; i < p.cost.stages.size(); ++i) {
        const model::StageCost& s = p.cost.stages[i];
        out += "  (" + s.name + "): " + s.type + "(" +
               fields(static_cast<double>(s.params), static_cast<double>(s.macs),
                      i < p.stage_fwd_s.size() ? p.stage_fwd_s[i] : 0.0, params, macs, p.fwd_s) +
               ")\n";
      }
    }
    out += ")\n";
  }
  out += "------------------------------------------------------------------------------\n";
  return out;
}

Status emit_flops_profile(const FlopsProfile& p, const config::FlopsProfilerConfig& cfg,
                          int64_t step, std::ostream& log) {
  const std::string text = format_flops_profile(p, cfg);
  if (!cfg.output_file) {
    log << text << std::flush;
    return ok_status();
  }
  ZT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::create(*cfg.output_file));
  ZT_RETURN_IF_ERROR(f.write(text.data(), text.size()));
  ZT_RETURN_IF_ERROR(f.commit());
  log << "[zerotrain] flops profile of step " << step << " written to " << *cfg.output_file << "\n";
  return ok_status();
}

}  // namespace zerotrain::train

// The training-step (MFU) section of RESULTS.md (train_report.h).
#include "report/train_report.h"

#include <map>
#include <sstream>
#include <vector>

#include "report/format.h"
#include "report/report.h"

namespace zerotrain::bench {
namespace {

using nlohmann::json;
using report_format::fmt;
using report_format::num;
using report_format::pct;
using report_format::str;

constexpr double kMfuTarget = 0.70;  // docs/architecture.md

// The probe's headline peak object ("fp32_fma_peak", ...), or null.
const json& peak(const json& probe, const char* key) {
  static const json kNone;
  return probe.is_object() && probe.contains(key) && probe[key].is_object() ? probe[key] : kNone;
}

std::string cores_text(const json& c) {
  return fmt("%.0f × %.0f", num(c, "ranks"), num(c, "threads"));
}

std::string case_text(const json& c) {
  return fmt("%s %s, %s, B %.0f × T %.0f", str(c, "model").c_str(), str(c, "precision").c_str(),
             cores_text(c).c_str(), num(c, "B"), num(c, "T"));
}

bool has_cases(const json& train) { return train.is_array() && !train.empty(); }

}  // namespace

Mfu train_mfu(const json& c, const json& probe) {
  Mfu m;
  m.flops = num(c.is_object() ? c["model_flops"] : json(), "median");
  const bool bf16 = str(c, "precision") == "bf16";
  const json& ref = peak(probe, bf16 ? "bf16_dot_peak" : "fp32_fma_peak");
  m.ref_isa = str(ref, "isa", "none");
  m.ref_peak = 1e9 * num(ref, "all_cores_gflops");
  m.ref = m.ref_peak > 0 ? m.flops / m.ref_peak : 0;
  if (bf16) {
    m.amx_peak = 1e9 * num(peak(probe, "bf16_amx_peak"), "all_cores_gflops");
    m.amx = m.amx_peak > 0 ? m.flops / m.amx_peak : 0;
  }
  return m;
}

std::string train_section(const json& train, const json& probe) {
  std::ostringstream o;
  o << "## Training step (MFU, zt_train_bench)\n\n";
  if (!has_cases(train)) return o.str() + "(zt_train_bench did not run)\n\n";
  const json& st = probe.is_object() && probe.contains("stream") ? probe["stream"] : json();
  const double triad = st.is_object() ? num(st["triad"]["gbps"], "best") : 0;
  o << "The real training path (ds_config → GptModel → Engine, AdamW, clipping 1.0, ZeRO "
       "stage 0, random tokens), timed per optimizer step by the wall clock after warm-up "
       "steps (the slowest rank's time). tokens/s = B·T·ranks / median step; model FLOP/s = "
       "tokens/s × (6N + 12·L·C·T) FLOPs a token; MFU divides it by the all-cores CPU-time peak "
       "of the same run: fp32 by the FMA peak, bf16 by the AVX512_BF16 dot-product peak "
       "(docs/architecture.md's reference) and, separately, by the AMX-BF16 tile peak. "
       "Target: MFU >= 70%. Phases are the engine's per-step means (reduce = gradient "
       "all-reduce); AdamW GB/s counts 28 B a parameter over the step phase (which also holds "
       "the norm and clipping), next to "
       "STREAM triad.\n\n";
  o << "| model | precision | ranks × threads | B × T | step ms (median) | spread | tokens/s | "
       "model GFLOP/s | MFU | peak divided by | of AMX peak | fwd / bwd / reduce / step ms | "
       "AdamW GB/s (of triad) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const json& c : train) {
    const json& t = c["step_seconds"];
    const json& ph = c["phase_ms"];
    const Mfu m = train_mfu(c, probe);
    const bool bf16 = str(c, "precision") == "bf16";
    const double adamw = num(c, "adamw_gbps");
    o << fmt(
        "| %s | %s | %s | %.0f × %.0f | %.1f | ±%.0f%% | %.0f | %.1f | %s | %s %.1f | %s | "
        "%.1f / %.1f / %.1f / %.1f | %.2f (%s) |\n",
        str(c, "model").c_str(), str(c, "precision").c_str(), cores_text(c).c_str(), num(c, "B"),
        num(c, "T"), 1e3 * num(t, "median"), 50 * num(t, "spread"),
        num(c["tokens_per_s"], "median"), m.flops / 1e9, pct(m.ref).c_str(), m.ref_isa.c_str(),
        m.ref_peak / 1e9, bf16 ? pct(m.amx).c_str() : "—", num(ph, "forward"), num(ph, "backward"),
        num(ph, "reduce"), num(ph, "step"), adamw, pct(triad > 0 ? adamw / triad : 0).c_str());
  }
  return o.str() + "\n";
}

std::string train_summary_rows(const json& train, const json& probe) {
  if (!has_cases(train)) return "";
  // Best case per (model, precision), in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, const json*> best;
  for (const json& c : train) {
    const std::string key = str(c, "model") + " " + str(c, "precision");
    auto [it, fresh] = best.emplace(key, &c);
    if (fresh) order.push_back(key);
    if (train_mfu(c, probe).flops > train_mfu(*it->second, probe).flops) it->second = &c;
  }
  std::ostringstream o;
  for (const std::string& key : order) {
    const json& c = *best[key];
    const Mfu m = train_mfu(c, probe);
    const std::string amx = str(c, "precision") == "bf16"
                                ? fmt(" (AMX peak %.1f: %s)", m.amx_peak / 1e9, pct(m.amx).c_str())
                                : "";
    o << fmt(
        "| training step MFU, best case (%s) | %.1f GFLOP/s model, %.0f tokens/s | %s "
        "peak %.1f%s | %s | >= %.0f%% |\n",
        case_text(c).c_str(), m.flops / 1e9, num(c["tokens_per_s"], "median"), m.ref_isa.c_str(),
        m.ref_peak / 1e9, amx.c_str(), pct(m.ref).c_str(), 100 * kMfuTarget);
  }
  return o.str();
}

}  // namespace zerotrain::bench

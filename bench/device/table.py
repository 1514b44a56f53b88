#!/usr/bin/python3
"""The device check's throughput summary: zerotrain's training step against the
GPU's peak, the GPU's measured bf16 GEMM ceiling and the PyTorch peer.

    python3 bench/device/table.py gpu-out/perf.jsonl             # plain text
    python3 bench/device/table.py --markdown gpu-out/perf.jsonl  # for bench/RESULTS.md
    ... --peak-tflops 989 --target-mfu 0.5 --target-ratio 1.3    # the defaults

Reads a JSON-lines file (scripts/device_check.sh's perf.jsonl) holding:
  * zt_train_bench lines (bench/train/train_bench.cc train_result_json):
    {"bench": "train_step", "model", "precision", "B", "T", "tokens_per_step",
     "flops_per_token", "tokens_per_s": {"median", ...}, "step_seconds": {"median", ...}};
  * zt_train_bench --gemm-ceiling lines (bench/train/gemm_ceiling.cc):
    {"bench": "gemm_ceiling", "device", "n", "runs", "tflops"};
  * bench/peer/gpt_peer.py lines: {"impl": "pytorch", "mode", "device",
    "tokens_per_s", "step_ms_median", "tokens_per_step", "available", ...}.
Other lines (and lines that are not JSON) are skipped and counted.

One column a zerotrain case (model x precision); its PyTorch peer is the last
available peer line of the same precision (bf16 <-> ddp-bf16-autocast, fp32
<-> ddp-fp32, else zero1-fp32). Rows: zerotrain tok/s (the median of the
timed steps' rates), ms/step (tokens_per_step / that rate, else the bench's
step_seconds median), model TFLOP/s = tok/s x flops_per_token (zerotrain's
6N + 12·L·C·T, PaLM's accounting), MFU against --peak-tflops (989: H100/H200
SXM dense bf16) and against the measured GEMM ceiling (the highest
gemm_ceiling line), PyTorch tok/s and ms/step, the ratio zerotrain / PyTorch,
and the bench targets of docs/architecture.md (GPT-2 124M bf16: >= 50% MFU
of 989 TFLOP/s, >= 1.3x PyTorch) as met / not met. Whatever a missing or
failed line leaves unknown prints as n/a; notes under the table say why.
Exit status 0 when a table was printed (n/a or not), 1 when the file cannot
be read (the table is still printed, all n/a), 2 on a usage error.
"""

import argparse
import json
import math
import sys

PEAK_TFLOPS = 989.0  # H100/H200 SXM dense bf16 (docs/architecture.md)
TARGET_MFU = 0.50
TARGET_RATIO = 1.3
# zerotrain precision -> the peer modes that compare with it, best first.
PEER_MODES = {"bf16": ("ddp-bf16-autocast",), "fp32": ("ddp-fp32", "zero1-fp32")}
NA = "n/a"


def num(x):
    """x as a finite float, or None (missing, not a number, a bool, inf, NaN)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def median_of(x):
    """A bench value that is either a number or a {"median": ...} summary."""
    return num(x.get("median")) if isinstance(x, dict) else num(x)


def div(a, b):
    return a / b if a is not None and b is not None and b > 0 else None


def load(lines):
    """(train lines, gemm-ceiling lines, peer lines, count of skipped lines)."""
    train, ceilings, peers, skipped = [], [], [], 0
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not isinstance(doc, dict):
            skipped += 1
        elif doc.get("bench") == "train_step":
            train.append(doc)
        elif doc.get("bench") == "gemm_ceiling":
            ceilings.append(doc)
        elif doc.get("impl") == "pytorch" or ("mode" in doc and "bench" not in doc):
            peers.append(doc)
        else:
            skipped += 1
    return train, ceilings, peers, skipped


def pick_peer(peers, precision):
    """The last available peer line of a mode that compares with `precision`."""
    for mode in PEER_MODES.get(precision, ()):
        ok = [p for p in peers if p.get("mode") == mode and p.get("available", True) is not False
              and num(p.get("tokens_per_s")) is not None]
        if ok:
            return ok[-1]
    return None


def ceiling_of(ceilings):
    """The highest measured GEMM ceiling line (TFLOP/s > 0), or None."""
    good = [c for c in ceilings if (num(c.get("tflops")) or 0) > 0]
    return max(good, key=lambda c: num(c["tflops"])) if good else None


def case_label(zt, peer):
    if zt is None:
        return f"(no zerotrain line) {peer.get('mode', '?')}" if peer else "(no lines)"
    label = f"{zt.get('model', '?')} {zt.get('precision', '?')}"
    if zt.get("B") is not None and zt.get("T") is not None:
        label += f" B={zt['B']} T={zt['T']}"
    return label


def summarize_case(zt, peer, ceiling, peak_tflops, target_mfu, target_ratio):
    """The numbers of one column; None where unknown."""
    zt = zt or {}
    tps = median_of(zt.get("tokens_per_s"))
    fpt = num(zt.get("flops_per_token"))
    # The step of the median rate, so that the ms/step and tok/s rows agree
    # (the bench's step_seconds median is the upper one of an even count).
    secs = div(num(zt.get("tokens_per_step")), tps)
    if secs is None:
        secs = median_of(zt.get("step_seconds"))
    ms = secs * 1e3 if secs is not None and secs > 0 else None
    tflops = tps * fpt / 1e12 if tps is not None and fpt is not None else None
    if tflops is None:  # an older line: the bench's own product
        mf = median_of(zt.get("model_flops"))
        tflops = mf / 1e12 if mf is not None else None
    ceil = num(ceiling.get("tflops")) if ceiling else None
    peer = peer or {}
    pt_tps = num(peer.get("tokens_per_s"))
    pt_ms = num(peer.get("step_ms_median"))
    mfu = div(tflops, peak_tflops)
    ratio = div(tps, pt_tps)
    return {
        "zt_tokens_per_s": tps,
        "zt_ms_per_step": ms,
        "gflop_per_token": fpt / 1e9 if fpt is not None else None,
        "model_tflops": tflops,
        "mfu_peak": mfu,
        "ceiling_tflops": ceil,
        "mfu_ceiling": div(tflops, ceil),
        "pt_tokens_per_s": pt_tps,
        "pt_ms_per_step": pt_ms,
        "ratio": ratio,
        "target_mfu_met": None if mfu is None else mfu >= target_mfu,
        "target_ratio_met": None if ratio is None else ratio >= target_ratio,
    }


def summarize(train, ceilings, peers, peak_tflops=PEAK_TFLOPS, target_mfu=TARGET_MFU,
              target_ratio=TARGET_RATIO):
    """[(label, numbers, notes)] a column each, and notes for the whole table."""
    ceiling = ceiling_of(ceilings)
    cases = []
    for zt in train:
        peer = pick_peer(peers, zt.get("precision"))
        notes = []
        if peer is not None:
            a, b = num(zt.get("tokens_per_step")), num(peer.get("tokens_per_step"))
            if a is not None and b is not None and a != b:
                notes.append(f"{case_label(zt, peer)}: PyTorch ran {b:.0f} tokens a step, "
                             f"zerotrain {a:.0f}: the ratio compares different shapes")
        cases.append((case_label(zt, peer),
                      summarize_case(zt, peer, ceiling, peak_tflops, target_mfu, target_ratio),
                      notes))
    if not train:  # the peer alone (or nothing): zerotrain's side n/a
        used = [p for p in (pick_peer(peers, prec) for prec in PEER_MODES) if p is not None]
        for peer in used or [None]:
            cases.append((case_label(None, peer),
                          summarize_case(None, peer, ceiling, peak_tflops, target_mfu,
                                         target_ratio), []))
    notes = []
    if not train:
        notes.append("no zerotrain line (bench \"train_step\"): zt_train_bench failed or did "
                     "not run")
    if ceiling is not None:
        notes.append(f"GEMM ceiling: {num(ceiling['tflops']):.1f} TFLOP/s, bf16 "
                     f"{ceiling.get('n', '?')}^3 on {ceiling.get('device', '?')} "
                     f"(median of {ceiling.get('runs', '?')})")
    else:
        notes.append("no GEMM ceiling line (bench \"gemm_ceiling\" with tflops > 0)")
    for p in peers:
        if p.get("available", True) is False:
            notes.append(f"PyTorch {p.get('mode', '?')}: not available: "
                         f"{p.get('reason', 'no reason given')}")
    shown = {id(p) for p in (pick_peer(peers, prec) for prec in PEER_MODES) if p is not None}
    for p in peers:
        if id(p) in shown:
            extra = [f"torch {p['torch']}" if p.get("torch") else None,
                     f"peak memory {num(p['peak_mem_bytes']) / 2**30:.2f} GiB"
                     if num(p.get("peak_mem_bytes")) is not None else None,
                     f"attention {p['attention']}" if p.get("attention") else None,
                     f"AdamW {p['adamw']}" if p.get("adamw") else None]
            notes.append(f"PyTorch {p.get('mode', '?')} on {p.get('device', 'cpu')}"
                         + "".join(f", {e}" for e in extra if e))
    if not peers:
        notes.append("no PyTorch line (gpt_peer.py failed or did not run)")
    elif train and not any(pick_peer(peers, z.get("precision")) for z in train):
        notes.append("no PyTorch line of a matching precision (gpt_peer.py failed or ran "
                     "another mode)")
    for _, _, n in cases:
        notes.extend(n)
    return [(label, numbers) for label, numbers, _ in cases], notes


def rows(peak_tflops, target_mfu, target_ratio):
    """(row title, key, formatter) of the table, top to bottom."""
    def f_int(x):
        return f"{x:,.0f}"

    def f1(x):
        return f"{x:.1f}"

    def f3(x):
        return f"{x:.3f}"

    def pct(x):
        return f"{100 * x:.1f}%"

    def times(x):
        return f"{x:.2f}x"

    def met(x):
        return "met" if x else "not met"

    return [
        ("zerotrain tok/s", "zt_tokens_per_s", f_int),
        ("zerotrain ms/step", "zt_ms_per_step", f1),
        ("model GFLOP/token", "gflop_per_token", f3),
        ("model TFLOP/s", "model_tflops", f1),
        (f"MFU vs {peak_tflops:g} TFLOP/s", "mfu_peak", pct),
        ("GEMM ceiling TFLOP/s", "ceiling_tflops", f1),
        ("MFU vs GEMM ceiling", "mfu_ceiling", pct),
        ("PyTorch tok/s", "pt_tokens_per_s", f_int),
        ("PyTorch ms/step", "pt_ms_per_step", f1),
        ("zerotrain / PyTorch", "ratio", times),
        (f"target: MFU >= {100 * target_mfu:g}%", "target_mfu_met", met),
        (f"target: >= {target_ratio:g}x PyTorch", "target_ratio_met", met),
    ]


def cells(cases, peak_tflops, target_mfu, target_ratio):
    """The table as a list of rows of strings, the header first."""
    out = [["measure"] + [label for label, _ in cases]]
    for title, key, fmt in rows(peak_tflops, target_mfu, target_ratio):
        out.append([title] + [NA if n[key] is None else fmt(n[key]) for _, n in cases])
    return out


def render_text(table, notes):
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = []
    for k, r in enumerate(table):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines + [f"  {n}" for n in notes]) + "\n"


def render_markdown(table, notes):
    def md(r):
        return "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |"
    lines = [md(table[0]), "|" + "|".join(["---"] + ["---:"] * (len(table[0]) - 1)) + "|"]
    lines += [md(r) for r in table[1:]]
    if notes:
        lines.append("")
        lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main(argv, out=sys.stdout):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", help="JSON lines (zt_train_bench, gemm ceiling, gpt_peer.py)")
    p.add_argument("--markdown", action="store_true", help="a markdown table (bench/RESULTS.md)")
    p.add_argument("--peak-tflops", type=float, default=PEAK_TFLOPS,
                   help="the device's dense bf16 peak for MFU (default 989: H100/H200 SXM)")
    p.add_argument("--target-mfu", type=float, default=TARGET_MFU,
                   help="MFU target, a fraction of --peak-tflops (default 0.5)")
    p.add_argument("--target-ratio", type=float, default=TARGET_RATIO,
                   help="tokens/s target against PyTorch (default 1.3)")
    a = p.parse_args(argv)
    if not a.peak_tflops > 0:
        p.error("--peak-tflops must be > 0")
    rc, notes_head = 0, []
    try:
        with open(a.file, encoding="utf-8", errors="replace") as f:
            train, ceilings, peers, skipped = load(f)
    except OSError as e:
        rc, (train, ceilings, peers, skipped) = 1, ([], [], [], 0)
        notes_head.append(f"cannot read {a.file}: {e.strerror or e}")
    if skipped:
        notes_head.append(f"{skipped} line(s) skipped (not JSON, or not a known bench line)")
    cases, notes = summarize(train, ceilings, peers, a.peak_tflops, a.target_mfu, a.target_ratio)
    table = cells(cases, a.peak_tflops, a.target_mfu, a.target_ratio)
    render = render_markdown if a.markdown else render_text
    out.write(render(table, notes_head + notes))
    out.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

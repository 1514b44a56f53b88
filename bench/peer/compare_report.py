"""Tables of bench/compare: console text and the RESULTS.md section.

    pairs = [Pair(row, ours_result, peer_result), ...]          # one variant x layout
    print(console_table(pairs))
    section = markdown_section(facts, check, blocks)           # between MARK_BEGIN/END
    replace_section("bench/RESULTS.md", section)

Targets (issue #6; bench, not tests): fp32 tokens/s >= 1.6x the peer,
bf16 >= 2x bf16 autocast, peak RSS per rank <= 1/3 of the peer's, at the same
processes x threads. A ratio is ours / theirs from two runs next to each other
in time (bench/compare alternates the sides); with --rounds N, the median of
N such pairs.
"""

import os
import statistics
from dataclasses import dataclass, field

MARK_BEGIN = "<!-- bench/compare: begin (written by bench/compare; do not edit by hand) -->"
MARK_END = "<!-- bench/compare: end -->"
SPEED_TARGET = {False: 1.6, True: 2.0}  # by bf16
RSS_TARGET = 1.0 / 3.0


@dataclass
class Pair:
    row: object  # runs.Row
    ours: object  # runs.Result (the first round's)
    peer: object  # runs.Result or None (ours did not run)
    more: list = field(default_factory=list)  # further rounds (--rounds): [(ours, peer)]

    def rounds(self):
        return [(self.ours, self.peer)] + list(self.more)

    def ok(self):
        return all(o.status == "ok" and q is not None and q.status == "ok"
                   for o, q in self.rounds())


def peak(r):
    return max(r.peak_rss_mib) if r and r.peak_rss_mib else None


def speed_ratios(p):
    """ours/theirs tokens/s of each round, the runs of a round made next to each other."""
    return [o.tokens_per_s / q.tokens_per_s for o, q in p.rounds() if q.tokens_per_s]


def ratios(p):
    """(speed ratio, best-step speed ratio, rss ratio), None where a side has none. With
    several rounds: the median of the rounds' ratios, and the highest peak RSS of each side."""
    if not p.ok():
        return None, None, None
    speeds = speed_ratios(p)
    bests = [o.tokens_per_s_best / q.tokens_per_s_best for o, q in p.rounds()
             if q.tokens_per_s_best]
    po = max((peak(o) or 0) for o, _ in p.rounds())
    pp = max((peak(q) or 0) for _, q in p.rounds())
    return (statistics.median(speeds) if speeds else None,
            statistics.median(bests) if bests else None, po / pp if po and pp else None)


def median_tokens(results):
    """(median tokens/s, best step's tokens/s) over a side's rounds."""
    return (statistics.median(r.tokens_per_s for r in results),
            max(r.tokens_per_s_best for r in results))


def verdict(value, target, at_least):
    if value is None:
        return "n/a"
    met = value >= target if at_least else value <= target
    return "met" if met else "NOT met"


def _cells(p):
    speed, best, rss = ratios(p)
    bad = next((o for o, _ in p.rounds() if o.status != "ok"), None)
    if bad is not None:
        what = "refused" if bad.status == "refused" else "FAILED"
        return [p.row.label, f"{what}: {bad.reason}", p.row.peer_mode] + [""] * 7
    ours, peer = p.ours, p.peer
    failed_peer = next((q for _, q in p.rounds() if q is not None and q.status != "ok"), None)
    o_tps, o_best = median_tokens([o for o, _ in p.rounds()])
    ours_tps = f"{o_tps:,.0f} ({o_best:,.0f})"
    if failed_peer is not None:
        peer_tps = f"FAILED: {failed_peer.reason}"
    elif peer is not None:
        q_tps, q_best = median_tokens([q for _, q in p.rounds()])
        peer_tps = f"{q_tps:,.0f} ({q_best:,.0f})"
    else:
        peer_tps = ""
    target = SPEED_TARGET[p.row.bf16]
    speed_cell = f"{speed:.2f}x ({verdict(speed, target, True)} >= {target})" if speed else "n/a"
    if speed and len(p.more) > 0:
        speed_cell += "; rounds " + ", ".join(f"{r:.2f}" for r in speed_ratios(p))
    po = max((peak(o) or 0) for o, _ in p.rounds())
    pp = max((peak(q) or 0) for _, q in p.rounds() if q is not None) if peer else 0
    return [p.row.label, ours_tps, p.row.peer_mode, peer_tps, speed_cell,
            f"{best:.2f}x" if best else "n/a",
            f"{po:,.0f}" if po else "n/a",
            f"{pp:,.0f}" if pp else "n/a",
            f"{rss:.2f} ({verdict(rss, RSS_TARGET, False)} <= 0.33)" if rss else "n/a",
            f"{ours.load_before:.1f} / {peer.load_before:.1f}" if peer else ""]


HEAD = ["zerotrain config", "ours tokens/s (best step)", "peer mode", "peer tokens/s (best step)",
        "tokens/s ours/theirs", "best step ours/theirs",
        "ours peak RSS/rank MiB", "peer peak RSS/rank MiB", "RSS ours/theirs",
        "load at start (ours / peer)"]


def console_table(pairs):
    rows = [HEAD] + [_cells(p) for p in pairs]
    widths = [min(60, max(len(r[i]) for r in rows)) for i in range(len(HEAD))]
    return "\n".join("  ".join(c[:60].ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def _md(rows):
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows[1:]]
    return "\n".join(out)


def check_table(check):
    rows = [["step", "zerotrain loss", "pytorch loss", "relative difference"]]
    for i, (a, b) in enumerate(zip(check["ours"], check["peer"])):
        rows.append([str(i + 1), f"{a:.4f}", f"{b:.6f}", f"{abs(a - b) / abs(b):.2e}"])
    return _md(rows)


def markdown_section(facts, check, blocks, extra_rows):
    """facts: [(key, value)]; check: dict; blocks: [(title, [Pair])]; extra_rows: [(k, v)]."""
    out = [MARK_BEGIN, "## PyTorch peer (bench/compare)", "",
           "Written by `bench/compare` (`make bench-peer`). zerotrain and the PyTorch peer "
           "(`bench/peer/gpt_peer.py`, Debian's python3-torch) train the same model "
           "(gpt2-5m: 4 layers x 256, 4 heads, vocab 8192, 5,322,240 parameters) on the same "
           "token shards in the same order, micro-batch 8 x 256 tokens per rank, AdamW "
           "(lr 2e-3, betas 0.9/0.95, eps 1e-8, weight decay 0.01), clipping 1.0, WarmupLR "
           "(linear, 10 steps). tokens/s = global tokens a step / median step time after the "
           "warm-up steps (in brackets: at the fastest timed step, what a quiet moment of a "
           "shared machine gave; its ratio is the steadier one under load); peak RSS = each rank's high-water mark (ru_maxrss / VmHWM), the "
           "largest rank shown. Each ratio divides two runs made next to each other "
           "(the sides alternate); with several rounds (`--rounds`) the table shows the "
           "median of the rounds' ratios (each round listed), the median tokens/s of each "
           "side, and each side's highest peak RSS. Targets (issue #6): fp32 >= 1.6x DDP fp32, bf16 >= 2x bf16 "
           "autocast, peak RSS <= 1/3; they are bench targets, not tests.", ""]
    if facts.get_note():
        out += [f"**{facts.get_note()}**", ""]
    out += ["### Machine and run", "", _md([["", ""]] + [[k, v] for k, v in facts.items()]), ""]
    out += ["### Like for like: the first steps' losses from the same initial weights", "",
            check["summary"], ""]
    if check.get("ours") and check.get("peer"):
        out += [check_table(check), ""]
    for title, pairs in blocks:
        out += [f"### {title}", "", _md([HEAD] + [_cells(p) for p in pairs]), ""]
    if extra_rows:
        out += ["### Peer modes that did not run", "",
                _md([["mode", "result"]] + [list(r) for r in extra_rows]), ""]
    out.append(MARK_END)
    return "\n".join(out) + "\n"


def replace_section(path, section):
    """Puts the section between the markers of `path` (appended when absent)."""
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    begin, end = text.find(MARK_BEGIN), text.find(MARK_END)
    if begin >= 0 and end > begin:
        rest = text[end + len(MARK_END):].lstrip("\n")
        text = text[:begin] + section + ("\n" + rest if rest else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Facts(dict):
    """Ordered machine/run facts with an optional headline note."""

    note = ""

    def get_note(self):
        return self.note

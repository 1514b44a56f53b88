"""Tables of bench/compare: console text and the RESULTS.md section.

    pairs = [Pair(row, ours_result, peer_result), ...]          # one variant x layout
    print(console_table(pairs))
    section = markdown_section(facts, check, blocks)           # between MARK_BEGIN/END
    replace_section("bench/RESULTS.md", section)

Targets (issue #6; bench, not tests): fp32 tokens/s >= 1.6x the peer,
bf16 >= 2x bf16 autocast, peak RSS per rank <= 1/3 of the peer's, at the same
processes x threads. A ratio is ours / theirs from two runs next to each other
in time (bench/compare alternates the sides).
"""

import os
from dataclasses import dataclass

MARK_BEGIN = "<!-- bench/compare: begin (written by bench/compare; do not edit by hand) -->"
MARK_END = "<!-- bench/compare: end -->"
SPEED_TARGET = {False: 1.6, True: 2.0}  # by bf16
RSS_TARGET = 1.0 / 3.0


@dataclass
class Pair:
    row: object  # runs.Row
    ours: object  # runs.Result
    peer: object  # runs.Result or None (ours did not run)


def peak(r):
    return max(r.peak_rss_mib) if r and r.peak_rss_mib else None


def ratios(p):
    """(median speed ratio, best-step speed ratio, rss ratio), None where a side has none."""
    if p.ours.status != "ok" or p.peer is None or p.peer.status != "ok":
        return None, None, None
    speed = p.ours.tokens_per_s / p.peer.tokens_per_s if p.peer.tokens_per_s else None
    best = p.ours.tokens_per_s_best / p.peer.tokens_per_s_best if p.peer.tokens_per_s_best \
        else None
    po, pp = peak(p.ours), peak(p.peer)
    return speed, best, (po / pp if po and pp else None)


def verdict(value, target, at_least):
    if value is None:
        return "n/a"
    met = value >= target if at_least else value <= target
    return "met" if met else "NOT met"


def _cells(p):
    speed, best, rss = ratios(p)
    ours = p.ours
    if ours.status != "ok":
        what = "refused" if ours.status == "refused" else "FAILED"
        return [p.row.label, f"{what}: {ours.reason}", p.row.peer_mode] + [""] * 7
    peer = p.peer
    ok = peer is not None and peer.status == "ok"
    peer_tps = f"{peer.tokens_per_s:,.0f} ({peer.tokens_per_s_best:,.0f})" if ok else \
        f"FAILED: {peer.reason}" if peer else ""
    target = SPEED_TARGET[p.row.bf16]
    return [p.row.label, f"{ours.tokens_per_s:,.0f} ({ours.tokens_per_s_best:,.0f})",
            p.row.peer_mode, peer_tps,
            f"{speed:.2f}x ({verdict(speed, target, True)} >= {target})" if speed else "n/a",
            f"{best:.2f}x" if best else "n/a",
            f"{peak(ours):,.0f}" if peak(ours) else "n/a",
            f"{peak(peer):,.0f}" if peak(peer) else "n/a",
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
           "(the sides alternate). Targets (issue #6): fp32 >= 1.6x DDP fp32, bf16 >= 2x bf16 "
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

#!/usr/bin/python3
"""Unit tests of bench/device/table.py on synthetic JSON lines (stdlib only):
the MFU and ratio arithmetic, the peer pairing, n/a for whatever is missing.

    /usr/bin/python3 bench/device/table_test.py        # ctest: device_table_test
"""

import io
import json
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import table  # noqa: E402


def train_line(precision="bf16", tps=400_000.0, fpt=860_000_000, tokens=16384, **extra):
    doc = {"bench": "train_step", "model": "gpt2", "precision": precision, "B": 16, "T": 1024,
           "ranks": 1, "tokens_per_step": tokens, "flops_per_token": fpt,
           "step_seconds": {"median": 0.05, "best": 0.04, "worst": 0.06, "spread": 0.4,
                            "values": [0.04, 0.05, 0.06]},
           "tokens_per_s": {"median": tps, "best": tps * 1.1, "spread": 0.2},
           "model_flops": {"median": tps * fpt, "best": tps * fpt * 1.1}}
    doc.update(extra)
    return json.dumps(doc)


def ceiling_line(tflops=800.0):
    return json.dumps({"bench": "gemm_ceiling", "device": "cuda:0 (NVIDIA H200)", "n": 8192,
                       "runs": 10, "median_s": 2.0 * 8192**3 / tflops / 1e12 if tflops else 0.0,
                       "best_s": 0.001, "tflops": tflops})


def peer_line(mode="ddp-bf16-autocast", tps=250_000.0, tokens=16384, **extra):
    doc = {"impl": "pytorch", "mode": mode, "procs": 1, "threads": 1, "torch": "2.11.0+cu130",
           "device": "cuda:0 (NVIDIA H200)", "available": True, "tokens_per_s": tps,
           "step_ms_median": tokens / tps * 1e3, "tokens_per_s_best": tps,
           "tokens_per_step": tokens, "peak_mem_bytes": 3 * 2**30, "losses": [11.0]}
    doc.update(extra)
    return json.dumps(doc)


def run(lines, *args):
    """(exit status, output) of table.main on these lines."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "perf.jsonl")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        out = io.StringIO()
        rc = table.main([*args, path], out=out)
    return rc, out.getvalue()


def numbers(lines, **kw):
    cases, notes = table.summarize(*table.load(lines)[:3], **kw)
    return cases, notes


def row(output, title):
    """The cells of the plain-text row that starts with title."""
    for line in output.splitlines():
        if line.startswith(title):
            return line[len(title):].split()
    raise AssertionError(f"no row {title!r} in:\n{output}")


class Arithmetic(unittest.TestCase):
    def test_mfu_ceiling_and_ratio(self):
        cases, _ = numbers([ceiling_line(800.0), train_line(tps=400_000.0, fpt=860_000_000),
                            peer_line(tps=250_000.0)])
        self.assertEqual(len(cases), 1)
        label, n = cases[0]
        self.assertEqual(label, "gpt2 bf16 B=16 T=1024")
        self.assertAlmostEqual(n["model_tflops"], 400_000 * 0.86e9 / 1e12)  # 344
        self.assertAlmostEqual(n["mfu_peak"], 344.0 / 989.0)
        self.assertAlmostEqual(n["mfu_ceiling"], 344.0 / 800.0)
        self.assertAlmostEqual(n["ratio"], 1.6)
        self.assertAlmostEqual(n["zt_ms_per_step"], 16384 / 400_000 * 1e3)
        self.assertAlmostEqual(n["gflop_per_token"], 0.86)
        self.assertAlmostEqual(n["pt_ms_per_step"], 16384 / 250_000 * 1e3)
        self.assertFalse(n["target_mfu_met"])  # 34.8% < 50%
        self.assertTrue(n["target_ratio_met"])  # 1.6 >= 1.3

    def test_targets_at_their_edges(self):
        # 0.5 x 989 TFLOP/s exactly, 1.3 x PyTorch exactly: both met.
        tps = 0.5 * 989e12 / 1e9
        _, n = numbers([train_line(tps=tps, fpt=1_000_000_000),
                        peer_line(tps=tps / 1.3)])[0][0]
        self.assertTrue(n["target_mfu_met"])
        self.assertAlmostEqual(n["ratio"], 1.3)
        self.assertTrue(n["target_ratio_met"])
        _, n = numbers([train_line(tps=tps * 0.999, fpt=1_000_000_000),
                        peer_line(tps=tps / 1.29)])[0][0]
        self.assertFalse(n["target_mfu_met"])
        self.assertFalse(n["target_ratio_met"])

    def test_peak_and_targets_options(self):
        lines = [train_line(tps=400_000.0, fpt=860_000_000), peer_line(tps=400_000.0)]
        _, n = numbers(lines, peak_tflops=500.0, target_mfu=0.6, target_ratio=1.0)[0][0]
        self.assertAlmostEqual(n["mfu_peak"], 344.0 / 500.0)
        self.assertTrue(n["target_mfu_met"])  # 68.8% >= 60%
        self.assertTrue(n["target_ratio_met"])  # 1.0 >= 1.0
        rc, out = run(lines, "--peak-tflops", "500")
        self.assertEqual(rc, 0)
        self.assertEqual(row(out, "MFU vs 500 TFLOP/s"), ["68.8%"])

    def test_highest_ceiling_wins(self):
        _, n = numbers([ceiling_line(700.0), ceiling_line(790.0), ceiling_line(0.0),
                        train_line()])[0][0]
        self.assertEqual(n["ceiling_tflops"], 790.0)

    def test_model_flops_when_flops_per_token_is_missing(self):
        doc = json.loads(train_line(tps=100_000.0, fpt=1_000_000_000))
        del doc["flops_per_token"]
        _, n = numbers([json.dumps(doc)])[0][0]
        self.assertAlmostEqual(n["model_tflops"], 100.0)
        self.assertIsNone(n["gflop_per_token"])

    def test_ms_per_step_from_step_seconds_without_tokens_per_step(self):
        doc = json.loads(train_line())
        del doc["tokens_per_step"]
        _, n = numbers([json.dumps(doc)])[0][0]
        self.assertAlmostEqual(n["zt_ms_per_step"], 50.0)


class Pairing(unittest.TestCase):
    def test_precision_picks_the_peer_mode(self):
        cases, _ = numbers([train_line("bf16", tps=300_000.0), train_line("fp32", tps=100_000.0),
                            peer_line("ddp-fp32", tps=50_000.0),
                            peer_line("ddp-bf16-autocast", tps=200_000.0)])
        by = {label.split()[1]: n for label, n in cases}
        self.assertAlmostEqual(by["bf16"]["ratio"], 1.5)
        self.assertAlmostEqual(by["fp32"]["ratio"], 2.0)

    def test_last_available_peer_line_wins(self):
        cases, notes = numbers([train_line(tps=300_000.0), peer_line(tps=100_000.0),
                                peer_line(tps=150_000.0),
                                json.dumps({"impl": "pytorch", "mode": "ddp-bf16-autocast",
                                            "available": False, "reason": "out of memory"})])
        self.assertAlmostEqual(cases[0][1]["ratio"], 2.0)
        self.assertTrue(any("out of memory" in n for n in notes), notes)

    def test_shape_mismatch_is_noted(self):
        _, notes = numbers([train_line(tokens=16384), peer_line(tokens=8192)])
        self.assertTrue(any("different shapes" in n for n in notes), notes)


class NotAvailable(unittest.TestCase):
    def test_no_peer(self):
        rc, out = run([train_line(), ceiling_line()])
        self.assertEqual(rc, 0)
        self.assertEqual(row(out, "PyTorch tok/s"), ["n/a"])
        self.assertEqual(row(out, "zerotrain / PyTorch"), ["n/a"])
        self.assertEqual(row(out, "target: >= 1.3x PyTorch"), ["n/a"])
        self.assertEqual(row(out, "zerotrain tok/s"), ["400,000"])
        self.assertIn("no PyTorch line", out)

    def test_no_ceiling(self):
        rc, out = run([train_line(), peer_line()])
        self.assertEqual(row(out, "GEMM ceiling TFLOP/s"), ["n/a"])
        self.assertEqual(row(out, "MFU vs GEMM ceiling"), ["n/a"])
        self.assertEqual(row(out, "MFU vs 989 TFLOP/s"), ["34.8%"])

    def test_peer_only(self):
        rc, out = run([peer_line(tps=123_456.0)])
        self.assertEqual(rc, 0)
        self.assertEqual(row(out, "PyTorch tok/s"), ["123,456"])
        self.assertEqual(row(out, "zerotrain tok/s"), ["n/a"])
        self.assertEqual(row(out, "target: MFU >= 50%"), ["n/a"])
        self.assertIn("no zerotrain line", out)

    def test_empty_garbage_and_odd_values(self):
        odd = json.loads(train_line())
        odd["tokens_per_s"] = {"median": "fast"}
        odd["flops_per_token"] = None
        odd["model_flops"] = {"median": float("inf")}
        odd["step_seconds"] = "x"
        rc, out = run(["", "not json", "[1, 2]", json.dumps({"bench": "other"}),
                       json.dumps(odd), ceiling_line(-1.0),
                       json.dumps({"impl": "pytorch", "mode": "ddp-bf16-autocast",
                                   "tokens_per_s": True})])
        self.assertEqual(rc, 0)
        self.assertEqual(row(out, "zerotrain tok/s"), ["n/a"])
        self.assertEqual(row(out, "model TFLOP/s"), ["n/a"])
        self.assertEqual(row(out, "GEMM ceiling TFLOP/s"), ["n/a"])
        self.assertEqual(row(out, "PyTorch tok/s"), ["n/a"])
        self.assertIn("3 line(s) skipped", out)

    def test_empty_file(self):
        rc, out = run([])
        self.assertEqual(rc, 0)
        self.assertEqual(row(out, "zerotrain tok/s"), ["n/a"])
        self.assertEqual(row(out, "PyTorch tok/s"), ["n/a"])

    def test_missing_file(self):
        out = io.StringIO()
        rc = table.main([os.path.join(tempfile.gettempdir(), "no-such-dir", "perf.jsonl")],
                        out=out)
        self.assertEqual(rc, 1)
        self.assertIn("cannot read", out.getvalue())
        self.assertEqual(row(out.getvalue(), "zerotrain tok/s"), ["n/a"])


class Markdown(unittest.TestCase):
    def test_table_shape(self):
        rc, out = run([train_line("bf16"), train_line("fp32"), ceiling_line(), peer_line()],
                      "--markdown")
        self.assertEqual(rc, 0)
        body = [l for l in out.splitlines() if l.startswith("|")]
        self.assertEqual(body[0], "| measure | gpt2 bf16 B=16 T=1024 | gpt2 fp32 B=16 T=1024 |")
        self.assertEqual(body[1], "|---|---:|---:|")
        self.assertEqual(len(body), 2 + len(table.rows(989, 0.5, 1.3)))
        self.assertTrue(all(l.count("|") == 4 for l in body), body)
        self.assertIn("| zerotrain / PyTorch | 1.60x | n/a |", out)
        self.assertIn("| target: MFU >= 50% | not met | not met |", out)


if __name__ == "__main__":
    unittest.main()

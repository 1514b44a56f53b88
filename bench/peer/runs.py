"""One benchmark run of either side, for bench/compare: command lines, parsing, results.

    r = run_ours(ctx, Row("fp32 stage 2", stage=2), layout=(2, 1), env=os.environ)
    p = run_peer(ctx, "ddp-fp32", layout=(2, 1), env=os.environ)
    r.tokens_per_s, r.peak_rss_mib, r.losses, r.status   # "ok", "refused" or "failed"

zerotrain runs as `zerotrain run --num_gpus P -- maxrss.py -- zerotrain train`
(P > 1) or alone (P = 1), with OMP_NUM_THREADS = threads; the peer as
gpt_peer.py --procs P --threads T. Both train gpt2-5m on the same shards with
the same hyperparameters (HYPER), per-rank micro-batch 8 x 256 tokens, and
report the median step time after the warm-up steps, rank 0's clock.
"""

import glob
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

PY = "/usr/bin/python3"  # Debian's; the peer never runs under another python3
HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "gpt2-5m"
# The one set of hyperparameters both sides get (ours through the ds_config).
HYPER = dict(micro_batch=8, seq_len=256, seed=1234, lr=2e-3, min_lr=0.0, warmup_steps=10,
             betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01, max_grad_norm=1.0)
STEP_LINE = re.compile(r"\[zerotrain\] step (\d+)/\d+ \| loss (\S+) \|.*\| ([0-9.]+) ms/step")


@dataclass
class Row:
    """One configuration of ours, and the peer mode it is compared with."""
    label: str
    stage: int = 0
    bf16: bool = False
    offload_optimizer: bool = False
    offload_param: bool = False
    peer_mode: str = "ddp-fp32"
    communication_data_type: str = ""  # "": unset (the model dtype, as DeepSpeed)


@dataclass
class Result:
    side: str  # "zerotrain" or "pytorch"
    what: str  # row label or peer mode
    procs: int
    threads: int
    status: str = "failed"  # "ok", "refused" (a config it does not accept), "failed"
    reason: str = ""
    tokens_per_s: float = 0.0  # at the median timed step
    tokens_per_s_best: float = 0.0  # at the fastest timed step
    step_ms_median: float = 0.0
    peak_rss_mib: list = field(default_factory=list)  # per rank
    losses: list = field(default_factory=list)
    wall_s: float = 0.0
    load_before: float = 0.0  # 1-minute load average when the run started
    log: str = ""  # path of the run's console log


@dataclass
class Context:
    zerotrain: str  # path of the binary
    data: str  # token shards (zerotrain data generate)
    work: str  # configs, logs
    steps: int
    warmup: int
    timeout_s: int = 420  # a run is ~30-60 s; a hung one must not stall the whole compare


def ds_config(row):
    h = HYPER
    zero = {"stage": row.stage}
    if row.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu"}
    if row.offload_param:
        zero["offload_param"] = {"device": "cpu"}
    extra = {"communication_data_type": row.communication_data_type} \
        if row.communication_data_type else {}
    return {
        **extra,
        "train_micro_batch_size_per_gpu": h["micro_batch"],
        "gradient_accumulation_steps": 1,
        "gradient_clipping": h["max_grad_norm"],
        "steps_per_print": 1,
        "bf16": {"enabled": row.bf16},
        "optimizer": {"type": "AdamW", "params": {
            "lr": h["lr"], "betas": list(h["betas"]), "eps": h["eps"],
            "weight_decay": h["weight_decay"]}},
        "scheduler": {"type": "WarmupLR", "params": {
            "warmup_min_lr": h["min_lr"], "warmup_max_lr": h["lr"],
            "warmup_num_steps": h["warmup_steps"], "warmup_type": "linear"}},
        "zero_optimization": zero,
    }


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def _slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def _unique(stem):
    """stem.log, or stem.2.log, ... when an earlier run of the same kind wrote one."""
    path, n = stem + ".log", 1
    while os.path.exists(path):
        n += 1
        path = f"{stem}.{n}.log"
    return path


def _run(cmd, env, log_path, timeout_s):
    t0 = time.monotonic()
    # Its own process group, so a timeout ends the spawned ranks too.
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout_s)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        out, rc = (out or "") + f"\n[bench/compare] timed out after {timeout_s} s\n", 124
    with open(log_path, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + out)
    return out, rc, time.monotonic() - t0


def run_ours(ctx, row, layout, env, steps=None, init=None, tag=""):
    procs, threads = layout
    steps = steps or ctx.steps
    r = Result("zerotrain", row.label, procs, threads, load_before=load1())
    name = f"ours-{_slug(row.label)}-{procs}x{threads}{tag}"
    cfg = os.path.join(ctx.work, f"{_slug(row.label)}.json")
    with open(cfg, "w") as f:
        json.dump(ds_config(row), f, indent=1)
    rss_dir = tempfile.mkdtemp(prefix=name + ".", dir=ctx.work)
    train = [ctx.zerotrain, "train", "--model", MODEL, "--data", ctx.data,
             "--seq-len", str(HYPER["seq_len"]), "--steps", str(steps),
             "--seed", str(HYPER["seed"]), "--eval-interval", "0", "--deepspeed", cfg]
    if init:
        train += ["--init", init]
    cmd = [PY, os.path.join(HERE, "maxrss.py"), rss_dir, "--"] + train
    if procs > 1:
        cmd = [ctx.zerotrain, "run", "--num_gpus", str(procs), "--"] + cmd
    env = dict(env, OMP_NUM_THREADS=str(threads))
    r.log = _unique(os.path.join(ctx.work, name))
    out, rc, r.wall_s = _run(cmd, env, r.log, ctx.timeout_s)
    times = {}
    for m in STEP_LINE.finditer(out):
        step = int(m.group(1))
        r.losses.append(float(m.group(2)))
        times[step] = float(m.group(3))
    for path in sorted(glob.glob(os.path.join(rss_dir, "rss.rank*.json"))):
        with open(path) as f:
            r.peak_rss_mib.append(round(json.load(f)["peak_rss_mib"], 1))
    if rc != 0:
        # The trainer's own message, else the first line that is not the
        # launcher's (its banner and its "rank N exited" summary come last).
        lines = [l.strip() for l in out.strip().splitlines()] or ["no output"]
        said = [l for l in lines if l.startswith("zerotrain train:")] or \
            [l for l in lines if not l.startswith(("zerotrain run:", "[zerotrain]"))] or lines
        r.reason = said[0][:300]
        r.status = "refused" if ("not supported" in r.reason or "refuse" in r.reason) else "failed"
        if r.status == "failed":
            r.reason = f"exit {rc}: {r.reason} (log: {r.log})"
        return r
    timed = [t for s, t in times.items() if s > ctx.warmup] or list(times.values())
    if not timed:
        r.reason = f"no step lines in the output (log: {r.log})"
        return r
    r.step_ms_median = statistics.median(timed)
    tokens = HYPER["micro_batch"] * HYPER["seq_len"] * procs
    r.tokens_per_s = tokens / (r.step_ms_median / 1e3)
    r.tokens_per_s_best = tokens / (min(timed) / 1e3)
    r.status = "ok"
    return r


def run_peer(ctx, mode, layout, env, steps=None, write_init=None, zt_init=False, tag=""):
    procs, threads = layout
    steps = steps or ctx.steps
    h = HYPER
    r = Result("pytorch", mode, procs, threads, load_before=load1())
    cmd = [PY, os.path.join(HERE, "gpt_peer.py"), "--data", ctx.data, "--mode", mode,
           "--procs", str(procs), "--threads", str(threads), "--steps", str(steps),
           "--warmup", str(min(ctx.warmup, steps - 1)), "--seed", str(h["seed"]),
           "--layers", "4", "--width", "256", "--heads", "4", "--vocab", "8192",
           "--block", "256", "--seq-len", str(h["seq_len"]),
           "--micro-batch", str(h["micro_batch"]), "--lr", str(h["lr"]),
           "--min-lr", str(h["min_lr"]), "--warmup-steps", str(h["warmup_steps"]),
           "--warmup-type", "linear", "--betas", *map(str, h["betas"]), "--eps", str(h["eps"]),
           "--weight-decay", str(h["weight_decay"]), "--max-grad-norm", str(h["max_grad_norm"])]
    if write_init:
        cmd += ["--write-init", write_init]
    if zt_init:
        cmd += ["--zt-init"]
    r.log = _unique(os.path.join(ctx.work, f"peer-{mode}-{procs}x{threads}{tag}"))
    out, rc, r.wall_s = _run(cmd, dict(env), r.log, ctx.timeout_s)
    doc = None
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
                break
            except json.JSONDecodeError:
                pass
    if rc != 0 or doc is None:
        tail = out.strip().splitlines()[-1:] or ["no output"]
        r.reason = f"exit {rc}: {tail[0][:300]} (log: {r.log})"
        return r
    if not doc.get("available", True):
        r.status, r.reason = "unavailable", doc.get("reason", "")
        return r
    r.status = "ok"
    r.tokens_per_s, r.step_ms_median = doc["tokens_per_s"], doc["step_ms_median"]
    r.tokens_per_s_best = doc["tokens_per_s_best"]
    r.peak_rss_mib, r.losses = doc["peak_rss_mib"], doc["losses"]
    return r

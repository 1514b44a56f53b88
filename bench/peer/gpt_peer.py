#!/usr/bin/python3
"""The PyTorch peer of `zerotrain train`: the same GPT-2, data and hyperparameters.

    /usr/bin/python3 bench/peer/gpt_peer.py --data DIR --mode ddp-fp32 --procs 2 --threads 1
    ... --mode zero1-fp32 | ddp-bf16-autocast | fsdp
    ... --write-init init.safetensors      # rank 0 writes its initial weights (HF names)
    ... --init init.safetensors            # start from these weights instead
    python3 bench/peer/gpt_peer.py --device cuda --mode ddp-bf16-autocast --data DIR \
        --layers 12 --width 768 --heads 12 --vocab 50257 --block 1024 --seq-len 1024 \
        --micro-batch 16                    # GPT-2 124M on one GPU (torch >= 2.0 with CUDA)

Prints ONE line of JSON: mode, procs, threads, device, tokens_per_s (global,
the median step after --warmup steps), peak RSS of each rank (VmHWM), the
losses of every step. A mode this torch cannot run (FSDP without CUDA in
Debian's 1.13) prints {"mode": ..., "available": false, "reason": ...} after
trying.

Like for like with zerotrain (src/model, src/kernels/cpu, src/train, src/optim):
  * model: pre-LN GPT-2 blocks, GELU tanh approximation, LayerNorm eps 1e-5,
    causal attention scaled by 1/sqrt(head size), tied lm head, mean
    cross-entropy over the targets >= 0; parameter names are HF GPT-2's;
  * init: normal(0, 0.02), residual projections 0.02/sqrt(2L), biases 0,
    LayerNorm 1/0, from torch's RNG; or --init FILE (the loss check loads one
    file on both sides), or --zt-init (our counter-based values, zt_init.py);
  * data: zerotrain's token shards and loader order (zt_data.py);
  * optimizer: AdamW on every tensor (decoupled decay on all, as our engine
    and DeepSpeed do with one param group), clip_grad_norm_ (max/(norm+1e-6),
    as ours), WarmupLR with DeepSpeed's step convention (lr_at);
  * precision: fp32, or torch.autocast(cpu, bf16) around forward + loss.
Processes start with torch.multiprocessing.spawn and meet over Gloo on
127.0.0.1 (torchrun is broken on Debian's Python 3.11). Each process runs
--threads threads (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, set_num_threads).

--device cuda (default cpu; the device check, scripts/device_check.sh, runs
it on one H100/H200) is PyTorch eager at its best on one GPU, for the
throughput ratio: one process, the model and every batch on cuda:0, no
process group and no DDP wrapper (one GPU: --procs must be 1; modes
ddp-fp32 and ddp-bf16-autocast only, named as on the CPU). Differences from
the CPU path, all the usual fast paths of eager PyTorch on a GPU:
  * attention is torch.nn.functional.scaled_dot_product_attention(
    is_causal=True), which picks a fused kernel: FlashAttention(-2) for
    bf16 under autocast (or cuDNN's fused attention where that torch
    prefers it on Hopper), the memory-efficient (CUTLASS) kernel for fp32;
    never the [T, T] score matrix. Same math, scale 1/sqrt(head size). The
    CPU keeps the explicit masked softmax above;
  * AdamW(fused=True) where this torch has it (else foreach, else the
    default loop; the JSON's "adamw" says which), clip_grad_norm_ as above;
  * ddp-fp32 runs IEEE fp32 matmuls: TF32 off (torch.backends.cuda.matmul
    fp32_precision "ieee" on torch >= 2.9, allow_tf32 = False before);
    ddp-bf16-autocast is torch.autocast("cuda", dtype=torch.bfloat16);
  * timing: the batch is built on the host before the clock (as zt_train_bench
    does), its copy to the GPU is inside; each step ends with
    torch.cuda.synchronize() before the clock is read;
  * no torch.compile (it costs about a minute of the check's budget).
Init is the same as on the CPU (built there from torch's RNG, or --init /
--zt-init, then moved). The JSON line adds "device": "cuda:0 (<name>)",
"peak_mem_bytes" (torch.cuda.max_memory_allocated), "attention", "adamw"
and "tf32". Without a usable GPU (torch.cuda.is_available() False, or a
torch without scaled_dot_product_attention) it exits 1 with one line on
stderr, before any work; a run that fails on the GPU (out of memory, a CUDA
error) prints its traceback to stderr, the JSON line with "available":
false and the reason, and exits 1.
"""

import argparse
import datetime
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import time
import traceback

MODES = ("ddp-fp32", "zero1-fp32", "ddp-bf16-autocast", "fsdp")
DEVICES = ("cpu", "cuda")
CUDA_MODES = ("ddp-fp32", "ddp-bf16-autocast")
HF_TRANSPOSED = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight",
                 ".mlp.c_proj.weight")  # HF's Conv1D stores [in, out]
# Keys an HF GPT-2 file may carry that are not parameters of ours.
HF_EXTRAS = (".attn.bias", ".attn.masked_bias", "lm_head.weight")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="directory of train_*.bin shards")
    p.add_argument("--mode", choices=MODES, default="ddp-fp32")
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="cpu (ranks over Gloo) or cuda (one process on cuda:0)")
    p.add_argument("--procs", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before the median")
    p.add_argument("--seed", type=int, default=1234, help="data order (and torch init)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--block", type=int, default=256, help="rows of wpe (the model's block size)")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--micro-batch", type=int, default=8, help="per rank")
    p.add_argument("--lr", type=float, default=2e-3, help="warmup_max_lr")
    p.add_argument("--min-lr", type=float, default=0.0, help="warmup_min_lr")
    p.add_argument("--warmup-steps", type=int, default=10, help="warmup_num_steps")
    p.add_argument("--warmup-type", choices=("linear", "log"), default="linear")
    p.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.95))
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--init", help="initial weights (safetensors, HF GPT-2 names)")
    p.add_argument("--zt-init", action="store_true",
                   help="initialise exactly as zerotrain does with --seed (zt_init.py)")
    p.add_argument("--write-init", help="rank 0 writes its initial weights here (HF names, "
                   "fp32); every rank then starts from the file")
    a = p.parse_args(argv)
    if a.procs < 1 or a.threads < 1 or a.steps < 1 or a.warmup < 0:
        p.error("--procs, --threads and --steps must be >= 1, --warmup >= 0")
    if a.width % a.heads:
        p.error(f"--width {a.width} must be a multiple of --heads {a.heads}")
    if a.seq_len > a.block:
        p.error(f"--seq-len {a.seq_len} exceeds --block {a.block}")
    if a.device == "cuda" and a.procs != 1:
        p.error(f"--device cuda runs one process on one GPU: --procs must be 1, got {a.procs}")
    if a.device == "cuda" and a.mode not in CUDA_MODES:
        p.error(f"--device cuda runs --mode {' or '.join(CUDA_MODES)} (one GPU, no process "
                f"group), not {a.mode}")
    return a


def lr_at(step, a):
    """WarmupLR as src/optim/lr_scheduler.cc (DeepSpeed): t = last_batch_iteration
    is -1 for the first optimizer step and grows by one after each."""
    t, n = step - 2, max(2, a.warmup_steps)
    if t < 0:
        return a.min_lr
    if t >= n:
        return a.lr
    gamma = t / n if a.warmup_type == "linear" else math.log(t + 1) / math.log(n)
    return a.min_lr + (a.lr - a.min_lr) * gamma


def build_model(a):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    sdpa = getattr(a, "device", "cpu") == "cuda"

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(a.width, 3 * a.width)
            self.c_proj = nn.Linear(a.width, a.width)
            # A plain attribute, not a buffer: DDP would broadcast it, and Gloo has no bool.
            self.mask = None if sdpa else torch.tril(torch.ones(a.block, a.block,
                                                                dtype=torch.bool))

        def forward(self, x):
            B, T, C = x.shape
            hs = C // a.heads
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, a.heads, hs).transpose(1, 2) for t in (q, k, v))
            if sdpa:  # the fused kernels (module docstring); default scale 1/sqrt(hs)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(a.width, 4 * a.width)
            self.c_proj = nn.Linear(4 * a.width, a.width)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(a.width, eps=1e-5)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(a.width, eps=1e-5)
            self.mlp = Mlp()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(a.vocab, a.width)
            self.wpe = nn.Embedding(a.block, a.width)
            self.h = nn.ModuleList(Block() for _ in range(a.layers))
            self.ln_f = nn.LayerNorm(a.width, eps=1e-5)

        def forward(self, idx, targets):
            pos = torch.arange(idx.shape[1], dtype=torch.long, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
            return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1),
                                   ignore_index=-1)

    model = Gpt()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.zero_()
            elif ".ln_" in name or name.startswith("ln_f"):
                p.fill_(1.0)
            elif name.endswith(("attn.c_proj.weight", "mlp.c_proj.weight")):
                p.normal_(0.0, 0.02 / math.sqrt(2 * a.layers))
            else:
                p.normal_(0.0, 0.02)
    return model


def load_init(model, path):
    """Copies an HF-named safetensors file into the model (Conv1D weights transposed)."""
    import torch
    from safetensors_io import read_safetensors, to_torch

    raw = {k[len("transformer."):] if k.startswith("transformer.") else k: v
           for k, v in read_safetensors(path).items()}
    params = dict(model.named_parameters())
    unknown = [k for k in raw if k not in params and not k.endswith(HF_EXTRAS)]
    missing = [k for k in params if k not in raw]
    if unknown or missing:
        raise SystemExit(f"gpt_peer: {path}: missing tensors {missing[:5]}, "
                         f"unknown tensors {unknown[:5]}")
    with torch.no_grad():
        for name, p in params.items():
            t = to_torch(raw[name]).float()
            if name.endswith(HF_TRANSPOSED):
                t = t.t()
            if name == "wte.weight" and t.shape[0] > p.shape[0]:
                t = t[: p.shape[0]]  # a padded-vocabulary export
            if tuple(t.shape) != tuple(p.shape):
                raise SystemExit(f"gpt_peer: {path}: tensor {name} has shape "
                                 f"{list(raw[name].shape)}, the model needs "
                                 f"{list(p.shape)} (HF layout)")
            p.copy_(t)


def write_init(model, path):
    from safetensors_io import from_torch, write_safetensors

    out = {}
    for name, p in model.named_parameters():
        out[name] = from_torch(p.t() if name.endswith(HF_TRANSPOSED) else p)
    write_safetensors(path, out, {"format": "pt", "writer": "bench/peer/gpt_peer.py"})


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def wrap(model, a):
    """(wrapped model, optimizer, clip function) for the mode."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    kw = dict(lr=lr_at(1, a), betas=tuple(a.betas), eps=a.eps, weight_decay=a.weight_decay)
    if a.mode == "fsdp":
        try:
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        except Exception as e:  # noqa: BLE001 - Debian's 1.13 on Python 3.11 fails here
            raise RuntimeError(f"import torch.distributed.fsdp failed: {type(e).__name__}: {e}")
        m = FSDP(model)
        opt = torch.optim.AdamW(m.parameters(), **kw)
        return m, opt, lambda: m.clip_grad_norm_(a.max_grad_norm)
    m = DDP(model)
    if a.mode == "zero1-fp32":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.AdamW, **kw)
    else:
        opt = torch.optim.AdamW(m.parameters(), **kw)
    return m, opt, lambda: torch.nn.utils.clip_grad_norm_(m.parameters(), a.max_grad_norm)


def optimizer_step(m, opt, clip, rows, step, a):
    """Forward + loss (autocast in the bf16 mode, on rows' device), backward,
    clipping, AdamW at lr_at(step); returns the loss tensor (not synchronised)."""
    import torch

    x, y = rows[:, :-1], rows[:, 1:]
    for g in opt.param_groups:
        g["lr"] = lr_at(step, a)
    if a.mode == "ddp-bf16-autocast":
        with torch.autocast(rows.device.type, dtype=torch.bfloat16):
            loss = m(x, y)
    else:
        loss = m(x, y)
    loss.backward()
    clip()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def train_step(m, opt, clip, loader, step, a):
    import torch
    import torch.distributed as dist

    rows = torch.tensor(loader.next(), dtype=torch.long)
    loss = optimizer_step(m, opt, clip, rows, step, a)
    mean = loss.detach().float().clone()
    dist.all_reduce(mean)  # the mean over ranks, as zerotrain logs it
    return mean.item() / a.procs


def initial_model(a, rank, barrier):
    """The model with its initial weights, on the CPU: torch's RNG from --seed,
    or --zt-init, then --write-init / --init."""
    import torch

    torch.manual_seed(a.seed)
    model = build_model(a)
    if a.zt_init:
        from zt_init import zt_init_tensor
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.from_numpy(zt_init_tensor(name, tuple(p.shape), a.seed, a.layers)))
    init = a.init
    if a.write_init:
        # Rank 0 writes, then every rank (rank 0 too) trains from the file it
        # wrote, as zerotrain's --init will: the file round-trips.
        if rank == 0:
            write_init(model, a.write_init)
        barrier()
        init = a.write_init
    if init:
        load_init(model, init)
    return model


def cuda_problem(torch):
    """Why --device cuda cannot run with this torch, or None."""
    if not torch.cuda.is_available():
        why = ("it was built without CUDA" if torch.version.cuda is None
               else f"built for CUDA {torch.version.cuda}, it finds no usable GPU or driver")
        return f"torch {torch.__version__} has no CUDA device ({why}; torch.cuda.is_available() " \
               f"is False)"
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        return f"torch {torch.__version__} has no scaled_dot_product_attention (needs >= 2.0)"
    return None


def disable_tf32(torch):
    """IEEE fp32 matmuls on the GPU. torch >= 2.9 has a per-backend setting and
    warns on the legacy flag (reading one after writing the other raises), so
    the new one where it exists. Returns what was set."""
    matmul = torch.backends.cuda.matmul
    try:
        matmul.fp32_precision = "ieee"  # torch < 2.9: AssertionError "Unknown attribute"
        return "off (fp32_precision ieee)"
    except (AssertionError, AttributeError):
        matmul.allow_tf32 = False
        return "off (allow_tf32 False)"


def cuda_adamw(params, kw):
    """(AdamW, which implementation): fused where this torch has it."""
    import torch

    for extra, name in (({"fused": True}, "fused"), ({"foreach": True}, "foreach"), ({}, "loop")):
        try:
            return torch.optim.AdamW(params, **kw, **extra), name
        except (TypeError, RuntimeError, ValueError):
            continue
    raise AssertionError("unreachable: the plain AdamW always constructs")


def run_cuda(a):
    """--device cuda: one process, one GPU (cuda:0), no process group, no DDP.
    Returns what a CPU rank writes to its rankN.json, plus the GPU's keys."""
    import torch
    from zt_data import Loader, read_split

    torch.set_num_threads(a.threads)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    # ddp-bf16-autocast keeps torch's default (no TF32 for fp32 matmuls either).
    tf32 = disable_tf32(torch) if a.mode == "ddp-fp32" else "default"
    torch.cuda.reset_peak_memory_stats(dev)
    model = initial_model(a, 0, lambda: None).to(dev)
    params = list(model.parameters())
    opt, adamw = cuda_adamw(params, dict(lr=lr_at(1, a), betas=tuple(a.betas), eps=a.eps,
                                         weight_decay=a.weight_decay))
    clip = lambda: torch.nn.utils.clip_grad_norm_(params, a.max_grad_norm)  # noqa: E731
    loader = Loader(read_split(a.data, "train"), a.seq_len, a.micro_batch, 1, 0, a.seed)
    losses, times = [], []
    for step in range(1, a.steps + 1):
        host = torch.tensor(loader.next(), dtype=torch.long)
        t0 = time.perf_counter()  # the previous step ended with a synchronize
        loss = optimizer_step(model, opt, clip, host.to(dev), step, a)
        torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    return {"rank": 0, "losses": losses, "times": times, "peak_rss_mib": peak_rss_mib(),
            "device": f"cuda:0 ({torch.cuda.get_device_name(dev)})",
            "peak_mem_bytes": torch.cuda.max_memory_allocated(dev),
            "attention": "sdpa", "adamw": adamw, "tf32": tf32}


def worker(rank, a, port, out_dir):
    import torch
    import torch.distributed as dist
    from zt_data import Loader, read_split

    torch.set_num_threads(a.threads)
    # A lost peer fails a collective within 3 minutes, not Gloo's default 30.
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=a.procs, timeout=datetime.timedelta(seconds=180))
    model = initial_model(a, rank, dist.barrier)
    result = {"rank": rank}
    try:
        m, opt, clip = wrap(model, a)
        loader = Loader(read_split(a.data, "train"), a.seq_len, a.micro_batch, a.procs, rank,
                        a.seed)
        losses, times = [], []
        for step in range(1, a.steps + 1):
            t0 = time.perf_counter()
            losses.append(train_step(m, opt, clip, loader, step, a))
            times.append(time.perf_counter() - t0)
        result.update(losses=losses, times=times)
    except Exception as e:  # noqa: BLE001 - reported as the mode's reason
        if a.mode != "fsdp":
            raise
        result["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e) else ''}"
    result["peak_rss_mib"] = peak_rss_mib()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.barrier()
    # No teardown: torch 1.13's ProcessGroupGloo destructor, run from the DDP
    # Reducer's, can deadlock against the GIL (seen: rank 0 hung at exit while
    # rank 1 had finished). Everything is written; leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    a = parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree,
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # in the spawned ranks either
    # Before torch loads: OpenMP and OpenBLAS size their pools at start.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    import torch
    import torch.multiprocessing as mp

    tokens_per_step = a.micro_batch * a.seq_len * a.procs
    head = {"impl": "pytorch", "mode": a.mode, "procs": a.procs, "threads": a.threads,
            "torch": torch.__version__,
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"), "device": "cpu"}
    gpu = {}
    if a.device == "cuda":
        problem = cuda_problem(torch)
        if problem:
            raise SystemExit(f"gpt_peer: --device cuda: {problem}")
        try:
            ranks = [run_cuda(a)]
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one
            traceback.print_exc()
            reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(json.dumps({**head, "device": "cuda:0", "available": False,
                              "reason": f"{type(e).__name__}: {reason}"}), flush=True)
            return 1
        gpu = {k: ranks[0].pop(k) for k in ("peak_mem_bytes", "attention", "adamw", "tf32")}
        head["device"] = ranks[0].pop("device")
    else:
        with tempfile.TemporaryDirectory(prefix="gpt_peer.") as out_dir:
            mp.spawn(worker, args=(a, free_port(), out_dir), nprocs=a.procs, join=True)
            ranks = []
            for r in range(a.procs):
                with open(os.path.join(out_dir, f"rank{r}.json")) as f:
                    ranks.append(json.load(f))
    errors = [r["error"] for r in ranks if "error" in r]
    if errors:
        print(json.dumps({**head, "available": False, "reason": errors[0]}), flush=True)
        return 0
    timed = ranks[0]["times"][a.warmup:] or ranks[0]["times"]
    median = statistics.median(timed)
    print(json.dumps({**head, "available": True, "tokens_per_s": tokens_per_step / median,
                      "step_ms_median": median * 1e3,
                      # The fastest timed step: what a quiet moment of a shared machine gave.
                      "tokens_per_s_best": tokens_per_step / min(timed),
                      "tokens_per_step": tokens_per_step,
                      "steps": a.steps, "warmup": a.warmup,
                      "peak_rss_mib": [round(r["peak_rss_mib"], 1) for r in ranks], **gpu,
                      "losses": ranks[0]["losses"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""An independent PyTorch reference of Hugging Face's Llama family (llama, mistral, qwen2).

The C++ tests of zerotrain's Llama check their logits, losses, gradients and
loss curves against this file. It re-implements HF transformers'
LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM (eager attention)
with plain tensors, without `transformers`; run it with Debian's torch:

    /usr/bin/python3 tests/model/llama/llama_reference.py make --config CFG.json --out DIR \\
        --seed S [--std 0.1] [--dtype float32|float16|bfloat16] [--shard-bytes N]
    /usr/bin/python3 tests/model/llama/llama_reference.py run --model DIR \\
        --tokens TOK.i32 --targets TGT.i32 --batch B --seq T --out OUT.safetensors \\
        [--dtype float64|float32]
    /usr/bin/python3 tests/model/llama/llama_reference.py train --model DIR --data DATA.i32 \\
        --batch B --seq T --steps N --lr LR --beta1 B1 --beta2 B2 --eps E \\
        --weight-decay WD [--dtype float32|float64]
    /usr/bin/python3 tests/model/llama/llama_reference.py generate --model DIR \
        --prompt 1,2,3 --new N [--dtype float64|float32]
    /usr/bin/python3 tests/model/llama/llama_reference.py selfcheck   # finite differences etc.

make: random weights, deterministic from --seed (one torch.Generator, tensors
  drawn in the HF state-dict order below, always in float32 and then cast to
  --dtype): matrices and embeddings normal(0, std), RMSNorm weights
  1 + 0.1*normal, biases 0.1*normal. Writes DIR/config.json (the given config
  plus "architectures" and "torch_dtype") and DIR/model.safetensors (metadata
  {"format": "pt"}); with --shard-bytes N, always HF's sharded form instead:
  model-0000i-of-0000K.safetensors plus model.safetensors.index.json
  {"metadata": {"total_size": bytes}, "weight_map": {name: file}}, tensors
  split in order, a new shard started when the current one would pass N bytes.
  Weights files already in DIR are removed first.
run: loads DIR (single or sharded; F32/F16/BF16/F64 converted to --dtype),
  tokens and targets are raw little-endian int32 [B, T] (targets are NOT
  shifted here; a target < 0 is ignored), computes logits, per-token losses
  (0 where ignored), the mean loss over targets >= 0 and its backward. OUT
  holds "logits" [B,T,V], "loss" [1], "losses" [B,T] and "grad.<HF name>"
  for every parameter (tied embeddings: one summed "grad.model.embed_tokens.weight",
  no lm_head grad), F64 for --dtype float64 else F32 (--out-dtype overrides).
  Prints {"loss": x}.
generate: greedy decoding without a cache: N times, the whole sequence's
  forward, then torch.argmax of the last position's logits appended (the
  first largest on ties). Prints {"tokens": [the N new ids]}.
train: raw int32 tokens; step s takes the B*T+1 tokens starting at
  (s*B*T) mod (len - B*T - 1); row b's inputs are w[b*T : b*T+T] and its
  targets w[b*T+1 : b*T+T+1]. torch.optim.AdamW on every parameter (one group,
  decay on all), no clipping, no schedule. Prints {"step": s, "loss": x} per
  step (the loss of the step's batch before its update, and the step's
  wall seconds: bench/llama_compare's timing), s from 0. With
  --zt-data DIR instead of --data: zerotrain's token shards in zerotrain's
  loader order (--seed, --world-size, --grad-accum; --batch is the micro-
  batch per rank): each step's batch is every rank's micro-batches of the
  step, so the losses are `zerotrain train --data DIR`'s.

Parameters (HF names, state-dict order; [out, in] as nn.Linear stores them):
  model.embed_tokens.weight [V, C]; per layer i, prefix model.layers.{i}.:
  self_attn.q_proj.weight [H*D, C] (+ .bias), k_proj [KV*D, C] (+ .bias),
  v_proj [KV*D, C] (+ .bias), o_proj [C, H*D] (+ .bias), mlp.gate_proj [I, C],
  mlp.up_proj [I, C], mlp.down_proj [C, I] (+ .bias each with mlp_bias),
  input_layernorm.weight [C], post_attention_layernorm.weight [C];
  model.norm.weight [C]; lm_head.weight [V, C] (absent when tied).
Biases: llama q,k,v,o with attention_bias and gate,up,down with mlp_bias;
  qwen2 always q,k,v (never o); mistral none.

Semantics (HF, eager attention), with dtype the run dtype:
  * RMSNorm in float32 (float64 when the run is float64):
    w * (x * rsqrt(mean(x^2) + eps)).to(dtype);
  * RoPE: inv_freq = 1 / theta^(arange(0, D, 2) / D) in float32, rope_scaling
    "default" | "linear" (inv_freq / factor) | "llama3" (HF's
    _compute_llama3_parameters); freqs = outer(positions 0..T-1, inv_freq) in
    float32, emb = cat(freqs, freqs), cos/sin in float32 then cast to dtype
    (also in float64 runs, as HF does); x*cos + rotate_half(x)*sin with
    rotate_half(x) = cat(-x2, x1);
  * GQA: kv head j serves query heads j*n_rep .. j*n_rep + n_rep - 1;
  * softmax(q k^T * D^-0.5 + causal mask) in float32 (float64 runs: float64);
    a sliding window W: query i sees key j iff i - W < j <= i, on every layer
    for mistral, on layers >= max_window_layers (HF's default 28) for qwen2
    with use_sliding_window;
  * h = x + o_proj(attn(input_layernorm(x)));
    out = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = post_attention_layernorm(h);
    model.norm, lm_head (embed_tokens when tie_word_embeddings).
Config defaults are HF's where they are the same for the three families
(rope_theta 10000, rms_norm_eps 1e-6, head_dim hidden/heads, tie False, biases
False, hidden_act silu); where HF's default differs by family
(num_key_value_heads for mistral/qwen2, sliding_window for mistral) the key is
required. Anything this file does not implement (other rope types, other
activations) is an error, never ignored.
"""

import argparse
import contextlib
import io
import json
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in bench/peer
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "peer"))
from safetensors_io import (RawTensor, SafetensorsError, from_torch,  # noqa: E402
                            read_safetensors, to_torch, write_safetensors)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PROG = "llama_reference"
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                 "qwen2": "Qwen2ForCausalLM"}
DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
          "bfloat16": torch.bfloat16}
FILE_DTYPES = ("F32", "F16", "BF16", "F64")
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"


class LlamaRefError(Exception):
    """A bad config, weights file or input; main() prints it and exits 1."""


# ----------------------------------------------------------------------------- config

@dataclass
class Config:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict  # None, or with "rope_type" normalised
    tie: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    sliding_window: int  # None: plain causal
    window_from: int = 0  # layers >= this slide (qwen2's max_window_layers)


def parse_config(d, where):
    def fail(msg):
        raise LlamaRefError(f"{where}: {msg}")

    if not isinstance(d, dict):
        fail("config is not a JSON object")
    mt = d.get("model_type")
    if mt not in ARCHITECTURES:
        fail(f"model_type {mt!r} is not one of {sorted(ARCHITECTURES)}")

    def integer(key):
        v = d.get(key)
        if v is None:
            fail(f"{key} is required")
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            fail(f"{key} must be a positive integer, got {v!r}")
        return v

    def number(key, default):
        v = d.get(key, default)
        if v is None:
            v = default
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            fail(f"{key} must be a positive number, got {v!r}")
        return float(v)

    def flag(key, default):
        v = d.get(key, default)
        if v is None:
            v = default
        if not isinstance(v, bool):
            fail(f"{key} must be true or false, got {v!r}")
        return v

    vocab = integer("vocab_size")
    hidden = integer("hidden_size")
    inter = integer("intermediate_size")
    layers = integer("num_hidden_layers")
    heads = integer("num_attention_heads")
    if mt == "llama":  # LlamaConfig: None -> num_attention_heads
        kv = d.get("num_key_value_heads")
        kv = heads if kv is None else kv
        if not isinstance(kv, int) or isinstance(kv, bool) or kv < 1:
            fail(f"num_key_value_heads must be a positive integer, got {kv!r}")
    else:  # MistralConfig defaults to 8, Qwen2Config to 32: say it explicitly
        if d.get("num_key_value_heads") is None:
            fail(f"num_key_value_heads is required for {mt} (HF's default differs by family)")
        kv = integer("num_key_value_heads")
    if heads % kv:
        fail(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
    head_dim = d.get("head_dim")
    if head_dim is None:
        if hidden % heads:
            fail(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads} "
                 "and head_dim is not given")
        head_dim = hidden // heads
    if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 2 or head_dim % 2:
        fail(f"head_dim must be an even integer >= 2, got {head_dim!r}")
    act = d.get("hidden_act", "silu")
    if act != "silu":
        fail(f"hidden_act {act!r} is not implemented (only silu)")
    prf = d.get("partial_rotary_factor", 1.0)
    if prf not in (None, 1, 1.0):
        fail(f"partial_rotary_factor {prf!r} is not implemented (only 1.0)")

    rs = d.get("rope_scaling")
    if rs is not None:
        if not isinstance(rs, dict):
            fail(f"rope_scaling must be null or an object, got {rs!r}")
        rtype = rs.get("rope_type", rs.get("type"))
        if rtype not in ("default", "linear", "llama3"):
            fail(f"rope_scaling type {rtype!r} is not implemented (default, linear, llama3)")
        rs = dict(rs, rope_type=rtype)
        need = {"default": (), "linear": ("factor",),
                "llama3": ("factor", "low_freq_factor", "high_freq_factor",
                           "original_max_position_embeddings")}[rtype]
        for k in need:
            v = rs.get(k)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
                fail(f"rope_scaling[{k!r}] must be a positive number for {rtype}, got {v!r}")
        if rtype == "llama3" and rs["high_freq_factor"] == rs["low_freq_factor"]:
            fail("rope_scaling llama3 needs high_freq_factor != low_freq_factor")
        if rtype == "default":
            rs = None

    if mt == "llama":
        attn_bias = flag("attention_bias", False)
        qkv_bias, o_bias, mlp_bias = attn_bias, attn_bias, flag("mlp_bias", False)
    else:  # HF hard-codes these; a config asking otherwise is a mistake, not a choice
        for k in ("attention_bias", "mlp_bias"):
            if d.get(k):
                fail(f"{k} is true but HF's {ARCHITECTURES[mt]} ignores it; remove it")
        qkv_bias, o_bias, mlp_bias = mt == "qwen2", False, False

    window = None
    if mt == "mistral":
        if "sliding_window" not in d:
            fail("sliding_window (null or an integer) is required for mistral "
                 "(MistralConfig's default is 4096)")
        window = d["sliding_window"]
        if window is not None and (not isinstance(window, int) or isinstance(window, bool)
                                   or window < 1):
            fail(f"sliding_window must be null or a positive integer, got {window!r}")
    window_from = 0
    if mt == "qwen2" and d.get("use_sliding_window"):
        # HF Qwen2Config: sliding_window applies to layers i >= max_window_layers (28).
        window = d.get("sliding_window")
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            fail(f"use_sliding_window needs a positive integer sliding_window, got {window!r}")
        window_from = d.get("max_window_layers", 28)

    return Config(mt, vocab, hidden, inter, layers, heads, kv, head_dim,
                  number("rms_norm_eps", 1e-6), number("rope_theta", 10000.0), rs,
                  flag("tie_word_embeddings", False), qkv_bias, o_bias, mlp_bias, window,
                  window_from)


def load_config(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise LlamaRefError(f"cannot read config {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise LlamaRefError(f"{path}: not JSON: {e}") from None
    return d, parse_config(d, path)


def param_shapes(cfg):
    """{HF name: shape} in HF's state-dict order."""
    C, I, V, D = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, cfg.head_dim
    q, kv = cfg.num_heads * D, cfg.num_kv_heads * D
    out = {"model.embed_tokens.weight": [V, C]}
    for i in range(cfg.num_layers):
        p = f"model.layers.{i}."
        for proj, shape, bias in (("q_proj", [q, C], cfg.qkv_bias), ("k_proj", [kv, C], cfg.qkv_bias),
                                  ("v_proj", [kv, C], cfg.qkv_bias), ("o_proj", [C, q], cfg.o_bias)):
            out[f"{p}self_attn.{proj}.weight"] = shape
            if bias:
                out[f"{p}self_attn.{proj}.bias"] = [shape[0]]
        for proj, shape in (("gate_proj", [I, C]), ("up_proj", [I, C]), ("down_proj", [C, I])):
            out[f"{p}mlp.{proj}.weight"] = shape
            if cfg.mlp_bias:
                out[f"{p}mlp.{proj}.bias"] = [shape[0]]
        out[f"{p}input_layernorm.weight"] = [C]
        out[f"{p}post_attention_layernorm.weight"] = [C]
    out["model.norm.weight"] = [C]
    if not cfg.tie:
        out["lm_head.weight"] = [V, C]
    return out


# ----------------------------------------------------------------------------- model

def rope_inv_freq(cfg):
    """HF's inv_freq (float32) after rope_scaling."""
    D = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    rs = cfg.rope_scaling
    if rs is None:
        return inv_freq
    if rs["rope_type"] == "linear":
        return inv_freq / rs["factor"]
    # llama3: transformers.modeling_rope_utils._compute_llama3_parameters
    factor = rs["factor"]
    low_freq_factor = rs["low_freq_factor"]
    high_freq_factor = rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rope_cos_sin(cfg, T, dtype):
    inv_freq = rope_inv_freq(cfg)
    pos = torch.arange(T, dtype=torch.int64).float()
    freqs = torch.outer(pos, inv_freq)  # float32, as HF's (inv_freq @ positions)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)  # [T, D]


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rms_norm(x, w, eps, compute):
    xf = x.to(compute)
    var = xf.pow(2).mean(-1, keepdim=True)
    xf = xf * torch.rsqrt(var + eps)
    return w * xf.to(x.dtype)


def repeat_kv(x, n_rep):
    b, kvh, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)


def attention_mask(cfg, T, layer):
    """[T, T] bool, True where query i may see key j in this layer."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    ok = j <= i
    if cfg.sliding_window is not None and layer >= cfg.window_from:
        ok = ok & (j > i - cfg.sliding_window)
    return ok


def forward(cfg, P, tokens, lora=None):
    """Logits [B, T, V] in the parameters' dtype. P: {HF name: tensor}. lora: PEFT's
    LoRA Linear, {module name: (A [r, in], B [out, r], scaling)}: y = W x + b + s B A x."""
    dtype = P["model.embed_tokens.weight"].dtype
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    B, T = tokens.shape
    H, KV, D = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    cos, sin = rope_cos_sin(cfg, T, dtype)
    scaling = D ** -0.5

    def lin(x, name):
        y = F.linear(x, P[name + ".weight"], P.get(name + ".bias"))
        if lora and name in lora:
            a, b, s = lora[name]
            y = y + s * F.linear(F.linear(x, a), b)
        return y

    x = F.embedding(tokens, P["model.embed_tokens.weight"])
    for li in range(cfg.num_layers):
        p = f"model.layers.{li}."
        n = rms_norm(x, P[p + "input_layernorm.weight"], cfg.rms_norm_eps, compute)
        q = lin(n, p + "self_attn.q_proj").view(B, T, H, D).transpose(1, 2)
        k = lin(n, p + "self_attn.k_proj").view(B, T, KV, D).transpose(1, 2)
        v = lin(n, p + "self_attn.v_proj").view(B, T, KV, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, H // KV)
        v = repeat_kv(v, H // KV)
        s = torch.matmul(q, k.transpose(2, 3)) * scaling
        s = s.masked_fill(~attention_mask(cfg, T, li), float("-inf"))
        a = torch.softmax(s, dim=-1, dtype=compute).to(dtype)
        o = torch.matmul(a, v).transpose(1, 2).reshape(B, T, H * D)
        h = x + lin(o, p + "self_attn.o_proj")
        n = rms_norm(h, P[p + "post_attention_layernorm.weight"], cfg.rms_norm_eps, compute)
        m = F.silu(lin(n, p + "mlp.gate_proj")) * lin(n, p + "mlp.up_proj")
        x = h + lin(m, p + "mlp.down_proj")
    x = rms_norm(x, P["model.norm.weight"], cfg.rms_norm_eps, compute)
    head = P["model.embed_tokens.weight"] if cfg.tie else P["lm_head.weight"]
    return F.linear(x, head)


def losses_of(logits, targets):
    """(per-token losses [B, T], 0 where target < 0; mean over targets >= 0)."""
    V = logits.shape[-1]
    compute = torch.float64 if logits.dtype == torch.float64 else torch.float32
    keep = targets >= 0
    count = int(keep.sum())
    if count == 0:
        raise LlamaRefError("no target >= 0: the mean loss is undefined")
    t = torch.where(keep, targets, torch.full_like(targets, -100)).long()
    per = F.cross_entropy(logits.to(compute).reshape(-1, V), t.reshape(-1),
                          ignore_index=-100, reduction="none").reshape(targets.shape)
    return per, per.sum() / count


# ----------------------------------------------------------------------------- weights I/O

def init_weights(cfg, seed, std):
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in param_shapes(cfg).items():
        r = torch.randn(shape, generator=g, dtype=torch.float32)
        if name.endswith("layernorm.weight") or name == "model.norm.weight":
            out[name] = 1.0 + 0.1 * r
        elif name.endswith(".bias"):
            out[name] = 0.1 * r
        else:
            out[name] = std * r
    return out


def weight_files(d):
    return [f for f in os.listdir(d)
            if f in (SINGLE_FILE, INDEX_FILE)
            or (f.startswith("model-") and f.endswith(".safetensors") and "-of-" in f)]


def save_model(out_dir, cfg_dict, weights, dtype_name, shard_bytes):
    os.makedirs(out_dir, exist_ok=True)
    for f in weight_files(out_dir):
        os.remove(os.path.join(out_dir, f))
    raws = {k: from_torch(v.to(DTYPES[dtype_name])) for k, v in weights.items()}
    meta = {"format": "pt"}
    if shard_bytes is None:
        write_safetensors(os.path.join(out_dir, SINGLE_FILE), raws, meta)
        files = [SINGLE_FILE]
    else:
        shards = [{}]
        size = 0
        for k, r in raws.items():
            n = len(r.data)
            if shards[-1] and size + n > shard_bytes:
                shards.append({})
                size = 0
            shards[-1][k] = r
            size += n
        K = len(shards)
        weight_map, files = {}, []
        for i, sh in enumerate(shards):
            fn = f"model-{i + 1:05d}-of-{K:05d}.safetensors"
            write_safetensors(os.path.join(out_dir, fn), sh, meta)
            files.append(fn)
            weight_map.update({k: fn for k in sh})
        index = {"metadata": {"total_size": sum(len(r.data) for r in raws.values())},
                 "weight_map": weight_map}
        with open(os.path.join(out_dir, INDEX_FILE), "w") as f:
            json.dump(index, f, indent=2)
            f.write("\n")
    d = dict(cfg_dict)
    d["architectures"] = [ARCHITECTURES[d["model_type"]]]
    d["torch_dtype"] = dtype_name
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(d, f, indent=2)
        f.write("\n")
    return files


def read_raw_weights(model_dir):
    single = os.path.join(model_dir, SINGLE_FILE)
    index = os.path.join(model_dir, INDEX_FILE)
    if os.path.exists(single) and os.path.exists(index):
        raise LlamaRefError(f"{model_dir}: holds both {SINGLE_FILE} and {INDEX_FILE}; "
                             "which one is meant is unclear")
    try:
        if os.path.exists(single):
            return read_safetensors(single)
        if not os.path.exists(index):
            raise LlamaRefError(f"{model_dir}: neither {SINGLE_FILE} nor {INDEX_FILE}")
        with open(index) as f:
            wm = json.load(f).get("weight_map")
        if not isinstance(wm, dict) or not wm:
            raise LlamaRefError(f"{index}: no weight_map")
        out = {}
        for fn in dict.fromkeys(wm.values()):
            for k, r in read_safetensors(os.path.join(model_dir, fn)).items():
                if wm.get(k) != fn:
                    raise LlamaRefError(f"{index}: tensor {k!r} is in {fn} but the "
                                         f"weight_map says {wm.get(k)!r}")
                out[k] = r
        absent = [k for k in wm if k not in out]
        if absent:
            raise LlamaRefError(f"{index}: weight_map names {absent[:5]} but their files lack them")
        return out
    except (SafetensorsError, OSError, json.JSONDecodeError) as e:
        raise LlamaRefError(str(e)) from None


def load_model(model_dir, dtype):
    """(config dict, Config, {HF name: leaf tensor of dtype with requires_grad})."""
    cfg_dict, cfg = load_config(os.path.join(model_dir, "config.json"))
    raw = read_raw_weights(model_dir)
    shapes = param_shapes(cfg)
    extra = [k for k in raw if k not in shapes and not k.endswith(".rotary_emb.inv_freq")]
    missing = [k for k in shapes if k not in raw]
    if extra or missing:
        raise LlamaRefError(f"{model_dir}: missing tensors {missing[:5]}, unexpected tensors "
                             f"{extra[:5]} (tie_word_embeddings={cfg.tie})")
    P = {}
    for k, shape in shapes.items():
        r = raw[k]
        if r.dtype not in FILE_DTYPES:
            raise LlamaRefError(f"{model_dir}: tensor {k} is {r.dtype}, not one of {FILE_DTYPES}")
        if list(r.shape) != shape:
            raise LlamaRefError(f"{model_dir}: tensor {k} has shape {r.shape}, the config "
                                 f"needs {shape}")
        P[k] = to_torch(r).to(dtype).requires_grad_(True)
    return cfg_dict, cfg, P


def read_int32(path, count, what):
    try:
        n = os.path.getsize(path)
    except OSError as e:
        raise LlamaRefError(f"cannot read {what} {path}: {e}") from None
    if count is not None and n != 4 * count:
        raise LlamaRefError(f"{what} {path}: {n} bytes, {4 * count} expected (int32 [{count}])")
    if n % 4:
        raise LlamaRefError(f"{what} {path}: {n} bytes, not a whole number of int32")
    return to_torch(RawTensor("I32", [n // 4], Path(path).read_bytes())).long()


def check_ids(cfg, tokens, targets):
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= cfg.vocab_size):
        raise LlamaRefError(f"tokens must lie in [0, {cfg.vocab_size}), got "
                             f"[{int(tokens.min())}, {int(tokens.max())}]")
    if targets.numel() and int(targets.max()) >= cfg.vocab_size:
        raise LlamaRefError(f"targets must be < vocab_size {cfg.vocab_size}, got {int(targets.max())}")


# ----------------------------------------------------------------------------- commands

def cmd_make(a):
    cfg_dict, cfg = load_config(a.config)
    if a.shard_bytes is not None and a.shard_bytes < 1:
        raise LlamaRefError("--shard-bytes must be >= 1")
    w = init_weights(cfg, a.seed, a.std)
    files = save_model(a.out, cfg_dict, w, a.dtype, a.shard_bytes)
    print(json.dumps({"out": a.out, "files": files, "tensors": len(w)}))


PEFT_PREFIX = "base_model.model."


def load_adapter(adapter_dir, P, dtype):
    """PEFT's LoRA adapter directory (adapter_config.json, adapter_model.safetensors) over the
    base P: the base is frozen, the adapter's tensors (and modules_to_save copies, which
    replace the base's) train. Returns ({module: (A, B, scaling)}, {PEFT key: leaf})."""
    with open(os.path.join(adapter_dir, "adapter_config.json")) as f:
        c = json.load(f)
    r, alpha = c["r"], c["lora_alpha"]
    scaling = alpha / math.sqrt(r) if c.get("use_rslora") else alpha / r
    raw = read_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"))
    for p in P.values():
        p.requires_grad_(False)
    leaves, lora = {}, {}
    for k, t in raw.items():
        if not k.startswith(PEFT_PREFIX):
            raise LlamaRefError(f"adapter tensor {k} lacks the {PEFT_PREFIX!r} prefix")
        leaves[k] = to_torch(t).to(dtype).requires_grad_(True)
    for k, v in leaves.items():
        name = k[len(PEFT_PREFIX):]
        if name.endswith(".lora_A.weight"):
            module = name[:-len(".lora_A.weight")]
            lora[module] = (v, leaves[PEFT_PREFIX + module + ".lora_B.weight"], scaling)
        elif not name.endswith(".lora_B.weight"):
            if name not in P:
                raise LlamaRefError(f"modules_to_save tensor {k} names no base tensor")
            P[name] = v
    return lora, leaves


def run_model(cfg, P, tokens, targets, lora=None, leaves=None):
    """(logits, per-token losses, mean loss, {"grad." + name: grad}); backward done."""
    logits = forward(cfg, P, tokens, lora)
    per, loss = losses_of(logits, targets)
    loss.backward()
    grads = {}
    for k, p in (leaves if leaves is not None else P).items():
        if p.grad is None:
            raise LlamaRefError(f"parameter {k} got no gradient")
        grads["grad." + k] = p.grad
    return logits, per, loss, grads


def cmd_run(a):
    dtype = DTYPES[a.dtype]
    _, cfg, P = load_model(a.model, dtype)
    tokens = read_int32(a.tokens, a.batch * a.seq, "tokens").reshape(a.batch, a.seq)
    targets = read_int32(a.targets, a.batch * a.seq, "targets").reshape(a.batch, a.seq)
    check_ids(cfg, tokens, targets)
    lora, leaves = load_adapter(a.adapter, P, dtype) if a.adapter else (None, None)
    logits, per, loss, grads = run_model(cfg, P, tokens, targets, lora, leaves)
    out = {"logits": logits, "loss": loss.reshape(1), "losses": per}
    out.update(grads)
    out_dtype = DTYPES[a.out_dtype] if a.out_dtype else dtype
    write_safetensors(a.out, {k: from_torch(v.detach().to(out_dtype)) for k, v in out.items()},
                      {"format": "pt", "writer": "tests/model/llama/llama_reference.py"})
    print(json.dumps({"loss": float(loss)}))


def cmd_generate(a):
    _, cfg, P = load_model(a.model, DTYPES[a.dtype])
    seq = [int(t) for t in a.prompt.split(",")]
    check_ids(cfg, torch.tensor(seq), torch.tensor([0]))
    out = []
    with torch.no_grad():
        for _ in range(a.new):
            logits = forward(cfg, P, torch.tensor([seq]))
            nxt = int(torch.argmax(logits[0, -1]))
            seq.append(nxt)
            out.append(nxt)
    print(json.dumps({"tokens": out}))


def train_batch(data, s, B, T):
    """Step s's (inputs, targets), each [B, T]; see the module docstring."""
    n = B * T
    span = data.numel() - n - 1
    if span < 1:
        raise LlamaRefError(f"--data has {data.numel()} tokens; a step needs more than "
                             f"B*T+1 = {n + 1}")
    start = (s * n) % span
    w = data[start:start + n + 1]
    x = torch.stack([w[b * T:b * T + T] for b in range(B)])
    y = torch.stack([w[b * T + 1:b * T + T + 1] for b in range(B)])
    return x, y


def zt_batches(a):
    """Step by step, the global batch `zerotrain train --data DIR --seed S`
    trains on at world size R and gradient accumulation A: every rank's
    micro-batches (zt_data.Loader, zerotrain's loader order), concatenated,
    so the mean loss over them is zerotrain's mean of rank and micro-step
    means (every target counts)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "peer"))
    from zt_data import Loader, read_split
    tokens = read_split(a.zt_data, "train")
    loaders = [Loader(tokens, a.seq, a.batch, a.world_size, r, a.seed, a.grad_accum)
               for r in range(a.world_size)]
    while True:
        rows = [row for _ in range(a.grad_accum) for ld in loaders for row in ld.next()]
        t = torch.tensor(rows, dtype=torch.int64)
        yield t[:, :-1], t[:, 1:]


def cmd_train(a):
    dtype = DTYPES[a.dtype]
    _, cfg, P = load_model(a.model, dtype)
    if a.zt_data:
        batches = zt_batches(a)
    else:
        data = read_int32(a.data, None, "data")
        check_ids(cfg, data, data)
        batches = (train_batch(data, s, a.batch, a.seq) for s in range(a.steps))
    opt = torch.optim.AdamW(list(P.values()), lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps,
                            weight_decay=a.weight_decay)
    if a.threads:
        torch.set_num_threads(a.threads)
    for s in range(a.steps):
        x, y = next(batches)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        # --autocast bf16: the forward under CPU autocast (the matmuls in
        # bf16, as a PyTorch user runs mixed precision), fp32 weights.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
            _, loss = losses_of(forward(cfg, P, x), y)
        loss.backward()
        opt.step()
        seconds = time.perf_counter() - t0
        print(json.dumps({"step": s, "loss": float(loss), "seconds": seconds}), flush=True)


# ----------------------------------------------------------------------------- selfcheck

SELFCHECK_CONFIGS = {
    "llama-untied-gqa-llama3": {
        "model_type": "llama", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 64,
        "tie_word_embeddings": False,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 16}},
    "llama-tied-bias": {
        "model_type": "llama", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5, "rope_theta": 500.0, "max_position_embeddings": 64,
        "tie_word_embeddings": True, "attention_bias": True, "mlp_bias": True,
        "rope_scaling": {"type": "linear", "factor": 2.0}},
    "qwen2": {
        "model_type": "qwen2", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 64,
        "tie_word_embeddings": False, "use_sliding_window": False},
    "mistral-window3": {
        "model_type": "mistral", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 12, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_position_embeddings": 64, "tie_word_embeddings": False, "sliding_window": 3},
    "qwen2-window-from-1": {
        "model_type": "qwen2", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 64,
        "tie_word_embeddings": False, "use_sliding_window": True, "sliding_window": 3,
        "max_window_layers": 1},
}


def cmd_selfcheck(a):
    """make + run each config; finite differences (float64), sharding, float32 vs float64."""
    torch.set_num_threads(1)
    B, T = 2, 8
    rng = random.Random(0)
    worst = {"fd_rel": 0.0, "f32_logits": 0.0, "f32_grad": 0.0}
    with tempfile.TemporaryDirectory(prefix="llama_reference.") as tmp:
        for name, cd in SELFCHECK_CONFIGS.items():
            cfg_path = os.path.join(tmp, name + ".json")
            with open(cfg_path, "w") as f:
                json.dump(cd, f)
            one, sharded = os.path.join(tmp, name), os.path.join(tmp, name + "-sharded")
            quiet = contextlib.redirect_stdout(io.StringIO())  # the commands' own JSON lines
            with quiet:
                main(["make", "--config", cfg_path, "--out", one, "--seed", "7"])
                main(["make", "--config", cfg_path, "--out", sharded, "--seed", "7",
                      "--shard-bytes", "20000"])
            nshards = len([f for f in os.listdir(sharded) if f.startswith("model-")])
            V = cd["vocab_size"]
            tok = torch.tensor([[rng.randrange(V) for _ in range(T)] for _ in range(B)],
                               dtype=torch.int32)
            tgt = torch.tensor([[rng.randrange(V) if rng.random() > 0.2 else -100
                                 for _ in range(T)] for _ in range(B)], dtype=torch.int32)
            tok_path, tgt_path = os.path.join(tmp, "tok.i32"), os.path.join(tmp, "tgt.i32")
            Path(tok_path).write_bytes(tok.numpy().tobytes())
            Path(tgt_path).write_bytes(tgt.numpy().tobytes())
            outs = {}
            for tag, d, dt in (("f64", one, "float64"), ("sh64", sharded, "float64"),
                               ("f32", one, "float32")):
                o = os.path.join(tmp, f"{name}.{tag}.safetensors")
                with contextlib.redirect_stdout(io.StringIO()):
                    main(["run", "--model", d, "--tokens", tok_path, "--targets", tgt_path,
                          "--batch", str(B), "--seq", str(T), "--out", o, "--dtype", dt])
                outs[tag] = {k: to_torch(v) for k, v in read_safetensors(o).items()}
            r64, r32 = outs["f64"], outs["f32"]
            if outs["sh64"].keys() != r64.keys() or any(
                    not torch.equal(outs["sh64"][k], r64[k]) for k in r64):
                raise LlamaRefError(f"selfcheck {name}: sharded model ({nshards} shards) "
                                     "does not give identical outputs")
            f32_logits = float((r32["logits"].double() - r64["logits"]).abs().max())
            f32_grad = max(float((r32[k].double() - r64[k]).abs().max()
                                 / r64[k].abs().max().clamp_min(1e-30))
                           for k in r64 if k.startswith("grad."))
            # Finite differences of the float64 mean loss.
            _, cfg, P = load_model(one, torch.float64)
            tk, tg = tok.long(), tgt.long()

            def loss_at():
                with torch.no_grad():
                    return float(losses_of(forward(cfg, P, tk), tg)[1])

            h, fd_rel, checked = 1e-6, 0.0, 0
            for k, p in P.items():
                g = r64["grad." + k].reshape(-1)
                nz = [int(i) for i in torch.nonzero(g.abs() > 1e-5).reshape(-1)]
                picks = {int(g.abs().argmax())} | set(rng.sample(nz, min(3, len(nz))))
                flat = p.data.reshape(-1)
                for i in sorted(picks):
                    old = float(flat[i])
                    flat[i] = old + h
                    lp = loss_at()
                    flat[i] = old - h
                    lm = loss_at()
                    flat[i] = old
                    fd, an = (lp - lm) / (2 * h), float(g[i])
                    rel = abs(fd - an) / max(abs(an), 1e-3)
                    fd_rel = max(fd_rel, rel)
                    checked += 1
                    # Round-off floor of the difference: ~1e-16 * loss / h ~ 4e-10 absolute.
                    if rel > 2e-6:
                        raise LlamaRefError(f"selfcheck {name}: {k}[{i}] analytic {an!r} vs "
                                             f"finite difference {fd!r} (rel {rel:.2e})")
            if f32_logits > 1e-5 or f32_grad > 1e-5:
                raise LlamaRefError(f"selfcheck {name}: float32 vs float64 logits {f32_logits:.2e}, "
                                     f"grads (rel to max) {f32_grad:.2e}")
            worst = {"fd_rel": max(worst["fd_rel"], fd_rel),
                     "f32_logits": max(worst["f32_logits"], f32_logits),
                     "f32_grad": max(worst["f32_grad"], f32_grad)}
            print(json.dumps({"selfcheck": name, "loss": float(r64["loss"][0]), "shards": nshards,
                              "fd_entries": checked, "fd_max_rel": fd_rel,
                              "f32_logits_max_abs": f32_logits, "f32_grad_max_rel": f32_grad}))
    print(json.dumps({"selfcheck": "ok", **worst}))


# ----------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make", help="random weights in HF form")
    m.add_argument("--config", required=True, help="HF-style config.json")
    m.add_argument("--out", required=True, help="model directory to write")
    m.add_argument("--seed", type=int, required=True)
    m.add_argument("--std", type=float, default=0.1, help="std of matrices and embeddings")
    m.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default="float32")
    m.add_argument("--shard-bytes", type=int, help="write HF's sharded form, shards <= N bytes "
                   "(a tensor larger than N gets a shard of its own)")
    r = sub.add_parser("run", help="logits, losses and gradients of one batch")
    r.add_argument("--model", required=True)
    r.add_argument("--tokens", required=True, help="raw little-endian int32 [B, T]")
    r.add_argument("--targets", required=True, help="raw little-endian int32 [B, T]; < 0 ignored")
    r.add_argument("--batch", type=int, required=True)
    r.add_argument("--seq", type=int, required=True)
    r.add_argument("--out", required=True, help="output safetensors")
    r.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    r.add_argument("--adapter", help="a PEFT LoRA adapter directory: the base frozen, grads "
                                     "of the adapter's tensors only, as grad.<PEFT key>")
    r.add_argument("--out-dtype", choices=("float64", "float32"),
                   help="dtype of the written tensors (default: --dtype); float32 for readers "
                        "without F64, the values computed in --dtype and rounded once")
    t = sub.add_parser("train", help="AdamW loss curve")
    t.add_argument("--model", required=True)
    src = t.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="raw little-endian int32 tokens")
    src.add_argument("--zt-data", help="zerotrain token shards (train_*.bin), read in "
                                       "zerotrain's loader order (bench/peer/zt_data.py)")
    t.add_argument("--seed", type=int, default=1234, help="--zt-data: the loader's seed")
    t.add_argument("--world-size", type=int, default=1, help="--zt-data: zerotrain's ranks")
    t.add_argument("--grad-accum", type=int, default=1, help="--zt-data: accumulation steps")
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--seq", type=int, required=True)
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--beta1", type=float, required=True)
    t.add_argument("--beta2", type=float, required=True)
    t.add_argument("--eps", type=float, required=True)
    t.add_argument("--weight-decay", type=float, required=True)
    t.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    t.add_argument("--autocast", choices=("none", "bf16"), default="none",
                   help="bf16: the forward under torch.autocast (CPU, bfloat16)")
    t.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads (0: torch's default)")
    g = sub.add_parser("generate", help="greedy tokens, recomputed without a cache")
    g.add_argument("--model", required=True)
    g.add_argument("--prompt", required=True, help="comma-separated token ids")
    g.add_argument("--new", type=int, required=True, help="tokens to generate")
    g.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    sub.add_parser("selfcheck", help="finite differences, sharding and float32 checks")
    a = p.parse_args(argv)
    for k in ("batch", "seq", "steps"):
        if getattr(a, k, 1) < 1:
            p.error(f"--{k} must be >= 1")
    return a


def main(argv):
    a = parse_args(argv)
    {"make": cmd_make, "run": cmd_run, "train": cmd_train, "generate": cmd_generate,
     "selfcheck": cmd_selfcheck}[a.cmd](a)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except LlamaRefError as e:
        sys.exit(f"{PROG}: {e}")

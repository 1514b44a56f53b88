#!/usr/bin/python3
"""An independent PyTorch reference of Hugging Face's GPT2LMHeadModel (eager).

zerotrain's generation tests compare their greedy tokens with this file's:

    /usr/bin/python3 tests/model/gpt2/gpt2_reference.py generate --model DIR_OR_FILE \\
        --prompt 1,2,3 --new N [--dtype float64|float32]

DIR_OR_FILE: an HF GPT-2 directory (config.json + model.safetensors) or one
safetensors file with the config in its metadata (zerotrain's single-file
export). Weights under HF's names (an optional "transformer." prefix):
wte [V, C], wpe [P, C], h.{i}.ln_1/ln_2 (weight, bias), h.{i}.attn.c_attn
(Conv1D: weight [C, 3C], bias), h.{i}.attn.c_proj [C, C], h.{i}.mlp.c_fc
[C, 4C], h.{i}.mlp.c_proj [4C, C], ln_f; the head is tied to wte.

Semantics (HF, eager): x = wte[tokens] + wpe[positions]; per block
x += c_proj(attn(ln_1(x))), x += mlp.c_proj(gelu_tanh(c_fc(ln_2(x))));
causal softmax(q·kᵀ/sqrt(head size)); LayerNorm eps from the config
(layer_norm_epsilon, default 1e-5); logits = ln_f(x)·wteᵀ.

generate: greedy decoding without a cache: N times, the whole sequence's
forward, then torch.argmax of the last position's logits (the first
largest on ties) appended. Prints {"tokens": [the N new ids]}.
"""

import argparse
import json
import os
import struct
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "bench", "peer"))
from safetensors_io import read_safetensors, to_torch  # noqa: E402


def file_metadata(path):
    """The safetensors header's "__metadata__" (zerotrain's export keeps the config there)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n).decode("utf-8")).get("__metadata__", {})


def load(path, dtype):
    if os.path.isdir(path):
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        tensors = read_safetensors(os.path.join(path, "model.safetensors"))
    else:
        cfg = file_metadata(path)
        tensors = read_safetensors(path)
    P = {}
    for k, t in tensors.items():
        k = k[len("transformer."):] if k.startswith("transformer.") else k
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias") or k == "lm_head.weight":
            continue
        P[k] = to_torch(t).to(dtype)
    return cfg, P


def forward(cfg, P, tokens):
    L, H = int(cfg["n_layer"]), int(cfg["n_head"])
    eps = float(cfg.get("layer_norm_epsilon", 1e-5))
    T = tokens.shape[1]
    x = P["wte.weight"][tokens] + P["wpe.weight"][:T]
    C = x.shape[-1]
    D = C // H
    mask = torch.ones(T, T, dtype=torch.bool).tril()

    def ln(x, name):
        return F.layer_norm(x, (C,), P[name + ".weight"], P[name + ".bias"], eps)

    def conv1d(x, name):
        return x @ P[name + ".weight"] + P[name + ".bias"]

    for i in range(L):
        h = f"h.{i}."
        q, k, v = conv1d(ln(x, h + "ln_1"), h + "attn.c_attn").split(C, dim=-1)
        q, k, v = (t.view(1, T, H, D).transpose(1, 2) for t in (q, k, v))
        s = (q @ k.transpose(-1, -2)) / (D ** 0.5)
        s = s.masked_fill(~mask, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(1, T, C)
        x = x + conv1d(o, h + "attn.c_proj")
        m = F.gelu(conv1d(ln(x, h + "ln_2"), h + "mlp.c_fc"), approximate="tanh")
        x = x + conv1d(m, h + "mlp.c_proj")
    return ln(x, "ln_f") @ P["wte.weight"].T


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--model", required=True)
    g.add_argument("--prompt", required=True)
    g.add_argument("--new", type=int, required=True)
    g.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    a = p.parse_args(argv)
    dtype = torch.float64 if a.dtype == "float64" else torch.float32
    cfg, P = load(a.model, dtype)
    seq = [int(t) for t in a.prompt.split(",")]
    out = []
    with torch.no_grad():
        for _ in range(a.new):
            nxt = int(torch.argmax(forward(cfg, P, torch.tensor([seq]))[0, -1]))
            seq.append(nxt)
            out.append(nxt)
    print(json.dumps({"tokens": out}))


if __name__ == "__main__":
    main(sys.argv[1:])

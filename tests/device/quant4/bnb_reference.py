#!/usr/bin/env python3
"""bitsandbytes' 4-bit blockwise quantization, written from its reference
backend (bitsandbytes/backends/default/ops.py, functional.py) in PyTorch,
independently of zerotrain's C++ (device/quant4.cc).

  bnb_reference.py tensor IN.f32 OUT_DIR --type nf4|fp4 --blocksize 64 [--double-quant]
  bnb_reference.py model IN_DIR OUT_DIR --type nf4 [--double-quant]

tensor: IN.f32 is raw little-endian float32. OUT_DIR gets packed.u8,
absmax.f32 (or absmax_q.u8, absmax2.f32, offset.f32 with --double-quant),
code8.f32 (the dynamic map) and dequant.f32 (what bnb's dequantize_4bit
returns in float32). model: an HF Llama-family directory written again with
every Linear weight but lm_head replaced by its 4-bit round trip (what a
QLoRA run over IN_DIR computes with).
Two choices where bitsandbytes' own last bit depends on the machine (see
quant4.h): the double-quant offset is the float32 nearest the exact mean
(torch's float32 mean rounds by its summation order), and the dynamic map
is computed in float64 (numpy.linspace) and rounded once (bitsandbytes'
float32 torch.linspace rounds by the CPU's SIMD width).
"""
import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
       0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
       0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]


def code4(kind):
    if kind == "nf4":
        return torch.tensor(NF4, dtype=torch.float32)
    # functional.get_4bit_type("fp4")
    data = torch.tensor([0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0,
                         -0.0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0])
    return data / data.abs().max()


def create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8):
    data = []
    non_sign_bits = total_bits - 1
    for i in range(max_exponent_bits):
        items = int(2 ** (i + non_sign_bits - max_exponent_bits) + 1)
        boundaries = np.linspace(0.1, 1, items)  # float64
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).astype(np.float32).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).astype(np.float32).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 2 ** total_bits
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


def blockwise_indices(a, code, blocksize):
    """absmax per block; argmin |clamp(a * (1/absmax), -1, 1) - code| (first on ties)."""
    n = a.numel()
    blocks = (n + blocksize - 1) // blocksize
    absmax = torch.zeros(blocks, dtype=torch.float32)
    scaled = torch.empty(n, dtype=torch.float32)
    for b in range(blocks):
        part = a[b * blocksize:(b + 1) * blocksize]
        absmax[b] = part.abs().max()
        scaled[b * blocksize:(b + 1) * blocksize] = torch.clamp(part * (1 / absmax[b]), -1, 1)
    return scaled, absmax


def nearest(scaled, code):
    return torch.argmin(torch.abs(scaled.view(-1, 1) - code), dim=-1).to(torch.uint8)


def quantize(x, kind, blocksize, double_quant):
    """bnb's quantize_4bit of float32 x: {name: tensor} of its parts and "dequant", what
    bnb's dequantize_4bit returns in float32."""
    code = code4(kind)
    scaled, absmax = blockwise_indices(x, code, blocksize)
    if scaled.numel() % 2:
        scaled = torch.nn.functional.pad(scaled, (0, 1), value=0.0)
    q = nearest(scaled, code)
    packed = (q[::2] << 4) | q[1::2]
    code8 = create_dynamic_map()
    out = {"packed": packed, "code8": code8}
    if double_quant:
        offset = absmax.double().mean().float()
        scaled2, absmax2 = blockwise_indices(absmax - offset, code8, 256)
        absmax_q = nearest(scaled2, code8)
        out.update(absmax_q=absmax_q, absmax2=absmax2, offset=offset.reshape(1))
        # dequantize_blockwise, then + offset (functional.dequantize_4bit)
        scales = (code8[absmax_q.long()].view(-1) *
                  absmax2.repeat_interleave(256)[:absmax_q.numel()]) + offset
    else:
        out["absmax"] = absmax
        scales = absmax
    # _dequantize_4bit_impl: code[nibble] * absmax[block] in float32
    nib = torch.empty(packed.numel() * 2, dtype=torch.long)
    nib[::2] = (packed >> 4).long()
    nib[1::2] = (packed & 15).long()
    vals = code[nib][:x.numel()]
    out["dequant"] = vals * scales.repeat_interleave(blocksize)[:x.numel()]
    return out


SUFFIX = {"packed": "u8", "absmax_q": "u8"}


def cmd_tensor(a):
    x = torch.from_numpy(np.fromfile(a.inp, dtype="<f4").copy())
    os.makedirs(a.out, exist_ok=True)
    for name, t in quantize(x, a.type, a.blocksize, a.double_quant).items():
        t.numpy().tofile(os.path.join(a.out, f"{name}.{SUFFIX.get(name, 'f32')}"))


def cmd_model(a):
    """An HF Llama-family directory whose Linear weights but lm_head are what a 4-bit load
    of it computes with (as bitsandbytes' Linear4bit: every nn.Linear but lm_head)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "model" / "llama"))
    import llama_reference as ref
    cfg_dict, _, P = ref.load_model(a.inp, torch.float32)
    W, n = {}, 0
    for k, v in P.items():
        v = v.detach()
        if k.endswith("_proj.weight") and v.dim() == 2:
            v = quantize(v.reshape(-1).contiguous(), a.type, a.blocksize,
                         a.double_quant)["dequant"].reshape(v.shape)
            n += 1
        W[k] = v
    ref.save_model(a.out, cfg_dict, W, "float32", None)
    print(json.dumps({"out": a.out, "quantized": n}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tensor", help="one raw float32 tensor into its 4-bit parts")
    t.add_argument("inp")
    t.add_argument("out")
    m = sub.add_parser("model", help="an HF Llama directory with its Linear weights dequantized")
    m.add_argument("inp")
    m.add_argument("out")
    for q in (t, m):
        q.add_argument("--type", default="nf4")
        q.add_argument("--blocksize", type=int, default=64)
        q.add_argument("--double-quant", action="store_true")
    a = p.parse_args()
    cmd_tensor(a) if a.cmd == "tensor" else cmd_model(a)


if __name__ == "__main__":
    main()

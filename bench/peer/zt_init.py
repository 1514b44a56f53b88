"""zerotrain's counter-based GPT-2 initialisation (src/model/init.cc) in numpy.

Element i of the tensor named N gets std(N) * z, z = Box-Muller of two
splitmix64 outputs keyed by (seed, fnv1a(N)) at counters 2i+1 and 2i+2, cast
to float32; LayerNorm weights are 1, biases 0. Indices are in OUR layout
([out, in] for linear weights, which is nn.Linear's), so the peer gets the
exact initial weights `zerotrain train --seed S` starts from (up to the last
bit of libm's log/cos, which numpy may round differently once in a while).

    w = zt_init_tensor("h.0.attn.c_attn.weight", (768, 256), seed=1234, n_layer=4)
"""

import math

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
STD = 0.02


def _mix64_int(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _mix64(z):
    """The same on a uint64 array (numpy wraps multiplication modulo 2^64)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def fnv1a(name):
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK
    return h


def normals(seed, name, count):
    """init_normal(seed, fnv1a(name), i) for i < count, float64."""
    key = np.uint64(_mix64_int((seed & MASK) ^ _mix64_int(fnv1a(name))))
    idx = np.arange(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        a = _mix64(key + (np.uint64(2) * idx + np.uint64(1)) * np.uint64(GOLDEN))
        b = _mix64(key + (np.uint64(2) * idx + np.uint64(2)) * np.uint64(GOLDEN))
    u1 = ((a >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * 2.0 ** -53
    u2 = (b >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)


def tensor_std(name, n_layer):
    """kind_std of init.cc by HF name; None for constant tensors."""
    if name in ("wte.weight", "wpe.weight") or name.endswith((".c_attn.weight", ".c_fc.weight")):
        return STD
    if name.endswith((".attn.c_proj.weight", ".mlp.c_proj.weight")):
        return STD / math.sqrt(2.0 * n_layer)
    return None


def zt_init_tensor(name, shape, seed, n_layer):
    """float32 array of `shape` (ours), as init_parameters fills it (no vocab padding)."""
    count = int(np.prod(shape))
    std = tensor_std(name, n_layer)
    if std is None:
        is_ln_weight = name.endswith(".weight") and (".ln_" in name or name.startswith("ln_f"))
        return np.full(shape, 1.0 if is_ln_weight else 0.0, dtype=np.float32)
    return (std * normals(seed, name, count)).astype(np.float32).reshape(shape)

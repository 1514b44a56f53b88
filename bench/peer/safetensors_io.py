"""A tiny safetensors reader and writer (json + struct, no extra packages).

The format (as the safetensors project specifies it): an 8-byte little-endian
header length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets":
[begin, end]}, optional "__metadata__": {str: str}}, then the tensor bytes,
each tensor's [begin, end) relative to the end of the header, row-major and
little-endian. Writers pad the header with spaces to a multiple of 8 bytes.

    tensors = read_safetensors("init.safetensors")        # {name: RawTensor}
    t = tensors["h.0.attn.c_attn.weight"]                 # .dtype .shape .data
    write_safetensors("out.safetensors", {"w": RawTensor("F32", [2], b"...")})
    # With torch (gpt_peer.py): to_torch(raw) / from_torch(tensor).

The raw layer needs only the standard library, so the format can be checked
where torch is not installed. Errors raise SafetensorsError naming the path
and what is wrong.
"""

import json
import os
import struct
from dataclasses import dataclass

# dtype name -> bytes per element (the dtypes a GPT-2 export uses).
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4}


class SafetensorsError(ValueError):
    pass


@dataclass
class RawTensor:
    dtype: str  # "F32", "BF16", ...
    shape: list
    data: bytes  # row-major, little-endian

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


def read_safetensors(path):
    """{name: RawTensor} in file order; "__metadata__" is skipped."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError(f"{path}: {len(blob)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack_from("<Q", blob, 0)
    if 8 + n > len(blob):
        raise SafetensorsError(f"{path}: header length {n} exceeds the file ({len(blob)} bytes)")
    try:
        header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    payload = memoryview(blob)[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"{path}: tensor {name!r} lacks dtype/shape/data_offsets") from None
        if dtype not in DTYPE_BYTES:
            raise SafetensorsError(f"{path}: tensor {name!r} has unsupported dtype {dtype!r}")
        t = RawTensor(dtype, shape, b"")
        want = t.numel() * DTYPE_BYTES[dtype]
        if not (0 <= begin <= end <= len(payload)) or end - begin != want:
            raise SafetensorsError(
                f"{path}: tensor {name!r} data_offsets [{begin}, {end}) do not hold "
                f"{dtype} {shape} ({want} bytes) inside the {len(payload)}-byte payload")
        t.data = bytes(payload[begin:end])
        out[name] = t
    return out


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: RawTensor} in the given order, atomically (temp file, rename)."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        want = t.numel() * DTYPE_BYTES[t.dtype]
        if len(t.data) != want:
            raise SafetensorsError(f"{path}: tensor {name!r} has {len(t.data)} bytes, {want} expected")
        header[name] = {"dtype": t.dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + want]}
        offset += want
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for t in tensors.values():
            f.write(t.data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def to_torch(t):
    """A torch tensor (its own copy of the bytes) of the raw tensor's dtype and shape."""
    import torch

    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
              "F64": torch.float64, "I64": torch.int64, "I32": torch.int32}
    if t.numel() == 0:
        return torch.empty(t.shape, dtype=dtypes[t.dtype])
    return torch.frombuffer(bytearray(t.data), dtype=dtypes[t.dtype]).reshape(t.shape)


def from_torch(tensor):
    import torch

    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
             torch.float64: "F64", torch.int64: "I64", torch.int32: "I32"}
    c = tensor.detach().contiguous().cpu()
    # bf16 has no numpy dtype: view its bytes as int16.
    raw = c.view(torch.int16) if c.dtype == torch.bfloat16 else c
    return RawTensor(names[c.dtype], list(c.shape), raw.numpy().tobytes())

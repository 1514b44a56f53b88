"""zerotrain's token shards and data loader, re-implemented in Python for the peer.

Reads the ZTTOKENS shards of docs/data_format.md (checking magic, version,
both CRC-32s and the length) and walks them exactly as src/train/data/loader
does: window w is tokens [w*T, w*T + T + 1); epoch e visits the windows in a
Fisher-Yates order driven by SplitMix64(mix_seed(seed, e)); micro-step m
gives rank r the windows order[m*B*R + r*B + j], j < B; an epoch is
floor(W / (B*A*R)) optimizer steps. So the peer trains on the same tokens in
the same order as `zerotrain train --data DIR --seed S`, rank for rank.

    tokens = read_split("data", "train")                  # list of ints
    loader = Loader(tokens, seq_len=256, micro_batch=8, world_size=2, rank=1, seed=1234)
    rows = loader.next()                                  # B lists of T + 1 tokens
    # python3 zt_data.py DIR --seq-len 16 --micro-batch 2 --world-size 2 --rank 1 \
    #     --seed 7 --micro-steps 40                       # prints windows and tokens
"""

import glob
import os
import struct
import sys
import zlib

MASK = (1 << 64) - 1
HEADER = struct.Struct("<8sIIIIQII24x")  # 64 bytes, docs/data_format.md


class DataError(ValueError):
    pass


class SplitMix64:
    """src/train/data/rng.h, bit for bit."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        """Lemire's multiply-shift with rejection, uniform in [0, n)."""
        m = self.next() * n
        low = m & MASK
        if low < n:
            threshold = ((1 << 64) - n) % n
            while low < threshold:
                m = self.next() * n
                low = m & MASK
        return m >> 64


def mix_seed(a, b):
    rng = SplitMix64(a ^ ((b * 0xD1B54A32D192ED03 + 0x8CB92BA72F3D8DD7) & MASK))
    rng.next()
    return rng.next()


def epoch_order(windows, seed, epoch, shuffle=True):
    order = list(range(windows))
    if not shuffle:
        return order
    rng = SplitMix64(mix_seed(seed, epoch))
    for i in range(windows, 1, -1):
        j = rng.below(i)
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def read_shard(path):
    """The tokens of one shard, after the checks TokenShard::open makes."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"ZTTOKENS":
        raise DataError(f"token shard {path}: not a zerotrain token shard (wrong magic)")
    if len(blob) < HEADER.size:
        raise DataError(f"token shard {path}: truncated header ({len(blob)} bytes, header is 64)")
    magic, version, header_bytes, width, vocab, count, payload_crc, header_crc = \
        HEADER.unpack_from(blob)
    if version != 1 or header_bytes != 64 or width not in (2, 4):
        raise DataError(f"token shard {path}: version {version}, header {header_bytes} bytes, "
                        f"token width {width}: this reader knows version 1, 64, 2 or 4")
    zeroed = blob[:36] + b"\0\0\0\0" + blob[40:64]
    if zlib.crc32(zeroed) != header_crc:
        raise DataError(f"token shard {path}: header checksum mismatch")
    payload = blob[64:]
    if len(payload) != count * width:
        raise DataError(f"token shard {path}: header says {count} tokens of {width} bytes, "
                        f"file has {len(payload)} payload bytes")
    if zlib.crc32(payload) != payload_crc:
        raise DataError(f"token shard {path}: payload checksum mismatch")
    tokens = list(struct.unpack(f"<{count}{'H' if width == 2 else 'I'}", payload))
    if tokens and max(tokens) >= vocab:
        raise DataError(f"token shard {path}: a token is outside vocab_size {vocab}")
    return tokens, vocab


def read_split(directory, split="train"):
    """DIR/<split>_*.bin concatenated in name order, as TokenDataset::open_split."""
    paths = sorted(p for p in glob.glob(os.path.join(directory, f"{split}_*.bin"))
                   if len(os.path.basename(p)) > len(split) + 5)
    if not paths:
        raise DataError(f"token dataset: no {split}_*.bin shards in {directory}")
    tokens = []
    for p in paths:
        tokens.extend(read_shard(p)[0])
    return tokens


class Loader:
    """DataLoader of src/train/data/loader.h for one rank (shuffle on)."""

    def __init__(self, tokens, seq_len, micro_batch, world_size, rank, seed, grad_accum=1):
        self.tokens, self.T, self.B = tokens, seq_len, micro_batch
        self.R, self.rank, self.seed = world_size, rank, seed
        self.windows = (len(tokens) - 1) // seq_len if tokens else 0
        self.global_batch = micro_batch * grad_accum * world_size
        if self.windows < self.global_batch:
            raise DataError(f"data loader: {len(tokens)} tokens give {self.windows} windows of "
                            f"seq_len {seq_len} + 1, fewer than one global batch "
                            f"({self.global_batch})")
        self.steps_per_epoch = self.windows // self.global_batch
        self._start_epoch(0)

    def _start_epoch(self, epoch):
        self.epoch, self.window = epoch, 0
        self.order = epoch_order(self.windows, self.seed, epoch)

    def next(self):
        first = self.window + self.rank * self.B
        rows, self.last_windows = [], []
        for j in range(self.B):
            w = self.order[first + j]
            self.last_windows.append(w)
            rows.append(self.tokens[w * self.T : w * self.T + self.T + 1])
        self.window += self.B * self.R
        if self.window >= self.steps_per_epoch * self.global_batch:
            self._start_epoch(self.epoch + 1)
        return rows


def main(argv):
    """Prints a rank's micro-batches, for the cross-check against the C++ loader
    (bench/peer/peer_data_test.cc): per micro-step a line "windows W..." and a
    line "tokens T..." (the B rows of T + 1 tokens, row-major)."""
    import argparse

    p = argparse.ArgumentParser(description="print a rank's batches as zerotrain's loader makes them")
    p.add_argument("data")
    p.add_argument("--split", default="train")
    for name in ("seq-len", "micro-batch", "world-size", "rank", "seed", "micro-steps"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--grad-accum", type=int, default=1)
    a = p.parse_args(argv)
    try:
        loader = Loader(read_split(a.data, a.split), a.seq_len, a.micro_batch, a.world_size,
                        a.rank, a.seed, a.grad_accum)
    except DataError as e:
        print(f"zt_data.py: {e}", file=sys.stderr)
        return 2
    for _ in range(a.micro_steps):
        rows = loader.next()
        print("windows", *loader.last_windows)
        print("tokens", *(t for row in rows for t in row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

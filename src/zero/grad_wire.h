// The dtype gradients cross the wire in: DeepSpeed's communication_data_type
// (unset: the model dtype, so bf16 and fp16 runs reduce 2 bytes an
// element). Every stage reduces from an fp32 array of the gradients (the
// model's buffer, a staging bucket, or the widened 16-bit sums); with a
// 16-bit wire it narrows that array in place into its own first half,
// runs the collective on the 16-bit values (the ring rounds each partial
// sum to the wire type, as NCCL does), and widens the result back in
// place, so the wire dtype takes no memory of its own.
//
//   std::span<std::byte> w = narrow_in_place(all, pre, wire);      // all's bytes, first half
//   comm->reduce_scatter(w, w.subspan(rank * cc * 2, cc * 2), wire, op);
//   widen_in_place(w.data() + rank * cc * 2, cc, wire, post, all.data() + rank * cc);
//
// Thread-safety: pure functions over the caller's memory.
#pragma once

#include <cstddef>
#include <span>

#include "config/config.h"
#include "core/dtype.h"

namespace zerotrain::zero {

// The wire dtype of the gradient reductions for a config: its
// communication_data_type, else the model dtype (DeepSpeed's rule).
DType gradient_wire_dtype(const config::Config& config);

// Overwrites x's first x.size() · dtype_size(wire) bytes with
// wire(scale · x[i]) (round to nearest even) and returns them; for an fp32
// wire it only scales. Ascending, a block at a time, so no float is
// overwritten before it is read.
std::span<std::byte> narrow_in_place(std::span<float> x, float scale, DType wire);

// dst[i] = scale · float(src[i]) for n wire-typed values at src. dst may
// overlap src when it starts at or after it (the in-place case: descending,
// a block at a time, so no value is overwritten before it is read); an
// overlap with dst below src is a checked error.
void widen_in_place(const std::byte* src, size_t n, DType wire, float scale, float* dst);

}  // namespace zerotrain::zero

// 4-bit blockwise weights in bitsandbytes' format (QLoRA's storage):
// the tensor flattened row-major, cut into blocks of `blocksize` (64 by
// default), each block scaled by its absmax into [-1, 1] and every element
// replaced by the index of the nearest of 16 code values (NF4 or FP4); two
// indices a byte, the even element in the HIGH nibble. With double quant
// the fp32 absmaxes themselves are stored as 8-bit indices into the
// dynamic map, blockwise over 256 of them, around their mean (`offset`).
//
//   Quant4Host q = quantize_4bit(w, n, {.type = Quant4Type::kNf4, .double_quant = true});
//   ops.dequantize_4bit(q.view(), begin, end, out);  // out[i - begin] = w'[i]
//
// The quantizer follows bitsandbytes' reference backend
// (backends/default/ops.py) operation by operation in float32: scaled =
// clamp(x · (1/absmax), -1, 1), the first code of least |scaled − code|,
// an odd tail padded with 0. Two choices where bitsandbytes' own last bit
// depends on the machine: `offset` is the float32 nearest the exact mean
// (torch's float32 mean rounds by its summation order), and the dynamic
// map is computed in float64 and rounded once (see dynamic8_code).
//
// Thread-safety: plain values; quantize_4bit is reentrant.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/half.h"  // ZT_HOST_DEVICE
#include "core/status.h"

namespace zerotrain::device {

enum class Quant4Type { kNf4, kFp4 };

struct Quant4Options {
  Quant4Type type = Quant4Type::kNf4;
  int64_t blocksize = 64;     // elements per absmax
  bool double_quant = false;  // bnb_4bit_use_double_quant
};
inline constexpr int64_t kDoubleQuantBlock = 256;  // absmaxes per second-level scale

// The 16 code values (bitsandbytes get_4bit_type: NF4, or FP4 e2m1 / 12).
const std::array<float, 16>& quant4_code(Quant4Type type);
// bitsandbytes create_dynamic_map(signed=True): 256 values, sorted.
const std::array<float, 256>& dynamic8_code();
std::string quant4_type_name(Quant4Type type);  // "nf4", "fp4"
// The type named "nf4" or "fp4" (bitsandbytes' bnb_4bit_quant_type);
// InvalidArgument naming both otherwise.
StatusOr<Quant4Type> parse_quant4_type(std::string_view name);
// "nf4 double-quant blocksize 64": the format as logs and tools print it.
std::string describe(const Quant4Options& options);

// A quantized tensor as the dequantizer reads it (pointers into device
// memory of the device whose Ops runs it).
struct Quant4View {
  const uint8_t* packed = nullptr;  // (numel + 1) / 2 bytes
  int64_t numel = 0;
  int64_t blocksize = 64;
  const float* code = nullptr;       // 16 values
  const float* absmax = nullptr;     // fp32 per block (no double quant)
  const uint8_t* absmax_q = nullptr; // double quant: a dynamic8 index per block
  const float* absmax2 = nullptr;    //   fp32 per kDoubleQuantBlock blocks
  const float* code8 = nullptr;      //   dynamic8_code()
  float offset = 0.0f;               //   added after the second level
};

// The decoding rule, shared by the host reference and the CUDA kernel
// (and the CPU kernel's table): element i's code index, high nibble first;
ZT_HOST_DEVICE inline int quant4_nibble(const uint8_t* packed, int64_t i) {
  const uint8_t byte = packed[i / 2];
  return i % 2 == 0 ? byte >> 4 : byte & 15;
}
// the scale of block b: absmax[b], or code8[absmax_q[b]]·absmax2[b/256] + offset;
ZT_HOST_DEVICE inline float quant4_block_scale(const Quant4View& q, int64_t b) {
  if (q.absmax != nullptr) return q.absmax[b];
  return q.code8[q.absmax_q[b]] * q.absmax2[b / kDoubleQuantBlock] + q.offset;
}
// element i: code[nibble] · scale, one float32 multiply.
ZT_HOST_DEVICE inline float quant4_element(const Quant4View& q, int64_t i) {
  return q.code[quant4_nibble(q.packed, i)] * quant4_block_scale(q, i / q.blocksize);
}

// The host-side result of quantize_4bit (and what the frozen store copies
// to the device).
struct Quant4Host {
  Quant4Options options;
  int64_t numel = 0;
  std::vector<uint8_t> packed;
  std::vector<float> absmax;     // without double quant
  std::vector<uint8_t> absmax_q; // with double quant
  std::vector<float> absmax2;
  float offset = 0.0f;
  int64_t blocks() const { return (numel + options.blocksize - 1) / options.blocksize; }
  // Bytes held: packed codes plus the per-block constants.
  int64_t bytes() const;
  // A view over this host memory.
  Quant4View view() const;
};

Quant4Host quantize_4bit(const float* x, int64_t numel, const Quant4Options& options);

// One device buffer per quantized tensor, as the frozen store lays it out:
// the packed codes, then (16-byte aligned) the fp32 absmaxes or the uint8
// absmax indices, then (aligned) the fp32 second-level scales. The code
// tables (16 + 256 floats) are stored once per model.
struct Quant4StoreLayout {
  size_t scales_at = 0, absmax2_at = 0, bytes = 0;
};
Quant4StoreLayout quant4_store_layout(int64_t numel, const Quant4Options& options);
inline constexpr int64_t kQuant4CodeTableBytes = (16 + 256) * 4;

// The reference decoder: out[i - begin] = code[nibble(i)] · scale(i / blocksize)
// for i in [begin, end). The CPU kernels equal it bit for bit.
void dequantize_4bit_reference(const Quant4View& q, int64_t begin, int64_t end, float* out);

}  // namespace zerotrain::device

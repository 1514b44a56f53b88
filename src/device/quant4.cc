// The bitsandbytes code tables, the host quantizer and the reference
// decoder (see quant4.h).
#include "device/quant4.h"

#include <algorithm>
#include <cmath>

#include "device/ops.h"

namespace zerotrain::device {
namespace {

// numpy.linspace(start, end, steps) in float64: i·step + start, the last
// exactly `end`.
std::vector<double> linspace_f64(double start, double end, int64_t steps) {
  std::vector<double> v(static_cast<size_t>(steps));
  const double step = (end - start) / static_cast<double>(steps - 1);
  for (int64_t i = 0; i < steps; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i) * step + start;
  v.back() = end;
  return v;
}

std::array<float, 256> make_dynamic8() {
  // create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8):
  // for exponent i, 2^i interval means of linspace(0.1, 1) times 10^(i-6),
  // both signs; then 0 and 1; sorted. In float64, rounded once to float32:
  // bitsandbytes runs torch.linspace in float32, whose last bit depends on
  // the CPU's SIMD width (entries differ by 1 ulp between machines).
  static constexpr double kPow10[7] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const std::vector<double> b = linspace_f64(0.1, 1.0, (int64_t{1} << i) + 1);
    const double scale = kPow10[i];  // Python's 10 ** (i - 6)
    for (size_t k = 0; k + 1 < b.size(); ++k) {
      const double mean = (b[k] + b[k + 1]) / 2.0;
      data.push_back(static_cast<float>(scale * mean));
      data.push_back(static_cast<float>(-scale * mean));
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  std::array<float, 256> out{};
  std::copy(data.begin(), data.end(), out.begin());
  return out;
}

// The first index of least |v - code[k]|; a NaN (a zero block's 0·inf)
// gives 0, as torch.argmin does.
template <size_t N>
uint8_t nearest_code(float v, const std::array<float, N>& code) {
  if (std::isnan(v)) return 0;
  size_t best = 0;
  float best_d = std::fabs(v - code[0]);
  for (size_t k = 1; k < N; ++k) {
    const float d = std::fabs(v - code[k]);
    if (d < best_d) best_d = d, best = k;
  }
  return static_cast<uint8_t>(best);
}

// Blockwise absmax and the scaled, clamped values (torch: A * (1/absmax)).
template <typename Index>
void quantize_blocks(const float* x, int64_t n, int64_t blocksize, float* absmax, Index index) {
  for (int64_t b0 = 0, blk = 0; b0 < n; b0 += blocksize, ++blk) {
    const int64_t b1 = std::min(n, b0 + blocksize);
    float m = 0.0f;
    for (int64_t i = b0; i < b1; ++i) m = std::max(m, std::fabs(x[i]));
    absmax[blk] = m;
    const float inv = 1.0f / m;
    for (int64_t i = b0; i < b1; ++i) {
      const float s = x[i] * inv;
      index(i, std::isnan(s) ? s : std::clamp(s, -1.0f, 1.0f));
    }
  }
}

}  // namespace

const std::array<float, 16>& quant4_code(Quant4Type type) {
  static const std::array<float, 16> nf4 = {
      -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
      -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
      0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
      0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};
  // get_4bit_type("fp4"): sign, 2 exponent bits, 1 mantissa bit, / 12.
  static const std::array<float, 16> fp4 = [] {
    const float e2m1[16] = {0, 0.0625f, 8, 12, 4, 6, 2, 3, -0.0f, -0.0625f, -8, -12, -4, -6, -2, -3};
    std::array<float, 16> c{};
    for (int k = 0; k < 16; ++k) c[static_cast<size_t>(k)] = e2m1[k] / 12.0f;
    return c;
  }();
  return type == Quant4Type::kNf4 ? nf4 : fp4;
}

const std::array<float, 256>& dynamic8_code() {
  static const std::array<float, 256> code = make_dynamic8();
  return code;
}

std::string quant4_type_name(Quant4Type type) { return type == Quant4Type::kNf4 ? "nf4" : "fp4"; }

StatusOr<Quant4Type> parse_quant4_type(std::string_view name) {
  if (name == "nf4") return Quant4Type::kNf4;
  if (name == "fp4") return Quant4Type::kFp4;
  return invalid_argument("4-bit quant type '" + std::string(name) + "': nf4 or fp4");
}

std::string describe(const Quant4Options& o) {
  return quant4_type_name(o.type) + (o.double_quant ? " double-quant" : "") + " blocksize " +
         std::to_string(o.blocksize);
}

Quant4StoreLayout quant4_store_layout(int64_t numel, const Quant4Options& o) {
  const auto up16 = [](size_t n) { return (n + 15) / 16 * 16; };
  const auto blocks = static_cast<size_t>((numel + o.blocksize - 1) / o.blocksize);
  const size_t scales = o.double_quant ? blocks : 4 * blocks;
  const size_t absmax2 =
      o.double_quant ? 4 * ((blocks + kDoubleQuantBlock - 1) / kDoubleQuantBlock) : 0;
  Quant4StoreLayout l;
  l.scales_at = up16(static_cast<size_t>(numel + 1) / 2);
  l.absmax2_at = l.scales_at + up16(scales);
  l.bytes = l.absmax2_at + absmax2;
  return l;
}

int64_t Quant4Host::bytes() const {
  return static_cast<int64_t>(packed.size() + absmax.size() * 4 + absmax_q.size() +
                              absmax2.size() * 4);
}

Quant4View Quant4Host::view() const {
  Quant4View v{.packed = packed.data(), .numel = numel, .blocksize = options.blocksize,
               .code = quant4_code(options.type).data()};
  if (options.double_quant) {
    v.absmax_q = absmax_q.data();
    v.absmax2 = absmax2.data();
    v.code8 = dynamic8_code().data();
    v.offset = offset;
  } else {
    v.absmax = absmax.data();
  }
  return v;
}

Quant4Host quantize_4bit(const float* x, int64_t numel, const Quant4Options& options) {
  Quant4Host q;
  q.options = options;
  q.numel = numel;
  q.packed.assign(static_cast<size_t>((numel + 1) / 2), 0);
  // An odd tail's partner is the padding 0.0's nearest code.
  const std::array<float, 16>& code = quant4_code(options.type);
  if (numel % 2 != 0) q.packed.back() = nearest_code(0.0f, code);
  std::vector<float> absmax(static_cast<size_t>(q.blocks()));
  quantize_blocks(x, numel, options.blocksize, absmax.data(), [&](int64_t i, float s) {
    const uint8_t c = nearest_code(s, code);
    q.packed[static_cast<size_t>(i / 2)] |= static_cast<uint8_t>(i % 2 == 0 ? c << 4 : c);
  });
  if (!options.double_quant) {
    q.absmax = std::move(absmax);
    return q;
  }
  double sum = 0;
  for (const float a : absmax) sum += a;
  q.offset = static_cast<float>(sum / static_cast<double>(absmax.size()));
  for (float& a : absmax) a -= q.offset;
  const auto nb = static_cast<int64_t>(absmax.size());
  q.absmax_q.assign(absmax.size(), 0);
  q.absmax2.assign(static_cast<size_t>((nb + kDoubleQuantBlock - 1) / kDoubleQuantBlock), 0.0f);
  const std::array<float, 256>& code8 = dynamic8_code();
  quantize_blocks(absmax.data(), nb, kDoubleQuantBlock, q.absmax2.data(),
                  [&](int64_t i, float s) { q.absmax_q[static_cast<size_t>(i)] = nearest_code(s, code8); });
  return q;
}

void dequantize_4bit_reference(const Quant4View& q, int64_t begin, int64_t end, float* out) {
  for (int64_t i = begin; i < end; ++i) out[i - begin] = quant4_element(q, i);
}

// Devices without a 4-bit kernel (CpuOps and CudaOps override it where built).
Status Ops::dequantize_4bit(const Quant4View&, int64_t, int64_t, float*) const {
  return invalid_argument("4-bit (QLoRA) weights have no dequantization kernel on this device");
}

}  // namespace zerotrain::device

// oneDNN matmul wrapper: descriptor validation, a process-wide primitive
// cache keyed by the full (normalised) MatmulDesc, and execution with a
// per-thread user scratchpad (so cached primitives may run on any thread;
// oneDNN's library-managed scratchpad would tie a primitive to its
// creating thread).
#include "device/cpu/kernels/matmul.h"

#include <oneapi/dnnl/dnnl.h>

#include <bit>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/log.h"

namespace zerotrain::device::cpu {
namespace {

struct Key {
  MatmulDesc d;  // normalised: leading dimensions filled in
  bool has_bias;
  GemmInput input;
  bool bf16_out = false;  // C in bf16 (bf16 inputs only)

  bool operator==(const Key& o) const {
    return d.m == o.d.m && d.n == o.d.n && d.k == o.d.k && d.trans_a == o.d.trans_a &&
           d.trans_b == o.d.trans_b &&
           std::bit_cast<uint32_t>(d.alpha) == std::bit_cast<uint32_t>(o.d.alpha) &&
           std::bit_cast<uint32_t>(d.beta) == std::bit_cast<uint32_t>(o.d.beta) &&
           d.batch == o.d.batch && d.lda == o.d.lda && d.ldb == o.d.ldb && d.ldc == o.d.ldc &&
           has_bias == o.has_bias && input == o.input && bf16_out == o.bf16_out;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (int64_t v : {k.d.m, k.d.n, k.d.k, k.d.batch, k.d.lda, k.d.ldb, k.d.ldc}) mix(v);
    mix(std::bit_cast<uint32_t>(k.d.alpha));
    mix(std::bit_cast<uint32_t>(k.d.beta));
    mix((k.d.trans_a ? 1 : 0) | (k.d.trans_b ? 2 : 0) | (k.has_bias ? 4 : 0) |
        (k.input == GemmInput::kBf16 ? 8 : 0) | (k.bf16_out ? 16 : 0));
    return static_cast<size_t>(h);
  }
};

struct Entry {
  bool fallback_fp32 = false;  // bf16 not available: widen and run fp32
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, bias_md, c_md, scratch_md;
  std::string impl;
};

struct Runtime {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mu;
  std::unordered_map<Key, std::unique_ptr<Entry>, KeyHash> cache;  // guarded by mu
};

// Intentionally leaked: oneDNN objects must outlive every static destructor.
Runtime& runtime() {
  static Runtime* rt = new Runtime();
  return *rt;
}

using Dims = dnnl::memory::dims;
using Dt = dnnl::memory::data_type;

// Rows and columns of an operand as stored in memory.
struct Stored {
  int64_t rows, cols;
};
Stored stored_a(const MatmulDesc& d) { return d.trans_a ? Stored{d.k, d.m} : Stored{d.m, d.k}; }
Stored stored_b(const MatmulDesc& d) { return d.trans_b ? Stored{d.n, d.k} : Stored{d.k, d.n}; }

// Elements an operand spans, from its first to its last (batch included).
int64_t span(int64_t batch, Stored s, int64_t ld) { return (batch * s.rows - 1) * ld + s.cols; }

// The logical [rows, cols] matrix, stored row-major with row stride ld or
// (stored_transposed) as its transpose, as a (batched) oneDNN desc.
dnnl::memory::desc matrix_md(int64_t batch, int64_t rows, int64_t cols, bool stored_transposed,
                             int64_t ld, Dt dt) {
  const int64_t stored_rows = stored_transposed ? cols : rows;
  Dims strides = stored_transposed ? Dims{stored_rows * ld, 1, ld} : Dims{stored_rows * ld, ld, 1};
  if (batch == 1) return dnnl::memory::desc({rows, cols}, dt, Dims{strides[1], strides[2]});
  return dnnl::memory::desc({batch, rows, cols}, dt, strides);
}

Status create_entry(const Key& key, Entry* e) {
  const MatmulDesc& d = key.d;
  const Dt in_dt = key.input == GemmInput::kBf16 ? Dt::bf16 : Dt::f32;
  e->a_md = matrix_md(d.batch, d.m, d.k, d.trans_a, d.lda, in_dt);
  e->b_md = matrix_md(d.batch, d.k, d.n, d.trans_b, d.ldb, in_dt);
  e->c_md = matrix_md(d.batch, d.m, d.n, false, d.ldc, key.bf16_out ? Dt::bf16 : Dt::f32);
  // The bias [N] broadcasts over rows (and batches): a [1,N] or [1,1,N] desc.
  if (key.has_bias) {
    e->bias_md = d.batch == 1 ? dnnl::memory::desc({1, d.n}, Dt::f32, Dims{d.n, 1})
                              : dnnl::memory::desc({1, 1, d.n}, Dt::f32, Dims{d.n, d.n, 1});
  }
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (d.alpha != 1.0f) attr.set_output_scales(0, {d.alpha});
  if (d.beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(d.beta);
    attr.set_post_ops(po);
  }
  try {
    dnnl::matmul::desc md = key.has_bias ? dnnl::matmul::desc(e->a_md, e->b_md, e->bias_md, e->c_md)
                                         : dnnl::matmul::desc(e->a_md, e->b_md, e->c_md);
    dnnl::matmul::primitive_desc pd(md, attr, runtime().engine);
    e->prim = dnnl::matmul(pd);
    e->scratch_md = pd.scratchpad_desc();
    e->impl = pd.impl_info_str();
  } catch (const dnnl::error& err) {
    if (key.input == GemmInput::kBf16 && err.status == dnnl_unimplemented) {
      if (!key.bf16_out)
        log::warn("oneDNN has no bf16 matmul on this CPU; widening bf16 inputs to fp32");
      e->fallback_fp32 = true;
      e->impl = "fallback:fp32";
      return ok_status();
    }
    return internal_error(detail::concat("oneDNN matmul creation failed for M=", d.m, " N=", d.n,
                                         " K=", d.k, " batch=", d.batch, ": ", err.what()));
  }
  return ok_status();
}

StatusOr<const Entry*> lookup(const Key& key) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  auto it = rt.cache.find(key);
  if (it != rt.cache.end()) return static_cast<const Entry*>(it->second.get());
  auto entry = std::make_unique<Entry>();
  ZT_RETURN_IF_ERROR(create_entry(key, entry.get()));
  const Entry* raw = entry.get();
  rt.cache.emplace(key, std::move(entry));  // node-based: `raw` stays valid
  return raw;
}

// Checks sizes and fills in the default (dense) leading dimensions.
StatusOr<MatmulDesc> normalise(MatmulDesc d) {
  if (d.m < 0 || d.n < 0 || d.k < 0 || d.batch < 1) {
    return invalid_argument(detail::concat("matmul: bad sizes M=", d.m, " N=", d.n, " K=", d.k,
                                           " batch=", d.batch,
                                           " (need M, N, K >= 0 and batch >= 1)"));
  }
  const Stored a = stored_a(d), b = stored_b(d);
  if (d.lda == 0) d.lda = a.cols;
  if (d.ldb == 0) d.ldb = b.cols;
  if (d.ldc == 0) d.ldc = d.n;
  if (d.lda < a.cols || d.ldb < b.cols || d.ldc < d.n) {
    return invalid_argument(detail::concat(
        "matmul: leading dimension below the stored row: lda=", d.lda, " (row ", a.cols,
        "), ldb=", d.ldb, " (row ", b.cols, "), ldc=", d.ldc, " (row ", d.n, ")"));
  }
  return d;
}

Status check_pointers(const MatmulDesc& d, const void* a, const void* b, const void* c) {
  if (d.m * d.n > 0 && c == nullptr) return invalid_argument("matmul: C is null");
  if (d.m * d.n * d.k > 0 && (a == nullptr || b == nullptr)) {
    return invalid_argument("matmul: A or B is null");
  }
  return ok_status();
}

// c[r, :] (+)= bias for every row of every batch; with `product_empty`
// (K == 0) the rows are first set to beta·C.
void add_bias(const MatmulDesc& d, const float* bias, float* c, bool product_empty) {
  const int64_t rows = d.batch * d.m;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * d.ldc;
    for (int64_t j = 0; j < d.n; ++j) {
      float base = row[j];
      if (product_empty) base = d.beta == 0.0f ? 0.0f : d.beta * row[j];
      row[j] = base + (bias ? bias[j] : 0.0f);
    }
  }
}

// A primitive's argument memories on this thread, made once and re-pointed
// at each call's buffers: creating them per call (a few heap allocations
// each) cost about as much as a small attention block's product.
struct BoundArgs {
  std::unordered_map<int, dnnl::memory> args;
  void point(int arg, void* data) { args.at(arg).set_data_handle(data); }
};

BoundArgs& bound_args(const Entry& e, bool has_bias) {
  thread_local std::unordered_map<const Entry*, BoundArgs> bound;  // entries live forever
  auto [it, fresh] = bound.try_emplace(&e);
  if (fresh) {
    Runtime& rt = runtime();
    auto& args = it->second.args;
    args.emplace(DNNL_ARG_SRC, dnnl::memory(e.a_md, rt.engine, nullptr));
    args.emplace(DNNL_ARG_WEIGHTS, dnnl::memory(e.b_md, rt.engine, nullptr));
    args.emplace(DNNL_ARG_DST, dnnl::memory(e.c_md, rt.engine, nullptr));
    if (has_bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias_md, rt.engine, nullptr));
    if (e.scratch_md.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e.scratch_md, rt.engine, nullptr));
  }
  return it->second;
}

Status execute(const Entry& e, const void* a, const void* b, const float* bias, void* c) {
  Runtime& rt = runtime();
  thread_local std::vector<uint8_t> scratch;
  try {
    BoundArgs& bound = bound_args(e, bias != nullptr);
    bound.point(DNNL_ARG_SRC, const_cast<void*>(a));
    bound.point(DNNL_ARG_WEIGHTS, const_cast<void*>(b));
    bound.point(DNNL_ARG_DST, c);
    if (bias) bound.point(DNNL_ARG_BIAS, const_cast<float*>(bias));
    const size_t bytes = e.scratch_md.get_size();
    if (bytes > 0) {
      if (scratch.size() < bytes) scratch.resize(bytes);
      bound.point(DNNL_ARG_SCRATCHPAD, scratch.data());
    }
    const auto& args = bound.args;
    e.prim.execute(rt.stream, args);
    rt.stream.wait();
  } catch (const dnnl::error& err) {
    return internal_error(detail::concat("oneDNN matmul execution failed: ", err.what()));
  }
  return ok_status();
}

// oneDNN 2.6 has two fp32 GEMMs: the matmul primitive (brgemm kernels) and
// dnnl_sgemm (its jit gemm driver). On the training's products, one thread,
// operands out of L2 (bench: the two alternated 55 times a shape), sgemm
// is faster for products with neither operand transposed — a layer's
// d input by 2-11%, the lm head's (K = vocab) by 25-31% — and for Aᵀ·B
// with K <= 256 — the head's d wte a chunk, by 5-13% — while it is up to
// 29% slower for Aᵀ·B with a long K and M >= 1024, and about even on the
// forward's A·Bᵀ. So those two kinds take sgemm when large enough for the
// primitive's overhead not to matter and without a bias (sgemm has none).
// A rule on the shape, never a timing: a shape always takes the same path,
// so results are reproducible from run to run.
bool prefer_sgemm(const MatmulDesc& d, bool has_bias) {
  if (has_bias || d.batch != 1 || d.m * d.n * d.k < (int64_t{1} << 21) || d.trans_b) return false;
  return !d.trans_a || d.k <= 256;
}

Status sgemm(const MatmulDesc& d, const float* a, const float* b, float* c) {
  const dnnl_status_t s = dnnl_sgemm(d.trans_a ? 'T' : 'N', d.trans_b ? 'T' : 'N', d.m, d.n, d.k,
                                     d.alpha, a, d.lda, b, d.ldb, d.beta, c, d.ldc);
  if (s != dnnl_success) {
    return internal_error(detail::concat("oneDNN sgemm failed for M=", d.m, " N=", d.n, " K=", d.k,
                                         ": status ", static_cast<int>(s)));
  }
  return ok_status();
}

// Shared body of matmul and matmul_bf16; T is float or BFloat16.
template <typename T>
Status run(const MatmulDesc& desc, const T* a, const T* b, const float* bias, float* c,
           GemmInput input) {
  ZT_ASSIGN_OR_RETURN(MatmulDesc d, normalise(desc));
  ZT_RETURN_IF_ERROR(check_pointers(d, a, b, c));
  if (d.m == 0 || d.n == 0) return ok_status();
  if (d.k == 0) {
    add_bias(d, bias, c, /*product_empty=*/true);
    return ok_status();
  }
  if (d.alpha != 1.0f && bias != nullptr) {
    // oneDNN 2.x scales the bias with the output scale; ours must not be.
    ZT_RETURN_IF_ERROR(run<T>(d, a, b, nullptr, c, input));
    add_bias(d, bias, c, /*product_empty=*/false);
    return ok_status();
  }
  if constexpr (std::is_same_v<T, float>) {
    if (prefer_sgemm(d, bias != nullptr)) return sgemm(d, a, b, c);
  }
  ZT_ASSIGN_OR_RETURN(const Entry* e, lookup(Key{d, bias != nullptr, input}));
  if constexpr (std::is_same_v<T, BFloat16>) {
    if (e->fallback_fp32) {
      // bf16 -> fp32 is exact, so this is the same product, in fp32.
      thread_local std::vector<float> wa, wb;
      wa.resize(span(d.batch, stored_a(d), d.lda));
      wb.resize(span(d.batch, stored_b(d), d.ldb));
      float_from_bf16_array(wa.data(), a, static_cast<int64_t>(wa.size()));
      float_from_bf16_array(wb.data(), b, static_cast<int64_t>(wb.size()));
      return run<float>(d, wa.data(), wb.data(), bias, c, GemmInput::kF32);
    }
  }
  return execute(*e, a, b, bias, c);
}

// C (bf16, rounded to nearest even) = op(A)·op(B) + bias, when oneDNN has
// no bf16 output here: the fp32 product of the same inputs, then rounded,
// which is what the direct path computes.
Status round_fp32_product(const MatmulDesc& d, const BFloat16* a, const BFloat16* b,
                          const float* bias, BFloat16* c) {
  thread_local std::vector<float> wide;
  wide.resize(static_cast<size_t>(d.batch * d.m * d.n));
  MatmulDesc f = d;
  f.ldc = d.n;
  ZT_RETURN_IF_ERROR(run<BFloat16>(f, a, b, bias, wide.data(), GemmInput::kBf16));
  for (int64_t r = 0; r < d.batch * d.m; ++r)
    bf16_from_float_array(c + r * d.ldc, wide.data() + r * d.n, d.n);
  return ok_status();
}

}  // namespace

Status matmul(const MatmulDesc& desc, const float* a, const float* b, const float* bias, float* c) {
  return run<float>(desc, a, b, bias, c, GemmInput::kF32);
}

Status matmul_bf16(const MatmulDesc& desc, const BFloat16* a, const BFloat16* b, const float* bias,
                   float* c) {
  return run<BFloat16>(desc, a, b, bias, c, GemmInput::kBf16);
}

Status matmul_bf16(const MatmulDesc& desc, const BFloat16* a, const BFloat16* b, const float* bias,
                   BFloat16* c) {
  ZT_ASSIGN_OR_RETURN(MatmulDesc d, normalise(desc));
  if (d.beta != 0.0f) {
    return invalid_argument(
        detail::concat("matmul_bf16 into a bf16 C overwrites it: beta must be 0, got ", d.beta));
  }
  if (d.alpha != 1.0f && bias != nullptr) {
    return invalid_argument("matmul_bf16 into a bf16 C: alpha must be 1 with a bias");
  }
  ZT_RETURN_IF_ERROR(check_pointers(d, a, b, c));
  if (d.m == 0 || d.n == 0) return ok_status();
  if (d.k == 0) {
    for (int64_t r = 0; r < d.batch * d.m; ++r)
      for (int64_t j = 0; j < d.n; ++j) c[r * d.ldc + j] = to_bfloat16(bias ? bias[j] : 0.0f);
    return ok_status();
  }
  ZT_ASSIGN_OR_RETURN(const Entry* e, lookup(Key{d, bias != nullptr, GemmInput::kBf16, true}));
  if (e->fallback_fp32) return round_fp32_product(d, a, b, bias, c);
  return execute(*e, a, b, bias, c);
}

StatusOr<std::string> matmul_impl_name(const MatmulDesc& desc, bool has_bias, GemmInput input) {
  ZT_ASSIGN_OR_RETURN(MatmulDesc d, normalise(desc));
  if (d.m * d.n * d.k == 0) return std::string("empty");
  if (input == GemmInput::kF32 && prefer_sgemm(d, has_bias)) return std::string("sgemm:jit");
  ZT_ASSIGN_OR_RETURN(const Entry* e, lookup(Key{d, has_bias, input}));
  return e->impl;
}

int64_t matmul_cache_size() {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  return static_cast<int64_t>(rt.cache.size());
}

}  // namespace zerotrain::device::cpu

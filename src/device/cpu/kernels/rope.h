// Rotary position embeddings (Hugging Face's rotate-half form) fused with
// the packing of grouped-query attention: q [B,T,NH·HD], k and v
// [B,T,NKV·HD] become the attention kernel's qkv [B,T,3·NH·HD] (q, then k,
// then v, head h at h·HD), with q and k rotated and each kv head repeated
// for the NH/NKV query heads it serves (HF's repeat_kv: kv head j serves
// query heads j·r .. j·r + r − 1). Per head, with half = HD/2 and i < half:
//   out[i]        = x[i]·cos[t,i] − x[i+half]·sin[t,i]
//   out[i+half]   = x[i+half]·cos[t,i] + x[i]·sin[t,i]
// cos/sin [T, half] are the caller's tables (model/llama/rope.h) for
// positions 0..T−1; pass cos + p·half for positions starting at p.
// The backward is the transpose: the inverse rotation, and the sum over
// the query heads sharing a kv head. dq, dk, dv are overwritten.
//
//   rope_pack_qkv(qkv, q, k, v, cos, sin, B, T, NH, NKV, HD);
//   rope_unpack_qkv_backward(dq, dk, dv, dqkv, cos, sin, B, T, NH, NKV, HD);
//
// Threads: OpenMP over (b, t). Thread-safety: no shared state.
#pragma once

#include <cstdint>

#include "core/half.h"

namespace zerotrain::device::cpu {

void rope_pack_qkv(
    float* qkv,        // [B,T,3·NH·HD]
    const float* q,    // [B,T,NH·HD]
    const float* k,    // [B,T,NKV·HD]
    const float* v,    // [B,T,NKV·HD]
    const float* cos,  // [T,HD/2]
    const float* sin,  // [T,HD/2]
    int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
    const int32_t* positions = nullptr);  // [B,T] table rows (packed documents), else t

void rope_unpack_qkv_backward(float* dq,          // [B,T,NH·HD] overwritten
                              float* dk,          // [B,T,NKV·HD] overwritten
                              float* dv,          // [B,T,NKV·HD] overwritten
                              const float* dqkv,  // [B,T,3·NH·HD]
                              const float* cos, const float* sin, int64_t B, int64_t T, int64_t NH,
                              int64_t NKV, int64_t HD, const int32_t* positions = nullptr);

// The bf16 Llama path's forms: q, k, v as their GEMMs saved them (bf16),
// the fp32 rotation above, qkv rounded once (the attention's bf16 input);
// the backward widens dqkv and rounds dq, dk, dv once (their GEMMs'
// bf16 operands).
void rope_pack_qkv_bf16(BFloat16* qkv, const BFloat16* q, const BFloat16* k, const BFloat16* v,
                        const float* cos, const float* sin, int64_t B, int64_t T, int64_t NH,
                        int64_t NKV, int64_t HD, const int32_t* positions = nullptr);
void rope_unpack_qkv_backward_bf16(BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                   const BFloat16* dqkv, const float* cos, const float* sin,
                                   int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                   const int32_t* positions = nullptr);

}  // namespace zerotrain::device::cpu

// Attention for generation with a KV cache: n new tokens per row at
// positions [pos, pos + n) attend to the cached keys and values of every
// earlier position and to each other causally. The new tokens' projections
// come packed as the training attention takes them, qkv [B,n,3C] with
// C = NH·HD (the Llama family's rope_pack_qkv repeats each of its NKV
// key/value heads NH/NKV times); their keys and values are first written
// into the cache, which keeps NKV heads: k_cache, v_cache [B,NKV,Tmax,HD].
// Then out[b,i,h] = softmax(q·kᵀ/√HD over positions ≤ pos+i)·v, per head h
// reading cache head h / (NH/NKV). With window > 0 position p sees only
// positions p-window+1 .. p (Mistral's sliding window), at a cost of the
// window's length. row_first [B] (null: 0): row b's keys start at that
// position (a left-padded prompt); a position before it attends to nothing
// and gets zeros. Sums run in float in position order. The bf16 form keeps
// qkv, the caches and out in bf16 and does the same fp32 arithmetic in the
// same order on the widened values, with autocast's two roundings (those of
// attention_forward_bf16): the softmax probabilities to bf16 before p·v,
// and out once.
//
//   attention_decode(y, qkv, kc, vc, B, 1, pos, Tmax, NH, NKV, HD, 0, nullptr);  // one token
//
// Threads: OpenMP over (b, h, i). Thread-safety: no shared state.
#pragma once

#include <cstdint>

#include "core/half.h"

namespace zerotrain::device::cpu {

void attention_decode(float* out,        // [B,n,NH·HD]
                      const float* qkv,  // [B,n,3·NH·HD]
                      float* k_cache,    // [B,NKV,Tmax,HD], positions [pos, pos+n) written
                      float* v_cache,    // [B,NKV,Tmax,HD]
                      int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                      int64_t HD, int64_t window, const int32_t* row_first);
void attention_decode(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache, BFloat16* v_cache,
                      int64_t B, int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                      int64_t HD, int64_t window, const int32_t* row_first);

}  // namespace zerotrain::device::cpu

// The guarded CPU device (see guarded_device.h): tagged addresses over
// CpuDevice memory, and an Ops table that untags and forwards.
#include "device/cpu/guarded_device.h"

#include <cstdint>

#include "device/cpu/cpu_device.h"
#include "device/cpu/cpu_ops.h"

namespace zerotrain::device::cpu {
namespace {

constexpr uintptr_t kTag = uintptr_t{1} << 62;

template <typename T>
T* u(T* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<T*>(a & ~kTag);
}
Tensor u(Tensor t) {
  t.data = u(t.data);
  return t;
}
ConstTensor u(ConstTensor t) {
  t.data = u(t.data);
  return t;
}

// Every entry untags its pointers and runs the CPU kernel.
class GuardedOps : public Ops {
 public:
  Status convert(ConstTensor src, Tensor dst) const override {
    return inner_.convert(u(src), u(dst));
  }
  Status add(Tensor dst, ConstTensor src) const override { return inner_.add(u(dst), u(src)); }
  Status round_through(DType dtype, ConstTensor in, Tensor out) const override {
    return inner_.round_through(dtype, u(in), u(out));
  }
  Status scale(Tensor x, float factor) const override { return inner_.scale(u(x), factor); }
  StatusOr<double> sum_squares(ConstTensor x) const override { return inner_.sum_squares(u(x)); }
  Status narrow_in_place(Tensor x, float scale, DType wire) const override {
    return inner_.narrow_in_place(u(x), scale, wire);
  }
  Status widen_in_place(const void* src, size_t n, DType wire, float scale,
                        float* dst) const override {
    return inner_.widen_in_place(u(src), n, wire, scale, u(dst));
  }
  Status adam(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
              float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
              size_t n) const override {
    return inner_.adam(step, u(params), u(grads), grad_dtype, u(exp_avg), u(exp_avg_sq), u(copy),
                       copy_dtype, n);
  }
  Status sgd(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
             size_t n) const override {
    return inner_.sgd(step, u(params), u(grads), u(momentum_buffer), n);
  }
  Status matmul(const MatmulDesc& d, const float* a, const float* b, const float* bias,
                float* c) const override {
    return inner_.matmul(d, u(a), u(b), u(bias), u(c));
  }
  Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b, const float* bias,
                     float* c) const override {
    return inner_.matmul_bf16(d, u(a), u(b), u(bias), u(c));
  }
  Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b, const float* bias,
                     BFloat16* c) const override {
    return inner_.matmul_bf16(d, u(a), u(b), u(bias), u(c));
  }
  Status linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                        int64_t B, int64_t T, int64_t C, int64_t OC) const override {
    return inner_.linear_forward(u(out), u(inp), u(weight), u(bias), B, T, C, OC);
  }
  Status linear_forward_bf16(float* out, const BFloat16* inp, const BFloat16* weight,
                             const float* bias, int64_t B, int64_t T, int64_t C,
                             int64_t OC) const override {
    return inner_.linear_forward_bf16(u(out), u(inp), u(weight), u(bias), B, T, C, OC);
  }
  Status linear_forward_bf16(BFloat16* out, const BFloat16* inp, const BFloat16* weight,
                             const float* bias, int64_t B, int64_t T, int64_t C,
                             int64_t OC) const override {
    return inner_.linear_forward_bf16(u(out), u(inp), u(weight), u(bias), B, T, C, OC);
  }
  Status linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, int64_t B, int64_t T, int64_t C,
                         int64_t OC, bool dinp_accumulate) const override {
    return inner_.linear_backward(u(dinp), u(dweight), u(dbias), u(dout), u(inp), u(weight), B, T,
                                  C, OC, dinp_accumulate);
  }
  Status linear_backward_bf16(float* dinp, float* dweight, float* dbias, const BFloat16* dout,
                              const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                              int64_t C, int64_t OC, bool dinp_accumulate) const override {
    return inner_.linear_backward_bf16(u(dinp), u(dweight), u(dbias), u(dout), u(inp), u(weight), B,
                                       T, C, OC, dinp_accumulate);
  }
  Status linear_backward_bf16(BFloat16* dinp, float* dweight, float* dbias, const BFloat16* dout,
                              const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                              int64_t C, int64_t OC) const override {
    return inner_.linear_backward_bf16(u(dinp), u(dweight), u(dbias), u(dout), u(inp), u(weight), B,
                                       T, C, OC);
  }
  Status encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int64_t B, int64_t T, int64_t C, int64_t V,
                         const int32_t* positions = nullptr) const override {
    return inner_.encoder_forward(u(out), u(tokens), u(wte), u(wpe), B, T, C, V, u(positions));
  }
  Status encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          int64_t B, int64_t T, int64_t C,
                          const int32_t* positions = nullptr) const override {
    return inner_.encoder_backward(u(dwte), u(dwpe), u(dout), u(tokens), B, T, C, u(positions));
  }
  Status layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int64_t B, int64_t T,
                           int64_t C) const override {
    return inner_.layernorm_forward(u(out), u(mean), u(rstd), u(inp), u(weight), u(bias), B, T, C);
  }
  Status layernorm_forward_bf16(BFloat16* out, float* mean, float* rstd, const float* inp,
                                const float* weight, const float* bias, int64_t B, int64_t T,
                                int64_t C) const override {
    return inner_.layernorm_forward_bf16(u(out), u(mean), u(rstd), u(inp), u(weight), u(bias), B, T,
                                         C);
  }
  Status layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const float* weight, const float* mean,
                            const float* rstd, int64_t B, int64_t T, int64_t C) const override {
    return inner_.layernorm_backward(u(dinp), u(dweight), u(dbias), u(dout), u(inp), u(weight),
                                     u(mean), u(rstd), B, T, C);
  }
  Status rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                         int64_t rows, int64_t C, float eps) const override {
    return inner_.rmsnorm_forward(u(out), u(rstd), u(inp), u(weight), rows, C, eps);
  }
  Status rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                          const float* weight, const float* rstd, int64_t rows,
                          int64_t C) const override {
    return inner_.rmsnorm_backward(u(dinp), u(dweight), u(dout), u(inp), u(weight), u(rstd), rows,
                                   C);
  }
  Status rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v, const float* cos,
                       const float* sin, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                       const int32_t* positions = nullptr) const override {
    return inner_.rope_pack_qkv(u(qkv), u(q), u(k), u(v), u(cos), u(sin), B, T, NH, NKV, HD,
                                u(positions));
  }
  Status rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv,
                                  const float* cos, const float* sin, int64_t B, int64_t T,
                                  int64_t NH, int64_t NKV, int64_t HD,
                                  const int32_t* positions = nullptr) const override {
    return inner_.rope_unpack_qkv_backward(u(dq), u(dk), u(dv), u(dqkv), u(cos), u(sin), B, T, NH,
                                           NKV, HD, u(positions));
  }
  Status swiglu_forward(float* out, const float* gate, const float* up, int64_t N) const override {
    return inner_.swiglu_forward(u(out), u(gate), u(up), N);
  }
  Status swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                         const float* up, int64_t N) const override {
    return inner_.swiglu_backward(u(dgate), u(dup), u(dout), u(gate), u(up), N);
  }
  Status gelu_forward(float* out, const float* inp, int64_t N) const override {
    return inner_.gelu_forward(u(out), u(inp), N);
  }
  Status gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                       bool accumulate) const override {
    return inner_.gelu_backward(u(dinp), u(inp), u(dout), N, accumulate);
  }
  Status gelu_forward_bf16(BFloat16* out, const BFloat16* inp, int64_t N) const override {
    return inner_.gelu_forward_bf16(u(out), u(inp), N);
  }
  Status gelu_backward_bf16(BFloat16* dinp, const BFloat16* inp, const float* dout,
                            int64_t N) const override {
    return inner_.gelu_backward_bf16(u(dinp), u(inp), u(dout), N);
  }
  Status residual_forward(float* out, const float* a, const float* b, int64_t N) const override {
    return inner_.residual_forward(u(out), u(a), u(b), N);
  }
  Status axpy(float* y, float a, const float* x, int64_t N) const override {
    return inner_.axpy(u(y), a, u(x), N);
  }
  Status attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T,
                           int64_t C, int64_t NH) const override {
    return inner_.attention_forward(u(out), u(att), u(qkv), B, T, C, NH);
  }
  Status attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att,
                            int64_t B, int64_t T, int64_t C, int64_t NH) const override {
    return inner_.attention_backward(u(dqkv), u(dout), u(qkv), u(att), B, T, C, NH);
  }
  Status attention_decode(float* out, const float* qkv, float* k_cache, float* v_cache, int64_t B,
                          int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                          int64_t HD) const override {
    return inner_.attention_decode(u(out), u(qkv), u(k_cache), u(v_cache), B, n, pos, Tmax, NH, NKV,
                                   HD);
  }
  Status attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                               int64_t C, int64_t NH,
                               const int32_t* first = nullptr) const override {
    return inner_.attention_forward_lse(u(out), u(lse), u(qkv), B, T, C, NH, u(first));
  }
  Status attention_backward_lse(float* dqkv, const float* dout, const float* qkv, const float* lse,
                                int64_t B, int64_t T, int64_t C, int64_t NH,
                                const int32_t* first = nullptr) const override {
    return inner_.attention_backward_lse(u(dqkv), u(dout), u(qkv), u(lse), B, T, C, NH, u(first));
  }
  Status attention_forward_bf16(BFloat16* out, float* att, float* lse, const BFloat16* qkv,
                                int64_t B, int64_t T, int64_t C, int64_t NH) const override {
    return inner_.attention_forward_bf16(u(out), u(att), u(lse), u(qkv), B, T, C, NH);
  }
  Status attention_backward_bf16(BFloat16* dqkv, const BFloat16* dout, const BFloat16* qkv,
                                 const float* att, const float* lse, int64_t B, int64_t T,
                                 int64_t C, int64_t NH) const override {
    return inner_.attention_backward_bf16(u(dqkv), u(dout), u(qkv), u(att), u(lse), B, T, C, NH);
  }
  Status crossentropy_forward(float* losses, float* lse, const float* logits,
                              const int32_t* targets, int64_t B, int64_t T, int64_t V,
                              int64_t Vp) const override {
    return inner_.crossentropy_forward(u(losses), u(lse), u(logits), u(targets), B, T, V, Vp);
  }
  Status crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                       const int32_t* targets, float dloss, int64_t B, int64_t T,
                                       int64_t V, int64_t Vp) const override {
    return inner_.crossentropy_forward_backward(u(losses), u(dlogits), u(logits), u(targets), dloss,
                                                B, T, V, Vp);
  }
  Status crossentropy_forward_backward_bf16(float* losses, BFloat16* dlogits, const float* logits,
                                            const int32_t* targets, float dloss, int64_t B,
                                            int64_t T, int64_t V, int64_t Vp) const override {
    return inner_.crossentropy_forward_backward_bf16(u(losses), u(dlogits), u(logits), u(targets),
                                                     dloss, B, T, V, Vp);
  }

 private:
  CpuOps inner_;
};

class GuardedDevice : public CpuDevice {
 public:
  std::string name() const override { return "cpu (guarded)"; }
  const Ops& ops() const override { return ops_; }
  Status copy(void* dst, const void* src, size_t bytes) override {
    return CpuDevice::copy(u(dst), u(src), bytes);
  }
  Status fill_zero(void* dst, size_t bytes) override { return CpuDevice::fill_zero(u(dst), bytes); }
  void* host_address(const void* p) const override { return const_cast<void*>(u(p)); }

 protected:
  void* raw_allocate(size_t bytes) override {
    void* p = CpuDevice::raw_allocate(bytes);
    return p == nullptr ? nullptr : reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) | kTag);
  }
  void raw_free(void* p, size_t bytes) override { CpuDevice::raw_free(u(p), bytes); }

 private:
  GuardedOps ops_;
};

}  // namespace

std::unique_ptr<Device> make_guarded_device() { return std::make_unique<GuardedDevice>(); }

bool is_guarded_address(const void* p) { return (reinterpret_cast<uintptr_t>(p) & kTag) != 0; }

}  // namespace zerotrain::device::cpu

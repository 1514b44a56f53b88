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

// An op's pointer: it must be the device's own memory (tagged), as a GPU's
// kernels need; host memory handed to a device op aborts naming the op's
// argument, where a GPU would fault on an illegal address.
template <typename T>
T* dev(T* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  ZT_CHECK(a == 0 || (a & kTag) != 0,
           "guarded device: an Ops call got host memory (a GPU kernel cannot read it); "
           "pass device memory, or run the op through device::host_ops()");
  return u(p);
}
Tensor dev(Tensor t) {
  t.data = dev(t.data);
  return t;
}
ConstTensor dev(ConstTensor t) {
  t.data = dev(t.data);
  return t;
}

// Every entry checks and untags its pointers (dev) and runs the CPU kernel.
class GuardedOps : public Ops {
 public:
  Status convert(ConstTensor src, Tensor dst) const override {
    return inner_.convert(dev(src), dev(dst));
  }
  Status add(Tensor dst, ConstTensor src) const override { return inner_.add(dev(dst), dev(src)); }
  Status round_through(DType dtype, ConstTensor in, Tensor out) const override {
    return inner_.round_through(dtype, dev(in), dev(out));
  }
  Status scale(Tensor x, float factor) const override { return inner_.scale(dev(x), factor); }
  StatusOr<double> sum_squares(ConstTensor x) const override { return inner_.sum_squares(dev(x)); }
  Status narrow_in_place(Tensor x, float scale, DType wire) const override {
    return inner_.narrow_in_place(dev(x), scale, wire);
  }
  Status widen_in_place(const void* src, size_t n, DType wire, float scale,
                        float* dst) const override {
    return inner_.widen_in_place(dev(src), n, wire, scale, dev(dst));
  }
  Status adam(const AdamStep& step, float* params, const void* grads, DType grad_dtype,
              float* exp_avg, float* exp_avg_sq, void* copy, DType copy_dtype,
              size_t n) const override {
    return inner_.adam(step, dev(params), dev(grads), grad_dtype, dev(exp_avg), dev(exp_avg_sq),
                       dev(copy), copy_dtype, n);
  }
  Status sgd(const SgdStep& step, float* params, const float* grads, float* momentum_buffer,
             size_t n) const override {
    return inner_.sgd(step, dev(params), dev(grads), dev(momentum_buffer), n);
  }
  Status matmul(const MatmulDesc& d, const float* a, const float* b, const float* bias,
                float* c) const override {
    return inner_.matmul(d, dev(a), dev(b), dev(bias), dev(c));
  }
  Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b, const float* bias,
                     float* c) const override {
    return inner_.matmul_bf16(d, dev(a), dev(b), dev(bias), dev(c));
  }
  Status matmul_bf16(const MatmulDesc& d, const BFloat16* a, const BFloat16* b, const float* bias,
                     BFloat16* c) const override {
    return inner_.matmul_bf16(d, dev(a), dev(b), dev(bias), dev(c));
  }
  Status dequantize_4bit(const Quant4View& q, int64_t begin, int64_t end,
                         float* out) const override {
    Quant4View h = q;
    h.packed = dev(q.packed);
    h.code = dev(q.code);
    h.absmax = dev(q.absmax);
    h.absmax_q = dev(q.absmax_q);
    h.absmax2 = dev(q.absmax2);
    h.code8 = dev(q.code8);
    return inner_.dequantize_4bit(h, begin, end, dev(out));
  }
  Status linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                        int64_t B, int64_t T, int64_t C, int64_t OC) const override {
    return inner_.linear_forward(dev(out), dev(inp), dev(weight), dev(bias), B, T, C, OC);
  }
  Status linear_forward_bf16(float* out, const BFloat16* inp, const BFloat16* weight,
                             const float* bias, int64_t B, int64_t T, int64_t C,
                             int64_t OC) const override {
    return inner_.linear_forward_bf16(dev(out), dev(inp), dev(weight), dev(bias), B, T, C, OC);
  }
  Status linear_forward_bf16(BFloat16* out, const BFloat16* inp, const BFloat16* weight,
                             const float* bias, int64_t B, int64_t T, int64_t C,
                             int64_t OC) const override {
    return inner_.linear_forward_bf16(dev(out), dev(inp), dev(weight), dev(bias), B, T, C, OC);
  }
  Status linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, int64_t B, int64_t T, int64_t C,
                         int64_t OC, bool dinp_accumulate) const override {
    return inner_.linear_backward(dev(dinp), dev(dweight), dev(dbias), dev(dout), dev(inp),
                                  dev(weight), B, T, C, OC, dinp_accumulate);
  }
  Status linear_backward_bf16(float* dinp, float* dweight, float* dbias, const BFloat16* dout,
                              const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                              int64_t C, int64_t OC, bool dinp_accumulate) const override {
    return inner_.linear_backward_bf16(dev(dinp), dev(dweight), dev(dbias), dev(dout), dev(inp),
                                       dev(weight), B, T, C, OC, dinp_accumulate);
  }
  Status linear_backward_bf16(BFloat16* dinp, float* dweight, float* dbias, const BFloat16* dout,
                              const BFloat16* inp, const BFloat16* weight, int64_t B, int64_t T,
                              int64_t C, int64_t OC) const override {
    return inner_.linear_backward_bf16(dev(dinp), dev(dweight), dev(dbias), dev(dout), dev(inp),
                                       dev(weight), B, T, C, OC);
  }
  Status encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int64_t B, int64_t T, int64_t C, int64_t V,
                         const int32_t* positions = nullptr) const override {
    return inner_.encoder_forward(dev(out), dev(tokens), dev(wte), dev(wpe), B, T, C, V,
                                  dev(positions));
  }
  Status encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          int64_t B, int64_t T, int64_t C,
                          const int32_t* positions = nullptr) const override {
    return inner_.encoder_backward(dev(dwte), dev(dwpe), dev(dout), dev(tokens), B, T, C,
                                   dev(positions));
  }
  Status layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int64_t B, int64_t T,
                           int64_t C) const override {
    return inner_.layernorm_forward(dev(out), dev(mean), dev(rstd), dev(inp), dev(weight),
                                    dev(bias), B, T, C);
  }
  Status layernorm_forward_bf16(BFloat16* out, float* mean, float* rstd, const float* inp,
                                const float* weight, const float* bias, int64_t B, int64_t T,
                                int64_t C) const override {
    return inner_.layernorm_forward_bf16(dev(out), dev(mean), dev(rstd), dev(inp), dev(weight),
                                         dev(bias), B, T, C);
  }
  Status layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const float* weight, const float* mean,
                            const float* rstd, int64_t B, int64_t T, int64_t C) const override {
    return inner_.layernorm_backward(dev(dinp), dev(dweight), dev(dbias), dev(dout), dev(inp),
                                     dev(weight), dev(mean), dev(rstd), B, T, C);
  }
  Status rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                         int64_t rows, int64_t C, float eps) const override {
    return inner_.rmsnorm_forward(dev(out), dev(rstd), dev(inp), dev(weight), rows, C, eps);
  }
  Status rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                          const float* weight, const float* rstd, int64_t rows,
                          int64_t C) const override {
    return inner_.rmsnorm_backward(dev(dinp), dev(dweight), dev(dout), dev(inp), dev(weight),
                                   dev(rstd), rows, C);
  }
  Status rope_pack_qkv(float* qkv, const float* q, const float* k, const float* v, const float* cos,
                       const float* sin, int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                       const int32_t* positions = nullptr) const override {
    return inner_.rope_pack_qkv(dev(qkv), dev(q), dev(k), dev(v), dev(cos), dev(sin), B, T, NH, NKV,
                                HD, dev(positions));
  }
  Status rope_unpack_qkv_backward(float* dq, float* dk, float* dv, const float* dqkv,
                                  const float* cos, const float* sin, int64_t B, int64_t T,
                                  int64_t NH, int64_t NKV, int64_t HD,
                                  const int32_t* positions = nullptr) const override {
    return inner_.rope_unpack_qkv_backward(dev(dq), dev(dk), dev(dv), dev(dqkv), dev(cos), dev(sin),
                                           B, T, NH, NKV, HD, dev(positions));
  }
  Status swiglu_forward(float* out, const float* gate, const float* up, int64_t N) const override {
    return inner_.swiglu_forward(dev(out), dev(gate), dev(up), N);
  }
  Status swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                         const float* up, int64_t N) const override {
    return inner_.swiglu_backward(dev(dgate), dev(dup), dev(dout), dev(gate), dev(up), N);
  }
  Status rmsnorm_forward_bf16(BFloat16* out, float* rstd, const float* inp, const float* weight,
                              int64_t rows, int64_t C, float eps) const override {
    return inner_.rmsnorm_forward_bf16(dev(out), dev(rstd), dev(inp), dev(weight), rows, C, eps);
  }
  Status rope_pack_qkv_bf16(BFloat16* qkv, const BFloat16* q, const BFloat16* k,
                            const BFloat16* v, const float* cos, const float* sin, int64_t B,
                            int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                            const int32_t* positions = nullptr) const override {
    return inner_.rope_pack_qkv_bf16(dev(qkv), dev(q), dev(k), dev(v), dev(cos), dev(sin), B, T,
                                     NH, NKV, HD, dev(positions));
  }
  Status rope_unpack_qkv_backward_bf16(BFloat16* dq, BFloat16* dk, BFloat16* dv,
                                       const BFloat16* dqkv, const float* cos, const float* sin,
                                       int64_t B, int64_t T, int64_t NH, int64_t NKV, int64_t HD,
                                       const int32_t* positions = nullptr) const override {
    return inner_.rope_unpack_qkv_backward_bf16(dev(dq), dev(dk), dev(dv), dev(dqkv), dev(cos),
                                                dev(sin), B, T, NH, NKV, HD, dev(positions));
  }
  Status swiglu_forward_bf16(BFloat16* out, const BFloat16* gate, const BFloat16* up,
                             int64_t N) const override {
    return inner_.swiglu_forward_bf16(dev(out), dev(gate), dev(up), N);
  }
  Status swiglu_backward_bf16(BFloat16* dgate, BFloat16* dup, const float* dout,
                              const BFloat16* gate, const BFloat16* up, int64_t N) const override {
    return inner_.swiglu_backward_bf16(dev(dgate), dev(dup), dev(dout), dev(gate), dev(up), N);
  }
  Status gelu_forward(float* out, const float* inp, int64_t N) const override {
    return inner_.gelu_forward(dev(out), dev(inp), N);
  }
  Status gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                       bool accumulate) const override {
    return inner_.gelu_backward(dev(dinp), dev(inp), dev(dout), N, accumulate);
  }
  Status gelu_forward_bf16(BFloat16* out, const BFloat16* inp, int64_t N) const override {
    return inner_.gelu_forward_bf16(dev(out), dev(inp), N);
  }
  Status gelu_backward_bf16(BFloat16* dinp, const BFloat16* inp, const float* dout,
                            int64_t N) const override {
    return inner_.gelu_backward_bf16(dev(dinp), dev(inp), dev(dout), N);
  }
  Status residual_forward(float* out, const float* a, const float* b, int64_t N) const override {
    return inner_.residual_forward(dev(out), dev(a), dev(b), N);
  }
  Status axpy(float* y, float a, const float* x, int64_t N) const override {
    return inner_.axpy(dev(y), a, dev(x), N);
  }
  Status attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T,
                           int64_t C, int64_t NH) const override {
    return inner_.attention_forward(dev(out), dev(att), dev(qkv), B, T, C, NH);
  }
  Status attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att,
                            int64_t B, int64_t T, int64_t C, int64_t NH) const override {
    return inner_.attention_backward(dev(dqkv), dev(dout), dev(qkv), dev(att), B, T, C, NH);
  }
  Status attention_decode(float* out, const float* qkv, float* k_cache, float* v_cache, int64_t B,
                          int64_t n, int64_t pos, int64_t Tmax, int64_t NH, int64_t NKV,
                          int64_t HD, int64_t window, const int32_t* row_first) const override {
    return inner_.attention_decode(dev(out), dev(qkv), dev(k_cache), dev(v_cache), B, n, pos, Tmax,
                                   NH, NKV, HD, window, dev(row_first));
  }
  Status attention_decode_bf16(BFloat16* out, const BFloat16* qkv, BFloat16* k_cache,
                               BFloat16* v_cache, int64_t B, int64_t n, int64_t pos, int64_t Tmax,
                               int64_t NH, int64_t NKV, int64_t HD, int64_t window,
                               const int32_t* row_first) const override {
    return inner_.attention_decode_bf16(dev(out), dev(qkv), dev(k_cache), dev(v_cache), B, n, pos,
                                        Tmax, NH, NKV, HD, window, dev(row_first));
  }
  Status attention_forward_lse(float* out, float* lse, const float* qkv, int64_t B, int64_t T,
                               int64_t C, int64_t NH,
                               const int32_t* first = nullptr) const override {
    return inner_.attention_forward_lse(dev(out), dev(lse), dev(qkv), B, T, C, NH, dev(first));
  }
  Status attention_backward_lse(float* dqkv, const float* dout, const float* qkv, const float* lse,
                                int64_t B, int64_t T, int64_t C, int64_t NH,
                                const int32_t* first = nullptr) const override {
    return inner_.attention_backward_lse(dev(dqkv), dev(dout), dev(qkv), dev(lse), B, T, C, NH,
                                         dev(first));
  }
  Status attention_forward_bf16(BFloat16* out, float* att, float* lse, const BFloat16* qkv,
                                int64_t B, int64_t T, int64_t C, int64_t NH,
                                const int32_t* first = nullptr) const override {
    return inner_.attention_forward_bf16(dev(out), dev(att), dev(lse), dev(qkv), B, T, C, NH,
                                         dev(first));
  }
  Status attention_backward_bf16(BFloat16* dqkv, const BFloat16* dout, const BFloat16* qkv,
                                 const float* att, const float* lse, int64_t B, int64_t T,
                                 int64_t C, int64_t NH,
                                 const int32_t* first = nullptr) const override {
    return inner_.attention_backward_bf16(dev(dqkv), dev(dout), dev(qkv), dev(att), dev(lse), B, T,
                                          C, NH, dev(first));
  }
  Status crossentropy_forward(float* losses, float* lse, const float* logits,
                              const int32_t* targets, int64_t B, int64_t T, int64_t V,
                              int64_t Vp) const override {
    return inner_.crossentropy_forward(dev(losses), dev(lse), dev(logits), dev(targets), B, T, V,
                                       Vp);
  }
  Status crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                       const int32_t* targets, float dloss, int64_t B, int64_t T,
                                       int64_t V, int64_t Vp) const override {
    return inner_.crossentropy_forward_backward(dev(losses), dev(dlogits), dev(logits),
                                                dev(targets), dloss, B, T, V, Vp);
  }
  Status crossentropy_forward_backward_bf16(float* losses, BFloat16* dlogits, const float* logits,
                                            const int32_t* targets, float dloss, int64_t B,
                                            int64_t T, int64_t V, int64_t Vp) const override {
    return inner_.crossentropy_forward_backward_bf16(dev(losses), dev(dlogits), dev(logits),
                                                     dev(targets), dloss, B, T, V, Vp);
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

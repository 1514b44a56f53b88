// GptModel: a GPT-2 decoder (pre-LN blocks, GELU MLP, tied lm head, mean
// cross-entropy) built from the CPU kernels, fp32 (optionally bf16 GEMMs),
// with its parameters and gradients in caller-bindable flat buffers of
// ParamLayout's layout.
//
//   ZT_ASSIGN_OR_RETURN(GptConfig cfg, preset("gpt2-tiny"));
//   ZT_ASSIGN_OR_RETURN(GptModel m, GptModel::create(cfg, {.max_batch = 8}));
//   m.init_parameters(/*seed=*/42);
//   m.zero_gradients();
//   for (auto& mb : micro_batches) {                 // gradient accumulation
//     ZT_ASSIGN_OR_RETURN(float loss, m.forward(mb.tokens, mb.targets, B, T));
//     ZT_RETURN_IF_ERROR(m.backward(1.0f / micro_batches.size()));
//   }
//   optimizer_step(m.parameters(), m.gradients(), m.layout().total_numel());
//
// == Parameter and gradient buffers ==
// Every group g of layout() (0 embeddings, 1..L blocks, L+1 final layernorm)
// has a parameter base and a gradient base: pointers to group.numel floats
// holding that group's tensors at their offsets relative to group.offset.
// By default (own_parameters / own_gradients) they point into buffers the
// model allocates. set_parameters(flat) points every group into a caller's
// flat buffer of layout().total_numel() floats (base = flat + group.offset);
// set_group_parameters(g, p) points one group anywhere (a ZeRO-3 gather
// buffer). Same for gradients. The model never frees caller buffers; they
// must stay valid while a pass uses them. Bases should be 64-byte aligned
// (not required for correctness).
//
// == Pass structure and hooks (what ZeRO builds on) ==
// forward() runs stages 0, 1, ..., L+1 and backward() stages L+1, ..., 0:
//   stage 0    forward: encoder (reads wte, wpe)         backward: encoder
//              backward (reads NO parameters; adds into dwte, dwpe)
//   stage l+1  block l: reads and (backward) writes group l+1 only
//   stage L+1  forward: ln_f, lm head, cross-entropy; backward: the reverse.
//              Reads group L+1 AND group 0's wte (tied head); the backward
//              adds into the grads of group L+1 and group 0's wte.
// param_groups_read(stage, pass) / grad_groups_written(stage) give these sets.
// Around each stage the hooks run: before_forward(g) -> stage g forward ->
// after_forward(g); before_backward(g) -> stage g backward ->
// after_backward(g). Group bases are resolved after before_* returns, so a
// hook may gather into a fresh buffer and bind it there; after_* may release
// it (the model keeps no parameter pointer between stages). When
// after_backward(g) runs, group g's gradients are final for this backward:
// group L+1 at its stage, group 0 last of all (the head's share of dwte came
// first, the encoder's last; after_backward(L+1) does NOT make group 0
// final). From after_backward(g) on, this backward neither reads nor writes
// group g's parameters or gradients again, so a communication thread may
// reduce them while the earlier stages compute (overlap_comm). A hook's
// non-OK status aborts the pass and is returned (the activations are then
// invalid: run forward again; an aborted backward leaves a partial sum in
// the gradients: zero them).
// Activations (saved tensors) are owned by the model, not by groups, so a
// ZeRO stage need not keep parameters alive between forward and backward;
// it must present the same values again for the backward.
//
// == Semantics ==
// forward: loss = mean over tokens with target >= 0 of the cross-entropy
// (targets < 0 are ignored); per-token losses in losses(). targets may be
// null (inference: loss is NaN, logits() valid, no backward; needs
// full_logits). With for_backward the forward also runs the lm head's
// backward at unit dloss, chunk by chunk, so no [B,T,Vp] array is kept.
// backward(dloss): ADDS d(dloss · loss)/dθ into the gradient buffers, so
// calling it after each of k micro-batch forwards with dloss = 1/k
// accumulates the mean over the k micro-batches; zero_gradients() starts
// over. Each forward allows exactly one backward.
//
// Memory: by default (recompute_attention) a layer saves O(B·T·C) floats;
// with recompute_attention = false it also keeps its attention map
// [B,NH,T,T] (gpt2 at B=1, T=1024: 576 MiB more); see activation_bytes().
//
// Thread-safety: none; one model per thread. Distinct models are
// independent (the kernels' GEMM cache is shared and locked).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/half.h"
#include "device/cpu/convert.h"
#include "model/activations.h"
#include "model/gpt_config.h"
#include "model/param_layout.h"
#include "device/cpu/aligned_buffer.h"
#include "core/half.h"

namespace zerotrain::model {

struct GptModelOptions {
  int64_t max_batch = 1;       // largest B forward() accepts
  int64_t max_seq = 0;         // largest T; 0 means cfg.seq_len
  bool own_parameters = true;  // allocate a parameter buffer (else bind one)
  bool own_gradients = true;   // allocate a gradient buffer (else bind one)
  // bf16 mixed precision: every GEMM (the four linears of each block and
  // the lm head, forward and backward) reads bf16 copies of its weight and
  // inputs and accumulates in fp32. The kernels before a GEMM (layernorm,
  // gelu, gelu's backward, the attention) write its operand in bf16
  // directly, and qkv, the c_fc output (gelu's input) and the attention
  // output exist in bf16 only, as autocast keeps them (activations.h); the
  // parameters, gradients, the residual stream and all other ops stay fp32.
  bool bf16_compute = false;
  // Keep only the softmax's log-sum-exp [B,NH,T] per layer and recompute
  // the attention map in the backward (kernels' attention_*_lse: ~5% more
  // time) instead of saving the [B,NH,T,T] map.
  bool recompute_attention = true;
  // Keep the logits of all B·T rows (logits(), and forward without
  // targets). Off, the lm head runs over chunks of head_chunk_rows rows
  // (activations.h) and only one chunk of logits exists: gpt2-5m at
  // B 8 x T 256 keeps 4 MiB instead of 64 MiB, gpt2 at B 8 x T 1024 13 MiB
  // instead of 1.6 GiB.
  bool full_logits = false;
  // Rows of an lm-head chunk; 0: automatic (head_chunk_rows in activations.h).
  int64_t head_rows = 0;
};

// Callbacks around each stage (see above); empty ones are skipped.
struct GroupHooks {
  std::function<Status(int group)> before_forward;
  std::function<Status(int group)> after_forward;
  std::function<Status(int group)> before_backward;
  std::function<Status(int group)> after_backward;
};

enum class Pass { kForward, kBackward };

struct MemoryStats {
  int64_t parameter_bytes = 0;   // owned parameter buffer (0 if bound by caller)
  int64_t gradient_bytes = 0;    // owned gradient buffer (0 if bound by caller)
  int64_t activation_bytes = 0;  // saved activations + backward scratch, for max B, T
  int64_t layout_bytes = 0;      // bytes of one full flat buffer (layout().total_bytes())
};

class GptModel {
 public:
  // InvalidArgument for an invalid config or options (max_seq > seq_len,
  // max_batch < 1); Internal if a buffer cannot be allocated.
  static StatusOr<GptModel> create(const GptConfig& cfg, const GptModelOptions& options = {});

  const GptConfig& config() const { return cfg_; }
  bool bf16_compute() const { return options_.bf16_compute; }
  const ParamLayout& layout() const { return layout_; }
  int num_groups() const { return layout_.num_groups(); }

  // Flat buffers: the owned one, or the one last given to set_*(flat);
  // nullptr when groups were bound one by one or nothing is bound.
  float* parameters() const { return flat_params_; }
  float* gradients() const { return flat_grads_; }
  float* group_parameters(int g) const { return param_base_[g]; }
  float* group_gradients(int g) const { return grad_base_[g]; }
  // flat == nullptr rebinds the owned buffer (or unbinds if none).
  void set_parameters(float* flat);
  void set_gradients(float* flat);
  void set_group_parameters(int g, float* base);
  void set_group_gradients(int g, float* base);
  // bf16_compute: group g's parameters also as bf16 bits (the same values
  // as its fp32 binding, which a 16-bit compute copy holds anyway): the
  // GEMMs read their weights there instead of rounding the fp32 ones at
  // every call. nullptr unbinds. Once every group has a view the weight
  // scratch is freed (and reallocated if one is unbound); InvalidArgument
  // without bf16_compute, Internal if that allocation fails.
  Status set_group_parameters_bf16(int g, const BFloat16* base);
  void set_hooks(GroupHooks hooks) { hooks_ = std::move(hooks); }
  // Frees the buffers the model allocated (own_parameters/own_gradients)
  // and unbinds every group: ZeRO-3 keeps only partitions and binds group
  // buffers from its hooks. parameters()/gradients() are null afterwards.
  void release_owned_buffers();

  // Fills the bound parameters (every group) from seed; see init.h.
  void init_parameters(uint64_t seed);
  // Zeroes the bound gradients of every group.
  void zero_gradients();

  // tokens, targets: [B,T] row-major; copied, so they may be freed after.
  // InvalidArgument for B, T out of range, a token outside [0, V) or a
  // target >= V (naming b, t), or an unbound group.
  // for_backward = false (evaluation) skips the head's backward work and
  // allows no backward.
  StatusOr<float> forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                          bool for_backward = true);
  // InvalidArgument if there was no forward with targets (for backward)
  // since the last backward (or the activation memory was lent since).
  Status backward(float dloss = 1.0f);

  // The activation buffer as scratch while no pass needs it (after a
  // backward or an evaluation forward, until the next forward), so a
  // boundary step's transient (a 16-bit model's fp32 gradients) takes no
  // memory of its own: n floats, or nullptr when the buffer is smaller.
  // A pending backward is dropped, losses() is void, and forward()
  // refuses (InvalidArgument) until return_activation_memory().
  float* lend_activation_memory(int64_t n);
  void return_activation_memory() { activations_lent_ = false; }
  bool activation_memory_lent() const { return activations_lent_; }

  std::span<const float> losses() const;  // [B*T] of the last forward
  // [B,T,Vp] of the last forward (full_logits only; else the last chunk's
  // rows, on the fp32 path overwritten by their dlogits when for_backward).
  const float* logits() const { return acts_.logits; }
  MemoryStats memory() const;
  // Activation + scratch bytes a model of cfg needs for (B, T), including
  // the bf16 operand scratch when bf16_compute (options as in
  // GptModelOptions).
  static int64_t activation_bytes(const GptConfig& cfg, int64_t B, int64_t T,
                                  bool bf16_compute = false, bool recompute_attention = true,
                                  bool full_logits = false, int64_t head_rows = 0);

  // Groups whose parameters stage `stage` reads in `pass`, and whose
  // gradients its backward adds into (see the header comment).
  std::vector<int> param_groups_read(int stage, Pass pass) const;
  std::vector<int> grad_groups_written(int stage) const;

 private:
  GptModel(const GptConfig& cfg, const GptModelOptions& options);
  Status run_hook(const std::function<Status(int)>& hook, int g) const;
  Status check_bound(int stage, Pass pass) const;
  // Per-stage compute (gpt_forward.cc, gpt_backward.cc).
  Status forward_encoder();
  Status forward_block(int64_t l);
  Status forward_head();
  Status backward_head();
  Status backward_block(int64_t l);
  void backward_encoder();
  // An activation operand of a linear layer: fp32, or on the bf16 path
  // possibly bf16 already (a kernel wrote it rounded, or it was saved so).
  struct Operand {
    Operand(const float* p) : f32(p) {}                    // NOLINT: implicit on purpose
    Operand(const BFloat16* p) : bf16(p) {}  // NOLINT
    const float* f32 = nullptr;
    const BFloat16* bf16 = nullptr;
  };
  // Where a linear layer writes its output (or input gradient): fp32, or
  // on the bf16 path, when bf16 is set, rounded to bf16 by the GEMM itself
  // (for tensors the next op reads only in bf16).
  struct Output {
    Output(float* p) : f32(p) {}                    // NOLINT: implicit on purpose
    Output(BFloat16* p) : bf16(p) {}  // NOLINT
    float* f32 = nullptr;
    BFloat16* bf16 = nullptr;
  };
  // A saved GEMM output: the fp32 path's array or the bf16 path's (the
  // other one is null in each path's activations).
  Output saved(float* f32, BFloat16* bf16) const {
    return options_.bf16_compute ? Output(bf16) : Output(f32);
  }
  // The linear layer of the current (B_, T_), fp32 or bf16 per options; a
  // bf16 path's fp32 operand is rounded into the operand scratch first.
  Status linear_fwd(Output out, Operand inp, const TensorInfo& w, const float* b, int64_t C,
                    int64_t OC);
  // dinp_accumulate false: dinp is overwritten (a fresh scratch, not zeroed;
  // a bf16 dinp always is).
  Status linear_bwd(Output dinp, float* dw, float* db, Operand dout, Operand inp,
                    const TensorInfo& w, int64_t C, int64_t OC, bool dinp_accumulate = true);
  // Weight tensor t as a bf16 GEMM operand: its group's bf16 view, or its
  // fp32 values rounded into the weight scratch.
  const BFloat16* weight_bf16(const TensorInfo& t);
  // ln(x) with the row statistics into mean/rstd, as the next GEMM's
  // operand: fp32 in acts_.ln, or bf16 straight into the input scratch.
  Operand layernorm_operand(const float* x, float* mean, float* rstd, const float* w,
                            const float* b);
  // gelu(fch) of layer l as the c_proj GEMM's operand, in the forward and
  // again (recomputed, the same bits) in the backward.
  Operand gelu_operand(const LayerActivations& a);
  // d fch from d gelu(fch) (acts_.dfch_gelu) as the c_fc GEMM's dout.
  Operand gelu_backward_operand(const LayerActivations& a);
  // The attention output as c_proj's input (bf16: the saved atty16).
  Operand attention_operand(const LayerActivations& a);
  // Layer a's attention, forward (qkv -> atty, saving att or lse) and
  // backward (d atty -> d qkv). fp32: the backward reads acts_.datty and
  // writes acts_.dqkv. bf16: both passes read the saved qkv16 (the c_attn
  // GEMM's rounded output); the forward writes atty16, the backward reads
  // d atty from x16 and overwrites d qkv into d16, in bf16.
  Status attention_fwd(const LayerActivations& a);
  Status attention_bwd(const LayerActivations& a);
  // Where c_proj's backward writes d atty for attention_bwd, and where
  // attention_bwd left d qkv for the c_attn backward.
  Output attention_input_gradient();
  Operand qkv_gradient();
  const BFloat16* as_bf16(Operand x, device::cpu::AlignedBuffer<BFloat16>& scratch,
                                        int64_t n);
  static const float* as_f32(Operand x);
  static float* as_f32(Output x);
  BFloat16* x16() { return reinterpret_cast<BFloat16*>(x16_.data()); }
  BFloat16* d16() { return reinterpret_cast<BFloat16*>(d16_.data()); }
  // The tied lm head over `rows` rows of lnf (gpt_linear.cc): logits =
  // lnf · wteᵀ, and its backward (dln = dlogits · wte, dwte += dlogitsᵀ ·
  // lnf). With bf16_compute, prepare_head() rounds wte into the weight
  // scratch once for all chunks of a pass.
  void prepare_head();
  // A chunk of lnf as the head's GEMM operand (bf16: rounded into the input
  // scratch, where it stays for the chunk's backward GEMM).
  Operand head_operand(const float* lnf, int64_t rows);
  Status head_fwd(float* logits, Operand lnf, int64_t rows);
  Status head_bwd(float* dln, float* dwte, Operand dlogits, Operand lnf, int64_t rows);
  const float* p(const TensorInfo& t) const;  // parameter tensor address
  float* g(const TensorInfo& t) const;        // gradient tensor address

  GptConfig cfg_;
  GptModelOptions options_;
  ParamLayout layout_;
  device::cpu::AlignedBuffer<float> own_params_, own_grads_, act_buffer_;
  // bf16 operands of the current GEMM (bf16_compute only): weight, input,
  // output gradient.
  device::cpu::AlignedBuffer<BFloat16> w16_, x16_, d16_;
  float* flat_params_ = nullptr;
  float* flat_grads_ = nullptr;
  std::vector<float*> param_base_, grad_base_;               // [num_groups]
  std::vector<const BFloat16*> param16_base_;  // [num_groups], bf16 views
  const BFloat16* head_w16_ = nullptr;         // wte in bf16 for this pass's head
  GroupHooks hooks_;
  Activations acts_;
  std::vector<int32_t> tokens_, targets_;  // [B*T] of the current pass
  int64_t B_ = 0, T_ = 0, valid_targets_ = 0;
  float unit_dloss_ = 0.0f;  // d(mean loss)/d(token loss) the forward used: 1/valid
  float dloss_ = 1.0f;       // the current backward's dloss
  bool for_backward_ = false;
  bool backward_ready_ = false;
  bool activations_lent_ = false;
};

}  // namespace zerotrain::model

// GptModel: the GPT-2 family's Module — pre-LN blocks, GELU MLP, tied lm
// head, mean cross-entropy — on its device's Ops, fp32 (optionally bf16
// GEMMs as autocast runs them). Binding, hooks and pass sequencing are
// Module's (module.h); this is the per-stage math.
//
//   ZT_ASSIGN_OR_RETURN(GptConfig cfg, preset("gpt2-tiny"));
//   ZT_ASSIGN_OR_RETURN(GptModel m, GptModel::create(cfg, {.max_batch = 8}));
//   ZT_RETURN_IF_ERROR(m.init_parameters(/*seed=*/42));
//   ZT_ASSIGN_OR_RETURN(float loss, m.forward(tokens, targets, B, T));
//
// == Stages ==
//   stage 0    forward: encoder (reads wte, wpe)         backward: encoder
//              backward (reads NO parameters; adds into dwte, dwpe)
//   stage l+1  block l: reads and (backward) writes group l+1 only
//   stage L+1  forward: ln_f, lm head, cross-entropy; backward: the reverse.
//              Reads group L+1 AND group 0's wte (tied head); the backward
//              adds into the grads of group L+1 and group 0's wte.
// So group L+1's gradients are final after its stage, group 0's only after
// stage 0 (the head's share of dwte came first, the encoder's last).
// With for_backward the forward also runs the lm head's backward at unit
// dloss, chunk by chunk, so no [B,T,Vp] array is kept; backward(dloss)
// scales its results by dloss.
//
// Memory: by default (recompute_attention) a layer saves O(B·T·C) floats;
// with recompute_attention = false it also keeps its attention map
// [B,NH,T,T] (gpt2 at B=1, T=1024: 576 MiB more); see activation_bytes().
//
// Thread-safety: none; one model per thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/half.h"
#include "model/gpt2/activations.h"
#include "model/gpt2/config.h"
#include "model/gpt2/layout.h"
#include "model/module.h"

namespace zerotrain::model::gpt2 {

class GptDecoder;

using GptModelOptions = ModuleOptions;

class GptModel : public Module {
 public:
  // InvalidArgument for an invalid config or options (max_seq > seq_len,
  // max_batch < 1); ResourceExhausted if the device has no room.
  static StatusOr<GptModel> create(const GptConfig& cfg, const ModuleOptions& options = {});
  GptModel(GptModel&&) noexcept = default;

  std::string_view family() const override { return "gpt2"; }
  nlohmann::json config_json() const override { return to_json(cfg_); }
  const GptConfig& config() const { return cfg_; }
  std::vector<int> param_groups_read(int stage, Pass pass) const override;
  std::vector<int> grad_groups_written(int stage) const override;
  ModelCost cost(int64_t B, int64_t T) const override;
  void init_base_range(uint64_t seed, int64_t begin, int64_t end, float* host) const override;
  bool checkpointable_stage(int s) const override { return s > 0 && s < num_groups() - 1; }
  StatusOr<std::unique_ptr<Decoder>> make_decoder(int64_t batch, int64_t max_seq,
                                                  DType dtype = DType::kFloat32) const override;
  // fp32 with recompute_attention (the lse attention takes document starts).
  Status supports_packed_documents() const override;

  // [B,T,Vp] of the last forward, in device memory (full_logits only; else
  // the last chunk's rows, on the fp32 path overwritten by their dlogits
  // when for_backward).
  const float* logits() const { return acts_.logits; }
  // Activation + scratch bytes a model of cfg needs for (B, T), including
  // the bf16 operand scratch when bf16_compute (options as in
  // ModuleOptions).
  static int64_t activation_bytes(const GptConfig& cfg, int64_t B, int64_t T,
                                  bool bf16_compute = false, bool recompute_attention = true,
                                  bool full_logits = false, int64_t head_rows = 0,
                                  bool checkpoint = false);

 protected:
  Status begin_forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                       bool for_backward) override;
  Status forward_stage(int stage) override;
  StatusOr<float> finish_forward() override;
  void begin_backward(float dloss) override { dloss_ = dloss; }
  Status backward_stage(int stage) override;
  int64_t scratch_bytes() const override;
  Status on_bf16_views(bool all) override;

 private:
  friend class GptDecoder;  // reads the parameters by tensor
  GptModel(const GptConfig& cfg, const ModuleOptions& options);
  Status allocate_scratch();
  // Per-stage compute (gpt_forward.cc, gpt_backward.cc).
  Status forward_encoder();
  Status forward_block(int64_t l);
  Status forward_head();
  Status backward_head();
  Status backward_block(int64_t l);
  Status backward_encoder();
  // An activation operand of a linear layer: fp32, or on the bf16 path
  // possibly bf16 already (a kernel wrote it rounded, or it was saved so).
  struct Operand {
    Operand(const float* p) : f32(p) {}      // NOLINT: implicit on purpose
    Operand(const BFloat16* p) : bf16(p) {}  // NOLINT
    const float* f32 = nullptr;
    const BFloat16* bf16 = nullptr;
  };
  // Where a linear layer writes its output (or input gradient): fp32, or
  // on the bf16 path, when bf16 is set, rounded to bf16 by the GEMM itself
  // (for tensors the next op reads only in bf16).
  struct Output {
    Output(float* p) : f32(p) {}      // NOLINT: implicit on purpose
    Output(BFloat16* p) : bf16(p) {}  // NOLINT
    float* f32 = nullptr;
    BFloat16* bf16 = nullptr;
  };
  // A saved GEMM output: the fp32 path's array or the bf16 path's (the
  // other one is null in each path's activations).
  Output saved(float* f32, BFloat16* bf16) const {
    return bf16_compute() ? Output(bf16) : Output(f32);
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
  StatusOr<const BFloat16*> weight_bf16(const TensorInfo& t);
  // ln(x) with the row statistics into mean/rstd, as the next GEMM's
  // operand: fp32 in acts_.ln, or bf16 straight into the input scratch.
  StatusOr<Operand> layernorm_operand(const float* x, float* mean, float* rstd, const float* w,
                                      const float* b);
  // gelu(fch) of layer l as the c_proj GEMM's operand, in the forward and
  // again (recomputed, the same bits) in the backward.
  StatusOr<Operand> gelu_operand(const LayerActivations& a);
  // d fch from d gelu(fch) (acts_.dfch_gelu) as the c_fc GEMM's dout.
  StatusOr<Operand> gelu_backward_operand(const LayerActivations& a);
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
  // x as bf16: x itself when it is bf16 already, else rounded into scratch
  // (n elements).
  StatusOr<const BFloat16*> as_bf16(Operand x, const device::Buffer& scratch, int64_t n);
  static const float* as_f32(Operand x);
  static float* as_f32(Output x);
  BFloat16* x16() const { return x16_.as<BFloat16>(); }
  BFloat16* d16() const { return d16_.as<BFloat16>(); }
  // The tied lm head over `rows` rows of lnf (gpt_linear.cc): logits =
  // lnf · wteᵀ, and its backward (dln = dlogits · wte, dwte += dlogitsᵀ ·
  // lnf). With bf16_compute, prepare_head() rounds wte into the weight
  // scratch once for all chunks of a pass.
  Status prepare_head();
  // A chunk of lnf as the head's GEMM operand (bf16: rounded into the input
  // scratch, where it stays for the chunk's backward GEMM).
  StatusOr<Operand> head_operand(const float* lnf, int64_t rows);
  Status head_fwd(float* logits, Operand lnf, int64_t rows);
  Status head_bwd(float* dln, float* dwte, Operand dlogits, Operand lnf, int64_t rows);
  Status zero(float* p, int64_t n);           // n floats of device memory
  const float* p(const TensorInfo& t) const;  // parameter tensor address
  float* g(const TensorInfo& t) const;        // gradient tensor address

  GptConfig cfg_;
  // bf16 operands of the current GEMM (bf16_compute only): weight, input,
  // output gradient.
  device::Buffer w16_, x16_, d16_;
  const BFloat16* head_w16_ = nullptr;  // wte in bf16 for this pass's head
  Activations acts_;
  std::vector<int32_t> targets_;  // [B*T] of the current pass (host)
  int64_t B_ = 0, T_ = 0, valid_targets_ = 0;
  float unit_dloss_ = 0.0f;  // d(mean loss)/d(token loss) the forward used: 1/valid
  float dloss_ = 1.0f;       // the current backward's dloss
  bool for_backward_ = false;
  bool has_targets_ = false;
};

}  // namespace zerotrain::model::gpt2

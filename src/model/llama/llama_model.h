// LlamaModel: the Llama family's Module (model_type llama, mistral, qwen2):
// RMSNorm pre-norm blocks, rotary embeddings, grouped-query attention,
// SwiGLU MLP, an untied or tied lm head, mean cross-entropy, on its
// device's Ops in fp32 (or bf16 GEMMs, as autocast). Binding, hooks and pass sequencing are
// Module's (module.h); this is the per-stage math.
//
//   ZT_ASSIGN_OR_RETURN(LlamaConfig cfg, from_json(config_json));
//   ZT_ASSIGN_OR_RETURN(LlamaModel m, LlamaModel::create(cfg, {.max_batch = 8}));
//   ZT_RETURN_IF_ERROR(m.init_parameters(/*seed=*/42));
//   ZT_ASSIGN_OR_RETURN(float loss, m.forward(tokens, targets, B, T));
//
// == Stages ==
//   stage 0    embed_tokens: forward reads group 0; the backward reads no
//              parameters and adds into group 0's gradient.
//   stage l+1  layers.l: reads and writes group l+1 only.
//   stage L+1  norm and lm head, cross-entropy. Untied: group L+1 only.
//              Tied: also reads group 0's embedding and adds into its
//              gradient (final only after stage 0), as GPT-2's head.
// With for_backward the forward also runs the lm head's backward at unit
// dloss chunk by chunk (no [B,T,Vp] array); backward(dloss) scales it.
//
// == Sliding windows ==
//   Mistral's sliding_window (every layer) and Qwen2's (layers from
//   max_window_layers on): query t of a windowed layer attends to keys
//   t-W+1 .. t (within its packed document), in training at the window's
//   cost (Module::attention_first_key) and in the KV-cache decoder.
// == bf16_compute ==
//   As autocast runs the model: every GEMM reads bf16 operands and
//   accumulates in fp32; q, k, v, the attention output, gate and up are
//   GEMM outputs kept in bf16 only (activations.h), the attention runs on
//   them in bf16 (softmax in fp32, llama_stages_bf16.cc), the norms, RoPE
//   and SwiGLU write their GEMM operands in bf16 directly, each rounded
//   once from fp32 math. The residual stream, norm statistics, the logits,
//   the lm head's and o/down projections' outputs and every parameter
//   gradient stay fp32 (more exact than autocast's bf16 outputs).
//   With adapters (LoRA adds into fp32 outputs) the GEMMs alone are bf16
//   and every activation stays fp32.
// The attention always keeps only its log-sum-exp (recompute_attention).
//
// Thread-safety: none; one model per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "model/llama/activations.h"
#include "model/llama/config.h"
#include "model/llama/layout.h"
#include "model/module.h"

namespace zerotrain::model::llama {

class LlamaDecoder;

class LlamaModel : public Module {
 public:
  // InvalidArgument for an invalid config or options; ResourceExhausted if
  // the device has no room.
  static StatusOr<LlamaModel> create(const LlamaConfig& cfg, const ModuleOptions& options = {});
  LlamaModel(LlamaModel&&) noexcept = default;

  std::string_view family() const override { return cfg_.model_type; }
  nlohmann::json config_json() const override { return to_json(cfg_); }
  const LlamaConfig& config() const { return cfg_; }
  std::vector<int> param_groups_read(int stage, Pass pass) const override;
  std::vector<int> grad_groups_written(int stage) const override;
  ModelCost cost(int64_t B, int64_t T) const override;
  void init_base_range(uint64_t seed, int64_t begin, int64_t end, float* host) const override;
  bool checkpointable_stage(int s) const override { return s > 0 && s < num_groups() - 1; }
  StatusOr<std::unique_ptr<Decoder>> make_decoder(int64_t batch, int64_t max_seq,
                                                  DType dtype = DType::kFloat32) const override;
  // Every precision (the fp32 and the bf16 attention take document starts).
  Status supports_packed_documents() const override { return ok_status(); }

  // [B,T,Vp] of the last forward in device memory (full_logits; else the
  // last chunk's rows, overwritten by their dlogits when for_backward).
  const float* logits() const { return acts_.logits; }
  // Including the bf16 operand scratch when bf16_compute.
  // adapters: ModuleOptions.lora is set (the bf16 path keeps fp32 activations).
  static int64_t activation_bytes(const LlamaConfig& cfg, int64_t B, int64_t T,
                                  bool full_logits = false, int64_t head_rows = 0,
                                  bool checkpoint = false, bool bf16_compute = false,
                                  bool adapters = false);

 protected:
  Status begin_forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                       bool for_backward) override;
  Status forward_stage(int stage) override;
  StatusOr<float> finish_forward() override;
  void begin_backward(float dloss) override { dloss_ = dloss; }
  Status on_bf16_views(bool all) override;
  int64_t scratch_bytes() const override {
    return static_cast<int64_t>(w16_.bytes() + x16_.bytes() + d16_.bytes() + rope_.bytes());
  }
  Status backward_stage(int stage) override;

 private:
  friend class LlamaDecoder;  // reads the parameters by tensor
  LlamaModel(const LlamaConfig& cfg, const ModuleOptions& options);
  // Per-stage compute (llama_stages.cc).
  Status forward_embed();
  Status forward_block(int64_t l);
  Status forward_head();
  Status backward_head();
  Status backward_block(int64_t l);
  // The bf16 path's blocks (llama_stages_bf16.cc; bf16_acts_ only).
  Status forward_block_bf16(int64_t l);
  Status forward_head_bf16(int64_t chunk);  // every bf16_compute run
  Status backward_block_bf16(int64_t l);
  // Its linear layers on bf16 operands (bias and gradients by tensor): the
  // output rounded to bf16, or fp32; the input gradient fp32 (overwritten
  // or accumulated) or bf16 (overwritten).
  Status linear16(BFloat16* out, const BFloat16* inp, const TensorInfo& w, const TensorInfo* b,
                  int64_t C, int64_t OC);
  Status linear16(float* out, const BFloat16* inp, const TensorInfo& w, const TensorInfo* b,
                  int64_t C, int64_t OC);
  Status linear16_bwd(float* dinp, const TensorInfo& w, const TensorInfo* b, const BFloat16* dout,
                      const BFloat16* inp, int64_t C, int64_t OC, bool dinp_accumulate);
  Status linear16_bwd(BFloat16* dinp, const TensorInfo& w, const TensorInfo* b,
                      const BFloat16* dout, const BFloat16* inp, int64_t C, int64_t OC);
  Status backward_embed();
  // A block's linear layer over the current B·T rows (bias and gradients
  // by tensor), and the GEMMs under it and the lm head (llama_linear.cc):
  // fp32, or bf16 operands with fp32 accumulation under bf16_compute.
  Status linear_fwd(float* out, const float* inp, const TensorInfo& w, const TensorInfo* b,
                    int64_t C, int64_t OC);
  Status linear_bwd(float* dinp, const TensorInfo& w, const TensorInfo* b, const float* dout,
                    const float* inp, int64_t C, int64_t OC, bool dinp_accumulate);
  Status gemm_fwd(float* out, const float* inp, const TensorInfo& w, const float* bias,
                  int64_t rows, int64_t C, int64_t OC);
  Status gemm_bwd(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                  const TensorInfo& w, int64_t rows, int64_t C, int64_t OC, bool dinp_accumulate);
  // bf16 operand scratch (bf16_compute only): weight, input, output gradient.
  struct Bf16Scratch {
    int64_t weight, input, dout;  // elements
  };
  static Bf16Scratch bf16_scratch(const LlamaConfig& cfg, int64_t B, int64_t T, int64_t head_rows,
                                  bool bf16_acts);
  Status allocate_bf16_scratch();
  // x rounded into scratch (n elements); weight t as bf16 (its group's bf16
  // view, or rounded into the weight scratch).
  StatusOr<const BFloat16*> rounded(const float* x, int64_t n, const device::Buffer& scratch);
  StatusOr<const BFloat16*> weight_bf16(const TensorInfo& t);
  // QLoRA's GEMMs over a weight held 4-bit (decoded tile by tile).
  using TileFn = std::function<Status(int64_t o0, int64_t n, const float* w, const BFloat16* w16)>;
  Status for_each_4bit_tile(const TensorInfo& w, int64_t OC, const TileFn& body);
  Status gemm_fwd_4bit(float* out, const float* inp, const TensorInfo& w, const float* bias,
                       int64_t rows, int64_t C, int64_t OC);
  Status gemm_bwd_4bit(float* dinp, const float* dout, const TensorInfo& w, int64_t rows,
                       int64_t C, int64_t OC, bool accumulate);
  // The lm head's weight: lm_head.weight, or embed_tokens.weight when tied.
  const TensorInfo& head_weight() const;
  const TensorInfo& block(int64_t l, int slot) const;
  const TensorInfo* block_bias(int64_t l, int slot) const;  // null for slot -1
  const float* input_of(int64_t l) const;                   // layer l's input
  Status zero(float* p, int64_t n);
  const float* p(const TensorInfo& t) const;
  float* g(const TensorInfo& t) const;

  LlamaConfig cfg_;
  BlockSlots slots_;
  device::Buffer w16_, x16_, d16_;
  device::Buffer rope_;  // the RoPE tables (cos, then sin), outside the lendable activations
  Activations acts_;
  std::vector<int32_t> targets_;  // [B·T] of the current pass (host)
  int64_t B_ = 0, T_ = 0, valid_targets_ = 0;
  float unit_dloss_ = 0.0f;
  float dloss_ = 1.0f;
  bool for_backward_ = false;
  bool has_targets_ = false;
  bool bf16_acts_ = false;  // bf16_compute without adapters: bf16 activations
};

}  // namespace zerotrain::model::llama

// Module: what zero/ and engine/ may know of any model family. A model is
// a sequence of stages over named parameter tensors grouped per layer
// (ParamLayout); its parameters and gradients live in device memory bound
// group by group, so a ZeRO stage can keep, gather, expand and release
// them; hooks run around every stage of the forward and the backward. A
// family (model/gpt2/, ...) supplies the stages' compute, the pass trace
// (which groups each stage reads and writes), its initialisation and its
// config as JSON; everything here is generic.
//
//   ZT_ASSIGN_OR_RETURN(auto m, model::create_module(spec, {.max_batch = 8}));   // registry.h
//   m->init_parameters(/*seed=*/42);
//   m->zero_gradients();
//   for (auto& mb : micro_batches) {                 // gradient accumulation
//     ZT_ASSIGN_OR_RETURN(float loss, m->forward(mb.tokens, mb.targets, B, T));
//     ZT_RETURN_IF_ERROR(m->backward(1.0f / micro_batches.size()));
//   }
//
// == Parameter and gradient buffers ==
// Every group g of layout() has a parameter base and a gradient base:
// device pointers to group.numel floats holding that group's tensors at
// their offsets relative to group.offset. By default (own_parameters /
// own_gradients) they point into buffers the module allocates on its
// device. set_parameters(flat) points every group into a caller's flat
// buffer of layout().total_numel() floats; set_group_parameters(g, p)
// points one group anywhere (a ZeRO-3 gather buffer). Same for gradients.
// The module never frees caller buffers; they must stay valid while a pass
// uses them.
//
// == Pass structure and hooks (what ZeRO builds on) ==
// forward() runs stages 0 .. S-1 and backward() stages S-1 .. 0 (S =
// num_groups(): stage s computes with group s, and may read others:
// param_groups_read(stage, pass), grad_groups_written(stage)). Around each
// stage the hooks run: before_forward(s) -> stage s -> after_forward(s);
// before_backward(s) -> stage s backward -> after_backward(s). Group bases
// are resolved after before_* returns, so a hook may gather into a fresh
// buffer and bind it there; after_* may release it (the module keeps no
// parameter pointer between stages). When after_backward(g) runs, group
// g's gradients are final for this backward (a family whose stages write
// other groups' gradients says so in grad_groups_written; those become
// final at their own stage). From after_backward(g) on, this backward
// neither reads nor writes group g's parameters or gradients again, so a
// communication stream may reduce them while the earlier stages compute
// (overlap_comm). A hook's non-OK status aborts the pass and is returned
// (the activations are then invalid: run forward again; an aborted
// backward leaves a partial sum in the gradients: zero them).
// Activations are the module's, not the groups': a ZeRO stage need not
// keep parameters alive between forward and backward; it must present the
// same values again for the backward.
//
// == Activation checkpointing ==
// With options().checkpoint_layers the family keeps every block's output
// (the next block's input) but one shared set of the other activations,
// and backward() runs, for each checkpointable stage s (a block),
// before_backward(s) -> forward_stage(s) again -> backward_stage(s) ->
// after_backward(s). The recompute reads exactly the parameters the
// stage's backward reads (param_groups_read(s, kBackward) ⊇ its forward's),
// so a ZeRO-3 gather in before_backward serves both, and it touches no
// tied weight (blocks own no shared tensor). Deterministic kernels on the
// same inputs give the forward's values bit for bit, so the gradients are
// exactly those without checkpointing.
//
// == Semantics ==
// forward: loss = mean over tokens with target >= 0 of the cross-entropy
// (targets < 0 are ignored); per-token losses in losses(). targets may be
// null (inference: loss is NaN, no backward; needs full_logits).
// backward(dloss): ADDS d(dloss · loss)/dθ into the gradient buffers, so
// calling it after each of k micro-batch forwards with dloss = 1/k
// accumulates the mean over the k micro-batches; zero_gradients() starts
// over. Each forward allows exactly one backward.
//
// == Adapters (ModuleOptions.lora) ==
// With LoRA the family's natural layout is base_layout() and layout() is
// the trainable one (adapters.h): lora_A/lora_B per adapted Linear and the
// modules_to_save copies, grouped as the base (a group may be empty, numel
// 0, and then needs no binding). Everything a ZeRO stage binds, gathers,
// reduces and steps is layout()'s; the frozen base tensors live in the
// module's frozen store on its device, one block per group, filled by
// load_frozen() from a reader over base_layout() and never written by a
// pass (ZeRO-3 partitions the blocks and binds gathered ones per stage, as
// it does the trainable groups). An adapted Linear
// computes y = W·x + s·B·(A·x); its backward adds into dA, dB and dx only.
// Frozen tensors get no gradient (their kernels' weight gradients go to a
// discard buffer or are skipped). With ModuleOptions.base_4bit (QLoRA) the
// frozen Linear weights but the lm head are held 4-bit; weight_rows() decodes
// one a tile of whole rows at a time into an fp32 scratch for each GEMM that
// reads it (bitsandbytes' MatMul4Bit decodes the whole weight).
//
// Thread-safety: none; one module per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/half.h"
#include "core/status.h"
#include "device/device.h"
#include "model/adapters.h"
#include "model/param_layout.h"

namespace zerotrain::model {

struct ModuleOptions {
  int64_t max_batch = 1;       // largest B forward() accepts
  int64_t max_seq = 0;         // largest T; 0 means the config's sequence length
  bool own_parameters = true;  // allocate a parameter buffer (else bind one)
  bool own_gradients = true;   // allocate a gradient buffer (else bind one)
  // bf16 mixed precision: the GEMMs read bf16 copies of their weights and
  // inputs and accumulate in fp32 (as autocast; the family says which
  // activations it keeps in bf16).
  bool bf16_compute = false;
  // Keep only the softmax's log-sum-exp per head and recompute the
  // attention map in the backward (~5% time) instead of saving [B,NH,T,T].
  bool recompute_attention = true;
  // Keep the logits of all B·T rows (logits(), and forward without
  // targets); off, the lm head runs over chunks of head_rows rows.
  bool full_logits = false;
  int64_t head_rows = 0;  // rows of an lm-head chunk; 0: automatic
  // Activation checkpointing: keep only each block's input (its stage's
  // output is the next one's input) and one block's worth of activations;
  // the backward re-runs a block's forward just before its backward (see
  // "Activation checkpointing" above). Bit-identical results.
  bool checkpoint_layers = false;
  // With checkpoint_layers: synchronise the device after each recomputed
  // forward (DeepSpeed's synchronize_checkpoint_boundary).
  bool checkpoint_synchronize = false;
  // Where the parameters, gradients and activations live and the kernels
  // run; null: the process's default device (device::default_device()).
  device::Device* device = nullptr;
  // LoRA (see "Adapters" below); null: every parameter trains.
  std::shared_ptr<const LoraConfig> lora{};
  // QLoRA: the frozen Linear weights held 4-bit (needs lora), decoded at
  // most dequant_tile elements (whole rows) at a time; 0: kDequantTile.
  std::optional<device::Quant4Options> base_4bit{};
  int64_t dequant_tile = 0;
};

// What the flops profiler reports of one stage: its module as Hugging Face
// names it, the parameters it owns (tied weights at their first owner, as
// HF counts them) and the multiply-accumulates of its forward over B·T
// tokens (every GEMM, attention's two matmuls over the full T×T as
// DeepSpeed's profiler counts them; element-wise work is not counted).
struct StageCost {
  std::string name;  // "transformer.h.0"
  std::string type;  // "GPT2Block"
  int64_t params = 0;
  int64_t macs = 0;
};

struct ModelCost {
  std::string type;               // "GPT2LMHeadModel"
  std::vector<StageCost> stages;  // [num_groups()]
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
  int64_t activation_bytes = 0;  // saved activations + scratch, for max B, T
  int64_t layout_bytes = 0;      // bytes of one full flat buffer (layout().total_bytes())
  int64_t frozen_bytes = 0;      // the frozen store (adapters only)
};

class Decoder;

class Module {
 public:
  virtual ~Module();
  Module(Module&&) noexcept;
  Module& operator=(Module&&) = delete;
  Module(const Module&) = delete;

  // "gpt2", "llama", ...
  virtual std::string_view family() const = 0;
  // The model's config as its family's HF config.json holds it (with
  // model_type): what a checkpoint records to rebuild it.
  virtual nlohmann::json config_json() const = 0;
  // The trainable parameters (what ZeRO partitions); base_layout() when
  // there are no adapters.
  const ParamLayout& layout() const { return layout_; }
  // The family's full HF layout (what HF weights and init_base_range fill).
  const ParamLayout& base_layout() const { return base_layout_; }
  // The LoRA plan; null without adapters.
  const AdapterPlan* adapters() const { return adapters_.get(); }
  // Fills the frozen store from `read`, a reader over base_layout() (an HF
  // directory, a seeded init), a tensor at a time through host memory, into
  // one block per group (adapters.h; the 4-bit weights quantized in it).
  // With a sink, each group's block goes to sink(g, block) in host memory
  // instead and the module keeps none (ZeRO-3 keeps its partition and binds
  // gathered blocks with set_group_frozen). OK and nothing to do without
  // adapters.
  using FrozenSink = std::function<Status(int group, std::span<const uint8_t> block)>;
  Status load_frozen(const ReadFlatFn& read, const FrozenSink& sink = {});
  // Bytes of group g's frozen block (0 without adapters or frozen tensors).
  int64_t frozen_group_bytes(int g) const;
  // Points group g's frozen tensors at `block` (device memory holding the
  // block load_frozen gave the sink); nullptr unbinds.
  void set_group_frozen(int g, const uint8_t* block);
  const uint8_t* group_frozen(int g) const {
    return adapters_ ? frozen_base_[static_cast<size_t>(g)] : nullptr;
  }
  // CRC-32 of the frozen values as load_frozen read them (tensor by tensor,
  // fp32, in base order): what a LoRA checkpoint records of its base.
  uint32_t frozen_checksum() const { return frozen_crc_; }
  // The adapter as a checkpoint manifest records it: {"peft": PEFT's
  // adapter_config.json, "base_crc32": frozen_checksum()}; null without.
  nlohmann::json adapter_json() const;
  // Bytes of the frozen store this module holds, the 4-bit weights and code
  // tables included (0 without adapters; the code tables only after a sink
  // took the blocks).
  int64_t frozen_bytes() const;
  // Rows of base Linear weight t one GEMM tile decodes (see weight_rows):
  // all of them unless it is held 4-bit.
  int64_t weight_tile_rows(const TensorInfo& t) const;
  // What the family prefixes its layout names with in its HF model
  // ("transformer." for GPT-2): PEFT's module names.
  std::string hf_module_prefix() const { return family_hf_prefix(family()); }
  int num_groups() const { return layout_.num_groups(); }
  device::Device& device() const { return *device_; }
  const ModuleOptions& options() const { return options_; }
  bool bf16_compute() const { return options_.bf16_compute; }

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
  // bf16_compute: group g's parameters also as bf16 (the same values as
  // its fp32 binding, which a 16-bit compute copy holds anyway): the GEMMs
  // read their weights there instead of rounding the fp32 ones at every
  // call. nullptr unbinds. InvalidArgument without bf16_compute; the
  // family's scratch allocation error otherwise.
  Status set_group_parameters_bf16(int g, const BFloat16* base);
  const BFloat16* group_parameters_bf16(int g) const { return param16_base_[g]; }
  void set_hooks(GroupHooks hooks) { hooks_ = std::move(hooks); }
  // Frees the buffers the module allocated (own_parameters/own_gradients,
  // and the frozen store's blocks) and unbinds every group: ZeRO-3 keeps
  // only partitions and binds group buffers from its hooks.
  // parameters()/gradients() are null afterwards.
  void release_owned_buffers();

  // Fills the bound parameters (every group) from seed: the family's
  // initialisation, group by group through host memory.
  Status init_parameters(uint64_t seed);
  // Fills the bound parameters from `read`, a group at a time through one
  // group-sized host buffer (never a second whole-model buffer); read's
  // error is returned.
  Status load_parameters(const ReadFlatFn& read);
  // The same initial values for flat elements [begin, end) of layout()
  // only, into host[0, end - begin): each element is a pure function of
  // (seed, tensor, index), so a ZeRO-3 rank fills just its partition. With
  // adapters: lora_A kaiming-uniform (bound 1/sqrt(in), PEFT's default) or
  // normal(0, 1/r) with gaussian_init, lora_B zero, a copy as the base's.
  void init_range(uint64_t seed, int64_t begin, int64_t end, float* host) const;
  // The family's initialisation over base_layout().
  virtual void init_base_range(uint64_t seed, int64_t begin, int64_t end, float* host) const = 0;
  // Zeroes the bound gradients of every group.
  void zero_gradients();

  // tokens, targets: host [B,T] row-major; copied, so they may be freed
  // after. InvalidArgument for B, T out of range, a token outside [0, V)
  // or a target >= V (naming b, t), or an unbound group.
  // for_backward = false (evaluation) allows no backward.
  // doc_starts (packed documents): host [B,T], the row index where each
  // token's document begins (0 <= doc_starts[b,t] <= t, the same for a
  // document's tokens): tokens attend only within their document and take
  // positions t - doc_starts[b,t], so documents packed into one row do not
  // interact. InvalidArgument for a malformed array, or for a path without
  // it (GPT-2's bf16 attention or saved attention maps).
  StatusOr<float> forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                          bool for_backward = true, const int32_t* doc_starts = nullptr);
  // InvalidArgument if there was no forward with targets (for backward)
  // since the last backward (or the activation memory was lent since).
  Status backward(float dloss = 1.0f);

  // The activation memory as scratch while no pass needs it (after a
  // backward or an evaluation forward, until the next forward), so a
  // boundary step's transient (a 16-bit model's fp32 gradients) takes no
  // memory of its own: n floats of device memory, or nullptr when the
  // buffer is smaller. A pending backward is dropped, losses() is void,
  // and forward() refuses (InvalidArgument) until return_activation_memory().
  float* lend_activation_memory(int64_t n);
  void return_activation_memory() { activations_lent_ = false; }
  bool activation_memory_lent() const { return activations_lent_; }

  // On: forward() times each stage's compute (hooks excluded, the device
  // synchronised), for the flops profiler; forward_stage_seconds() holds
  // the last forward's, [num_groups()].
  void set_stage_timing(bool on);
  std::span<const double> forward_stage_seconds() const { return stage_seconds_; }
  // The profiler's per-stage parameters and MACs for a forward over (B, T).
  virtual ModelCost cost(int64_t B, int64_t T) const = 0;

  // Stages recomputed and their seconds since construction (activation
  // checkpointing; DeepSpeed's checkpointing profile).
  int64_t recomputed_stages() const { return recomputed_stages_; }
  double recompute_seconds() const { return recompute_seconds_; }

  // Generation (model/decoder.h): a KV-cached decoder over the bound fp32
  // parameters for `batch` rows of up to `max_seq` positions, computing in
  // `dtype` (fp32, or bf16 weights and cache); the model must outlive it.
  // InvalidArgument for a family without one, max_seq beyond the family's
  // positions, unbound parameters or another dtype.
  virtual StatusOr<std::unique_ptr<Decoder>> make_decoder(
      int64_t batch, int64_t max_seq, DType dtype = DType::kFloat32) const;
  // InvalidArgument naming `what` unless every group's parameters are bound.
  Status check_parameters_bound(const char* what) const;

  // Per-token losses of the last forward (host memory, B·T of them).
  std::span<const float> losses() const { return losses_; }
  MemoryStats memory() const;

  // Groups whose parameters stage `stage` reads in `pass`, and whose
  // gradients its backward adds into.
  virtual std::vector<int> param_groups_read(int stage, Pass pass) const = 0;
  virtual std::vector<int> grad_groups_written(int stage) const = 0;

 protected:
  Module(ParamLayout layout, const ModuleOptions& options);
  // Allocates the owned buffers (after the family set up its layout) and
  // the activation memory of `activation_floats` floats.
  Status allocate(int64_t activation_floats);
  const device::Ops& ops() const { return device_->ops(); }
  float* activation_memory() const { return act_buffer_.as<float>(); }
  // The current forward's packed-document arrays in device memory [B,T]
  // (null when the batch is not packed): each token's first key, and its
  // position within its document.
  const int32_t* doc_first_key() const { return packed_ ? doc_first_.as<int32_t>() : nullptr; }
  // The first key of each query [B,T] in a layer with a sliding window
  // (set_attention_window) or without: the window's start clipped to the
  // document's, or doc_first_key() when the window spans the whole batch.
  const int32_t* attention_first_key(bool windowed_layer) const {
    return windowed_layer && windowed_ ? window_first_.as<int32_t>() : doc_first_key();
  }
  // Windowed layers attend to the last `window` positions (0: all).
  void set_attention_window(int64_t window) { attention_window_ = window; }
  const int32_t* doc_positions() const { return packed_ ? doc_pos_.as<int32_t>() : nullptr; }
  // Whether the family's current options can run packed documents
  // (default: no); the message says why not.
  virtual Status supports_packed_documents() const {
    return invalid_argument("packed documents are not implemented for model family " +
                            std::string(family()));
  }

  // The family's parts. begin_forward checks and copies the inputs (B, T
  // within the options) and returns whether a backward may follow;
  // finish_forward returns the mean loss (NaN without targets), filling
  // losses_.
  virtual Status begin_forward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                               bool for_backward) = 0;
  virtual Status forward_stage(int stage) = 0;
  virtual StatusOr<float> finish_forward() = 0;
  virtual void begin_backward(float dloss) = 0;
  virtual Status backward_stage(int stage) = 0;

  // Targets >= 0 among targets[0, n) (rows of T, for the error's (b, t));
  // InvalidArgument naming (b, t) for a target >= V.
  static StatusOr<int64_t> count_targets(const int32_t* targets, int64_t n, int64_t T, int64_t V);
  // Mean of losses at targets >= 0 (summed in double: exact to fp32 for
  // any B·T); 0 when there are none.
  static float mean_loss(std::span<const float> losses, std::span<const int32_t> targets,
                         int64_t valid);
  // A base_layout() tensor's parameters on the device (the trainable
  // binding, or the frozen store); its gradient, or null when frozen;
  // grad_or_sink: a discard buffer for a frozen tensor a kernel must write
  // (a norm's weight gradient).
  // A 4-bit tensor has no fp32 values to point at: read it with weight_rows().
  const float* param(const TensorInfo& t) const;
  // A Linear weight's fp32 values for one GEMM: param(t); a 4-bit one is
  // decoded a tile of whole rows at a time: rows [r0, r1) of it into the
  // dequantize scratch (valid until the next call), r1 - r0 at most
  // weight_tile_rows(t), which is every row for a weight held in fp32.
  bool held_4bit(const TensorInfo& t) const {
    return adapters_ && adapters_->of_base[static_cast<size_t>(t.index)].quant4 >= 0;
  }
  StatusOr<const float*> weight_rows(const TensorInfo& t, int64_t r0, int64_t r1) const;
  // Elements a 4-bit tile holds at most by default (4 MiB of fp32): the
  // scratch is a tile, not a whole weight (a 7B MLP weight is 180 MiB fp32).
  static constexpr int64_t kDequantTile = int64_t{1} << 20;
  float* grad(const TensorInfo& t) const;
  float* grad_or_sink(const TensorInfo& t) const;
  // Frozen: no gradient at all (independent of what is bound now).
  bool frozen(const TensorInfo& t) const {
    return adapters_ && adapters_->of_base[static_cast<size_t>(t.index)].trainable < 0;
  }
  // Whether base Linear weight w has a LoRA adapter; lora_forward adds
  // s·B·(A·x) into out [rows, OC]; lora_backward adds into dinp [rows, C]
  // (the base W's share already there), dA and dB, recomputing A·x.
  bool has_lora(const TensorInfo& w) const;
  Status lora_forward(float* out, const float* x, const TensorInfo& w, int64_t rows) const;
  Status lora_backward(float* dinp, const float* dout, const float* x, const TensorInfo& w,
                       int64_t rows) const;
  // dinp (+)= dout·W for a frozen W [OC,C] (no weight gradient): fp32, or
  // bf16 operands when w16/dout16 are given.
  Status frozen_linear_backward(float* dinp, const float* dout, const float* w, int64_t rows,
                                int64_t C, int64_t OC, bool accumulate) const;
  Status frozen_linear_backward_bf16(float* dinp, const BFloat16* dout, const BFloat16* w,
                                     int64_t rows, int64_t C, int64_t OC, bool accumulate) const;

  // Whether stage s keeps only its input under checkpoint_layers (and is
  // recomputed in the backward): the family's blocks.
  virtual bool checkpointable_stage(int stage) const { return false; }
  // Activation bytes beyond the activation memory (the family's scratch).
  virtual int64_t scratch_bytes() const { return 0; }
  // Every group has (all = true) or one lost (false) its bf16 view.
  virtual Status on_bf16_views(bool all) { return ok_status(); }

  std::vector<float> losses_;  // [B·T] of the last forward (host)

 private:
  Status run_hook(const std::function<Status(int)>& hook, int g) const;
  Status check_bound(int stage, Pass pass) const;

  Status allocate_adapters();
  Status allocate_quantized();
  void pack_quantized(int k, const float* host, int64_t numel, uint8_t* out);
  device::Quant4View quant_view(const TensorInfo& t) const;
  const uint8_t* frozen_block(const TensorInfo& t) const;  // its group's bound block
  const float* trainable_param(int i) const;
  float* trainable_grad(int i) const;

  ParamLayout base_layout_, layout_;
  std::shared_ptr<const AdapterPlan> adapters_;
  uint32_t frozen_crc_ = 0;
  device::Buffer lora_h_, lora_u_, grad_sink_;
  // The frozen store: each group's owned block, and the block each group is
  // bound to now (the owned one, a ZeRO-3 gather, or none).
  std::vector<device::Buffer> frozen_store_;  // [groups]
  std::vector<const uint8_t*> frozen_base_;   // [groups]
  // QLoRA: double quant's mean per 4-bit weight, the code tables, the decode target.
  std::vector<float> quant_offset_;
  device::Buffer quant_codes_, dequant_scratch_;
  ModuleOptions options_;
  device::Device* device_ = nullptr;
  device::Buffer own_params_, own_grads_, act_buffer_;
  float* flat_params_ = nullptr;
  float* flat_grads_ = nullptr;
  std::vector<float*> param_base_, grad_base_;  // [num_groups]
  Status set_doc_starts(const int32_t* doc_starts, int64_t B, int64_t T);
  Status set_packed_documents(const int32_t* doc_starts, int64_t B, int64_t T);
  device::Buffer doc_first_, doc_pos_;  // [B,T] int32 of a packed forward
  bool packed_ = false;
  int64_t attention_window_ = 0;
  device::Buffer window_first_;  // [B,T] int32 when windowed_
  bool windowed_ = false;
  // The (B, T) window_first_ holds for an unpacked batch; {0, 0} when it
  // holds a packed one (rebuilt each forward).
  std::pair<int64_t, int64_t> window_shape_{0, 0};
  std::vector<const BFloat16*> param16_base_;  // [num_groups], bf16 views
  GroupHooks hooks_;
  bool backward_ready_ = false;
  bool activations_lent_ = false;
  bool stage_timing_ = false;
  std::vector<double> stage_seconds_;  // [num_groups] when stage_timing_
  int64_t recomputed_stages_ = 0;
  double recompute_seconds_ = 0.0;
};

}  // namespace zerotrain::model

// Module's adapter half (see "Adapters" in module.h): the frozen store,
// base-tensor resolution, the LoRA GEMMs and the seeded adapter init.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/crc32.h"
#include "device/matmul_desc.h"
#include "device/ops.h"
#include "model/init_normal.h"
#include "model/module.h"
#include "model/registry.h"

namespace zerotrain::model {

Status Module::allocate_adapters() {
  if (!options_.lora) return ok_status();
  if (options_.base_4bit) ZT_RETURN_IF_ERROR(check_4bit_base(family(), "ModuleOptions.base_4bit"));
  ZT_ASSIGN_OR_RETURN(AdapterPlan plan, plan_adapters(base_layout_, *options_.lora,
                                                      hf_module_prefix(), options_.base_4bit));
  adapters_ = std::make_shared<const AdapterPlan>(std::move(plan));
  ZT_RETURN_IF_ERROR(allocate_quantized());
  layout_ = adapters_->trainable;
  // The blocks themselves come with load_frozen (or never: ZeRO-3 keeps a partition).
  frozen_store_.resize(static_cast<size_t>(base_layout_.num_groups()));
  frozen_base_.assign(static_cast<size_t>(base_layout_.num_groups()), nullptr);
  using device::MemoryCategory;
  const auto rows = static_cast<size_t>(options_.max_batch * options_.max_seq);
  const auto r = static_cast<size_t>(adapters_->config.r);
  ZT_ASSIGN_OR_RETURN(lora_h_, device_->allocate(rows * r * sizeof(float),
                                                 MemoryCategory::kActivations, "LoRA A·x"));
  ZT_ASSIGN_OR_RETURN(lora_u_, device_->allocate(rows * r * sizeof(float),
                                                 MemoryCategory::kActivations, "LoRA d(A·x)"));
  // The widest frozen 1-D tensor a kernel writes a gradient of (a norm).
  int64_t sink = 1;
  for (const TensorInfo& t : base_layout_.tensors())
    if (t.shape.size() == 1) sink = std::max(sink, t.numel);
  ZT_ASSIGN_OR_RETURN(grad_sink_,
                      device_->allocate(static_cast<size_t>(sink) * sizeof(float),
                                        MemoryCategory::kActivations, "frozen gradient sink"));
  return ok_status();
}

Status Module::allocate_quantized() {
  if (!adapters_->quant4) return ok_status();
  using device::MemoryCategory;
  const device::Quant4Type type = adapters_->quant4->type;
  std::vector<float> codes(device::quant4_code(type).begin(), device::quant4_code(type).end());
  codes.insert(codes.end(), device::dynamic8_code().begin(), device::dynamic8_code().end());
  ZT_ASSIGN_OR_RETURN(quant_codes_,
                      device_->allocate(codes.size() * sizeof(float), MemoryCategory::kParameters,
                                        "4-bit code tables"));
  ZT_RETURN_IF_ERROR(device_->copy(quant_codes_.data(), codes.data(), codes.size() * sizeof(float)));
  int64_t widest = 1;  // the largest tile
  for (int i : adapters_->quantized) {
    const TensorInfo& t = base_layout_.tensors()[static_cast<size_t>(i)];
    widest = std::max(widest, weight_tile_rows(t) * t.shape[1]);
  }
  ZT_ASSIGN_OR_RETURN(dequant_scratch_,
                      device_->allocate(static_cast<size_t>(widest) * sizeof(float),
                                        MemoryCategory::kActivations, "4-bit dequantize scratch"));
  quant_offset_.assign(adapters_->quantized.size(), 0.0f);
  return ok_status();
}

// Weight k quantized into its place in a host block: codes, then scales
// (and double quant's second level) at quant4_store_layout's offsets.
void Module::pack_quantized(int k, const float* host, int64_t numel, uint8_t* out) {
  const device::Quant4Host q = device::quantize_4bit(host, numel, *adapters_->quant4);
  const device::Quant4StoreLayout l = device::quant4_store_layout(numel, *adapters_->quant4);
  ZT_CHECK(q.options.blocksize == adapters_->quant4->blocksize, "4-bit blocksize changed");
  std::memcpy(out, q.packed.data(), q.packed.size());
  if (q.absmax.empty())
    std::memcpy(out + l.scales_at, q.absmax_q.data(), q.absmax_q.size());
  else
    std::memcpy(out + l.scales_at, q.absmax.data(), q.absmax.size() * sizeof(float));
  if (!q.absmax2.empty())
    std::memcpy(out + l.absmax2_at, q.absmax2.data(), q.absmax2.size() * sizeof(float));
  quant_offset_[static_cast<size_t>(k)] = q.offset;
}

device::Quant4View Module::quant_view(const TensorInfo& t) const {
  const AdaptedTensor& a = adapters_->of_base[static_cast<size_t>(t.index)];
  const device::Quant4Options& o = *adapters_->quant4;
  const uint8_t* base = frozen_block(t) + a.frozen;
  const device::Quant4StoreLayout l = device::quant4_store_layout(t.numel, o);
  const float* codes = quant_codes_.as<float>();
  device::Quant4View v{.packed = base, .numel = t.numel, .blocksize = o.blocksize, .code = codes};
  if (o.double_quant) {
    v.absmax_q = base + l.scales_at;
    v.absmax2 = reinterpret_cast<const float*>(base + l.absmax2_at);
    v.code8 = codes + 16;
    v.offset = quant_offset_[static_cast<size_t>(a.quant4)];
  } else {
    v.absmax = reinterpret_cast<const float*>(base + l.scales_at);
  }
  return v;
}

const uint8_t* Module::frozen_block(const TensorInfo& t) const {
  const uint8_t* b = frozen_base_[static_cast<size_t>(t.group)];
  ZT_CHECK(b != nullptr, t.name, " is frozen and its group's frozen block is not bound "
           "(load_frozen, or a ZeRO-3 gather)");
  return b;
}

Status Module::load_frozen(const ReadFlatFn& read, const FrozenSink& sink) {
  if (!adapters_) return ok_status();
  std::vector<float> host;
  std::vector<uint8_t> block;
  uint32_t crc = 0;  // tensor by tensor in base order: groups hold consecutive tensors
  for (const GroupInfo& g : base_layout_.groups()) {
    const auto gi = static_cast<size_t>(g.index);
    block.assign(static_cast<size_t>(adapters_->frozen_group_bytes[gi]), 0);
    for (int i = g.first_tensor; i < g.first_tensor + g.tensor_count; ++i) {
      const TensorInfo& t = base_layout_.tensors()[static_cast<size_t>(i)];
      const AdaptedTensor& a = adapters_->of_base[static_cast<size_t>(i)];
      if (a.trainable >= 0) continue;
      host.resize(static_cast<size_t>(t.numel));
      ZT_RETURN_IF_ERROR(read(t.offset, t.numel, host.data()));
      crc = crc32_update(crc, host.data(), host.size() * sizeof(float));
      uint8_t* at = block.data() + a.frozen;
      if (a.quant4 >= 0)
        pack_quantized(a.quant4, host.data(), t.numel, at);
      else
        std::memcpy(at, host.data(), host.size() * sizeof(float));
    }
    frozen_store_[gi] = {};
    frozen_base_[gi] = nullptr;
    if (sink) {
      ZT_RETURN_IF_ERROR(sink(g.index, block));
      continue;
    }
    if (block.empty()) continue;
    ZT_ASSIGN_OR_RETURN(frozen_store_[gi],
                        device_->allocate(block.size(), device::MemoryCategory::kParameters,
                                          "frozen base of " + g.name));
    ZT_RETURN_IF_ERROR(device_->copy(frozen_store_[gi].data(), block.data(), block.size()));
    frozen_base_[gi] = static_cast<const uint8_t*>(frozen_store_[gi].data());
  }
  frozen_crc_ = crc;
  return ok_status();
}

int64_t Module::frozen_group_bytes(int g) const {
  return adapters_ ? adapters_->frozen_group_bytes[static_cast<size_t>(g)] : 0;
}

void Module::set_group_frozen(int g, const uint8_t* block) {
  ZT_CHECK(adapters_ && g >= 0 && g < num_groups(), "set_group_frozen: no frozen group ", g);
  frozen_base_[static_cast<size_t>(g)] = block;
}

int64_t Module::frozen_bytes() const {
  auto n = static_cast<int64_t>(quant_codes_.bytes());
  for (const device::Buffer& b : frozen_store_) n += static_cast<int64_t>(b.bytes());
  return n;
}

int64_t Module::weight_tile_rows(const TensorInfo& t) const {
  if (!held_4bit(t)) return t.shape[0];
  const int64_t tile = options_.dequant_tile > 0 ? options_.dequant_tile : kDequantTile;
  return std::clamp<int64_t>(tile / t.shape[1], 1, t.shape[0]);
}

StatusOr<const float*> Module::weight_rows(const TensorInfo& t, int64_t r0, int64_t r1) const {
  ZT_CHECK(0 <= r0 && r0 < r1 && r1 <= t.shape[0] && r1 - r0 <= weight_tile_rows(t),
           "weight_rows [", r0, ", ", r1, ") of ", t.name, " is not one tile");
  if (!held_4bit(t)) return param(t) + r0 * t.shape[1];
  float* out = dequant_scratch_.as<float>();
  ZT_RETURN_IF_ERROR(ops().dequantize_4bit(quant_view(t), r0 * t.shape[1], r1 * t.shape[1], out));
  return static_cast<const float*>(out);
}

nlohmann::json Module::adapter_json() const {
  if (!adapters_) return nullptr;
  nlohmann::json j = {{"peft", to_peft_json(adapters_->config)},
                      {"base_crc32", crc32_hex(frozen_crc_)}};
  if (const auto& q = adapters_->quant4)  // what the run trained over (informative)
    j["base_4bit"] = {{"quant_type", device::quant4_type_name(q->type)},
                      {"blocksize", q->blocksize}, {"double_quant", q->double_quant}};
  return j;
}

const float* Module::trainable_param(int i) const {
  const TensorInfo& t = layout_.tensors()[static_cast<size_t>(i)];
  return param_base_[t.group] + (t.offset - layout_.groups()[t.group].offset);
}

float* Module::trainable_grad(int i) const {
  const TensorInfo& t = layout_.tensors()[static_cast<size_t>(i)];
  return grad_base_[t.group] + (t.offset - layout_.groups()[t.group].offset);
}

const float* Module::param(const TensorInfo& t) const {
  if (!adapters_) return trainable_param(t.index);
  const AdaptedTensor& a = adapters_->of_base[static_cast<size_t>(t.index)];
  if (a.trainable >= 0) return trainable_param(a.trainable);
  ZT_CHECK(a.quant4 < 0, t.name, " is held 4-bit: read it through Module::weight_rows()");
  return reinterpret_cast<const float*>(frozen_block(t) + a.frozen);
}

float* Module::grad(const TensorInfo& t) const {
  if (!adapters_) return trainable_grad(t.index);
  const AdaptedTensor& a = adapters_->of_base[static_cast<size_t>(t.index)];
  return a.trainable >= 0 ? trainable_grad(a.trainable) : nullptr;
}

float* Module::grad_or_sink(const TensorInfo& t) const {
  float* g = grad(t);
  if (g != nullptr) return g;
  ZT_CHECK(static_cast<size_t>(t.numel) * sizeof(float) <= grad_sink_.bytes(),
           "gradient sink too small for ", t.name);
  return grad_sink_.as<float>();
}

bool Module::has_lora(const TensorInfo& w) const {
  return adapters_ && adapters_->of_base[static_cast<size_t>(w.index)].lora_a >= 0;
}

Status Module::lora_forward(float* out, const float* x, const TensorInfo& w, int64_t rows) const {
  if (!has_lora(w)) return ok_status();
  const AdaptedTensor& a = adapters_->of_base[static_cast<size_t>(w.index)];
  const int64_t OC = w.shape[0], C = w.shape[1], r = adapters_->config.r;
  float* h = lora_h_.as<float>();
  // h = x·Aᵀ [rows, r]; out += s · h·Bᵀ [rows, OC].
  ZT_RETURN_IF_ERROR(ops().matmul({.m = rows, .n = r, .k = C, .trans_b = true}, x,
                                  trainable_param(a.lora_a), nullptr, h));
  return ops().matmul(
      {.m = rows, .n = OC, .k = r, .trans_b = true, .alpha = adapters_->scale, .beta = 1.0f}, h,
      trainable_param(a.lora_b), nullptr, out);
}

Status Module::lora_backward(float* dinp, const float* dout, const float* x, const TensorInfo& w,
                             int64_t rows) const {
  if (!has_lora(w)) return ok_status();
  const AdaptedTensor& a = adapters_->of_base[static_cast<size_t>(w.index)];
  const int64_t OC = w.shape[0], C = w.shape[1], r = adapters_->config.r;
  const float s = adapters_->scale;
  float* h = lora_h_.as<float>();
  float* u = lora_u_.as<float>();
  const float* A = trainable_param(a.lora_a);
  const float* B = trainable_param(a.lora_b);
  // h = x·Aᵀ again; dB += s·doutᵀ·h; u = s·dout·B; dA += uᵀ·x; dinp += u·A.
  ZT_RETURN_IF_ERROR(ops().matmul({.m = rows, .n = r, .k = C, .trans_b = true}, x, A, nullptr, h));
  ZT_RETURN_IF_ERROR(ops().matmul(
      {.m = OC, .n = r, .k = rows, .trans_a = true, .alpha = s, .beta = 1.0f}, dout, h, nullptr,
      trainable_grad(a.lora_b)));
  ZT_RETURN_IF_ERROR(ops().matmul({.m = rows, .n = r, .k = OC, .alpha = s}, dout, B, nullptr, u));
  ZT_RETURN_IF_ERROR(ops().matmul({.m = r, .n = C, .k = rows, .trans_a = true, .beta = 1.0f}, u,
                                  x, nullptr, trainable_grad(a.lora_a)));
  if (dinp == nullptr) return ok_status();
  return ops().matmul({.m = rows, .n = C, .k = r, .beta = 1.0f}, u, A, nullptr, dinp);
}

Status Module::frozen_linear_backward(float* dinp, const float* dout, const float* w,
                                      int64_t rows, int64_t C, int64_t OC, bool accumulate) const {
  if (dinp == nullptr) return ok_status();
  return ops().matmul({.m = rows, .n = C, .k = OC, .beta = accumulate ? 1.0f : 0.0f}, dout, w,
                      nullptr, dinp);
}

Status Module::frozen_linear_backward_bf16(float* dinp, const BFloat16* dout, const BFloat16* w,
                                           int64_t rows, int64_t C, int64_t OC,
                                           bool accumulate) const {
  if (dinp == nullptr) return ok_status();
  return ops().matmul_bf16({.m = rows, .n = C, .k = OC, .beta = accumulate ? 1.0f : 0.0f}, dout,
                           w, nullptr, dinp);
}

void Module::init_range(uint64_t seed, int64_t begin, int64_t end, float* host) const {
  if (!adapters_) return init_base_range(seed, begin, end, host);
  ZT_CHECK(0 <= begin && begin <= end && end <= layout_.total_numel(), "init_range [", begin, ", ",
           end, ") outside the layout");
  std::fill(host, host + (end - begin), 0.0f);  // gaps, lora_B
  for (const TensorInfo& t : layout_.tensors()) {
    const int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.numel);
    if (lo >= hi || t.kind == ParamKind::kLoraB) continue;
    float* out = host + (lo - begin);
    if (t.kind != ParamKind::kLoraA) {  // a modules_to_save copy: the base's values
      const TensorInfo& b =
          base_layout_.tensors()[static_cast<size_t>(adapters_->base_of[t.index])];
      init_base_range(seed, b.offset + (lo - t.offset), b.offset + (hi - t.offset), out);
      continue;
    }
    const uint64_t h = fnv1a(t.name);
    const double r = static_cast<double>(adapters_->config.r);
    const double bound = 1.0 / std::sqrt(static_cast<double>(t.shape[1]));
    for (int64_t i = lo; i < hi; ++i) {
      const double z = init_normal(seed, h, static_cast<uint64_t>(i - t.offset));
      // kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(in), 1/sqrt(in)), drawn as Phi(z).
      out[i - lo] = static_cast<float>(adapters_->config.gaussian_init
                                           ? z / r
                                           : bound * std::erf(z / std::sqrt(2.0)));
    }
  }
}

}  // namespace zerotrain::model

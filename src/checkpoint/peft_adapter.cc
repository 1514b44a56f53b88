// PEFT adapter directories: write, read, merge (see peft_adapter.h).
#include "checkpoint/peft_adapter.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "checkpoint/safetensors.h"
#include "core/atomic_file.h"

namespace zerotrain::checkpoint {
namespace {

std::string join_path(const std::string& dir, const char* file) {
  return (std::filesystem::path(dir) / file).string();
}

}  // namespace

std::string peft_tensor_name(const model::TensorInfo& t, const std::string& hf_prefix) {
  return "base_model.model." + hf_prefix + t.name;
}

Status write_peft_adapter(const std::string& dir, const model::LoraConfig& config,
                          const model::ParamLayout& trainable, const std::string& hf_prefix,
                          bool fan_in_fan_out, const model::ReadFlatFn& read) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create adapter directory " + dir + ": " + ec.message());
  std::vector<SafetensorsTensor> specs;
  for (const model::TensorInfo& t : trainable.tensors())
    specs.push_back({.name = peft_tensor_name(t, hf_prefix), .dtype = DType::kFloat32,
                     .shape = t.hf_shape});
  ZT_ASSIGN_OR_RETURN(SafetensorsWriter w,
                      SafetensorsWriter::create(join_path(dir, kPeftWeightsFile), specs,
                                                {{"format", "pt"}}));
  std::vector<float> ours, hf;
  for (const model::TensorInfo& t : trainable.tensors()) {
    ours.resize(static_cast<size_t>(t.numel));
    hf.resize(static_cast<size_t>(model::hf_numel(t)));
    ZT_RETURN_IF_ERROR(read(t.offset, t.numel, ours.data()));
    model::copy_to_hf(t, ours.data(), hf.data());
    ZT_RETURN_IF_ERROR(w.write(hf));
  }
  ZT_RETURN_IF_ERROR(w.finish());
  nlohmann::json j = model::to_peft_json(config);
  j["fan_in_fan_out"] = fan_in_fan_out;
  return atomic_write_file(join_path(dir, kPeftConfigFile), j.dump(2) + "\n");
}

StatusOr<model::LoraConfig> read_peft_config(const std::string& dir) {
  const std::string path = join_path(dir, kPeftConfigFile);
  std::ifstream in(path);
  if (!in) return not_found(path + ": no PEFT adapter config (is " + dir + " an adapter directory?)");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(path + ": not valid JSON");
  return model::lora_from_peft_json(j, path);
}

StatusOr<PeftAdapter> PeftAdapter::open(const std::string& dir,
                                        const model::ParamLayout& trainable,
                                        const std::string& hf_prefix) {
  PeftAdapter a;
  a.path_ = join_path(dir, kPeftWeightsFile);
  ZT_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(a.path_));
  a.flat_.assign(static_cast<size_t>(trainable.total_numel()), 0.0f);
  std::set<std::string> expected;
  std::vector<float> hf;
  for (const model::TensorInfo& t : trainable.tensors()) {
    const std::string name = peft_tensor_name(t, hf_prefix);
    expected.insert(name);
    const SafetensorsTensor* s = f.find(name);
    if (s == nullptr)
      return invalid_argument(a.path_ + ": tensor " + name + " is missing (the adapter config "
                              "targets its module)");
    if (s->shape != t.hf_shape) {
      std::string want, got;
      for (int64_t d : t.hf_shape) want += (want.empty() ? "" : ",") + std::to_string(d);
      for (int64_t d : s->shape) got += (got.empty() ? "" : ",") + std::to_string(d);
      return invalid_argument(a.path_ + ": tensor " + name + " has shape [" + got + "], the " +
                              "model and adapter config need [" + want + "]");
    }
    hf.resize(static_cast<size_t>(s->numel()));
    ZT_RETURN_IF_ERROR(f.read_f32(*s, 0, s->numel(), hf.data()));
    model::copy_from_hf(t, hf.data(), a.flat_.data() + t.offset);
  }
  for (const SafetensorsTensor& s : f.tensors()) {
    if (!expected.count(s.name))
      return invalid_argument(a.path_ + ": tensor " + s.name +
                              " is not a module the adapter config adapts in this model "
                              "(unknown target, or another base model)");
  }
  return a;
}

Status PeftAdapter::read(int64_t offset, int64_t count, float* out) const {
  if (offset < 0 || count < 0 || offset + count > static_cast<int64_t>(flat_.size()))
    return invalid_argument("PeftAdapter::read outside the trainable layout");
  std::copy_n(flat_.begin() + offset, count, out);
  return ok_status();
}

model::ReadFlatFn merged_reader(const model::ParamLayout& base_layout,
                                std::shared_ptr<const model::AdapterPlan> plan_ptr,
                                model::ReadFlatFn base, model::ReadFlatFn adapter) {
  return [base_layout, plan_ptr, base = std::move(base), adapter = std::move(adapter)](
             int64_t offset, int64_t count, float* out) -> Status {
    ZT_RETURN_IF_ERROR(base(offset, count, out));
    const model::AdapterPlan& plan = *plan_ptr;
    const model::ParamLayout& tl = plan.trainable;
    std::vector<float> a, b;
    for (const model::TensorInfo& t : base_layout.tensors()) {
      const int64_t lo = std::max(offset, t.offset), hi = std::min(offset + count, t.offset + t.numel);
      if (lo >= hi) continue;
      const model::AdaptedTensor& at = plan.of_base[static_cast<size_t>(t.index)];
      if (at.trainable >= 0) {  // modules_to_save: the trained copy
        const model::TensorInfo& c = tl.tensors()[static_cast<size_t>(at.trainable)];
        ZT_RETURN_IF_ERROR(adapter(c.offset + (lo - t.offset), hi - lo, out + (lo - offset)));
        continue;
      }
      if (at.lora_a < 0) continue;
      const model::TensorInfo& ta = tl.tensors()[static_cast<size_t>(at.lora_a)];
      const model::TensorInfo& tb = tl.tensors()[static_cast<size_t>(at.lora_b)];
      a.resize(static_cast<size_t>(ta.numel));
      b.resize(static_cast<size_t>(tb.numel));
      ZT_RETURN_IF_ERROR(adapter(ta.offset, ta.numel, a.data()));
      ZT_RETURN_IF_ERROR(adapter(tb.offset, tb.numel, b.data()));
      const int64_t in = t.shape[1], r = plan.config.r;
      for (int64_t e = lo; e < hi; ++e) {  // W[o, i] += s · Σ_k B[o, k] A[k, i]
        const int64_t o = (e - t.offset) / in, i = (e - t.offset) % in;
        double d = 0.0;
        for (int64_t k = 0; k < r; ++k)
          d += double{b[static_cast<size_t>(o * r + k)]} * a[static_cast<size_t>(k * in + i)];
        out[e - offset] = static_cast<float>(out[e - offset] + plan.scale * d);
      }
    }
    return ok_status();
  };
}

Status apply_peft_adapter(ModelSource& src, const std::string& dir) {
  if (!src.read) return invalid_argument("--adapter " + dir + ": the base model has no weights");
  ZT_ASSIGN_OR_RETURN(model::LoraConfig cfg, read_peft_config(dir));
  ZT_ASSIGN_OR_RETURN(model::ParamLayout base, src.spec.family->layout(src.spec.config));
  const std::string prefix = model::family_hf_prefix(src.spec.family->name);
  StatusOr<model::AdapterPlan> plan = model::plan_adapters(base, cfg, prefix);
  if (!plan.ok()) return plan.status().with_context("--adapter " + dir);
  auto shared = std::make_shared<const model::AdapterPlan>(std::move(*plan));
  ZT_ASSIGN_OR_RETURN(PeftAdapter a, PeftAdapter::open(dir, shared->trainable, prefix));
  auto adapter = std::make_shared<PeftAdapter>(std::move(a));
  src.read = merged_reader(std::move(base), shared, src.read,
                           [adapter](int64_t o, int64_t n, float* out) {
                             return adapter->read(o, n, out);
                           });
  src.description += " + PEFT adapter " + dir + " (" + cfg.describe() + ", merged)";
  return ok_status();
}

}  // namespace zerotrain::checkpoint

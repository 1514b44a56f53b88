// Initial weights by flat range (see initial_weights.h).
#include "train/initial_weights.h"

#include <algorithm>

#include "checkpoint/hf/model_dir.h"
#include "checkpoint/peft_adapter.h"
#include "train/train_log.h"

namespace zerotrain::train {

namespace {

// The trainable tensors of a LoRA model: the adapter file's, or PEFT's init
// with modules_to_save copied from the base.
StatusOr<InitialWeights> adapted_weights(InitialWeights w, const model::Module& model,
                                         uint64_t seed, const std::string& adapter_dir) {
  if (!adapter_dir.empty()) {
    ZT_ASSIGN_OR_RETURN(checkpoint::PeftAdapter a,
                        checkpoint::PeftAdapter::open(adapter_dir, model.layout(),
                                                      model.hf_module_prefix()));
    auto shared = std::make_shared<checkpoint::PeftAdapter>(std::move(a));
    w.read = [shared](int64_t o, int64_t n, float* out) { return shared->read(o, n, out); };
    w.description += " + PEFT adapter " + adapter_dir;
    return w;
  }
  w.read = [&model, seed, base = w.base](int64_t offset, int64_t count, float* out) -> Status {
    model.init_range(seed, offset, offset + count, out);
    const model::AdapterPlan& plan = *model.adapters();
    for (const model::TensorInfo& t : model.layout().tensors()) {
      if (t.kind == model::ParamKind::kLoraA || t.kind == model::ParamKind::kLoraB) continue;
      const int64_t lo = std::max(offset, t.offset), hi = std::min(offset + count, t.offset + t.numel);
      if (lo >= hi) continue;
      const model::TensorInfo& b =
          model.base_layout().tensors()[static_cast<size_t>(plan.base_of[t.index])];
      ZT_RETURN_IF_ERROR(base(b.offset + (lo - t.offset), hi - lo, out + (lo - offset)));
    }
    return ok_status();
  };
  w.description += " + new LoRA adapter (" + model.adapters()->config.describe() + ")";
  return w;
}

}  // namespace

StatusOr<InitialWeights> initial_weights(const std::string& path, const model::Module& model,
                                         uint64_t seed, const std::string& adapter_dir) {
  ZT_ASSIGN_OR_RETURN(InitialWeights w, initial_weights(path, model, seed, nullptr));
  if (model.adapters() == nullptr) {
    if (!adapter_dir.empty())
      return invalid_argument("--init-adapter " + adapter_dir + " needs a LoRA run");
    return w;
  }
  return adapted_weights(std::move(w), model, seed, adapter_dir);
}

StatusOr<InitialWeights> initial_weights(const std::string& path, const model::Module& model,
                                         uint64_t seed, std::nullptr_t) {
  InitialWeights w;
  w.floats_read = std::make_shared<std::atomic<int64_t>>(0);
  auto counter = w.floats_read;
  if (path.empty()) {
    w.description = "seeded init (seed " + std::to_string(seed) + ")";
    w.read = [&model, seed, counter](int64_t offset, int64_t count, float* out) {
      model.init_base_range(seed, offset, offset + count, out);
      *counter += count;
      return ok_status();
    };
    w.base = w.read;
    return w;
  }
  ZT_ASSIGN_OR_RETURN(checkpoint::HfModelDir dir, checkpoint::open_hf_weights(path));
  // Opened, and names and shapes checked, once, on every rank now.
  ZT_ASSIGN_OR_RETURN(checkpoint::HfWeights weights,
                      checkpoint::HfWeights::open(dir, model.base_layout()));
  w.description =
      (dir.weight_files.size() == 1 && dir.weight_files.front() == path ? "safetensors file "
                                                                        : "HF model directory ") +
      path;
  auto shared = std::make_shared<checkpoint::HfWeights>(std::move(weights));
  w.read = [shared, counter](int64_t offset, int64_t count, float* out) {
    *counter += count;
    return shared->read(offset, offset + count, out);
  };
  w.base = w.read;
  return w;
}

std::string format_initial_weights_line(const InitialWeights& w, int64_t numel) {
  return "[zerotrain] initial weights: " + w.description + "; read by this rank " +
         format_bytes(w.floats_read->load() * 4) + " (model " + format_bytes(numel * 4) +
         "); peak RSS " + format_bytes(peak_rss_bytes()) + "\n";
}

}  // namespace zerotrain::train

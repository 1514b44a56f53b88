#include "train/evaluate.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "checkpoint/peft_adapter.h"
#include "checkpoint/quantized_base.h"
#include "train/data/loader.h"

namespace zerotrain::train {

StatusOr<InferenceModel> load_inference_model(
    const std::string& path, int64_t max_batch, int64_t max_seq, const std::string& adapter,
    const std::optional<device::Quant4Options>& base_4bit) {
  ZT_ASSIGN_OR_RETURN(checkpoint::ModelSource src, checkpoint::open_model_source(path));
  if (base_4bit) ZT_RETURN_IF_ERROR(checkpoint::round_base_to_4bit(src, *base_4bit));
  if (!adapter.empty()) ZT_RETURN_IF_ERROR(checkpoint::apply_peft_adapter(src, adapter));
  return load_inference_model(std::move(src), path, max_batch, max_seq);
}

StatusOr<InferenceModel> load_inference_model(checkpoint::ModelSource src,
                                              const std::string& path, int64_t max_batch,
                                              int64_t max_seq) {
  if (!src.read) {
    return invalid_argument(src.description +
                            ": no weights to run (give a checkpoint, an HF model directory or a "
                            "safetensors file)");
  }
  model::ModuleOptions o{.max_batch = max_batch, .max_seq = max_seq, .own_gradients = false};
  ZT_ASSIGN_OR_RETURN(std::unique_ptr<model::Module> m, model::create_module(src.spec, o));
  ZT_RETURN_IF_ERROR(m->load_parameters(src.read).with_context("loading " + src.description));
  std::error_code ec;
  const std::filesystem::path p(path);
  InferenceModel im{std::move(m), src.spec, src.description,
                    std::filesystem::is_directory(p, ec) ? p.string() : p.parent_path().string()};
  return im;
}

StatusOr<EvalResult> evaluate(model::Module& m, const TokenDataset& data, int64_t seq_len,
                              int64_t batch, uint64_t max_windows) {
  const uint64_t all = window_count(data.size(), seq_len);
  const uint64_t W = max_windows > 0 ? std::min(all, max_windows) : all;
  if (W == 0) {
    return invalid_argument("eval: " + std::to_string(data.size()) +
                            " tokens hold no window of seq_len " + std::to_string(seq_len) +
                            " + 1");
  }
  const auto start = std::chrono::steady_clock::now();
  const int64_t T = seq_len;
  std::vector<int32_t> window(static_cast<size_t>(T + 1)), x, y;
  std::vector<uint8_t> trained(static_cast<size_t>(T + 1)), bits(static_cast<size_t>(T));
  std::vector<int32_t> starts;
  const bool packed = data.has_doc_starts();
  double sum = 0;
  EvalResult r;
  for (uint64_t w0 = 0; w0 < W; w0 += static_cast<uint64_t>(batch)) {
    const auto B = static_cast<int64_t>(std::min<uint64_t>(batch, W - w0));
    x.resize(static_cast<size_t>(B * T));
    y.resize(static_cast<size_t>(B * T));
    starts.resize(packed ? static_cast<size_t>(B * T) : 0);
    for (int64_t b = 0; b < B; ++b) {
      const uint64_t begin = (w0 + static_cast<uint64_t>(b)) * static_cast<uint64_t>(T);
      data.copy(begin, static_cast<uint64_t>(T + 1), window.data());
      data.copy_trained(begin, static_cast<uint64_t>(T + 1), trained.data());
      for (int64_t t = 0; t < T; ++t) {
        x[b * T + t] = window[t];
        y[b * T + t] = trained[t + 1] ? window[t + 1] : -1;
      }
      if (packed) {
        data.copy_doc_starts(begin, static_cast<uint64_t>(T), bits.data());
        window_doc_starts(bits.data(), T, starts.data() + b * T);
      }
    }
    ZT_RETURN_IF_ERROR(m.forward(x.data(), y.data(), B, T, /*for_backward=*/false,
                                 packed ? starts.data() : nullptr)
                           .status());
    const auto losses = m.losses();
    for (int64_t i = 0; i < B * T; ++i) {
      if (y[i] >= 0) {
        sum += losses[i];
        ++r.targets;
      }
    }
  }
  if (r.targets == 0) return invalid_argument("eval: the data has no trained targets");
  r.windows = W;
  r.mean_loss = sum / static_cast<double>(r.targets);
  r.perplexity = std::exp(r.mean_loss);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace zerotrain::train

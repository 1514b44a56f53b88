// Initial weights by flat range (see initial_weights.h).
#include "train/initial_weights.h"

#include "checkpoint/hf/model_dir.h"
#include "train/train_log.h"

namespace zerotrain::train {

StatusOr<InitialWeights> initial_weights(const std::string& path, const model::Module& model,
                                         uint64_t seed) {
  InitialWeights w;
  w.floats_read = std::make_shared<std::atomic<int64_t>>(0);
  auto counter = w.floats_read;
  if (path.empty()) {
    w.description = "seeded init (seed " + std::to_string(seed) + ")";
    w.read = [&model, seed, counter](int64_t offset, int64_t count, float* out) {
      model.init_range(seed, offset, offset + count, out);
      *counter += count;
      return ok_status();
    };
    return w;
  }
  ZT_ASSIGN_OR_RETURN(checkpoint::HfModelDir dir, checkpoint::open_hf_weights(path));
  // Opened, and names and shapes checked, once, on every rank now.
  ZT_ASSIGN_OR_RETURN(checkpoint::HfWeights weights,
                      checkpoint::HfWeights::open(dir, model.layout()));
  w.description =
      (dir.weight_files.size() == 1 && dir.weight_files.front() == path ? "safetensors file "
                                                                        : "HF model directory ") +
      path;
  auto shared = std::make_shared<checkpoint::HfWeights>(std::move(weights));
  w.read = [shared, counter](int64_t offset, int64_t count, float* out) {
    *counter += count;
    return shared->read(offset, offset + count, out);
  };
  return w;
}

std::string format_initial_weights_line(const InitialWeights& w, int64_t numel) {
  return "[zerotrain] initial weights: " + w.description + "; read by this rank " +
         format_bytes(w.floats_read->load() * 4) + " (model " + format_bytes(numel * 4) +
         "); peak RSS " + format_bytes(peak_rss_bytes()) + "\n";
}

}  // namespace zerotrain::train

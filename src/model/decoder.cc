#include "model/decoder.h"

#include <algorithm>

namespace zerotrain::model {

Decoder::Decoder(device::Device& device, int64_t B, int64_t Tmax, int64_t max_chunk, int64_t V,
                 int64_t Vp)
    : device_(device), B_(B), Tmax_(Tmax), max_chunk_(max_chunk), V_(V), Vp_(Vp) {}

Status Decoder::allocate_io() {
  ZT_ASSIGN_OR_RETURN(tokens_,
                      device_.allocate(static_cast<size_t>(B_ * max_chunk_) * 4,
                                       device::MemoryCategory::kActivations, "generation tokens"));
  ZT_ASSIGN_OR_RETURN(logits_,
                      device_.allocate(static_cast<size_t>(B_ * Vp_) * 4,
                                       device::MemoryCategory::kActivations, "generation logits"));
  return ok_status();
}

Status Decoder::step(const int32_t* tokens, int64_t n, std::vector<float>* logits) {
  if (n < 1 || position_ + n > Tmax_) {
    return invalid_argument("generate: " + std::to_string(position_ + n) +
                            " positions exceed the decoder's " + std::to_string(Tmax_));
  }
  for (int64_t i = 0; i < B_ * n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V_) {
      return invalid_argument("generate: token " + std::to_string(tokens[i]) +
                              " at (b=" + std::to_string(i / n) + ", t=" + std::to_string(i % n) +
                              ") is outside the vocabulary [0, " + std::to_string(V_) + ")");
    }
  }
  std::vector<int32_t> chunk;
  for (int64_t done = 0; done < n;) {
    const int64_t m = std::min(max_chunk_, n - done);
    chunk.resize(static_cast<size_t>(B_ * m));
    for (int64_t b = 0; b < B_; ++b) {
      std::copy_n(tokens + b * n + done, m, chunk.data() + b * m);
    }
    ZT_RETURN_IF_ERROR(device_.copy(tokens_.data(), chunk.data(), chunk.size() * 4));
    ZT_RETURN_IF_ERROR(forward(m, position_));
    position_ += m;
    done += m;
  }
  std::vector<float> padded(static_cast<size_t>(B_ * Vp_));
  ZT_RETURN_IF_ERROR(device_.copy(padded.data(), logits_.data(), padded.size() * 4));
  logits->resize(static_cast<size_t>(B_ * V_));
  for (int64_t b = 0; b < B_; ++b) {
    std::copy_n(padded.data() + b * Vp_, V_, logits->data() + b * V_);
  }
  return ok_status();
}

}  // namespace zerotrain::model

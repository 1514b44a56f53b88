// Rounding through 16-bit types in fp32 storage, and the config's loss scaler.
#include "engine/precision.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "tensor/convert.h"
#include "tensor/half.h"

namespace zerotrain::engine {
namespace {

constexpr int64_t kChunk = 4096;  // elements per conversion block (fits L1 twice)

template <typename Half16, void (*kDown)(std::span<const float>, std::span<Half16>),
          void (*kUp)(std::span<const Half16>, std::span<float>)>
void round_chunks(std::span<const float> in, std::span<float> out) {
  const int64_t n = static_cast<int64_t>(in.size());
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    std::array<Half16, kChunk> tmp;
    const int64_t begin = c * kChunk;
    const size_t len = static_cast<size_t>(std::min(kChunk, n - begin));
    kDown(in.subspan(begin, len), std::span<Half16>(tmp.data(), len));
    kUp(std::span<const Half16>(tmp.data(), len), out.subspan(begin, len));
  }
}

}  // namespace

void round_through(config::DType dtype, std::span<const float> in, std::span<float> out) {
  ZT_CHECK(in.size() == out.size(), "round_through: ", in.size(), " vs ", out.size(), " elements");
  switch (dtype) {
    case config::DType::kFp32:
      if (in.data() != out.data()) std::memcpy(out.data(), in.data(), in.size_bytes());
      return;
    case config::DType::kBf16:
      round_chunks<tensor::BFloat16, tensor::fp32_to_bf16, tensor::bf16_to_fp32>(in, out);
      return;
    case config::DType::kFp16:
      round_chunks<tensor::Half, tensor::fp32_to_fp16, tensor::fp16_to_fp32>(in, out);
      return;
  }
}

StatusOr<std::unique_ptr<optim::LossScaler>> make_scaler(const config::Config& config,
                                                         bool log_overflows) {
  if (config.fp16.enabled) {
    const config::Fp16Config& f = config.fp16;
    optim::LossScalerOptions o;
    o.loss_scale = f.loss_scale;
    o.initial_scale_power = static_cast<int>(f.initial_scale_power);
    o.loss_scale_window = static_cast<int>(f.loss_scale_window);
    o.hysteresis = static_cast<int>(f.hysteresis);
    o.consecutive_hysteresis = f.consecutive_hysteresis;
    o.min_loss_scale = f.min_loss_scale;
    o.log_overflows = log_overflows;
    return optim::make_loss_scaler(o);
  }
  const bool check = config.bf16.enabled ? config.bf16.check_grad_overflow : true;
  return std::unique_ptr<optim::LossScaler>(std::make_unique<optim::NoLossScaler>(check));
}

}  // namespace zerotrain::engine

// The batch-size triangle: train_batch_size = micro × gas × world_size.
// DeepSpeed floors non-divisible derivations and then fails a confusing
// assertion; here every refusal shows the numbers and the derivation.
#include <string>

#include "config/config.h"

namespace zerotrain::config {
namespace {

std::string numbers(std::optional<int64_t> tb, std::optional<int64_t> micro,
                    std::optional<int64_t> gas, int64_t ws) {
  auto show = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : "unset"; };
  return "(train_batch_size " + show(tb) + ", train_micro_batch_size_per_gpu " + show(micro) +
         ", gradient_accumulation_steps " + show(gas) + ", world_size " + std::to_string(ws) + ")";
}

bool multiply(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

}  // namespace

StatusOr<BatchSizes> solve_batch_sizes(std::optional<int64_t> tb, std::optional<int64_t> micro,
                                       std::optional<int64_t> gas, int64_t ws) {
  const std::string given = numbers(tb, micro, gas, ws);
  for (std::optional<int64_t> v : {tb, micro, gas})
    if (v && *v < 1) return invalid_argument("batch sizes must be >= 1 " + given);
  if (ws < 1) return invalid_argument("world_size must be >= 1 " + given);
  if (!tb && !micro)
    return invalid_argument(
        "either train_batch_size or train_micro_batch_size_per_gpu must be given " + given);
  if (!gas && !(tb && micro)) gas = 1;  // one of tb/micro alone: no accumulation

  int64_t per_step = 0;  // micro × gas × ws, or what tb must be divisible by
  if (micro && gas) {
    if (!multiply(*micro, *gas, &per_step) || !multiply(per_step, ws, &per_step))
      return invalid_argument("batch size overflows int64 " + given);
    if (tb && *tb != per_step)
      return invalid_argument(
          "train_batch_size " + std::to_string(*tb) + " != train_micro_batch_size_per_gpu " +
          std::to_string(*micro) + " × gradient_accumulation_steps " + std::to_string(*gas) +
          " × world_size " + std::to_string(ws) + " = " + std::to_string(per_step));
    return BatchSizes{per_step, *micro, *gas};
  }
  // tb with exactly one of micro/gas: the other is tb / (known × ws), exactly.
  const int64_t known = micro ? *micro : *gas;
  const char* known_name = micro ? "train_micro_batch_size_per_gpu" : "gradient_accumulation_steps";
  const char* derived_name =
      micro ? "gradient_accumulation_steps" : "train_micro_batch_size_per_gpu";
  if (!multiply(known, ws, &per_step)) return invalid_argument("batch size overflows " + given);
  if (*tb % per_step != 0)
    return invalid_argument("cannot derive " + std::string(derived_name) + ": train_batch_size " +
                            std::to_string(*tb) + " is not divisible by " + known_name + " " +
                            std::to_string(known) + " × world_size " + std::to_string(ws) + " = " +
                            std::to_string(per_step) +
                            " (DeepSpeed would round down; zerotrain refuses)");
  const int64_t derived = *tb / per_step;
  return micro ? BatchSizes{*tb, *micro, derived} : BatchSizes{*tb, derived, *gas};
}

}  // namespace zerotrain::config

// round_base_to_4bit (see quantized_base.h).
#include "checkpoint/quantized_base.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "model/adapters.h"
#include "model/registry.h"

namespace zerotrain::checkpoint {

Status round_base_to_4bit(ModelSource& src, const device::Quant4Options& options) {
  if (!src.read) return invalid_argument(src.description + ": no weights to hold 4-bit");
  ZT_RETURN_IF_ERROR(model::check_4bit_base(src.spec.family->name, "--load-in-4bit"));
  ZT_ASSIGN_OR_RETURN(model::ParamLayout layout, src.spec.family->layout(src.spec.config));
  auto base = std::make_shared<model::ParamLayout>(std::move(layout));
  model::ReadFlatFn read = std::move(src.read);
  // A range reads through, then each 4-bit tensor it overlaps is quantized
  // whole (read again only when the range holds part of it) and its part
  // of the range decoded in place (the reference decoder).
  src.read = [base, read, options](int64_t offset, int64_t count, float* out) -> Status {
    ZT_RETURN_IF_ERROR(read(offset, count, out));
    std::vector<float> whole;
    for (const model::TensorInfo& t : base->tensors()) {
      const int64_t lo = std::max(offset, t.offset),
                    hi = std::min(offset + count, t.offset + t.numel);
      if (lo >= hi || !model::held_4bit_when_frozen(t)) continue;
      const float* values = out + (t.offset - offset);
      if (hi - lo < t.numel) {
        whole.resize(static_cast<size_t>(t.numel));
        ZT_RETURN_IF_ERROR(read(t.offset, t.numel, whole.data()));
        values = whole.data();
      }
      const device::Quant4Host q = device::quantize_4bit(values, t.numel, options);
      device::dequantize_4bit_reference(q.view(), lo - t.offset, hi - t.offset,
                                        out + (lo - offset));
    }
    return ok_status();
  };
  src.description += " (Linear weights rounded to 4-bit " + device::describe(options) + ")";
  return ok_status();
}

}  // namespace zerotrain::checkpoint

// round_base_to_4bit: a model source whose Linear weights (but lm_head)
// read as their 4-bit round trip, i.e. what a QLoRA run over it computes
// with (model/adapters.h held_4bit_when_frozen; device/quant4.h). `eval`
// and `generate --load-in-4bit` evaluate a QLoRA adapter on the weights it
// was trained against: round first, then merge the adapter.
//
//   ZT_RETURN_IF_ERROR(round_base_to_4bit(src, {.type = device::Quant4Type::kNf4}));
//   ZT_RETURN_IF_ERROR(apply_peft_adapter(src, adapter_dir));
//
// Thread-safety: the returned reader is as thread-safe as src.read.
#pragma once

#include "checkpoint/model_source.h"
#include "core/status.h"
#include "device/quant4.h"

namespace zerotrain::checkpoint {

// InvalidArgument when src has no weights or its family's GEMMs do not run
// 4-bit weights in training (GPT-2), so the result would be no run's.
Status round_base_to_4bit(ModelSource& src, const device::Quant4Options& options);

}  // namespace zerotrain::checkpoint

// zerotrain estimate against the engine's measured model-state bytes: for
// the presets (gpt2-tiny here, gpt2-small-ish in engine_agreement_slow_test),
// stages 0-3, with and without offload, fp32 and bf16, at 1, 2 and 4 ranks,
// `estimate --layout engine` must be what the engine holds: device and host
// each within 5% of the model states (docs/architecture.md), exact at stage 0; padding
// is the only other difference. The engine is created (allocations, rank
// 0's weights broadcast) and asked; nothing is trained.
#include <gtest/gtest.h>

#include "tools/engine_agreement.h"

namespace zerotrain::tools {
namespace {

TEST(EngineAgreement, Gpt2TinyAllStagesWithAndWithoutOffloadFp32AndBf16) {
  testutil::run_all_cases("gpt2-tiny");
}

}  // namespace
}  // namespace zerotrain::tools

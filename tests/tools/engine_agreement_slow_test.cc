// engine_agreement_test for the 23.2 M preset (label slow: about 2 min on
// 2 cores, 2 GB of allocations at 4 ranks).
#include <gtest/gtest.h>

#include "tools/engine_agreement.h"

namespace zerotrain::tools {
namespace {

TEST(EngineAgreement, Gpt2SmallIshAllStagesWithAndWithoutOffloadFp32AndBf16) {
  testutil::run_all_cases("gpt2-small-ish");
}

}  // namespace
}  // namespace zerotrain::tools

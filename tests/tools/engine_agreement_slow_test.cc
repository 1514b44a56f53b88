// engine_agreement_test for the 23.2 M preset (label slow: about 2 min on
// 2 cores, 2 GB of allocations at 4 ranks).
#include <gtest/gtest.h>

#include "tools/engine_agreement.h"

namespace zerotrain::tools {
namespace {

// 1 and 4 ranks: gpt2-tiny covers 2 as well (engine_agreement_test.cc);
// here the larger Ψ cuts buckets and partitions differently.
TEST(EngineAgreement, Gpt2SmallIshAllStagesWithAndWithoutOffloadFp32AndBf16) {
  testutil::run_all_cases("gpt2-small-ish", {1, 4});
}

}  // namespace
}  // namespace zerotrain::tools

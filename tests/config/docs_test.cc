// docs/config.md is generated from the schema and must match it; the typed
// Config defaults must match the schema defaults.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "config/config.h"
#include "config/schema.h"

namespace zerotrain::config {
namespace {

TEST(ConfigDocs, CommittedReferenceMatchesTheSchema) {
  std::ifstream in(std::string(ZT_DOCS_DIR) + "/config.md");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(text.str() == config_reference_markdown())
      << "docs/config.md is stale; regenerate: build/tests/config/config_docgen > docs/config.md";
}

TEST(ConfigDocs, ReferenceListsEveryKey) {
  const std::string md = config_reference_markdown();
  for (const KeySpec& k : schema()) {
    // Sections are headed by their full path, keys named in their section's table.
    std::string name(k.type == ValueType::kSection ? k.path : leaf_name(k.path));
    EXPECT_NE(md.find("`" + name + "`"), std::string::npos) << k.path;
  }
}

TEST(ConfigSchema, TypedDefaultsEqualSchemaDefaults) {
  // Fields whose default is resolved at parse time (batch triangle, stage-
  // dependent overlap_comm, per-type scheduler defaults, unset types).
  const std::set<std::string> resolved = {"train_batch_size",
                                          "train_micro_batch_size_per_gpu",
                                          "gradient_accumulation_steps",
                                          "zero_optimization.overlap_comm",
                                          "scheduler.params.warmup_max_lr",
                                          "scheduler.params.cycle_second_step_size",
                                          "scheduler.params.cycle_second_stair_count",
                                          "optimizer.type",
                                          "scheduler.type"};
  const Config defaults;
  int checked = 0;
  for (const KeySpec& k : schema()) {
    if (k.get == nullptr || resolved.count(std::string(k.path))) continue;
    EXPECT_EQ(k.get(defaults), default_value(k)) << k.path;
    ++checked;
  }
  EXPECT_GT(checked, 60);
}

TEST(ConfigSchema, EveryBoundKeyIsReadBack) {
  for (const KeySpec& k : schema()) EXPECT_EQ(k.set == nullptr, k.get == nullptr) << k.path;
}

}  // namespace
}  // namespace zerotrain::config

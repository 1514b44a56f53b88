// RESULTS.md's training-step part: the "Training step (MFU)" section and its
// summary rows, from zt_train_bench's JSON lines and zt_probe's peaks of the
// same run (train_mfu in report.h does the division).
//
//   std::string md = train_section(in.train, in.probe);
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace zerotrain::bench {

// The section: one row per case; "(zt_train_bench did not run)" when
// `train` is not a non-empty array.
std::string train_section(const nlohmann::json& train, const nlohmann::json& probe);

// Summary-table rows: per model and precision, the case with the highest
// median model FLOP/s, its MFU and the 70% target. Empty without cases.
std::string train_summary_rows(const nlohmann::json& train, const nlohmann::json& probe);

}  // namespace zerotrain::bench

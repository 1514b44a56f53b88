// Monitors: values print as Python's str(float) does (DeepSpeed's CSV files
// come from Python's csv module), and a trainer run with csv_monitor on
// writes DeepSpeed's layout whose rows are the run's own losses, lrs and
// grad norms, bit for bit, at DeepSpeed's sample-count steps.
#include "train/monitor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "comm/gloo/gloo_communicator.h"
#include "comm/rank_threads.h"
#include "train/test_util.h"
#include "train/tiny_run.h"
#include "train/trainer.h"

namespace zerotrain::train {
namespace {

// Python's float repr (3.1+): the shortest string that reads back as the
// same double; positional when the decimal exponent is in [-4, 16), else
// scientific with at least two exponent digits; integral values end ".0".
TEST(PythonFloat, FollowsPythonsReprRules) {
  EXPECT_EQ(python_float(0.001), "0.001");
  EXPECT_EQ(python_float(1e-05), "1e-05");
  EXPECT_EQ(python_float(0.0001), "0.0001");
  EXPECT_EQ(python_float(100.0), "100.0");
  EXPECT_EQ(python_float(2.5), "2.5");
  EXPECT_EQ(python_float(-3.25e-07), "-3.25e-07");
  EXPECT_EQ(python_float(1e16), "1e+16");
  EXPECT_EQ(python_float(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(python_float(0.0), "0.0");
  EXPECT_EQ(python_float(-0.0), "-0.0");
  EXPECT_EQ(python_float(65536.0), "65536.0");
  EXPECT_EQ(python_float(0.1 + 0.2), "0.30000000000000004");
}

TEST(PythonFloat, ReadsBackToTheSameDoubleAcrossMagnitudes) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 10.0);
  for (int i = 0; i < 20000; ++i) {
    const double v = (i % 2 ? -1 : 1) * mantissa(rng) * std::pow(10.0, i % 40 - 20);
    const std::string s = python_float(v);
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
    const bool sci = s.find('e') != std::string::npos;
    const int exp = static_cast<int>(std::floor(std::log10(std::fabs(v))));
    if (exp >= -4 && exp < 15) EXPECT_FALSE(sci) << s;
    if (exp < -5 || exp > 16) EXPECT_TRUE(sci) << s;
  }
}

std::vector<std::pair<int64_t, double>> read_csv(const std::string& path, std::string* header) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::pair<int64_t, double>> rows;
  std::string line;
  bool first = true;
  while (std::getline(text, line)) {
    EXPECT_TRUE(!line.empty() && line.back() == '\r') << path << ": line ends without \\r\\n";
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (first) {
      *header = line;
      first = false;
      continue;
    }
    const size_t comma = line.find(',');
    rows.emplace_back(std::stoll(line.substr(0, comma)),
                      std::strtod(line.c_str() + comma + 1, nullptr));
  }
  return rows;
}

using testing::tiny_run;

TEST(CsvMonitor, TrainerWritesDeepSpeedsLayoutWithTheRunsValues) {
  testing::TempDir dir;
  const std::string cfg_path = dir.file("ds.json");
  std::ofstream(cfg_path)
      << R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
    "fp16": {"enabled": true, "initial_scale_power": 8},
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 3}},
    "csv_monitor": {"enabled": true, "output_path": ")"
      << dir.file("logs") << R"(", "job_name": "tiny"}})";
  const std::string metrics = dir.file("metrics.jsonl");
  std::ostringstream log;
  TrainOptions o = tiny_run(cfg_path, 4, &log);
  o.metrics_file = metrics;
  auto c = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  StatusOr<TrainSummary> s = train(o, **c);
  ASSERT_TRUE(s.ok()) << s.status().to_string();

  // The run's own per-step values, from its --metrics lines.
  std::vector<double> lr, loss_scale, grad_norm;
  std::ifstream m(metrics);
  for (std::string line; std::getline(m, line);) {
    auto field = [&](const char* key) {
      return std::strtod(line.c_str() + line.find(key) + std::strlen(key) + 3, nullptr);
    };
    lr.push_back(field("\"lr"));
    loss_scale.push_back(field("\"loss_scale"));
    grad_norm.push_back(field("\"grad_norm"));
  }
  ASSERT_EQ(lr.size(), 4u);

  const std::string job = dir.file("logs") + "/tiny/";
  struct Expect {
    const char* file;
    const char* header;
    std::vector<double> values;
  };
  const Expect expect[] = {{"Train_Samples_train_loss.csv", "step,train_loss", s->losses},
                           {"Train_Samples_lr.csv", "step,lr", lr},
                           {"Train_Samples_loss_scale.csv", "step,loss_scale", loss_scale}};
  for (const Expect& e : expect) {
    std::string header;
    const auto rows = read_csv(job + e.file, &header);
    EXPECT_EQ(header, e.header) << e.file;
    ASSERT_EQ(rows.size(), e.values.size()) << e.file;
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].first, static_cast<int64_t>(i + 1) * 8) << e.file;  // samples: 4 x 2 a step
      if (std::string(e.file) == "Train_Samples_train_loss.csv")
        EXPECT_EQ(rows[i].second, e.values[i]) << e.file << " row " << i;  // bit for bit
      else
        EXPECT_NEAR(rows[i].second, e.values[i], 1e-15 * std::fabs(e.values[i])) << e.file;
    }
  }
  std::string header;
  const auto norms = read_csv(job + "Train_Samples_grad_norm.csv", &header);
  ASSERT_EQ(norms.size(), 4u);
  for (size_t i = 0; i < 4; ++i)
    if (std::isfinite(grad_norm[i]) && grad_norm[i] >= 0)
      EXPECT_NEAR(norms[i].second, grad_norm[i], 1e-8 * grad_norm[i]);
  // Throughput and memory are logged (values only bounded: they are timings).
  for (const char* f : {"Train_Samples_tokens_per_second.csv", "Train_Samples_model_tflops.csv",
                        "Train_Samples_device_memory_peak_bytes.csv"}) {
    const auto rows = read_csv(job + f, &header);
    ASSERT_EQ(rows.size(), 4u) << f;
    for (const auto& r : rows) EXPECT_GT(r.second, 0) << f;
  }
}

// comms_logger at 2 ranks, stage 2: rank 0 prints DeepSpeed's summary
// after the last step, and its counts per op are the calls the
// communicator itself counted over the run (every collective is timed).
TEST(CommsLogger, TrainerPrintsTheSummaryWithEveryCollective) {
  testing::TempDir dir;
  const std::string cfg_path = dir.file("ds.json");
  std::ofstream(cfg_path) << R"({"train_micro_batch_size_per_gpu": 4,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": 20000},
    "comms_logger": {"enabled": true}})";
  std::string log0;
  comm::CommCounters counted;
  comm::testutil::run_ranks(2, [&](comm::Communicator& c) {
    std::ostringstream log;
    TrainOptions o = tiny_run(cfg_path, 3, &log);
    c.reset_counters();
    StatusOr<TrainSummary> s = train(o, c);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    if (c.rank() == 0) {
      log0 = log.str();
      counted = c.counters();
    }
  });
  const size_t at = log0.find("[zerotrain] comms logger (rank 0):\n");
  ASSERT_NE(at, std::string::npos) << log0;
  std::istringstream table(log0.substr(at));
  std::string line, op;
  std::map<std::string, uint64_t> counts;
  std::getline(table, line);  // the title
  std::getline(table, line);  // the column header
  EXPECT_EQ(line.rfind("Comm. Op", 0), 0u) << line;
  while (std::getline(table, line) && !line.empty() && line.rfind("[zerotrain]", 0) != 0) {
    if (line[0] != ' ') {
      op = line;
      continue;
    }
    std::istringstream row(line);
    std::string size_value, size_unit;
    uint64_t count = 0;
    row >> size_value >> size_unit >> count;
    counts[op] += count;
  }
  EXPECT_GT(counts["reduce_scatter"], 0u) << log0.substr(at);
  EXPECT_GT(counts["all_gather"], 0u) << log0.substr(at);
  for (int t = 0; t < comm::kNumOpTypes; ++t) {
    const auto type = static_cast<comm::OpType>(t);
    EXPECT_EQ(counts[comm::deepspeed_op_name(type)], counted.op(type).calls)
        << comm::deepspeed_op_name(type) << "\n"
        << log0.substr(at);
  }
}

// wall_clock_breakdown at 2 ranks, stage 0, 2 micro-steps a step: rank 0
// logs DeepSpeed's "_microstep" line after each micro-step and the global
// line after each optimizer step; a global timer is the sum of its
// micro-steps', bwd = bwd_inner + bwd_allreduce, only the boundary reduces
// (stage 0's allreduce),
// and the monitors' elapsed_time_ms_* rows are the global lines' values.
TEST(WallClockBreakdown, DeepSpeedsTimerLinesAddUpAndReachTheMonitors) {
  testing::TempDir dir;
  const std::string cfg_path = dir.file("ds.json");
  std::ofstream(cfg_path) << R"({"train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2, "wall_clock_breakdown": true,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "zero_optimization": {"stage": 0},
    "csv_monitor": {"enabled": true, "output_path": ")"
                          << dir.file("logs") << R"(", "job_name": "t"}})";
  std::string log0, log1;
  comm::testutil::run_ranks(2, [&](comm::Communicator& c) {
    std::ostringstream log;
    StatusOr<TrainSummary> s = train(tiny_run(cfg_path, 3, &log), c);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    (c.rank() == 0 ? log0 : log1) = log.str();
  });
  EXPECT_EQ(log1.find("time (ms)"), std::string::npos) << "rank 0 logs the timers";

  const char* kNames[] = {"fwd", "bwd", "bwd_inner", "bwd_allreduce", "step"};
  struct Line {
    bool micro = false;
    std::map<std::string, double> ms;
  };
  std::vector<Line> lines;
  std::istringstream in(log0);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("[Rank 0] time (ms) | ", 0) != 0) continue;
    Line line;
    line.micro = l.find("_microstep") != std::string::npos;
    for (const char* n : kNames) {
      // Built stepwise: GCC 12's -Wrestrict misfires on "literal" + std::string.
      std::string key = n;
      key.insert(0, 1, ' ');
      key += line.micro ? "_microstep: " : ": ";
      const size_t at = l.find(key);
      ASSERT_NE(at, std::string::npos) << key << " in " << l;
      line.ms[n] = std::strtod(l.c_str() + at + key.size(), nullptr);
    }
    lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 9u) << log0;  // (micro, micro, global) x 3 steps
  std::string header;
  const auto fwd_rows =
      read_csv(dir.file("logs") + "/t/Train_Samples_elapsed_time_ms_forward.csv", &header);
  const auto step_rows =
      read_csv(dir.file("logs") + "/t/Train_Samples_elapsed_time_ms_step.csv", &header);
  ASSERT_EQ(fwd_rows.size(), 3u);
  ASSERT_EQ(step_rows.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const Line& a = lines[3 * k];
    const Line& b = lines[3 * k + 1];
    const Line& g = lines[3 * k + 2];
    ASSERT_TRUE(a.micro && b.micro && !g.micro) << "step " << k;
    for (const char* n : kNames)  // two values printed to 0.01 ms each
      EXPECT_NEAR(g.ms.at(n), a.ms.at(n) + b.ms.at(n), 0.0151) << n << ", step " << k;
    for (const Line* l : {&a, &b, &g})
      EXPECT_NEAR(l->ms.at("bwd"), l->ms.at("bwd_inner") + l->ms.at("bwd_allreduce"), 0.0151);
    EXPECT_GT(a.ms.at("fwd"), 0);
    EXPECT_GT(a.ms.at("bwd_inner"), 0);
    EXPECT_EQ(a.ms.at("bwd_allreduce"), 0) << "no reduction before the boundary";
    EXPECT_GT(b.ms.at("bwd_allreduce"), 0) << "the boundary reduces";
    EXPECT_EQ(fwd_rows[k].first, (k + 1) * 8);  // samples: 2 x 2 x 2 ranks a step
    EXPECT_NEAR(fwd_rows[k].second, g.ms.at("fwd"), 0.0051);
    EXPECT_NEAR(step_rows[k].second, g.ms.at("step"), 0.0051);
  }
}

}  // namespace
}  // namespace zerotrain::train

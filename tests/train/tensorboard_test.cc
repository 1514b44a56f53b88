// TensorBoard event files, read back by readers zerotrain did not write
// (tests/train/read_tfevents.js: npm's `tfrecord` for the framing and both
// CRC32Cs, `protobufjs` with TensorBoard's own schema for the records):
// every scalar comes back with its tag, step and float value exactly; a
// flipped byte is refused by the reader; and a training run logs the same
// metrics, steps and values as its csv_monitor.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>

#include "comm/gloo/gloo_communicator.h"
#include "integration/subprocess.h"
#include "train/event_file.h"
#include "train/monitor.h"
#include "train/test_util.h"
#include "train/tiny_run.h"

namespace zerotrain::train {
namespace {

using testing::TempDir;
using testing::tiny_run;

struct Record {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;  // first record only
  std::string tag;           // scalars
  double value = 0;
};

// Runs the node reader on `path`: its records, or its error text (the
// reader exits 1 when a CRC or a record does not check out).
struct ReadResult {
  std::vector<Record> records;
  int exit_code = -1;
  std::string error;
};

ReadResult read_events(const std::string& path) {
  const zerotrain::testing::ProcessResult p = zerotrain::testing::run_process(
      {"node", std::string(ZT_SOURCE_DIR) + "/tests/train/read_tfevents.js", path},
      std::chrono::seconds(60), {std::string("NODE_PATH=") + ZT_NPM_DIR + "/node_modules"});
  ReadResult r;
  r.exit_code = p.exit_code;
  r.error = p.err;
  std::istringstream lines(p.out);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    Record rec;
    rec.wall_time = j.at("wall_time").get<double>();
    rec.step = std::stoll(j.at("step").get<std::string>());
    if (j.contains("file_version")) rec.file_version = j["file_version"].get<std::string>();
    if (j.contains("tag")) {
      rec.tag = j["tag"].get<std::string>();
      rec.value = j["value"].is_number() ? j["value"].get<double>() : std::nan("");
    }
    r.records.push_back(rec);
  }
  return r;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(EventFile, AReaderWeDidNotWriteReadsEveryScalarExactly) {
  TempDir dir;
  const double t0 = now_seconds();
  auto f = EventFile::create(dir.file("run"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mantissa(1.0, 10.0);
  struct Written {
    std::string tag;
    int64_t step;
    double value;
  };
  std::vector<Written> written;
  const char* tags[] = {"Train/Samples/train_loss", "Train/Samples/lr", "a b/ü", "x"};
  for (int i = 0; i < 200; ++i) {
    const double v = i == 0 ? 0.0 : (i % 3 ? 1 : -1) * mantissa(rng) * std::pow(10.0, i % 60 - 30);
    const int64_t step = i < 190 ? i * 8 : (int64_t{1} << 40) + i;  // past 32 bits
    written.push_back({tags[i % 4], step, v});
    ASSERT_TRUE((*f)->add_scalar(written.back().tag, v, step).ok());
    if (i % 50 == 0) {
      ASSERT_TRUE((*f)->flush().ok());
    }
  }
  ASSERT_TRUE((*f)->flush().ok());
  const double t1 = now_seconds();

  // PyTorch SummaryWriter's file name.
  const std::string name = std::filesystem::path((*f)->path()).filename().string();
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+)")))
      << name;

  const ReadResult r = read_events((*f)->path());
  ASSERT_EQ(r.exit_code, 0) << r.error;
  ASSERT_EQ(r.records.size(), written.size() + 1);
  EXPECT_EQ(r.records[0].file_version, "brain.Event:2");
  for (size_t i = 0; i < r.records.size(); ++i) {
    EXPECT_GE(r.records[i].wall_time, std::floor(t0)) << i;
    EXPECT_LE(r.records[i].wall_time, t1 + 1) << i;
    if (i == 0) continue;
    const Written& w = written[i - 1];
    EXPECT_EQ(r.records[i].tag, w.tag) << i;
    EXPECT_EQ(r.records[i].step, w.step) << i;
    // TensorBoard stores scalars as float32 (simple_value).
    EXPECT_EQ(r.records[i].value, static_cast<double>(static_cast<float>(w.value))) << i;
  }

  // A second writer in the same second and process gets its own file.
  auto g = EventFile::create(dir.file("run"));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_NE((*g)->path(), (*f)->path());
}

// The reader checks both CRCs of every record, so a flipped byte in the
// length, the event or a CRC is refused: our CRC32C and its mask are
// TFRecord's, checked by an implementation we did not write.
TEST(EventFile, TheReaderRefusesAFlippedByte) {
  TempDir dir;
  std::string path;
  {
    auto f = EventFile::create(dir.file("run"));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    ASSERT_TRUE((*f)->add_scalar("loss", 2.5, 8).ok());
    path = (*f)->path();
  }
  const std::vector<unsigned char> good = testing::read_bytes(path);
  ASSERT_EQ(read_events(path).exit_code, 0);
  // Record 0: [0,8) length, [8,12) its CRC, then the event, then its CRC.
  const size_t len0 = good[0];
  struct Flip {
    size_t at;
    const char* error;
  };
  const Flip flips[] = {{0, "Incorrect record length CRC32C"},
                        {9, "Incorrect record length CRC32C"},
                        {12 + len0 / 2, "Incorrect record CRC32C"},
                        {12 + len0 + 1, "Incorrect record CRC32C"},
                        {good.size() - 1, "Incorrect record CRC32C"}};
  for (const Flip& flip : flips) {
    std::vector<unsigned char> bad = good;
    bad[flip.at] ^= 0x10;
    testing::write_bytes(path, bad);
    const ReadResult r = read_events(path);
    EXPECT_EQ(r.exit_code, 1) << "byte " << flip.at;
    EXPECT_NE(r.error.find(flip.error), std::string::npos) << "byte " << flip.at << ": " << r.error;
  }
}

// A trainer run with both monitors on: the event file holds every metric
// the csv_monitor wrote, at the same sample-count steps, each value the
// CSV's as float32; the losses are the run's own.
TEST(TensorBoardMonitor, TrainerLogsWhatTheCsvMonitorLogs) {
  TempDir dir;
  const std::string cfg_path = dir.file("ds.json");
  const std::string out = dir.file("logs");
  std::ofstream(cfg_path) << R"({"train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 2, "fp16": {"enabled": true, "initial_scale_power": 8},
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "tensorboard": {"enabled": true, "output_path": ")"
                          << out << R"(", "job_name": "tiny"},
    "csv_monitor": {"enabled": true, "output_path": ")"
                          << out << R"(", "job_name": "tiny"}})";
  std::ostringstream log;
  auto c = comm::create_gloo_communicator(comm::CommOptions{});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  StatusOr<TrainSummary> s = train(tiny_run(cfg_path, 4, &log), **c);
  ASSERT_TRUE(s.ok()) << s.status().to_string();

  std::vector<std::string> event_files, csv_files;
  for (const auto& e : std::filesystem::directory_iterator(out + "/tiny")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("events.out.tfevents.", 0) == 0) event_files.push_back(e.path().string());
    if (e.path().extension() == ".csv") csv_files.push_back(name);
  }
  ASSERT_EQ(event_files.size(), 1u);
  const ReadResult r = read_events(event_files[0]);
  ASSERT_EQ(r.exit_code, 0) << r.error;
  std::map<std::string, std::vector<std::pair<int64_t, double>>> by_tag;
  for (const Record& rec : r.records)
    if (!rec.tag.empty()) by_tag[rec.tag].emplace_back(rec.step, rec.value);

  ASSERT_GE(csv_files.size(), 8u);  // loss, lr, loss scale, grad norm, tokens/s, tflops, memory
  EXPECT_EQ(by_tag.size(), csv_files.size());
  for (const std::string& csv : csv_files) {
    std::string tag = csv.substr(0, csv.size() - 4);  // Train_Samples_x -> Train/Samples/x
    tag[5] = '/';
    tag[13] = '/';
    ASSERT_TRUE(by_tag.count(tag)) << tag;
    std::ifstream in(out + "/tiny/" + csv);
    std::string line;
    std::getline(in, line);  // header
    size_t i = 0;
    for (; std::getline(in, line); ++i) {
      const size_t comma = line.find(',');
      ASSERT_LT(i, by_tag[tag].size()) << tag;
      EXPECT_EQ(by_tag[tag][i].first, std::stoll(line.substr(0, comma))) << tag;
      const double v = std::strtod(line.c_str() + comma + 1, nullptr);
      EXPECT_EQ(by_tag[tag][i].second, static_cast<double>(static_cast<float>(v))) << tag;
    }
    EXPECT_EQ(i, by_tag[tag].size()) << tag;
  }
  const auto& loss = by_tag["Train/Samples/train_loss"];
  ASSERT_EQ(loss.size(), s->losses.size());
  for (size_t i = 0; i < loss.size(); ++i) {
    EXPECT_EQ(loss[i].first, static_cast<int64_t>(i + 1) * 8);
    EXPECT_EQ(loss[i].second, static_cast<double>(static_cast<float>(s->losses[i])));
  }
}

}  // namespace
}  // namespace zerotrain::train

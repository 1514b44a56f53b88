// Training monitors configured in the ds_config (DeepSpeed's "monitor"
// sections): rank 0 hands each optimizer step's metrics to every enabled
// monitor as (name, value, step) events, DeepSpeed's event shape, with
// DeepSpeed's names ("Train/Samples/train_loss") and its step: the number
// of samples trained so far.
//
//   ZT_ASSIGN_OR_RETURN(Monitors m, Monitors::create(cfg));
//   ZT_RETURN_IF_ERROR(m.write({{"Train/Samples/train_loss", 2.31, 256}}));
//
// Thread-safety: one owner (rank 0's trainer thread).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/status.h"
#include "train/event_file.h"

namespace zerotrain::train {

struct MonitorEvent {
  std::string name;  // "Train/Samples/lr"
  double value = 0;
  int64_t step = 0;  // samples so far
};

// One backend.
class Monitor {
 public:
  virtual ~Monitor() = default;
  virtual Status write(std::span<const MonitorEvent> events) = 0;
};

// DeepSpeed's csv_monitor layout: OUTPUT_PATH/JOB_NAME/<name with '/' and
// ' ' as '_'>.csv, a header row `step,<last component of name>` when the
// run first writes the file, then `step,value` rows, appended, with the CSV
// line ends Python's csv module writes (\r\n).
class CsvMonitor : public Monitor {
 public:
  static StatusOr<std::unique_ptr<CsvMonitor>> create(const config::MonitorConfig& cfg);
  Status write(std::span<const MonitorEvent> events) override;
  const std::string& dir() const { return dir_; }

 private:
  explicit CsvMonitor(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::set<std::string> started_;  // files this run has written a header to
};

// DeepSpeed's TensorBoard monitor: one event file per run in
// OUTPUT_PATH/JOB_NAME (event_file.h), a scalar per event under its name,
// flushed after every write as DeepSpeed flushes.
class TensorBoardMonitor : public Monitor {
 public:
  static StatusOr<std::unique_ptr<TensorBoardMonitor>> create(const config::MonitorConfig& cfg);
  Status write(std::span<const MonitorEvent> events) override;
  const std::string& path() const { return file_->path(); }

 private:
  explicit TensorBoardMonitor(std::unique_ptr<EventFile> f) : file_(std::move(f)) {}
  std::unique_ptr<EventFile> file_;
};

// Every monitor the config enables (none: writes are no-ops).
class Monitors {
 public:
  static StatusOr<Monitors> create(const config::Config& cfg);
  bool enabled() const { return !monitors_.empty(); }
  Status write(std::span<const MonitorEvent> events);

 private:
  std::vector<std::unique_ptr<Monitor>> monitors_;
};

// The value as Python's str(float) prints it (shortest round-trip, with
// its exponent style), so the files read as DeepSpeed's.
std::string python_float(double v);

}  // namespace zerotrain::train

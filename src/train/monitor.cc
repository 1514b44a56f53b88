// Training monitors (see monitor.h).
#include "train/monitor.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace zerotrain::train {

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: positional for
  // decimal exponents in [-4, 16), else d.ddde±XX; integral values keep
  // ".0". (Strings are appended stepwise: GCC 12's -Wrestrict misfires on
  // "literal" + std::string.)
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), std::fabs(v), std::chars_format::scientific);
  const std::string sci(buf, end);
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exp = std::stoi(sci.substr(e + 1));
  const size_t n = digits.size();
  std::string out = std::signbit(v) ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exp) + 1 >= n) {
      out += digits;
      out.append(static_cast<size_t>(exp) + 1 - n, '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(exp) + 1);
      out += '.';
      out.append(digits, static_cast<size_t>(exp) + 1);
    }
  } else {
    out += digits[0];
    if (n > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += exp < 0 ? "e-" : "e+";
    const std::string mag = std::to_string(std::abs(exp));
    if (mag.size() < 2) out += '0';
    out += mag;
  }
  return out;
}

StatusOr<std::unique_ptr<CsvMonitor>> CsvMonitor::create(const config::MonitorConfig& cfg) {
  std::filesystem::path dir = std::filesystem::path(cfg.output_path) / cfg.job_name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("csv_monitor: cannot create " + dir.string() + ": " + ec.message());
  return std::unique_ptr<CsvMonitor>(new CsvMonitor(dir.string()));
}

Status CsvMonitor::write(std::span<const MonitorEvent> events) {
  for (const MonitorEvent& e : events) {
    std::string file = e.name;
    for (char& c : file)
      if (c == '/' || c == ' ') c = '_';
    const std::string path = dir_ + "/" + file + ".csv";
    std::FILE* f = std::fopen(path.c_str(), "a");
    if (f == nullptr)
      return io_error("csv_monitor: cannot append to " + path + ": " + std::strerror(errno));
    std::string text;
    if (started_.insert(file).second) {
      const size_t slash = e.name.rfind('/');
      text = "step," + (slash == std::string::npos ? e.name : e.name.substr(slash + 1)) + "\r\n";
    }
    text += std::to_string(e.step) + "," + python_float(e.value) + "\r\n";
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok)
      return io_error("csv_monitor: cannot write " + path + ": " + std::strerror(errno));
  }
  return ok_status();
}

StatusOr<std::unique_ptr<TensorBoardMonitor>> TensorBoardMonitor::create(
    const config::MonitorConfig& cfg) {
  ZT_ASSIGN_OR_RETURN(
      std::unique_ptr<EventFile> f,
      EventFile::create((std::filesystem::path(cfg.output_path) / cfg.job_name).string()));
  return std::unique_ptr<TensorBoardMonitor>(new TensorBoardMonitor(std::move(f)));
}

Status TensorBoardMonitor::write(std::span<const MonitorEvent> events) {
  for (const MonitorEvent& e : events)
    ZT_RETURN_IF_ERROR(file_->add_scalar(e.name, e.value, e.step));
  return file_->flush();
}

StatusOr<Monitors> Monitors::create(const config::Config& cfg) {
  Monitors m;
  if (cfg.csv_monitor.enabled) {
    ZT_ASSIGN_OR_RETURN(std::unique_ptr<CsvMonitor> csv, CsvMonitor::create(cfg.csv_monitor));
    m.monitors_.push_back(std::move(csv));
  }
  if (cfg.tensorboard.enabled) {
    ZT_ASSIGN_OR_RETURN(std::unique_ptr<TensorBoardMonitor> tb,
                        TensorBoardMonitor::create(cfg.tensorboard));
    m.monitors_.push_back(std::move(tb));
  }
  return m;
}

Status Monitors::write(std::span<const MonitorEvent> events) {
  for (const std::unique_ptr<Monitor>& m : monitors_) ZT_RETURN_IF_ERROR(m->write(events));
  return ok_status();
}

}  // namespace zerotrain::train

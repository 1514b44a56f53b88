// File rendezvous (see rdzv_file.h).
#include "comm/rdzv_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/atomic_file.h"

namespace zerotrain::comm {

std::string format_rdzv_record(const RdzvRecord& r) {
  return "zerotrain-rdzv v1 " + r.job_id + " " + std::to_string(r.world_size) + " " + r.host + " " +
         std::to_string(r.port) + "\n";
}

StatusOr<RdzvRecord> parse_rdzv_record(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string magic, version;
  RdzvRecord r;
  if (!(in >> magic >> version >> r.job_id >> r.world_size >> r.host >> r.port) ||
      magic != "zerotrain-rdzv" || version != "v1" || r.world_size < 1 || r.port < 1 ||
      r.port > 65535)
    return invalid_argument("not a zerotrain rendezvous record: '" + std::string(text) + "'");
  return r;
}

Status publish_rdzv(const std::string& path, const RdzvRecord& record) {
  if (record.job_id.find_first_of(" \t\n") != std::string::npos)
    return invalid_argument("rendezvous id '" + record.job_id + "' contains white space");
  ZT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::create(path));
  const std::string text = format_rdzv_record(record);
  ZT_RETURN_IF_ERROR(f.write(text.data(), text.size()));
  return f.commit();
}

StatusOr<RdzvRecord> await_rdzv(const std::string& path, const std::string& job_id, int world_size,
                                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(100);
  std::string last = "nothing (no such file)";
  for (;;) {
    std::ifstream in(path);  // reopened by name on every poll
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      StatusOr<RdzvRecord> r = parse_rdzv_record(text.str());
      if (r.ok() && r->job_id == job_id && r->world_size == world_size) return r;
      last = r.ok() ? "job " + r->job_id + " of " + std::to_string(r->world_size) + " ranks"
                    : "no record";
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return timeout_error("rendezvous file " + path + ": no record from rank 0 of job " + job_id +
                           " (" + std::to_string(world_size) + " ranks) within " +
                           std::to_string(timeout.count()) + " ms; it holds " + last +
                           ". Is rank 0 running, and does every rank see this path?");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace zerotrain::comm

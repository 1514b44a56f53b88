// A worker's job from its environment (see job_env.h).
#include "comm/job_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "comm/rdzv_file.h"
#include "comm/slurm_nodelist.h"
#include "comm/store/net.h"

namespace zerotrain::comm {
namespace {

StatusOr<std::optional<double>> read_double(const EnvLookup& env, const char* name) {
  const std::optional<std::string> v = env(name);
  if (!v) return std::optional<double>();
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || errno != 0)
    return invalid_argument(std::string(name) + "=" + *v + " is not a number");
  return std::optional<double>(x);
}

StatusOr<std::optional<int>> read_port(const EnvLookup& env, const char* name) {
  const std::optional<std::string> v = env(name);
  if (!v) return std::optional<int>();
  int port = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), port);
  if (ec != std::errc() || p != v->data() + v->size() || port < 1 || port > 65535)
    return invalid_argument(std::string(name) + "=" + *v + " is not a TCP port");
  return std::optional<int>(port);
}

// A port free on every interface a moment ago (the store binds it next).
StatusOr<int> pick_free_tcp_port() {
  int port = 0;
  ZT_ASSIGN_OR_RETURN(int fd, net::tcp_listen("", 0, &port));
  ::close(fd);
  return port;
}

// This host's name, as peers reach rank 0's store.
std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// Rank 0 publishes its store's address in the file; the others wait for it.
Status rendezvous_by_file(const EnvLookup& env, const Placement& p, const std::string& path,
                          bool port_given, std::chrono::milliseconds timeout, JobEnv& job) {
  std::string id;
  for (const char* name : {"ZEROTRAIN_RDZV_ID", "SLURM_JOB_ID", "FLUX_JOB_ID"})
    if (const auto v = env(name); v && !v->empty()) {
      id = *v;
      break;
    }
  if (id.empty())
    return invalid_argument(
        "the rendezvous file " + path +
        " needs a job id to tell this run's record from an old one: set ZEROTRAIN_RDZV_ID to "
        "the same value on every rank (Slurm's and Flux's job ids are used when set)");
  if (p.rank == 0) {
    if (!port_given) {
      ZT_ASSIGN_OR_RETURN(job.options.master_port, pick_free_tcp_port());
    }
    job.options.master_addr = this_host();
    ZT_RETURN_IF_ERROR(
        publish_rdzv(path, {id, p.world_size, job.options.master_addr, job.options.master_port}));
  } else {
    ZT_ASSIGN_OR_RETURN(RdzvRecord r, await_rdzv(path, id, p.world_size, timeout));
    job.options.master_addr = r.host;
    job.options.master_port = r.port;
  }
  job.rendezvous = job.options.master_addr + ":" + std::to_string(job.options.master_port) +
                   " from the rendezvous file " + path + " (job " + id + ")";
  return ok_status();
}

// The rendezvous address and port, and where they came from.
Status resolve_rendezvous(const EnvLookup& env, const Placement& p, const std::string& rdzv_file,
                          JobEnv& job) {
  std::string port_from;
  std::optional<int> port;
  for (const char* name : {"MASTER_PORT", "PET_MASTER_PORT"}) {
    ZT_ASSIGN_OR_RETURN(port, read_port(env, name));
    if (port) {
      port_from = name;
      break;
    }
  }
  if (!port) {
    if (const std::optional<std::string> id = env("SLURM_JOB_ID"); id && !id->empty()) {
      const std::string last4 = id->substr(id->size() > 4 ? id->size() - 4 : 0);
      int digits = 0;
      auto [q, ec] = std::from_chars(last4.data(), last4.data() + last4.size(), digits);
      if (ec != std::errc() || q != last4.data() + last4.size())
        return invalid_argument("SLURM_JOB_ID=" + *id + " does not end in digits; set MASTER_PORT");
      port = 15000 + digits;
      port_from = "SLURM_JOB_ID (15000 + its last 4 digits)";
    } else {
      port = 29500;
      port_from = "the default port";
    }
  }

  std::string addr, addr_from;
  if (const auto a = env("MASTER_ADDR")) {
    addr = *a, addr_from = "MASTER_ADDR";
  } else if (const auto pa = env("PET_MASTER_ADDR")) {
    addr = *pa, addr_from = "PET_MASTER_ADDR";
  } else if (const auto nl =
                 env("SLURM_JOB_NODELIST") ? env("SLURM_JOB_NODELIST") : env("SLURM_NODELIST")) {
    ZT_ASSIGN_OR_RETURN(std::vector<std::string> hosts, expand_nodelist(*nl));
    addr = hosts.front(), addr_from = "the first host of the Slurm node list";
  } else if (const auto ips = env("SKYPILOT_NODE_IPS")) {
    std::istringstream lines(*ips);
    std::getline(lines, addr);
    addr_from = "the first of SKYPILOT_NODE_IPS";
  } else if (!rdzv_file.empty() && p.world_size > 1) {
    job.options.master_port = *port;
    return rendezvous_by_file(env, p, rdzv_file, port_from != "the default port",
                              job.options.timeout, job);
  } else if (p.world_size == 1 || p.local_world_size == p.world_size) {
    addr = "127.0.0.1", addr_from = "loopback (every rank is on this host)";
  }
  if (addr.empty())
    return invalid_argument(
        "no rendezvous address for rank " + std::to_string(p.rank) + " of " +
        std::to_string(p.world_size) +
        ": tried MASTER_ADDR, PET_MASTER_ADDR, SLURM_JOB_NODELIST, SKYPILOT_NODE_IPS, a "
        "rendezvous file (ZEROTRAIN_RDZV_FILE), and loopback (not every rank is known to be on "
        "this host); set MASTER_ADDR to rank 0's host (mpirun -x MASTER_ADDR=HOST) or give a "
        "rendezvous file on a shared file system");
  job.options.master_addr = addr;
  job.options.master_port = *port;
  job.rendezvous = addr + ":" + std::to_string(*port) + " from " + addr_from + ", " + port_from;
  return ok_status();
}

StatusOr<std::string> read_secret_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return invalid_argument("ZEROTRAIN_JOB_SECRET_FILE=" + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return invalid_argument("ZEROTRAIN_JOB_SECRET_FILE=" + path + " is not a regular file");
  if (st.st_uid != ::geteuid())
    return invalid_argument("ZEROTRAIN_JOB_SECRET_FILE=" + path +
                            " is owned by another user (uid " + std::to_string(st.st_uid) +
                            "); the secret must be this user's own");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return invalid_argument("ZEROTRAIN_JOB_SECRET_FILE=" + path + " has mode " + mode +
                            ": others may read it; chmod 600 it");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof())
    return invalid_argument("ZEROTRAIN_JOB_SECRET_FILE=" + path + ": cannot read it");
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.empty()) return invalid_argument("ZEROTRAIN_JOB_SECRET_FILE=" + path + " is empty");
  return s;
}

Status resolve_secret(const EnvLookup& env, int world_size, std::string* out,
                      std::vector<std::string>* warnings) {
  const std::optional<std::string> secret = env("ZEROTRAIN_JOB_SECRET");
  const std::optional<std::string> file = env("ZEROTRAIN_JOB_SECRET_FILE");
  if (secret && file)
    return invalid_argument(
        "both ZEROTRAIN_JOB_SECRET and ZEROTRAIN_JOB_SECRET_FILE are set; keep one");
  if (secret && *secret == kInsecureNoSecret) {
    if (world_size > 1)
      warnings->push_back(
          "ZEROTRAIN_JOB_SECRET=insecure-none: the rendezvous store accepts any client that "
          "reaches its port");
    return ok_status();
  }
  if (secret) {
    *out = *secret;
    return ok_status();
  }
  if (file) {
    ZT_ASSIGN_OR_RETURN(*out, read_secret_file(*file));
    return ok_status();
  }
  if (world_size > 1)
    return invalid_argument(
        "no job secret for a job of " + std::to_string(world_size) +
        " ranks: its rendezvous store would accept any client. Give every rank the same "
        "ZEROTRAIN_JOB_SECRET (mpirun -x ZEROTRAIN_JOB_SECRET, mpiexec -genvlist "
        "ZEROTRAIN_JOB_SECRET, srun --export=ALL) or ZEROTRAIN_JOB_SECRET_FILE (mode 600), or "
        "set ZEROTRAIN_JOB_SECRET=insecure-none on a single-tenant cluster");
  return ok_status();
}

}  // namespace

StatusOr<JobEnv> job_from_env(const EnvLookup& env, const std::string& rdzv_file) {
  JobEnv job;
  ZT_ASSIGN_OR_RETURN(job.placement, discover_placement(env));
  const Placement& p = job.placement;
  job.options.rank = p.rank;
  job.options.world_size = p.world_size;
  ZT_ASSIGN_OR_RETURN(std::optional<double> seconds, read_double(env, "ZEROTRAIN_COMM_TIMEOUT"));
  const double s = seconds.value_or(30.0);
  if (!(s > 0) || s > 1e7)
    return invalid_argument("ZEROTRAIN_COMM_TIMEOUT=" + std::to_string(s) +
                            " must be a positive number of seconds");
  job.options.timeout = std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
  // The secret first: a refused job must not publish a rendezvous record.
  ZT_RETURN_IF_ERROR(resolve_secret(env, p.world_size, &job.options.secret, &job.warnings));
  const std::string file = !rdzv_file.empty() ? rdzv_file : env("ZEROTRAIN_RDZV_FILE").value_or("");
  ZT_RETURN_IF_ERROR(resolve_rendezvous(env, p, file, job));
  return job;
}

StatusOr<std::string> job_secret_from_env(const EnvLookup& env, int world_size,
                                          std::vector<std::string>* warnings) {
  std::string secret;
  ZT_RETURN_IF_ERROR(resolve_secret(env, world_size, &secret, warnings));
  return secret;
}

StatusOr<CommOptions> comm_options_from_env() {
  ZT_ASSIGN_OR_RETURN(JobEnv job, job_from_env(process_env()));
  return job.options;
}

}  // namespace zerotrain::comm

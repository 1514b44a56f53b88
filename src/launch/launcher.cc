// `zerotrain run` entry point: gathers the machine's facts (hostfile, GPUs,
// CUDA_VISIBLE_DEVICES, hostname, .deepspeed_env), plans the job and runs it.
#include "launch/launcher.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "comm/job_env.h"
#include "core/env.h"
#include "launch/agent.h"
#include "launch/backends.h"
#include "launch/resources.h"
#include "launch/supervisor.h"

namespace zerotrain::launch {
namespace {

constexpr char kDefaultHostfile[] = "/job/hostfile";  // DeepSpeed's DLTS_HOSTFILE
// Launcher settings forwarded to remote workers (local ones inherit them).
constexpr const char* kForwardedVars[] = {"ZEROTRAIN_LOG_LEVEL", "ZEROTRAIN_COMM_TIMEOUT",
                                          "OMP_NUM_THREADS"};

void say(const std::string& line) {
  std::fprintf(stderr, "zerotrain run: %s\n", line.c_str());
  std::fflush(stderr);
}

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string current_dir() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

StatusOr<HostFacts> gather_facts(const LaunchOptions& opt) {
  HostFacts facts;
  std::string path = opt.hostfile;
  if (path.empty() && file_exists(kDefaultHostfile)) path = kDefaultHostfile;
  if (!path.empty()) {
    ZT_ASSIGN_OR_RETURN(std::vector<HostfileEntry> hosts, read_hostfile(path));
    facts.hostfile = std::move(hosts);
    facts.hostfile_path = path;
  }
  facts.local_gpu_count = opt.gpu_count >= 0 ? opt.gpu_count : count_gpus();
  facts.local_cpu_count = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  facts.cuda_visible_devices = env::get("CUDA_VISIBLE_DEVICES");
  facts.hostname = this_hostname();
  return facts;
}

// `.deepspeed_env` from $HOME, then the current directory (later wins).
StatusOr<std::vector<EnvVar>> remote_extra_env(const std::string& cwd) {
  std::vector<EnvVar> vars;
  for (const char* name : kForwardedVars)
    if (std::optional<std::string> v = env::get(name)) vars.push_back({name, *v});
  // NCCL's and UCX's own settings, as DeepSpeed's runner exports them.
  for (const char* prefix : {"NCCL_", "UCX_"})
    for (auto& [name, value] : env::with_prefix(prefix)) vars.push_back({name, value});
  std::string file = env::get("DS_ENV_FILE").value_or(".deepspeed_env");
  std::vector<std::string> paths;
  if (!file.empty() && file.front() == '/') {
    paths = {file};
  } else {
    if (std::optional<std::string> home = env::get("HOME")) paths.push_back(*home + "/" + file);
    paths.push_back(cwd + "/" + file);
  }
  for (const std::string& p : paths) {
    std::ifstream in(p);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    ZT_ASSIGN_OR_RETURN(std::vector<EnvVar> file_vars, parse_env_file(text.str(), p));
    say("exporting " + std::to_string(file_vars.size()) + " variable(s) from " + p);
    merge_env(vars, file_vars);
  }
  return vars;
}

Status check_options(const LaunchOptions& opt) {
  if (opt.command.empty())
    return invalid_argument("no program to run (usage: zerotrain run [flags] -- PROG ARGS...)");
  if (opt.master_port == 0 || opt.master_port < -1 || opt.master_port > 65535)
    return invalid_argument("--master_port must be in 1..65535 (got " +
                            std::to_string(opt.master_port) + ")");
  if (!(opt.grace_period_s >= 0)) return invalid_argument("the grace period must be >= 0 seconds");
  if (opt.max_restarts < 0)
    return invalid_argument("--max_restarts must be >= 0 (got " + std::to_string(opt.max_restarts) +
                            ")");
  return ok_status();
}

}  // namespace

int count_gpus(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  int count = 0;
  while (struct dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++count;
  ::closedir(d);
  return count;
}

StatusOr<int> pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_status("socket", errno);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return errno_status("binding a free port on 127.0.0.1", err);
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

StatusOr<std::string> make_job_secret() {
  unsigned char bytes[16];
  std::FILE* f = std::fopen("/dev/urandom", "rb");
  if (f == nullptr) return errno_status("opening /dev/urandom", errno);
  size_t n = std::fread(bytes, 1, sizeof bytes, f);
  std::fclose(f);
  if (n != sizeof bytes) return io_error("short read from /dev/urandom");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string secret;
  for (unsigned char b : bytes) {
    secret += kHex[b >> 4];
    secret += kHex[b & 15];
  }
  return secret;
}

// The whole job through a cluster launcher (backends.h): one process.
StatusOr<JobPlan> plan_cluster_launcher(const LaunchOptions& opt, Backend backend,
                                        const std::vector<NodeSlots>& nodes, JobArgs args,
                                        bool local_only) {
  JobPlan plan;
  plan.local_only = local_only;
  plan.master_port = args.master_port > 0 ? args.master_port : kDefaultMasterPort;
  if (args.master_port < 0 && local_only) {
    ZT_ASSIGN_OR_RETURN(plan.master_port, pick_free_port());
  }
  plan.master_addr =
      args.master_addr.empty() ? default_master_addr(nodes, args.hostname) : args.master_addr;
  BackendArgs b;
  b.command = args.command;
  b.master_addr = plan.master_addr;
  b.master_port = plan.master_port;
  b.launcher_args = opt.launcher_args;
  b.cwd = args.cwd;
  ZT_ASSIGN_OR_RETURN(b.exports, remote_extra_env(args.cwd));
  const std::optional<std::string> own = env::get("ZEROTRAIN_JOB_SECRET");
  if (own && *own == comm::kInsecureNoSecret) {
    b.job_secret = *own;
  } else {
    ZT_ASSIGN_OR_RETURN(b.job_secret, make_job_secret());
  }
  b.secret_file = env::get("ZEROTRAIN_JOB_SECRET_FILE").value_or("");
  b.hostfile_path = "/tmp/zerotrain-hostfile-" + std::to_string(::getpid());
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) b.zerotrain = std::string(exe, static_cast<size_t>(len));
  ZT_ASSIGN_OR_RETURN(BackendJob job, plan_backend(backend, nodes, b));
  plan.workers.push_back(std::move(job.launcher));
  if (!job.hostfile.empty()) {
    plan.hostfile_path = b.hostfile_path;
    plan.hostfile_text = job.hostfile;
  }
  say(std::to_string(nodes.size()) + " host(s) " + format_node_slots(nodes) + " through " +
      opt.launcher + ", MASTER_ADDR=" + plan.master_addr +
      " MASTER_PORT=" + std::to_string(plan.master_port));
  return plan;
}

// Agent mode: this node's workers of a job that agents on every node start.
StatusOr<JobPlan> plan_agent(const LaunchOptions& opt, const HostFacts& facts) {
  if (!opt.include.empty() || !opt.exclude.empty() || opt.num_gpus >= 0 || opt.num_nodes >= 0)
    return invalid_argument(
        "--include, --exclude, --num_gpus and --num_nodes select hosts for a launch over ssh; a "
        "per-node agent (--nnodes, --node_rank, --nproc_per_node, --no_ssh, or a Kubeflow or "
        "SkyPilot node) runs --nproc_per_node workers on this node");
  const AgentFlags flags{.nnodes = opt.nnodes,
                         .node_rank = opt.node_rank,
                         .nproc_per_node = opt.nproc_per_node,
                         .no_ssh = opt.no_ssh,
                         .master_addr = opt.master_addr,
                         .master_port = opt.master_port};
  ZT_ASSIGN_OR_RETURN(
      Agent agent,
      resolve_agent(flags, comm::process_env(),
                    facts.hostfile.value_or(std::vector<HostfileEntry>{}), facts.hostname));
  // This node's devices: the first P visible ones, else 0..P-1.
  NodeSlots node{.host = "localhost", .slots = {}};
  if (facts.cuda_visible_devices && !facts.cuda_visible_devices->empty()) {
    ZT_ASSIGN_OR_RETURN(node.slots, parse_device_list(*facts.cuda_visible_devices));
    if (static_cast<int>(node.slots.size()) < agent.nproc_per_node)
      return invalid_argument("--nproc_per_node " + std::to_string(agent.nproc_per_node) +
                              " but CUDA_VISIBLE_DEVICES=" + *facts.cuda_visible_devices +
                              " shows " + std::to_string(node.slots.size()) + " device(s)");
    node.slots.resize(agent.nproc_per_node);
  } else {
    for (int i = 0; i < agent.nproc_per_node; ++i) node.slots.push_back(i);
  }
  JobArgs args;
  args.command = opt.command;
  args.cwd = current_dir();
  args.hostname = facts.hostname;
  args.first_rank = agent.first_rank();
  args.first_node = agent.node_rank;
  args.world_size = agent.world_size();
  args.master_addr = agent.master_addr.empty() ? "127.0.0.1" : agent.master_addr;
  args.master_port = agent.master_port;
  if (args.master_port < 0) {
    ZT_ASSIGN_OR_RETURN(args.master_port, pick_free_port());
  }
  // Every agent must hand its workers the same secret: it comes from the
  // environment (one node alone may mint its own).
  std::vector<std::string> warnings;
  if (agent.nnodes > 1) {
    ZT_ASSIGN_OR_RETURN(args.job_secret, comm::job_secret_from_env(comm::process_env(),
                                                                   agent.world_size(), &warnings));
    if (args.job_secret.empty()) args.job_secret = std::string(comm::kInsecureNoSecret);
  } else {
    std::optional<std::string> own = env::get("ZEROTRAIN_JOB_SECRET");
    if (own) {
      args.job_secret = *own;
    } else {
      ZT_ASSIGN_OR_RETURN(args.job_secret, make_job_secret());
    }
  }
  for (const std::string& w : warnings) say("warning: " + w);
  ZT_ASSIGN_OR_RETURN(JobPlan plan, plan_job({node}, args));
  say("agent for node " + std::to_string(agent.node_rank) + " of " + std::to_string(agent.nnodes) +
      " (" + agent.source + "): ranks " + std::to_string(agent.first_rank()) + ".." +
      std::to_string(agent.first_rank() + agent.nproc_per_node - 1) + " of " +
      std::to_string(agent.world_size()) + ", MASTER_ADDR=" + plan.master_addr +
      " MASTER_PORT=" + std::to_string(plan.master_port));
  return plan;
}

StatusOr<JobPlan> plan_launch(const LaunchOptions& opt) {
  ZT_RETURN_IF_ERROR(check_options(opt));
  ZT_ASSIGN_OR_RETURN(HostFacts facts, gather_facts(opt));
  const AgentFlags flags{.nnodes = opt.nnodes,
                         .node_rank = opt.node_rank,
                         .nproc_per_node = opt.nproc_per_node,
                         .no_ssh = opt.no_ssh};
  if (agent_mode(flags, comm::process_env())) {
    if (opt.max_restarts > 0)
      return invalid_argument(
          "--max_restarts restarts a job its one launcher supervises; per-node agents restart "
          "nothing yet (each agent's workers would re-rendezvous alone)");
    return plan_agent(opt, facts);
  }
  SelectionArgs sel_args{opt.include, opt.exclude, opt.num_gpus, opt.num_nodes};
  ZT_ASSIGN_OR_RETURN(Selection sel, select_resources(facts, sel_args));
  for (const std::string& note : sel.notes) say(note);

  JobArgs args;
  args.command = opt.command;
  args.master_addr = opt.master_addr;
  args.master_port = opt.master_port;
  args.cwd = current_dir();
  args.hostname = facts.hostname;
  args.ssh_port = opt.ssh_port;
  const bool local_only = all_local(sel.nodes, facts.hostname);
  ZT_ASSIGN_OR_RETURN(Backend backend, parse_backend(opt.launcher));
  if (backend != Backend::kSsh && (!local_only || opt.force_multi))
    return plan_cluster_launcher(opt, backend, sel.nodes, args, local_only);
  if (args.master_port < 0 && local_only) {
    ZT_ASSIGN_OR_RETURN(args.master_port, pick_free_port());
  }
  ZT_ASSIGN_OR_RETURN(args.job_secret, make_job_secret());
  args.restart_count = opt.restart_count;
  if (!local_only) {
    ZT_ASSIGN_OR_RETURN(args.extra_env, remote_extra_env(args.cwd));
  }
  ZT_ASSIGN_OR_RETURN(JobPlan plan, plan_job(sel.nodes, args));
  say(std::to_string(plan.workers.size()) + " worker(s) on " + format_node_slots(sel.nodes) +
      ", MASTER_ADDR=" + plan.master_addr + " MASTER_PORT=" + std::to_string(plan.master_port));
  return plan;
}

int run_launcher(const LaunchOptions& options) {
  LaunchOptions opt = options;
  for (;;) {
    StatusOr<JobPlan> plan = plan_launch(opt);
    if (!plan.ok()) {
      say("error: " + plan.status().message());
      return 2;
    }
    if (opt.dry_run) {
      std::ostream& out = opt.out ? *opt.out : std::cout;
      if (!plan->hostfile_text.empty()) {
        std::istringstream lines(plan->hostfile_text);
        for (std::string line; std::getline(lines, line);)
          out << "# " << plan->hostfile_path << ": " << line << "\n";
      }
      for (const WorkerSpec& w : plan->workers) out << render_command(w) << "\n";
      out.flush();
      return 0;
    }
    if (!plan->hostfile_text.empty()) {
      std::ofstream hf(plan->hostfile_path, std::ios::trunc);
      hf << plan->hostfile_text;
      if (!hf.flush()) {
        say("error: cannot write the hostfile " + plan->hostfile_path);
        return 2;
      }
    }
    std::cout.flush();  // the workers share our stdout
    const SupervisedJob job = supervise_job(plan->workers, SupervisorOptions{opt.grace_period_s});
    if (!plan->hostfile_text.empty()) ::unlink(plan->hostfile_path.c_str());
    // Restart after a worker failed; not after a program that cannot run,
    // nor after the launcher itself was told to stop.
    if (job.end != JobEnd::kWorkerFailed || opt.restart_count >= opt.max_restarts) return job.code;
    ++opt.restart_count;
    say("restarting all workers (restart " + std::to_string(opt.restart_count) + " of " +
        std::to_string(opt.max_restarts) +
        "); `zerotrain train --save DIR` resumes from DIR's "
        "latest checkpoint");
  }
}

}  // namespace zerotrain::launch

// Cluster launchers' command lines (see backends.h).
#include "launch/backends.h"

namespace zerotrain::launch {
namespace {

int total_slots(const std::vector<NodeSlots>& nodes) {
  int n = 0;
  for (const NodeSlots& node : nodes) n += static_cast<int>(node.slots.size());
  return n;
}

std::string host_list(const std::vector<NodeSlots>& nodes) {
  std::string out;
  for (const NodeSlots& n : nodes) out += (out.empty() ? "" : ",") + n.host;
  return out;
}

StatusOr<int> uniform_slots(const std::vector<NodeSlots>& nodes, std::string_view backend) {
  const size_t p = nodes.front().slots.size();
  for (const NodeSlots& n : nodes)
    if (n.slots.size() != p)
      return invalid_argument(std::string(backend) +
                              " starts the same number of tasks on every "
                              "node, but the selection has " +
                              format_node_slots(nodes) +
                              "; select the same slots on each host, or use --launcher openmpi "
                              "or mpich (their hostfiles carry per-host counts)");
  return static_cast<int>(p);
}

void append(std::vector<std::string>& v, const std::vector<std::string>& more) {
  v.insert(v.end(), more.begin(), more.end());
}

}  // namespace

StatusOr<Backend> parse_backend(std::string_view name) {
  if (name == "ssh") return Backend::kSsh;
  if (name == "pdsh") return Backend::kPdsh;
  if (name == "openmpi") return Backend::kOpenMpi;
  if (name == "mpich") return Backend::kMpich;
  if (name == "impi") return Backend::kImpi;
  if (name == "slurm") return Backend::kSlurm;
  return invalid_argument("--launcher '" + std::string(name) +
                          "' is not one of ssh, pdsh, openmpi, mpich, impi, slurm "
                          "(mvapich is not supported)");
}

StatusOr<std::vector<std::string>> split_launcher_args(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote)
    return invalid_argument("--launcher_args: unclosed quote in '" + std::string(text) + "'");
  if (in_word) words.push_back(word);
  return words;
}

StatusOr<BackendJob> plan_backend(Backend backend, const std::vector<NodeSlots>& nodes,
                                  const BackendArgs& a) {
  if (nodes.empty() || a.command.empty()) return invalid_argument("no hosts or no program");
  ZT_ASSIGN_OR_RETURN(std::vector<std::string> extra, split_launcher_args(a.launcher_args));
  const int n = total_slots(nodes);
  const std::string addr = a.master_addr, port = std::to_string(a.master_port);
  BackendJob job;
  WorkerSpec& w = job.launcher;
  w.rank = -1;
  w.host = "localhost";
  // The secret reaches the launcher through its environment only.
  w.env = {{"ZEROTRAIN_JOB_SECRET", a.job_secret}};
  std::vector<std::string>& c = w.argv;
  switch (backend) {
    case Backend::kSsh:
      return invalid_argument("the ssh launcher starts each worker itself (plan.h)");
    case Backend::kOpenMpi: {
      for (const NodeSlots& node : nodes)
        job.hostfile += node.host + " slots=" + std::to_string(node.slots.size()) + "\n";
      c = {"mpirun", "-n",  std::to_string(n), "--hostfile", a.hostfile_path,
           "--mca",  "btl", "^openib"};
      append(c, extra);
      append(c, {"-x", "ZEROTRAIN_JOB_SECRET", "-x", "MASTER_ADDR=" + addr, "-x",
                 "MASTER_PORT=" + port});
      for (const EnvVar& v : a.exports) append(c, {"-x", v.name + "=" + v.value});
      break;
    }
    case Backend::kMpich:
    case Backend::kImpi: {
      for (const NodeSlots& node : nodes)
        job.hostfile += node.host + ":" + std::to_string(node.slots.size()) + "\n";
      // mpiexec.hydra: MPICH installs it under that name everywhere, and a
      // bare mpiexec may be Open MPI's (Debian points the alternative there).
      c = {backend == Backend::kMpich ? "mpiexec.hydra" : "mpirun", "-n", std::to_string(n), "-f",
           a.hostfile_path};
      append(c, extra);
      append(c, {"-genvlist", "ZEROTRAIN_JOB_SECRET", "-genv", "MASTER_ADDR", addr, "-genv",
                 "MASTER_PORT", port});
      for (const EnvVar& v : a.exports) append(c, {"-genv", v.name, v.value});
      break;
    }
    case Backend::kSlurm: {
      ZT_ASSIGN_OR_RETURN(int per_node, uniform_slots(nodes, "srun"));
      c = {"srun",
           "-n",
           std::to_string(n),
           "--nodes",
           std::to_string(nodes.size()),
           "--nodelist",
           host_list(nodes),
           "--ntasks-per-node",
           std::to_string(per_node)};
      append(c, extra);
      std::string exports = "--export=ALL,MASTER_ADDR=" + addr + ",MASTER_PORT=" + port;
      for (const EnvVar& v : a.exports) exports += "," + v.name + "=" + v.value;
      c.push_back(exports);
      break;
    }
    case Backend::kPdsh: {
      ZT_ASSIGN_OR_RETURN(int per_node, uniform_slots(nodes, "pdsh's agents"));
      if (a.secret_file.empty() && a.job_secret != "insecure-none")
        return invalid_argument(
            "pdsh has no private channel for the job secret: set ZEROTRAIN_JOB_SECRET_FILE to a "
            "mode-600 file on a file system every node shares (or ZEROTRAIN_JOB_SECRET="
            "insecure-none on a single-tenant cluster)");
      std::vector<EnvVar> env = a.exports;
      env.push_back(a.secret_file.empty() ? EnvVar{"ZEROTRAIN_JOB_SECRET", "insecure-none"}
                                          : EnvVar{"ZEROTRAIN_JOB_SECRET_FILE", a.secret_file});
      std::string remote = "cd " + shell_quote(a.cwd.empty() ? "." : a.cwd) + " && exec env";
      for (const EnvVar& v : env) remote += " " + shell_quote(v.name + "=" + v.value);
      for (const std::string& word :
           {a.zerotrain, std::string("run"), std::string("--nnodes"), std::to_string(nodes.size()),
            std::string("--node_rank"), std::string("%n"), std::string("--nproc_per_node"),
            std::to_string(per_node), std::string("--master_addr"), addr,
            std::string("--master_port"), port, std::string("--")})
        remote += " " + (word == "%n" ? word : shell_quote(word));
      for (const std::string& word : a.command) remote += " " + shell_quote(word);
      c = {"pdsh", "-S", "-f", "1024", "-w", host_list(nodes)};
      append(c, extra);
      c.push_back(remote);
      w.env = {{"PDSH_RCMD_TYPE", "ssh"}};
      return job;
    }
  }
  append(c, a.command);
  return job;
}

}  // namespace zerotrain::launch

// Job plan: ranks, worker environments, ssh command lines, shell quoting and
// `.deepspeed_env` parsing. See plan.h.
#include "launch/plan.h"

#include <cctype>

namespace zerotrain::launch {
namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(words[i]);
  }
  return out;
}

std::vector<std::string> env_words(const std::vector<EnvVar>& env, bool skip_secret) {
  std::vector<std::string> words;
  for (const EnvVar& v : env)
    if (!(skip_secret && v.name == "ZEROTRAIN_JOB_SECRET")) words.push_back(v.name + "=" + v.value);
  return words;
}

// The string the remote shell runs (see plan.h): the secret comes on stdin.
std::string remote_shell_command(const std::string& cwd, const std::vector<EnvVar>& env,
                                 const std::vector<std::string>& command) {
  std::string cmd = "cd ";
  cmd += shell_quote(cwd.empty() ? "." : cwd);
  cmd += " && read -r ZEROTRAIN_JOB_SECRET && export ZEROTRAIN_JOB_SECRET && exec env";
  for (const std::string& w : env_words(env, /*skip_secret=*/true)) {
    cmd += ' ';
    cmd += shell_quote(w);
  }
  cmd += ' ';
  cmd += join_words(command);
  return cmd;
}

std::vector<EnvVar> worker_env(const JobPlan& plan, const JobArgs& args, const WorkerSpec& w,
                               size_t world_size, size_t local_world_size) {
  std::vector<EnvVar> env = plan.local_only ? std::vector<EnvVar>{} : args.extra_env;
  merge_env(env, {
                     {"RANK", std::to_string(w.rank)},
                     {"LOCAL_RANK", std::to_string(w.local_rank)},
                     {"WORLD_SIZE", std::to_string(world_size)},
                     {"LOCAL_WORLD_SIZE", std::to_string(local_world_size)},
                     {"MASTER_ADDR", plan.master_addr},
                     {"MASTER_PORT", std::to_string(plan.master_port)},
                     {"ZEROTRAIN_NODE_RANK", std::to_string(w.node_rank)},
                     {"CUDA_VISIBLE_DEVICES", std::to_string(w.device)},
                     {"ZEROTRAIN_JOB_SECRET", args.job_secret},
                 });
  if (args.restart_count > 0)
    merge_env(env, {{"ZEROTRAIN_RESTART_COUNT", std::to_string(args.restart_count)}});
  return env;
}

}  // namespace

bool all_local(const std::vector<NodeSlots>& nodes, std::string_view hostname) {
  for (const NodeSlots& n : nodes)
    if (!is_local_host(n.host, hostname)) return false;
  return true;
}

std::string default_master_addr(const std::vector<NodeSlots>& nodes, std::string_view hostname) {
  if (all_local(nodes, hostname)) return "127.0.0.1";
  // Remote workers must reach rank 0, so "localhost" becomes our name.
  const std::string& first = nodes.front().host;
  return is_local_host(first, hostname) ? std::string(hostname) : first;
}

StatusOr<JobPlan> plan_job(const std::vector<NodeSlots>& nodes, const JobArgs& args) {
  if (args.command.empty())
    return invalid_argument("no program to run (usage: zerotrain run [flags] -- PROG ARGS...)");
  size_t world_size = 0;
  for (const NodeSlots& n : nodes) world_size += n.slots.size();
  if (world_size == 0) return invalid_argument("no slots selected");
  if (args.world_size > 0) world_size = static_cast<size_t>(args.world_size);

  JobPlan plan;
  plan.local_only = all_local(nodes, args.hostname);
  plan.master_port = args.master_port > 0 ? args.master_port : kDefaultMasterPort;
  plan.master_addr =
      args.master_addr.empty() ? default_master_addr(nodes, args.hostname) : args.master_addr;
  int rank = args.first_rank;
  for (size_t node = 0; node < nodes.size(); ++node) {
    const NodeSlots& n = nodes[node];
    const bool remote = !is_local_host(n.host, args.hostname);
    for (size_t i = 0; i < n.slots.size(); ++i) {
      WorkerSpec w;
      w.rank = rank++;
      w.local_rank = static_cast<int>(i);
      w.node_rank = args.first_node + static_cast<int>(node);
      w.host = n.host;
      w.device = n.slots[i];
      w.remote = remote;
      w.env = worker_env(plan, args, w, world_size, n.slots.size());
      if (remote) {
        w.argv = {"ssh", "-o", "BatchMode=yes"};
        if (args.ssh_port > 0) {
          w.argv.push_back("-p");
          w.argv.push_back(std::to_string(args.ssh_port));
        }
        w.argv.push_back(n.host);
        w.argv.push_back(remote_shell_command(args.cwd, w.env, args.command));
        w.stdin_data = args.job_secret + "\n";
      } else {
        w.argv = args.command;
      }
      plan.workers.push_back(std::move(w));
    }
  }
  return plan;
}

std::string shell_quote(std::string_view word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("@%+=:,./-_").find(c) == std::string_view::npos)
      safe = false;
  }
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string render_command(const WorkerSpec& worker) {
  if (worker.remote) {
    std::string secret(trim(worker.stdin_data));
    return "echo " + shell_quote(secret) + " | " + join_words(worker.argv);
  }
  return "env " + join_words(env_words(worker.env, /*skip_secret=*/false)) + " " +
         join_words(worker.argv);
}

StatusOr<std::vector<EnvVar>> parse_env_file(std::string_view text, std::string_view path) {
  std::vector<EnvVar> vars;
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    size_t eq = line.find('=');
    std::string_view key = trim(line.substr(0, eq));
    if (eq == std::string_view::npos || !is_identifier(key))
      return invalid_argument(std::string(path) + ":" + std::to_string(line_no) +
                              ": expected KEY=VALUE, got '" + std::string(line) + "'");
    merge_env(vars, {{std::string(key), std::string(trim(line.substr(eq + 1)))}});
  }
  return vars;
}

void merge_env(std::vector<EnvVar>& base, const std::vector<EnvVar>& over) {
  for (const EnvVar& v : over) {
    bool replaced = false;
    for (EnvVar& b : base) {
      if (b.name == v.name) {
        b.value = v.value;
        replaced = true;
      }
    }
    if (!replaced) base.push_back(v);
  }
}

}  // namespace zerotrain::launch

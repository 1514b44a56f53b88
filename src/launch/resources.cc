// Resource selection: hostfile and --include/--exclude parsing, and the
// rules that turn them (plus CUDA_VISIBLE_DEVICES) into the hosts and slots
// of a job. See resources.h for the rules.
#include "launch/resources.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

namespace zerotrain::launch {
namespace {

// Slot ids above this are certainly typos (and keep the arithmetic small).
constexpr int kMaxSlot = 1 << 20;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) return parts;
    start = pos + 1;
  }
}

// A non-negative decimal integer (digits only), or nullopt.
std::optional<int> parse_count(std::string_view s) {
  if (s.empty() || s.size() > 7) return std::nullopt;
  int value = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value > kMaxSlot) return std::nullopt;
  return value;
}

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  return out;
}

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// One host of the pool the flags select from.
struct PoolHost {
  std::string host;
  std::vector<int> slots;
  bool any_slot = false;  // CPU localhost: every id >= 0 is a valid worker slot
  std::string origin;     // where the slots came from, for error messages
};

struct Pool {
  std::vector<PoolHost> hosts;
  std::string where;  // "in the hostfile F" / "without a hostfile"
};

Pool base_pool(const HostFacts& facts) {
  Pool pool;
  if (facts.hostfile) {
    pool.where = "in the hostfile " + facts.hostfile_path;
    for (const HostfileEntry& e : *facts.hostfile) {
      PoolHost h{e.host,
                 {},
                 false,
                 "hostfile " + facts.hostfile_path + " gives it slots=" + std::to_string(e.slots)};
      for (int s = 0; s < e.slots; ++s) h.slots.push_back(s);
      pool.hosts.push_back(std::move(h));
    }
    return pool;
  }
  pool.where = "without a hostfile (the only host is localhost)";
  PoolHost h{"localhost", {}, false, ""};
  if (facts.local_gpu_count > 0) {
    for (int s = 0; s < facts.local_gpu_count; ++s) h.slots.push_back(s);
    h.origin = "this host has " + std::to_string(facts.local_gpu_count) + " GPUs";
  } else {
    h.slots = {0};  // one CPU worker by default
    h.any_slot = true;
    h.origin = "CPU host";
  }
  pool.hosts.push_back(std::move(h));
  return pool;
}

// Narrows the local host of `pool` to the user's CUDA_VISIBLE_DEVICES.
Status apply_visible_devices(const HostFacts& facts, const SelectionArgs& args, Pool& pool,
                             std::vector<std::string>& notes) {
  if (!facts.cuda_visible_devices || facts.cuda_visible_devices->empty()) return ok_status();
  const std::string& cvd = *facts.cuda_visible_devices;
  const std::string detected = "CUDA_VISIBLE_DEVICES=" + cvd + " is set";
  for (const PoolHost& h : pool.hosts) {
    if (!is_local_host(h.host, facts.hostname))
      return invalid_argument(detected + " but the hostfile " + facts.hostfile_path +
                              " names the other host '" + h.host +
                              "'; it is ambiguous which host it restricts. Unset it and use "
                              "--include/--exclude");
  }
  if (pool.hosts.size() != 1)
    return invalid_argument(detected + ": hostfile names localhost twice");
  ZT_ASSIGN_OR_RETURN(std::vector<int> ids, parse_device_list(cvd));
  PoolHost& local = pool.hosts[0];
  if (!local.any_slot) {
    for (int id : ids)
      if (!contains(local.slots, id))
        return invalid_argument(detected + " but device " + std::to_string(id) +
                                " does not exist on host '" + local.host + "' (" + local.origin +
                                ")");
  }
  local.slots = ids;
  local.any_slot = false;
  local.origin = "CUDA_VISIBLE_DEVICES=" + cvd;
  if (args.include.empty() && args.exclude.empty() && args.num_gpus < 0)
    notes.push_back(detected + ": using --include=" + local.host + ":" + join_ints(ids));
  else if (args.num_gpus > 0)
    notes.push_back(detected + ": --num_gpus " + std::to_string(args.num_gpus) +
                    " takes the first " + std::to_string(args.num_gpus) + " of its devices");
  else
    notes.push_back(detected + ": --include/--exclude may only name devices in it");
  return ok_status();
}

StatusOr<const PoolHost*> find_host(const Pool& pool, const std::string& host,
                                    std::string_view flag) {
  for (const PoolHost& h : pool.hosts)
    if (h.host == host) return &h;
  return invalid_argument(std::string(flag) + " names host '" + host + "', which is not " +
                          pool.where);
}

Status check_slot(const PoolHost& h, int slot, std::string_view flag) {
  if (h.any_slot || contains(h.slots, slot)) return ok_status();
  return invalid_argument(std::string(flag) + " names slot " + std::to_string(slot) + " on host '" +
                          h.host + "', which does not exist (" + h.origin + "; its slots are " +
                          join_ints(h.slots) + ")");
}

StatusOr<std::vector<NodeSlots>> apply_include(const Pool& pool, const std::string& text) {
  ZT_ASSIGN_OR_RETURN(std::vector<NodeSpec> specs, parse_node_specs(text, "--include"));
  std::map<std::string, std::vector<int>> chosen;
  for (const NodeSpec& spec : specs) {
    ZT_ASSIGN_OR_RETURN(const PoolHost* h, find_host(pool, spec.host, "--include"));
    std::vector<int>& slots = chosen[spec.host];
    if (spec.slots.empty()) slots.insert(slots.end(), h->slots.begin(), h->slots.end());
    for (int s : spec.slots) {
      ZT_RETURN_IF_ERROR(check_slot(*h, s, "--include"));
      slots.push_back(s);
    }
  }
  std::vector<NodeSlots> nodes;
  for (const PoolHost& h : pool.hosts) {  // hostfile order decides rank order
    auto it = chosen.find(h.host);
    if (it == chosen.end()) continue;
    std::vector<int> slots = it->second;
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    nodes.push_back({h.host, slots});
  }
  return nodes;
}

StatusOr<std::vector<NodeSlots>> apply_exclude(const Pool& pool, const std::string& text) {
  ZT_ASSIGN_OR_RETURN(std::vector<NodeSpec> specs, parse_node_specs(text, "--exclude"));
  std::map<std::string, std::vector<int>> removed;
  std::map<std::string, bool> whole;  // host named without slots
  for (const NodeSpec& spec : specs) {
    ZT_ASSIGN_OR_RETURN(const PoolHost* h, find_host(pool, spec.host, "--exclude"));
    if (spec.slots.empty()) whole[spec.host] = true;
    for (int s : spec.slots) {
      if (!contains(h->slots, s))  // a CPU host's "any slot" does not apply: nothing to remove
        return invalid_argument("--exclude names slot " + std::to_string(s) + " on host '" +
                                h->host + "', which does not exist (" + h->origin +
                                "; its slots are " + join_ints(h->slots) + ")");
      removed[spec.host].push_back(s);
    }
  }
  std::vector<NodeSlots> nodes;
  for (const PoolHost& h : pool.hosts) {
    if (whole.count(h.host)) continue;
    NodeSlots n{h.host, {}};
    for (int s : h.slots)
      if (!contains(removed[h.host], s)) n.slots.push_back(s);
    if (!n.slots.empty()) nodes.push_back(std::move(n));
  }
  return nodes;
}

Status check_flag_combination(const SelectionArgs& args) {
  if (!args.include.empty() && !args.exclude.empty())
    return invalid_argument("--include and --exclude are mutually exclusive");
  if ((args.num_nodes >= 0 || args.num_gpus >= 0) &&
      (!args.include.empty() || !args.exclude.empty()))
    return invalid_argument("cannot combine --num_nodes/--num_gpus with --include/--exclude");
  if (args.num_gpus == 0 || args.num_gpus < -1)
    return invalid_argument("--num_gpus must be at least 1 (got " + std::to_string(args.num_gpus) +
                            ")");
  if (args.num_nodes == 0 || args.num_nodes < -1)
    return invalid_argument("--num_nodes must be at least 1 (got " +
                            std::to_string(args.num_nodes) + ")");
  return ok_status();
}

// --num_nodes then --num_gpus, on a pool that include/exclude did not touch.
StatusOr<std::vector<NodeSlots>> apply_counts(const HostFacts& facts, const Pool& pool,
                                              const SelectionArgs& args,
                                              std::vector<std::string>& notes) {
  size_t num_nodes = pool.hosts.size();
  if (args.num_nodes > 0) {
    if (static_cast<size_t>(args.num_nodes) > pool.hosts.size())
      return invalid_argument("--num_nodes " + std::to_string(args.num_nodes) + " but there are " +
                              std::to_string(pool.hosts.size()) + " host(s) " + pool.where);
    num_nodes = static_cast<size_t>(args.num_nodes);
  }
  std::vector<NodeSlots> nodes;
  for (size_t i = 0; i < num_nodes; ++i) {
    const PoolHost& h = pool.hosts[i];
    NodeSlots n{h.host, h.slots};
    if (args.num_gpus > 0 && h.any_slot) {
      n.slots.clear();
      for (int s = 0; s < args.num_gpus; ++s) n.slots.push_back(s);
      if (facts.local_cpu_count > 0 && args.num_gpus > facts.local_cpu_count)
        notes.push_back("warning: --num_gpus " + std::to_string(args.num_gpus) + " starts " +
                        std::to_string(args.num_gpus) + " CPU workers on a host with " +
                        std::to_string(facts.local_cpu_count) + " cores");
    } else if (args.num_gpus > 0) {
      if (static_cast<size_t>(args.num_gpus) > h.slots.size())
        return invalid_argument("--num_gpus " + std::to_string(args.num_gpus) + " but host '" +
                                h.host + "' has only " + std::to_string(h.slots.size()) +
                                " slot(s) (" + h.origin + ")");
      n.slots.resize(static_cast<size_t>(args.num_gpus));
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

}  // namespace

StatusOr<std::vector<int>> parse_device_list(std::string_view cvd) {
  std::vector<int> ids;
  for (std::string_view part : split(cvd, ',')) {
    std::optional<int> id = parse_count(trim(part));
    if (!id)
      return invalid_argument("CUDA_VISIBLE_DEVICES='" + std::string(cvd) +
                              "': only comma-separated integer device ids are supported "
                              "(unset it and use --include instead)");
    if (contains(ids, *id))
      return invalid_argument("CUDA_VISIBLE_DEVICES='" + std::string(cvd) + "' lists device " +
                              std::to_string(*id) + " twice");
    ids.push_back(*id);
  }
  return ids;
}

StatusOr<std::vector<HostfileEntry>> parse_hostfile(std::string_view text, std::string_view path) {
  std::vector<HostfileEntry> entries;
  int line_no = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++line_no;
    std::string_view line = raw.substr(0, raw.find('#'));
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = std::string(path) + ":" + std::to_string(line_no) + ": ";
    size_t ws = line.find_first_of(" \t");
    std::string_view host = line.substr(0, ws);
    std::string_view rest = ws == std::string_view::npos ? "" : trim(line.substr(ws));
    std::optional<int> slots;
    const size_t colon = host.find(':');
    if (rest.empty() && colon != std::string_view::npos &&
        host.find(':', colon + 1) == std::string_view::npos) {
      // MPICH/Hydra's `host:N` (an IPv6 address has more than one ':').
      slots = parse_count(host.substr(colon + 1));
      host = host.substr(0, colon);
    } else if (rest.empty()) {
      slots = 1;  // a bare host: `scontrol show hostnames` output, MVAPICH's format
    } else if (size_t eq = rest.find('=');
               eq != std::string_view::npos && trim(rest.substr(0, eq)) == "slots") {
      slots = parse_count(trim(rest.substr(eq + 1)));
    }
    if (!slots || *slots < 1 || host.empty())
      return invalid_argument(where +
                              "expected 'HOST slots=N', 'HOST:N' or 'HOST' with N >= 1, got '" +
                              std::string(line) + "'");
    for (const HostfileEntry& e : entries)
      if (e.host == host)
        return invalid_argument(where + "host '" + std::string(host) + "' is listed twice");
    entries.push_back({std::string(host), *slots});
  }
  if (entries.empty()) return invalid_argument(std::string(path) + ": the hostfile lists no hosts");
  return entries;
}

StatusOr<std::vector<HostfileEntry>> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read hostfile " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hostfile(text.str(), path);
}

StatusOr<std::vector<NodeSpec>> parse_node_specs(std::string_view text, std::string_view flag) {
  std::vector<NodeSpec> specs;
  if (text.empty()) return specs;
  const std::string whole = std::string(flag) + " '" + std::string(text) + "': ";
  for (std::string_view node : split(text, '@')) {
    std::vector<std::string_view> parts = split(node, ':');
    if (parts.size() > 2)
      return invalid_argument(whole + "'" + std::string(node) + "' has more than one ':'");
    NodeSpec spec{std::string(parts[0]), {}};
    if (spec.host.empty())
      return invalid_argument(whole + "empty host name in '" + std::string(node) +
                              "' (syntax: HOST[:SLOT[,SLOT...]][@HOST...])");
    if (parts.size() == 2) {
      for (std::string_view s : split(parts[1], ',')) {
        std::optional<int> slot = parse_count(s);
        if (!slot)
          return invalid_argument(whole + "slot '" + std::string(s) + "' of host '" + spec.host +
                                  "' is not a non-negative integer");
        spec.slots.push_back(*slot);
      }
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

StatusOr<Selection> select_resources(const HostFacts& facts, const SelectionArgs& args) {
  ZT_RETURN_IF_ERROR(check_flag_combination(args));
  if (facts.hostfile && facts.hostfile->empty())
    return invalid_argument(facts.hostfile_path + ": the hostfile lists no hosts");
  Selection sel;
  Pool pool = base_pool(facts);
  ZT_RETURN_IF_ERROR(apply_visible_devices(facts, args, pool, sel.notes));
  if (!args.include.empty()) {
    ZT_ASSIGN_OR_RETURN(sel.nodes, apply_include(pool, args.include));
  } else if (!args.exclude.empty()) {
    ZT_ASSIGN_OR_RETURN(sel.nodes, apply_exclude(pool, args.exclude));
  } else {
    ZT_ASSIGN_OR_RETURN(sel.nodes, apply_counts(facts, pool, args, sel.notes));
  }
  if (sel.nodes.empty()) return invalid_argument("no slots left to run on (all were excluded)");
  return sel;
}

bool is_local_host(std::string_view host, std::string_view hostname) {
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  if (hostname.empty()) return false;
  if (host == hostname) return true;
  // "node1" vs "node1.cluster": equal up to the first dot of the longer one.
  std::string_view a = host, b = hostname;
  if (a.size() > b.size()) std::swap(a, b);
  return b.size() > a.size() && b.substr(0, a.size()) == a && b[a.size()] == '.' &&
         a.find('.') == std::string_view::npos;
}

std::string format_node_slots(const std::vector<NodeSlots>& nodes) {
  std::string out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i) out += '@';
    out += nodes[i].host + ":" + join_ints(nodes[i].slots);
  }
  return out;
}

}  // namespace zerotrain::launch

// Memory report formatting (see memory_log.h).
#include "train/memory_log.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "train/train_log.h"

namespace zerotrain::train {
namespace {

using Categories = std::vector<std::pair<const char*, int64_t>>;

Categories device_categories(const engine::MemoryReport& m) {
  const zero::ModelStateBytes& d = m.model_states;
  Categories c{{"params", d.parameters},       {"grads", d.gradients},
               {"master", d.master_weights},   {"optimizer", d.optimizer_states},
               {"buffers", d.buffers},         {"activations", m.activation_bytes}};
  if (m.frozen_bytes > 0) c.insert(c.begin() + 1, {"frozen", m.frozen_bytes});  // LoRA
  return c;
}

Categories host_categories(const engine::MemoryReport& m) {
  const zero::ModelStateBytes& h = m.host_model_states;
  Categories c{{"params", h.parameters},
               {"grads", h.gradients},
               {"master", h.master_weights},
               {"optimizer", h.optimizer_states},
               {"buffers", h.buffers}};
  if (m.host_frozen_bytes > 0) c.insert(c.begin() + 1, {"frozen", m.host_frozen_bytes});
  return c;
}

std::string long_list(const Categories& cats) {
  std::string s;
  for (const auto& [name, bytes] : cats) {
    if (!s.empty()) s += ", ";
    s.append(name).append(" ").append(format_bytes(bytes));
  }
  return s;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// "T (p .. g ..)": first letter of each non-zero category.
std::string short_list(int64_t total, const Categories& cats) {
  std::string s = mib(total) + " (";
  bool first = true;
  for (const auto& [name, bytes] : cats) {
    if (bytes == 0) continue;
    if (!first) s += ' ';
    s.append(1, name[0]).append(" ").append(mib(bytes));
    first = false;
  }
  return s + ")";
}

}  // namespace

std::string format_memory_report(const engine::MemoryReport& m, int stage) {
  const zero::ModelStateBytes& h = m.host_model_states;
  const int64_t states = m.model_states.total() + h.total();
  std::string s = "[zerotrain] memory per rank: device " + format_bytes(m.device_total()) + " (" +
                  long_list(device_categories(m)) + ")\n";
  s += "[zerotrain] memory per rank: host " + format_bytes(m.host_total());
  if (m.host_total() == 0)
    s += " (nothing offloaded)";
  else
    s += " (" + long_list(host_categories(m)) + "), pinned " + format_bytes(m.pinned_host_bytes);
  s += "; model states " +
       format_bytes(states) + ", stage " + std::to_string(stage) + " formula " +
       format_bytes(m.formula_bytes) + "\n";
  return s;
}

std::string format_device_peak(const engine::MemoryReport& m) {
  return "[zerotrain] device memory: peak " + format_bytes(m.device_usage.peak) +
         (m.device_capacity > 0 ? " of a " + format_bytes(m.device_capacity) + " capacity"
                                : " (no capacity set)") +
         "\n";
}

std::string format_memory_compact(const engine::MemoryReport& m) {
  std::string s = "dev " + short_list(m.device_total(), device_categories(m));
  if (m.host_total() > 0)
    s += " host " + short_list(m.host_total(), host_categories(m));
  return s + " MiB";
}

}  // namespace zerotrain::train

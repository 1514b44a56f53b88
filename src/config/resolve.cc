// Resolution of a walked document into a typed Config (see resolve.h).
#include "config/resolve.h"

#include <cmath>

#include "config/auto_args.h"

namespace zerotrain::config {
namespace {

bool is_leaf(const KeySpec& k) {
  return k.type != ValueType::kSection && k.type != ValueType::kOpaque &&
         k.support != Support::kRejected && k.support != Support::kAlias &&
         k.support != Support::kDeprecated;
}

bool near_equal(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    return x == y || std::fabs(x - y) <= 1e-12 * std::max(std::fabs(x), std::fabs(y));
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!near_equal(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

class Resolver {
 public:
  Resolver(const WalkResult& walk, const TrainerArgs& args) : walk_(walk), args_(args) {
    bad_ = walk.bad;
    world_size_ = args.world_size.value_or(1);
  }

  Resolution run() {
    fill_values();
    apply_legacy_offload();
    check_types_and_applicability();
    resolve_autos();
    derive_defaults();
    solve_batch();
    Resolution r;
    r.config = build();
    r.warnings = std::move(warnings_);
    RuleContext ctx{walk_, bad_};
    check_cross_field_rules(r.config, ctx, &errors_, &r.warnings);
    r.errors = std::move(errors_);
    return r;
  }

 private:
  void error(const std::string& canonical, std::string msg) {
    errors_.push_back({walk_.shown(canonical), std::move(msg)});
    bad_.insert(canonical);
  }
  bool given(const std::string& p) const { return walk_.leaves.count(p) != 0; }
  std::string type_of(const char* section) const {
    const Json& t = values_.at(std::string(section) + ".type");
    return t.is_string() ? t.get<std::string>() : "";
  }

  void fill_values() {
    for (const KeySpec& k : schema()) {
      if (!is_leaf(k)) continue;
      auto it = walk_.leaves.find(std::string(k.path));
      bool use_given = it != walk_.leaves.end() && !it->second.is_auto;
      values_[std::string(k.path)] = use_given ? it->second.value : default_value(k);
    }
  }

  // cpu_offload / cpu_offload_param / cpu_offload_use_pin_memory (pre-0.5).
  void apply_legacy_offload() {
    struct Legacy {
      const char* old_key;
      const char* target;
      bool is_device;
    };
    const Legacy legacy[] = {
        {"zero_optimization.cpu_offload", "zero_optimization.offload_optimizer.device", true},
        {"zero_optimization.cpu_offload_param", "zero_optimization.offload_param.device", true},
        {"zero_optimization.cpu_offload_use_pin_memory",
         "zero_optimization.offload_optimizer.pin_memory", false},
        {"zero_optimization.cpu_offload_use_pin_memory",
         "zero_optimization.offload_param.pin_memory", false}};
    for (const Legacy& l : legacy) {
      auto it = walk_.leaves.find(l.old_key);
      if (it == walk_.leaves.end() || it->second.value.is_null()) continue;
      bool on = it->second.value.get<bool>();
      if (given(l.target)) {
        error(l.old_key, "give either this old key or '" + std::string(l.target) + "', not both");
      } else if (l.is_device) {
        if (on) values_[l.target] = "cpu";
      } else {
        values_[l.target] = on;
      }
    }
  }

  void check_types_and_applicability() {
    for (const char* section : {"optimizer", "scheduler"}) {
      if (!walk_.sections.count(section)) continue;
      std::string type_path = std::string(section) + ".type";
      if (values_[type_path].is_null() && !bad_.count(type_path))
        error(type_path, std::string("required: the ") + section + " section must name its type");
    }
    for (const auto& [path, v] : walk_.leaves) {
      const KeySpec* spec = find_key(path);
      if (spec->applies_to.empty()) continue;
      const char* section = path.rfind("optimizer.", 0) == 0 ? "optimizer" : "scheduler";
      std::string type = type_of(section);
      if (type.empty() || list_contains(spec->applies_to, type)) continue;
      std::string applies(spec->applies_to);
      for (char& ch : applies)
        if (ch == '|') ch = ',';
      std::string msg = "'";  // built stepwise: GCC 12 -Wrestrict misfires on "lit" + string
      msg += leaf_name(path);
      msg += "' does not apply to " + std::string(section) + " type " + type + " (it applies to " +
             applies + ")";
      error(path, msg);
    }
  }

  void resolve_autos() {
    for (const AutoRule& rule : auto_rules()) {
      std::string path(rule.path);
      auto it = walk_.leaves.find(path);
      if (it == walk_.leaves.end() || bad_.count(path)) continue;
      std::optional<Json> from_args = rule.from(args_);
      if (!it->second.is_auto) {
        if (rule.must_match && from_args && !near_equal(*from_args, it->second.value))
          error(path, "is " + it->second.value.dump() + " but the trainer argument '" +
                          std::string(rule.arg) + "' is " + from_args->dump() +
                          "; make them agree (or write \"auto\")");
        continue;
      }
      if (!from_args) {
        error(path, "is \"auto\" but the trainer argument '" + std::string(rule.arg) +
                        "' it is resolved from was not given; give it or write a value");
        continue;
      }
      std::string why;
      std::optional<Json> norm = normalize_leaf(*find_key(path), *from_args, &why);
      if (!norm) {
        error(path, "\"auto\" resolved to " + from_args->dump() + ", which " + why);
        continue;
      }
      values_[path] = *norm;
      from_auto_.insert(path);
    }
  }

  void derive_defaults();
  void solve_batch();
  void check_derived_batch_against_args(const BatchSizes& b);
  Config build();

  const WalkResult& walk_;
  const TrainerArgs& args_;
  std::map<std::string, Json> values_;
  std::set<std::string> bad_;
  std::set<std::string> from_auto_;
  std::vector<ConfigError> errors_, warnings_;
  int64_t world_size_ = 1;
};

void Resolver::derive_defaults() {
  Json& overlap = values_["zero_optimization.overlap_comm"];
  if (overlap.is_null()) overlap = values_["zero_optimization.stage"] == 3;

  const std::string sched = type_of("scheduler");
  Json& max_lr = values_["scheduler.params.warmup_max_lr"];
  if (max_lr.is_null() && sched == "WarmupDecayLR") max_lr = 0.001;
  if (max_lr.is_null() && sched == "WarmupLR") {
    if (!type_of("optimizer").empty())
      max_lr = values_["optimizer.params.lr"];
    else
      error("scheduler.params.warmup_max_lr",
            "not given and there is no optimizer section to take lr from; give it");
  }
  auto require = [&](const char* types, const char* path) {
    if (list_contains(types, sched) && values_[path].is_null() && !bad_.count(path))
      error(path, "required for scheduler type " + sched);
  };
  require("WarmupDecayLR|WarmupCosineLR", "scheduler.params.total_num_steps");
  require("OneCycle", "scheduler.params.cycle_min_lr");
  require("OneCycle", "scheduler.params.cycle_max_lr");
  for (const char* half : {"step_size", "stair_count"}) {
    Json& second = values_[std::string("scheduler.params.cycle_second_") + half];
    if (second.is_null()) second = values_[std::string("scheduler.params.cycle_first_") + half];
  }
}

void Resolver::solve_batch() {
  const char* keys[] = {"train_batch_size", "train_micro_batch_size_per_gpu",
                        "gradient_accumulation_steps"};
  // HF: train_batch_size "auto" = world × the trainer's micro batch × its
  // accumulation; without both arguments it is derived from the config's.
  auto tb = walk_.leaves.find(keys[0]);
  int64_t product = 0;
  if (tb != walk_.leaves.end() && tb->second.is_auto && args_.micro_batch_per_gpu &&
      args_.gradient_accumulation_steps &&
      !__builtin_mul_overflow(*args_.micro_batch_per_gpu, *args_.gradient_accumulation_steps,
                              &product) &&
      !__builtin_mul_overflow(product, world_size_, &product))
    values_[keys[0]] = product;
  std::optional<int64_t> given_value[3];
  for (int i = 0; i < 3; ++i) {
    if (bad_.count(keys[i])) return;  // already reported; the triangle would only echo it
    const Json& v = values_[keys[i]];
    if (!v.is_null()) given_value[i] = v.get<int64_t>();
  }
  if (world_size_ < 1) {
    errors_.push_back({"", "world_size must be >= 1, got " + std::to_string(world_size_)});
    return;
  }
  StatusOr<BatchSizes> b =
      solve_batch_sizes(given_value[0], given_value[1], given_value[2], world_size_);
  if (!b.ok()) {
    std::string msg = b.status().message();
    if (tb != walk_.leaves.end() && tb->second.is_auto && product == 0)
      msg +=
          "; train_batch_size \"auto\" is train_micro_batch_size_per_gpu × "
          "gradient_accumulation_steps × world_size, so give the micro batch";
    error(keys[0], msg);
    return;
  }
  values_[keys[0]] = b->train_batch_size;
  values_[keys[1]] = b->micro_batch_per_gpu;
  values_[keys[2]] = b->gradient_accumulation_steps;
  if (tb != walk_.leaves.end() && tb->second.is_auto) from_auto_.insert(keys[0]);
  check_derived_batch_against_args(*b);
}

// A derived micro batch or accumulation must still agree with the trainer
// (given ones were compared in resolve_autos).
void Resolver::check_derived_batch_against_args(const BatchSizes& b) {
  struct Derived {
    const char* key;
    const char* arg;
    std::optional<int64_t> want;
    int64_t got;
  };
  const Derived derived[] = {{"train_micro_batch_size_per_gpu", "micro_batch_per_gpu",
                              args_.micro_batch_per_gpu, b.micro_batch_per_gpu},
                             {"gradient_accumulation_steps", "gradient_accumulation_steps",
                              args_.gradient_accumulation_steps, b.gradient_accumulation_steps}};
  for (const Derived& d : derived) {
    if (given(d.key) || !d.want || *d.want == d.got) continue;
    error("train_batch_size",
          std::string("gives ") + d.key + " " + std::to_string(d.got) + " (train_batch_size " +
              std::to_string(b.train_batch_size) + ", world_size " + std::to_string(world_size_) +
              ") but the trainer argument '" + d.arg + "' is " + std::to_string(*d.want));
  }
}

Config Resolver::build() {
  Config c;
  const std::string opt = type_of("optimizer"), sched = type_of("scheduler");
  for (const KeySpec& k : schema()) {
    if (!is_leaf(k)) continue;
    std::string path(k.path);
    if (from_auto_.count(path)) c.resolved_from_auto.push_back(path);
    if (!k.applies_to.empty()) {
      const std::string& type = path.rfind("optimizer.", 0) == 0 ? opt : sched;
      if (type.empty() || !list_contains(k.applies_to, type)) continue;
    }
    const Json& v = values_[path];
    if (k.set == nullptr) {
      if (v != default_value(k)) c.inert_values[path] = v.dump();
      continue;
    }
    try {
      k.set(c, v);
    } catch (const nlohmann::json::exception& e) {
      // Only reachable for a key whose problem was already reported.
      ZT_CHECK(!errors_.empty() || !walk_.errors.empty(), "config: value ", v.dump(), " for ", path,
               ": ", e.what());
    }
  }
  c.batch.world_size = world_size_;
  return c;
}

}  // namespace

Resolution resolve_config(const WalkResult& walk, const TrainerArgs& args) {
  return Resolver(walk, args).run();
}

}  // namespace zerotrain::config

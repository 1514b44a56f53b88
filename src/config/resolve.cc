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
  Resolver(const WalkResult& walk, const TrainerArgs& args, const TrainerArgs& defaults)
      : walk_(walk), args_(args), defaults_(defaults) {
    bad_ = walk.bad;
    world_size_ = args.world_size.value_or(1);
  }

  Resolution run() {
    fill_values();
    apply_legacy_offload();
    supply_trainer_optimizer();
    check_types_and_applicability();
    resolve_autos();
    record_dropped_autos();
    derive_defaults();
    solve_batch();
    Resolution r;
    r.config = build();
    r.warnings = std::move(warnings_);
    RuleContext ctx{walk_, bad_};
    check_cross_field_rules(r.config, ctx, &errors_, &r.warnings);
    check_context_rules(r.config, ctx, &errors_, &r.warnings);
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
      std::string source = rule.flag.empty() ? "constant" : std::string(rule.flag);
      if (!from_args) {
        from_args = rule.from(defaults_);
        source = "default of " + source;
      }
      if (!from_args) {
        error(path, "is \"auto\" but the trainer argument '" + std::string(rule.arg) +
                        "' it is resolved from is not known here; give " + std::string(rule.flag) +
                        " or write a value");
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
      auto_sources_[path] = source;
    }
  }

  // An integer key's resolved value, else the argument, else its default.
  std::optional<int64_t> resolved_int(const char* path, std::optional<int64_t> arg,
                                      std::optional<int64_t> fallback) {
    const Json& v = values_[path];
    if (v.is_number_integer()) return v.get<int64_t>();
    return arg ? arg : fallback;
  }
  // A config without an optimizer (or scheduler) section, under a trainer
  // (defaults given), gets the trainer's own, as HF's Trainer creates
  // AdamW from its arguments and its default "linear" schedule (warmup,
  // then linear decay to 0 at the last step: DeepSpeed's WarmupDecayLR).
  // DeepSpeed alone has no optimizer to fall back on.
  void supply_trainer_optimizer() {
    auto arg = [](const auto& given, const auto& fallback) { return given ? given : fallback; };
    const auto lr = arg(args_.lr, defaults_.lr);
    const auto betas = arg(args_.betas, defaults_.betas);
    const auto eps = arg(args_.eps, defaults_.eps);
    const auto wd = arg(args_.weight_decay, defaults_.weight_decay);
    if (!defaults_.lr) return;  // no trainer: DeepSpeed's rules alone
    if (!walk_.sections.count("optimizer") && lr && betas && eps && wd) {
      values_["optimizer.type"] = "AdamW";
      values_["optimizer.params.lr"] = *lr;
      values_["optimizer.params.betas"] = Json::array({(*betas)[0], (*betas)[1]});
      values_["optimizer.params.eps"] = *eps;
      values_["optimizer.params.weight_decay"] = *wd;
      trainer_supplied("optimizer", "the trainer's AdamW (no optimizer section)");
    }
    const auto warmup = arg(args_.warmup_steps, defaults_.warmup_steps);
    const auto total = arg(args_.total_steps, defaults_.total_steps);
    if (!walk_.sections.count("scheduler") && lr && warmup && total) {
      values_["scheduler.type"] = "WarmupDecayLR";
      values_["scheduler.params.warmup_min_lr"] = 0.0;
      values_["scheduler.params.warmup_max_lr"] = *lr;
      values_["scheduler.params.warmup_num_steps"] = *warmup;
      values_["scheduler.params.total_num_steps"] = *total;
      values_["scheduler.params.warmup_type"] = "linear";
      trainer_supplied("scheduler", "the trainer's linear warmup and decay (no scheduler section)");
    }
  }
  void trainer_supplied(const std::string& section, const std::string& source) {
    for (const KeySpec& k : schema())
      if (k.path.starts_with(section + ".") && !values_[std::string(k.path)].is_null() &&
          (k.applies_to.empty() || list_contains(k.applies_to, type_of(section.c_str()))))
        auto_sources_[std::string(k.path)] = source;
  }
  void record_dropped_autos() {
    for (const std::string& path : walk_.auto_dropped) {
      from_auto_.insert(path);
      auto_sources_[path] = "DeepSpeed default";
    }
  }
  // No batch key at all: the trainer's micro batch and accumulation (given
  // or default), as a trainer (HF's included) trains with its own
  // per-device batch; DeepSpeed alone would refuse the config.
  template <size_t N>
  void fill_batch_from_trainer(const char* const (&keys)[N]) {
    struct From {
      const char* key;
      std::optional<int64_t> arg, fallback;
      const char* flag;
    };
    const From from[] = {
        {keys[1], args_.micro_batch_per_gpu, defaults_.micro_batch_per_gpu, "--micro-batch"},
        {keys[2], args_.gradient_accumulation_steps, defaults_.gradient_accumulation_steps,
         "--grad-accum"}};
    for (const From& f : from) {
      std::optional<int64_t> v = f.arg ? f.arg : f.fallback;
      if (!v) return;
      values_[f.key] = *v;
      from_auto_.insert(f.key);
      auto_sources_[f.key] =
          (f.arg ? "" : "default of ") + std::string(f.flag) + ", not in the config";
    }
  }
  void derive_defaults();
  void solve_batch();
  void check_derived_batch_against_args(const BatchSizes& b);
  Config build();

  const WalkResult& walk_;
  const TrainerArgs& args_;
  const TrainerArgs& defaults_;
  std::map<std::string, Json> values_;
  std::set<std::string> bad_;
  std::set<std::string> from_auto_;
  std::map<std::string, std::string> auto_sources_;
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
  // HF: train_batch_size "auto" = world × micro batch × accumulation, each
  // as resolved above (the config's value, else the trainer's argument,
  // else its default).
  auto tb = walk_.leaves.find(keys[0]);
  int64_t product = 0;
  if (tb != walk_.leaves.end() && tb->second.is_auto) {
    std::optional<int64_t> micro =
        resolved_int(keys[1], args_.micro_batch_per_gpu, defaults_.micro_batch_per_gpu);
    std::optional<int64_t> gas = resolved_int(keys[2], args_.gradient_accumulation_steps,
                                              defaults_.gradient_accumulation_steps);
    if (micro && gas && !__builtin_mul_overflow(*micro, *gas, &product) &&
        !__builtin_mul_overflow(product, world_size_, &product))
      values_[keys[0]] = product;
    else
      product = 0;
  }
  std::optional<int64_t> given_value[3];
  for (int i = 0; i < 3; ++i) {
    if (bad_.count(keys[i])) return;  // already reported; the triangle would only echo it
    const Json& v = values_[keys[i]];
    if (!v.is_null()) given_value[i] = v.get<int64_t>();
  }
  if (!given_value[0] && !given_value[1] && !given_value[2]) {
    fill_batch_from_trainer(keys);
    for (int i = 1; i < 3; ++i)
      if (values_[keys[i]].is_number_integer()) given_value[i] = values_[keys[i]].get<int64_t>();
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
  if (tb != walk_.leaves.end() && tb->second.is_auto) {
    from_auto_.insert(keys[0]);
    auto_sources_[keys[0]] = "derived";
  }
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
    auto source = auto_sources_.find(path);
    if (from_auto_.count(path) || source != auto_sources_.end())
      c.resolved_from_auto.push_back(path);
    if (source != auto_sources_.end()) c.auto_sources[path] = source->second;
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

Resolution resolve_config(const WalkResult& walk, const TrainerArgs& args,
                          const TrainerArgs& defaults) {
  return Resolver(walk, args, defaults).run();
}

}  // namespace zerotrain::config

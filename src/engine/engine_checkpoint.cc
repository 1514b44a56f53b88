// Engine::save_checkpoint / load_checkpoint: the collective protocol over
// checkpoint/'s files. Save: rank 0 makes DIR/TAG.partial; each rank that
// owns states writes its shard there; rank 0 writes the manifest (and the
// consolidated 16-bit weights when asked), renames TAG.partial to TAG and
// writes DIR/latest last. Load: every rank reads its owned ranges from
// whichever shards hold them into scratch, the ranks agree that all
// succeeded, and only then is the engine's state replaced.
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/export.h"
#include "checkpoint/manifest.h"
#include "checkpoint/shard_file.h"
#include "core/atomic_file.h"
#include "core/env.h"
#include "core/log.h"
#include "device/device.h"
#include "engine/engine.h"
#include "engine/engine_state.h"

namespace zerotrain::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* k16BitFile = "model_16bit.safetensors";
// DIR/TAG.partial: a save in progress; DIR/TAG.replaced: the TAG a re-save
// of the same tag is replacing (only between two renames).
constexpr const char* kStagingSuffix = ".partial";
constexpr const char* kReplacedSuffix = ".replaced";

std::string shard_file_name(int rank) {
  return "zero_rank_" + std::to_string(rank) + "_states.ztshard";
}

// Stage 0 replicates the states: rank 0's shard is the whole of them.
bool writes_shard(int stage, int rank) { return stage != 0 || rank == 0; }

// Every rank learns whether all succeeded; on failure each returns the
// lowest failing rank's error, so all ranks refuse with the same reason.
Status agree(comm::Communicator& comm, Status local) {
  if (comm.world_size() == 1) return local;
  std::vector<float> failed(static_cast<size_t>(comm.world_size()), 0.0f);
  failed[static_cast<size_t>(comm.rank())] = local.ok() ? 0.0f : 1.0f;
  ZT_RETURN_IF_ERROR(comm.allreduce(std::span<float>(failed), comm::ReduceOp::kSum));
  int first = -1;
  for (int r = 0; r < comm.world_size() && first < 0; ++r)
    if (failed[static_cast<size_t>(r)] != 0.0f) first = r;
  if (first < 0) return ok_status();
  constexpr size_t kMessageBytes = 2048;
  std::vector<std::byte> text(kMessageBytes);
  StatusCode code = local.code();
  if (comm.rank() == first) {
    const std::string m = local.message().substr(0, kMessageBytes - 2);
    text[0] = static_cast<std::byte>(static_cast<int>(local.code()));
    std::memcpy(text.data() + 1, m.data(), m.size());
  }
  ZT_RETURN_IF_ERROR(comm.broadcast(std::span<std::byte>(text), first));
  if (comm.rank() == first) return local;
  code = static_cast<StatusCode>(static_cast<int>(text[0]));
  return Status(code, "rank " + std::to_string(first) + ": " +
                          std::string(reinterpret_cast<const char*>(text.data() + 1)));
}

// DeepSpeed's checkpoint.tag_validation: every rank must save under rank 0's tag.
Status validate_tag(comm::Communicator& comm, const std::string& tag, config::TagValidation mode) {
  const auto ends_with = [&](std::string_view suffix) {
    return tag.size() >= suffix.size() && tag.compare(tag.size() - suffix.size(), suffix.size(),
                                                      suffix) == 0;
  };
  if (tag.empty() || tag.find('/') != std::string::npos || tag == "." || tag == ".." ||
      tag == checkpoint::kLatestName || ends_with(kStagingSuffix) || ends_with(kReplacedSuffix))
    return invalid_argument("checkpoint tag \"" + tag +
                            "\": must be a plain, non-empty name other than \"latest\", not "
                            "ending in " + kStagingSuffix + " or " + kReplacedSuffix);
  if (comm.world_size() == 1 || mode == config::TagValidation::kIgnore) return ok_status();
  std::vector<std::byte> root(256);
  const std::string cut = tag.substr(0, root.size() - 1);
  if (comm.rank() == 0) std::memcpy(root.data(), cut.data(), cut.size());
  ZT_RETURN_IF_ERROR(comm.broadcast(std::span<std::byte>(root), 0));
  const std::string theirs(reinterpret_cast<const char*>(root.data()));
  if (theirs == cut) return ok_status();
  const std::string m = "checkpoint tag \"" + tag + "\" on rank " + std::to_string(comm.rank()) +
                        " differs from rank 0's \"" + theirs + "\"";
  if (mode == config::TagValidation::kFail) return invalid_argument(m);
  log::warn(m);
  return ok_status();
}

// Test seam for "a kill during save leaves the previous checkpoint
// loadable": ZEROTRAIN_FAULT_KILL_IN_SAVE=shards|manifest|rename makes rank
// 0 SIGKILL itself right after that phase of save_checkpoint.
void kill_point(const char* phase) {
  static const std::optional<std::string> want = env::get("ZEROTRAIN_FAULT_KILL_IN_SAVE");
  if (want && *want == phase) ::raise(SIGKILL);
}

std::string precision_name(const config::Config& c) {
  return c.bf16.enabled ? "bf16" : c.fp16.enabled ? "fp16" : "fp32";
}

}  // namespace

Status Engine::save_checkpoint(const std::string& dir, const std::string& tag,
                               const json& client_state) {
  if (micro_steps_ % gas_ != 0)
    return invalid_argument("save_checkpoint: call it at an optimizer-step boundary (micro-step " +
                            std::to_string(micro_steps_) + " of " + std::to_string(gas_) + ")");
  const bool rank0 = comm_->rank() == 0;
  ZT_RETURN_IF_ERROR(agree(*comm_, validate_tag(*comm_, tag, config_.checkpoint.tag_validation)));
  const std::string tag_dir = dir + "/" + tag, staging = tag_dir + kStagingSuffix;
  Status st;
  if (rank0) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!ec) fs::remove_all(staging, ec);  // a save killed earlier
    if (!ec) fs::create_directory(staging, ec);
    if (ec) st = io_error("save_checkpoint: cannot create " + staging + ": " + ec.message());
  }
  ZT_RETURN_IF_ERROR(agree(*comm_, st));

  const int stage = strategy_->stage();
  if (writes_shard(stage, comm_->rank())) {
    std::vector<checkpoint::NamedValues> tensors{{"master", strategy_->owned_master()}};
    const std::vector<std::string> names = optimizer_->state_names();
    std::span<const Tensor> states = strategy_->optimizer_states();
    for (size_t i = 0; i < names.size(); ++i) tensors.push_back({names[i], states[i]});
    st = checkpoint::write_shard(staging + "/" + shard_file_name(comm_->rank()), comm_->rank(),
                                 strategy_->owned_ranges(), tensors)
             .status();
  }
  ZT_RETURN_IF_ERROR(agree(*comm_, st));

  if (rank0) {
    st = [&]() -> Status {
      checkpoint::Manifest m;
      m.tag = tag;
      m.world_size = comm_->world_size();
      m.stage = stage;
      m.precision = precision_name(config_);
      m.numel = model_->layout().total_numel();
      m.family = std::string(model_->family());
      m.model_config = model_->config_json();
      m.adapter = model_->adapter_json();
      m.layout = checkpoint::layout_entries(model_->layout());
      m.state_names = optimizer_->state_names();
      m.engine_state = to_json(state());
      m.client_state = client_state;
      for (int r = 0; r < comm_->world_size(); ++r) {
        if (!writes_shard(stage, r)) continue;
        ZT_ASSIGN_OR_RETURN(checkpoint::ShardEntry e,
                            checkpoint::describe_shard(staging + "/" + shard_file_name(r)));
        m.shards.push_back(std::move(e));
      }
      const bool gather16 = stage == 3 && config_.zero.stage3_gather_16bit_weights_on_model_save;
      if (gather16) m.extra_files.push_back(k16BitFile);
      kill_point("shards");
      ZT_RETURN_IF_ERROR(atomic_write_file(staging + "/" + checkpoint::kManifestName,
                                           checkpoint::manifest_to_json(m)));
      kill_point("manifest");
      if (gather16) {
        const DType dt = config_.bf16.enabled   ? DType::kBFloat16
                         : config_.fp16.enabled ? DType::kFloat16
                                                : DType::kFloat32;
        ZT_RETURN_IF_ERROR(checkpoint::export_safetensors(staging, staging + "/" + k16BitFile, dt));
      }
      // Into place: the old TAG (if any) aside, the new one in, latest last.
      std::error_code ec;
      const std::string old = tag_dir + kReplacedSuffix;
      // A save killed between the two renames below left TAG only as
      // TAG.replaced: put it back before replacing it again.
      std::error_code probe;  // exists() with an error code never throws
      if (!fs::exists(tag_dir, probe) && fs::exists(old, probe)) fs::rename(old, tag_dir, ec);
      if (!ec) fs::remove_all(old, ec);
      if (!ec && fs::exists(tag_dir, probe)) fs::rename(tag_dir, old, ec);
      if (!ec) fs::rename(staging, tag_dir, ec);
      if (ec) return io_error("save_checkpoint: cannot move " + staging + " to " + tag_dir + ": " +
                              ec.message());
      ZT_RETURN_IF_ERROR(fsync_directory(dir));
      kill_point("rename");
      fs::remove_all(old, ec);
      return atomic_write_file(dir + "/" + checkpoint::kLatestName, tag + "\n");
    }();
  }
  ZT_RETURN_IF_ERROR(agree(*comm_, st));
  if (rank0) log::info("saved checkpoint ", tag_dir, " (global step ", global_steps_, ")");
  return ok_status();
}

StatusOr<json> Engine::load_checkpoint(const std::string& dir, const std::string& tag_in) {
  if (micro_steps_ % gas_ != 0)
    return invalid_argument("load_checkpoint: call it at an optimizer-step boundary");
  std::string tag = tag_in;
  std::optional<checkpoint::CheckpointReader> reader;
  std::vector<std::vector<float>> scratch;  // master, then each optimizer state
  const std::vector<Range> ranges = strategy_->owned_ranges();
  const optim::LossScalerState scaler_before = scaler_->state();
  EngineState saved;
  bool scaler_loaded = false;
  Status st = [&]() -> Status {
    if (tag.empty()) {
      ZT_ASSIGN_OR_RETURN(tag, checkpoint::read_latest_tag(dir));
    }
    std::string tag_dir = dir + "/" + tag;
    std::error_code probe;
    if (!fs::exists(tag_dir, probe) && fs::exists(tag_dir + kReplacedSuffix, probe)) {
      // A re-save of this tag was killed between its two renames.
      tag_dir += kReplacedSuffix;
      log::warn("checkpoint ", dir, "/", tag, " is missing; loading ", tag_dir,
                " (the copy a killed save of the same tag was replacing)");
    }
    ZT_ASSIGN_OR_RETURN(checkpoint::CheckpointReader r, checkpoint::CheckpointReader::open(tag_dir));
    reader.emplace(std::move(r));
    const checkpoint::Manifest& m = reader->manifest();
    const std::string where = "checkpoint " + dir + "/" + tag + ": ";
    ZT_ASSIGN_OR_RETURN(saved, engine_state_from_json(m.engine_state, where + "manifest"));
    ZT_RETURN_IF_ERROR(check_compatible(m, saved, where));
    if (m.precision != precision_name(config_)) {
      if (comm_->rank() == 0)
        log::warn(where, "saved in ", m.precision, ", loading into ", precision_name(config_),
                  " (fp32 master weights and states carry over; the loss scaler starts afresh)");
    } else {
      // The one fallible part of applying the state: done (and undone on
      // failure below) before the ranks agree.
      ZT_RETURN_IF_ERROR(scaler_->load_state(saved.loss_scaler).with_context(where));
      scaler_loaded = true;
    }
    std::vector<std::string> names = reader->tensor_names();
    for (const std::string& name : names) {
      std::vector<float>& dst = scratch.emplace_back(strategy_->owned_master().numel);
      int64_t at = 0;
      for (const Range& r : ranges) {
        ZT_RETURN_IF_ERROR(reader->read(name, r.offset, r.count, dst.data() + at));
        at += r.count;
      }
    }
    return ok_status();
  }();
  st = agree(*comm_, st);
  if (!st.ok()) {
    if (scaler_loaded) (void)scaler_->load_state(scaler_before);  // a state it had: accepted
    return st;
  }

  // Everyone read everything: replace the state.
  const checkpoint::Manifest& m = reader->manifest();
  ZT_RETURN_IF_ERROR(device::copy_from_host(scratch[0].data(), strategy_->owned_master()));
  std::span<const Tensor> states = strategy_->optimizer_states();
  for (size_t i = 0; i < states.size(); ++i)
    ZT_RETURN_IF_ERROR(device::copy_from_host(scratch[i + 1].data(), states[i]));
  ZT_RETURN_IF_ERROR(apply_state(saved));
  if (comm_->rank() == 0)
    log::info("loaded checkpoint ", dir, "/", tag, " (written by ", m.world_size,
              " rank(s) at stage ", m.stage, ", global step ", saved.global_steps, ")");
  return m.client_state;
}

Status Engine::check_compatible(const checkpoint::Manifest& m, const EngineState& saved,
                                const std::string& where) const {
  if (m.layout != checkpoint::layout_entries(model_->layout()) ||
      m.numel != model_->layout().total_numel() || m.family != model_->family()) {
    return invalid_argument(
        where + "written for another model (" + m.family + " " + m.model_config.dump() + ", " +
        std::to_string(m.numel) + " elements; this one is " + std::string(model_->family()) + " " +
        model_->config_json().dump() + ", " + std::to_string(model_->layout().total_numel()) + ")");
  }
  if (m.adapter != model_->adapter_json()) {
    const auto crc = [](const nlohmann::json& a) {
      return a.is_null() ? std::string("none") : a.value("base_crc32", std::string("?"));
    };
    if (m.adapter.is_null() || model_->adapter_json().is_null() ||
        m.adapter["peft"] != model_->adapter_json()["peft"])
      return invalid_argument(where + "written with adapter " + m.adapter.dump() +
                              "; this run's is " + model_->adapter_json().dump());
    return invalid_argument(where + "a LoRA checkpoint of another base model (base weights CRC-32 " +
                            crc(m.adapter) + ", this run's base " + crc(model_->adapter_json()) +
                            "): resume over the base it was trained on");
  }
  if (saved.optimizer != optimizer_->name() || m.state_names != optimizer_->state_names() ||
      saved.state_names != m.state_names)
    return invalid_argument(where + "optimizer " + saved.optimizer + " does not match this run's " +
                            std::string(optimizer_->name()));
  if ((saved.scheduler_type.empty()) != (scheduler_ == nullptr) ||
      (scheduler_ && saved.scheduler_type != scheduler_->type()))
    return invalid_argument(where + "scheduler \"" + saved.scheduler_type +
                            "\" does not match this run's");
  return ok_status();
}

// The optimizer step, schedule and counters of a loaded checkpoint (the
// owned arrays are already in place), then the model brought up to date.
Status Engine::apply_state(const EngineState& saved) {
  optimizer_->set_step_count(saved.optimizer_step_count);
  if (scheduler_) {
    scheduler_->load_state_dict({saved.scheduler_last_batch_iteration});
    optim::apply_lr(*scheduler_, *optimizer_);
  } else {
    optimizer_->set_lr(saved.lr);
  }
  global_steps_ = saved.global_steps;
  skipped_steps_ = saved.skipped_steps;
  micro_steps_ = saved.global_steps * gas_;  // boundaries at this run's gas
  ZT_RETURN_IF_ERROR(strategy_->publish_parameters());
  strategy_->zero_gradients();
  return ok_status();
}

EngineState Engine::state() const {
  EngineState s;
  s.optimizer = std::string(optimizer_->name());
  s.state_names = optimizer_->state_names();
  s.optimizer_step_count = optimizer_->step_count();
  s.lr = optimizer_->lr();
  if (scheduler_) {
    s.scheduler_type = std::string(scheduler_->type());
    s.scheduler_last_batch_iteration = scheduler_->last_batch_iteration();
  }
  s.loss_scaler = scaler_->state();
  s.global_steps = global_steps_;
  s.skipped_steps = skipped_steps_;
  s.micro_steps = micro_steps_;
  return s;
}

}  // namespace zerotrain::engine

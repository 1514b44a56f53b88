// Config honesty by class (issue #32, item 5), against DeepSpeed's own
// behaviour as its source states it (deepspeed/runtime/config.py,
// runtime/zero/config.py, runtime/zero/offload_config.py,
// runtime/precision_config.py, runtime/tensor_parallel/config.py):
//   - every key DeepSpeed reads is known: at DeepSpeed's default it is
//     accepted, and no value of it is ever an "unknown key";
//   - what DeepSpeed accepts and ignores in a context is accepted with a
//     note, and has no effect;
//   - what DeepSpeed implements and zerotrain lacks is "not supported by
//     zerotrain" with what the key does in DeepSpeed;
//   - what DeepSpeed itself refuses is refused saying so, with its reason;
//   - a swapped-word typo gets the right suggestion.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "config/schema.h"
#include "config/test_util.h"

namespace zerotrain::config {
namespace {

using testing::error_at;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::parse;
using ::testing::StartsWith;

std::string all_messages(const ParseResult& r) {
  std::string out;
  for (const auto* list : {&r.errors, &r.warnings})
    for (const ConfigError& e : *list) out += e.to_string() + "\n";
  return out;
}

// {"a": {"b": value}} for path "a.b".
Json nest(std::string_view path, Json value) {
  size_t dot = path.rfind('.');
  if (dot == std::string_view::npos) return Json{{std::string(path), std::move(value)}};
  return nest(path.substr(0, dot), Json{{std::string(path.substr(dot + 1)), std::move(value)}});
}

Json with_batch(Json doc) {
  doc["train_batch_size"] = 8;
  return doc;
}

struct DeepSpeedKey {
  const char* path;
  const char* default_json;  // DeepSpeed's default, as its source gives it
};

// Every field of DeepSpeed's pydantic models and every top-level key its
// DeepSpeedConfig reads (master, 2026), with DeepSpeed's default.
const std::vector<DeepSpeedKey>& deepspeed_keys() {
  static const std::vector<DeepSpeedKey> kKeys = {
      // DeepSpeedZeroConfig (aliases spelled both ways).
      {"zero_optimization.stage", "0"},
      {"zero_optimization.contiguous_gradients", "true"},
      {"zero_optimization.reduce_scatter", "true"},
      {"zero_optimization.reduce_bucket_size", "500000000"},
      {"zero_optimization.use_multi_rank_bucket_allreduce", "true"},
      {"zero_optimization.allgather_partitions", "true"},
      {"zero_optimization.allgather_bucket_size", "500000000"},
      {"zero_optimization.overlap_comm", "null"},
      {"zero_optimization.load_from_fp32_weights", "true"},
      {"zero_optimization.elastic_checkpoint", "false"},
      {"zero_optimization.offload_param", "null"},
      {"zero_optimization.offload_optimizer", "null"},
      {"zero_optimization.zenflow", "null"},
      {"zero_optimization.sub_group_size", "1000000000"},
      {"zero_optimization.cpu_offload_param", "null"},
      {"zero_optimization.cpu_offload_use_pin_memory", "null"},
      {"zero_optimization.cpu_offload", "null"},
      {"zero_optimization.prefetch_bucket_size", "50000000"},
      {"zero_optimization.stage3_prefetch_bucket_size", "50000000"},
      {"zero_optimization.param_persistence_threshold", "100000"},
      {"zero_optimization.stage3_param_persistence_threshold", "100000"},
      {"zero_optimization.model_persistence_threshold", "9223372036854775807"},
      {"zero_optimization.stage3_model_persistence_threshold", "9223372036854775807"},
      {"zero_optimization.max_live_parameters", "1000000000"},
      {"zero_optimization.stage3_max_live_parameters", "1000000000"},
      {"zero_optimization.max_reuse_distance", "1000000000"},
      {"zero_optimization.stage3_max_reuse_distance", "1000000000"},
      {"zero_optimization.gather_16bit_weights_on_model_save", "false"},
      {"zero_optimization.stage3_gather_16bit_weights_on_model_save", "false"},
      {"zero_optimization.module_granularity_threshold", "0"},
      {"zero_optimization.stage3_module_granularity_threshold", "0"},
      {"zero_optimization.use_all_reduce_for_fetch_params", "false"},
      {"zero_optimization.stage3_use_all_reduce_for_fetch_params", "false"},
      {"zero_optimization.allgather_sequential", "false"},
      {"zero_optimization.stage3_allgather_sequential", "false"},
      {"zero_optimization.partition_stream_chunk_size", "0"},
      {"zero_optimization.stage3_partition_stream_chunk_size", "0"},
      {"zero_optimization.stage3_gather_fp16_weights_on_model_save", "false"},
      {"zero_optimization.ignore_unused_parameters", "true"},
      {"zero_optimization.legacy_stage1", "false"},
      {"zero_optimization.round_robin_gradients", "false"},
      {"zero_optimization.zero_hpz_partition_size", "1"},
      {"zero_optimization.zero_quantized_weights", "false"},
      {"zero_optimization.zero_quantized_nontrainable_weights", "false"},
      {"zero_optimization.zero_quantized_gradients", "false"},
      {"zero_optimization.zeropp_loco_param", "null"},
      {"zero_optimization.mics_shard_size", "-1"},
      {"zero_optimization.mics_hierarchical_params_gather", "false"},
      {"zero_optimization.memory_efficient_linear", "true"},
      {"zero_optimization.pipeline_loading_checkpoint", "false"},
      {"zero_optimization.override_module_apply", "true"},
      {"zero_optimization.log_trace_cache_warnings", "false"},
      {"zero_optimization.enable_sanity_checks", "false"},
      {"zero_optimization.save_muon_momentum_buffer_in_memory", "false"},
      {"zero_optimization.leaf_module", "{}"},
      // DeepSpeedZeroOffloadParamConfig, DeepSpeedZeroOffloadOptimizerConfig.
      {"zero_optimization.offload_param.device", "\"none\""},
      {"zero_optimization.offload_param.nvme_path", "null"},
      {"zero_optimization.offload_param.buffer_count", "5"},
      {"zero_optimization.offload_param.buffer_size", "100000000"},
      {"zero_optimization.offload_param.max_in_cpu", "1000000000"},
      {"zero_optimization.offload_param.pin_memory", "false"},
      {"zero_optimization.offload_optimizer.device", "\"none\""},
      {"zero_optimization.offload_optimizer.nvme_path", "null"},
      {"zero_optimization.offload_optimizer.buffer_count", "4"},
      {"zero_optimization.offload_optimizer.pin_memory", "false"},
      {"zero_optimization.offload_optimizer.pipeline_read", "false"},
      {"zero_optimization.offload_optimizer.pipeline_write", "false"},
      {"zero_optimization.offload_optimizer.fast_init", "false"},
      {"zero_optimization.offload_optimizer.ratio", "1.0"},
      {"zero_optimization.offload_optimizer.super_offload", "false"},
      {"zero_optimization.offload_optimizer.convert_grad_on_cpu", "true"},
      {"zero_optimization.offload_optimizer.cpuadam_cores_perc", "0.8"},
      // DeepSpeedFP16Config, DeepSpeedBF16Config.
      {"fp16.enabled", "false"},
      {"fp16.auto_cast", "false"},
      {"fp16.loss_scale", "0"},
      {"fp16.initial_scale_power", "16"},
      {"fp16.loss_scale_window", "1000"},
      {"fp16.hysteresis", "2"},
      {"fp16.consecutive_hysteresis", "false"},
      {"fp16.min_loss_scale", "1"},
      {"fp16.fp16_master_weights_and_grads", "false"},
      {"bf16.enabled", "false"},
      {"bf16.immediate_grad_update", "false"},
      {"bf16.check_grad_overflow", "false"},
      {"bf16.bf16_master_weights_and_grads", "false"},
      {"bf16.bf16_optimizer_states", "false"},
      // TPTrainingConfig, TPConfig.
      {"tensor_parallel.autotp_size", "0"},
      {"tensor_parallel.tp_overlap_comm", "false"},
      {"tensor_parallel.tp", "{}"},
      {"tensor_parallel.tensor_parallel", "{}"},
      {"tensor_parallel.tp.tp_size", "1"},
      {"tensor_parallel.tp.tp_grain_size", "1"},
      {"tensor_parallel.injection_policy_tuple", "null"},
      {"tensor_parallel.partition_config", "null"},
      {"tensor_parallel.preset_model", "null"},
      {"tensor_parallel.keep_module_on_host", "false"},
      {"tensor_parallel.replace_with_kernel_inject", "false"},
      {"tensor_parallel.kernel_inject", "false"},
      // DeepSpeedConfig._initialize_params, top level and dict.get sections.
      {"gradient_accumulation_steps", "1"},
      {"managed_gradient_accumulation", "true"},
      {"steps_per_print", "null"},
      {"dump_state", "false"},
      {"disable_allgather", "false"},
      {"communication_data_type", "null"},
      {"seq_parallel_communication_data_type", "\"fp32\""},
      {"prescale_gradients", "false"},
      {"gradient_predivide_factor", "1.0"},
      {"gradient_allreduce_op", "\"mean\""},
      {"sparse_gradients", "false"},
      {"gradient_clipping", "1.0"},
      {"graph_harvesting", "false"},
      {"zero_allow_untested_optimizer", "false"},
      {"zero_force_ds_cpu_optimizer", "true"},
      {"wall_clock_breakdown", "false"},
      {"memory_breakdown", "false"},
      {"use_data_before_expert_parallel_", "false"},
      {"dataloader_drop_last", "false"},
      {"log_level", "null"},
      {"sequence_parallel_size", "1"},
      {"vocabulary_size", "null"},
      {"checkpoint.tag_validation", "\"Warn\""},
      {"checkpoint.load_universal", "false"},
      {"checkpoint.use_node_local_storage", "false"},
      {"checkpoint.serialization", "true"},
      {"checkpoint.writer", "null"},
      {"data_types.grad_accum_dtype", "null"},
      {"data_types.param_dtype", "null"},
      {"data_types.buffer_dtype", "null"},
      {"aio.block_size", "1048576"},
      {"aio.queue_depth", "8"},
      {"aio.intra_op_parallelism", "1"},
      {"aio.single_submit", "false"},
      {"aio.overlap_events", "true"},
      {"aio.use_gds", "false"},
      // DeepSpeedActivationCheckpointingConfig, DeepSpeedCommsConfig,
      // DeepSpeedFlopsProfilerConfig, the timers.
      {"activation_checkpointing.partition_activations", "false"},
      {"activation_checkpointing.contiguous_memory_optimization", "false"},
      {"activation_checkpointing.cpu_checkpointing", "false"},
      {"activation_checkpointing.number_checkpoints", "null"},
      {"activation_checkpointing.synchronize_checkpoint_boundary", "false"},
      {"activation_checkpointing.profile", "false"},
      {"comms_logger.verbose", "false"},
      {"comms_logger.prof_all", "true"},
      {"comms_logger.prof_ops", "[]"},
      {"comms_logger.debug", "false"},
      {"flops_profiler.recompute_fwd_factor", "0.0"},
      {"flops_profiler.profile_step", "1"},
      {"flops_profiler.module_depth", "-1"},
      {"flops_profiler.top_modules", "1"},
      {"flops_profiler.detailed", "true"},
      {"flops_profiler.output_file", "null"},
      {"timers.throughput.enabled", "true"},
      {"timers.throughput.synchronized", "true"},
      // Sections off by their switch, or empty.
      {"amp", "{\"enabled\": false}"},
      {"torch_autocast", "{\"enabled\": false}"},
      {"hybrid_engine", "{\"enabled\": false}"},
      {"curriculum_learning", "{\"enabled\": false}"},
      {"data_efficiency", "{\"enabled\": false}"},
      {"elasticity", "{\"enabled\": false}"},
      {"autotuning", "{\"enabled\": false}"},
      {"nebula", "{\"enabled\": false}"},
      {"eigenvalue", "{\"enabled\": false}"},
      {"progressive_layer_drop", "{\"enabled\": false}"},
      {"flops_profiler", "{\"enabled\": false}"},
      {"comms_logger", "{\"enabled\": false}"},
      {"tensorboard", "{\"enabled\": false}"},
      {"csv_monitor", "{\"enabled\": false}"},
      {"wandb", "{\"enabled\": false}"},
      {"comet", "{\"enabled\": false}"},
      {"expert_parallel", "{\"enabled\": false}"},
      {"compile", "{\"deepcompile\": false}"},
      {"pipeline", "{}"},
      {"sparse_attention", "{}"},
      {"compression_training", "{}"},
      {"weight_quantization", "{}"},
  };
  return kKeys;
}

TEST(ConfigHonesty, EveryKeyDeepSpeedReadsIsKnownAndAcceptedAtItsDefault) {
  for (const DeepSpeedKey& k : deepspeed_keys()) {
    SCOPED_TRACE(k.path);
    ParseResult r = parse(with_batch(nest(k.path, Json::parse(k.default_json))).dump());
    EXPECT_TRUE(r.config.has_value()) << r.status().to_string();
    EXPECT_THAT(all_messages(r), Not(HasSubstr("unknown key"))) << all_messages(r);
  }
}

// A value other than the default never reads as an unknown key either: the
// key is implemented, ignored with a note, or refused by name.
TEST(ConfigHonesty, NoValueOfADeepSpeedKeyIsAnUnknownKey) {
  for (const DeepSpeedKey& k : deepspeed_keys()) {
    SCOPED_TRACE(k.path);
    Json d = Json::parse(k.default_json);
    Json other = d.is_boolean()  ? Json(!d.get<bool>())
                 : d.is_number() ? Json(d.get<double>() == 1.0 ? 0.5 : 2.0)
                 : d.is_null()   ? Json(true)
                                 : Json("x");
    ParseResult r = parse(with_batch(nest(k.path, other)).dump());
    EXPECT_THAT(all_messages(r), Not(HasSubstr("unknown key"))) << all_messages(r);
  }
}

// A value of the right type other than the key's default (and other than a
// second "off" value).
Json non_default(const KeySpec& k) {
  const Json d = default_value(k);
  switch (k.type) {
    case ValueType::kBool:
      return d.is_boolean() ? Json(!d.get<bool>()) : Json(true);
    case ValueType::kInt: {
      int64_t v = d.is_number() ? d.get<int64_t>() + 2 : 2;
      return k.max && v > *k.max ? Json(static_cast<int64_t>(*k.max) - 1) : Json(v);
    }
    case ValueType::kFloat:
      return Json(d.is_number() ? d.get<double>() / 2 : 0.5);
    case ValueType::kString: {
      std::string_view c = k.choices.substr(0, k.choices.find('|'));
      return c.empty() ? Json("x") : Json(std::string(c));
    }
    case ValueType::kOpaque:
      return k.gate.empty() ? Json{{"x", 1}} : Json{{std::string(k.gate), true}};
    default:
      return Json();
  }
}

TEST(ConfigHonesty, EachLackingDeepSpeedOptionIsNotSupportedWithItsDeepSpeedMeaning) {
  int checked = 0;
  for (const KeySpec& k : schema()) {
    if (k.support != Support::kUnsupported || k.rule_checked || k.type == ValueType::kSection)
      continue;
    SCOPED_TRACE(std::string(k.path));
    Json doc = with_batch(nest(k.path, non_default(k)));
    if (k.path.starts_with("optimizer.")) doc["optimizer"]["type"] = "AdamW";
    ParseResult r = parse(doc.dump());
    ASSERT_FALSE(r.config.has_value()) << k.path << " = " << non_default(k).dump();
    const std::string msg = error_at(r, k.path);
    EXPECT_THAT(msg, StartsWith("'" + std::string(leaf_name(k.path)) +
                                "' is not supported by zerotrain (DeepSpeed: "));
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST(ConfigHonesty, ParallelismIsRefusedRatherThanTrainedWithout) {
  // LLaMA-Factory's examples/deepspeed/ds_z2_autotp_config.json as it ships.
  const char* autotp = R"({
    "_comment": "suooprted model list: https://www.deepspeed.ai/tutorials/automatic-tensor-parallelism/#supported-models",
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
    "zero_allow_untested_optimizer": true,
    "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000,
             "initial_scale_power": 16, "hysteresis": 2, "min_loss_scale": 1},
    "bf16": {"enabled": "auto"},
    "zero_optimization": {"stage": 2, "allgather_partitions": true, "allgather_bucket_size": 5e8,
      "overlap_comm": false, "reduce_scatter": true, "reduce_bucket_size": 5e8,
      "contiguous_gradients": true, "round_robin_gradients": true},
    "tensor_parallel": {"autotp_size": 2}})";
  ParseResult tp = parse(autotp, testing::full_args());
  ASSERT_EQ(tp.errors.size(), 1u) << tp.status().to_string();
  EXPECT_THAT(error_at(tp, "tensor_parallel.autotp_size"),
              HasSubstr("'autotp_size' is not supported by zerotrain (DeepSpeed: AutoTP tensor "
                        "parallelism"));
  EXPECT_THAT(error_at(tp, "tensor_parallel.autotp_size"),
              HasSubstr("does not train without it silently"));
  // Off (0 or 1) is accepted, its other keys with it.
  for (const char* off : {"0", "1"})
    testing::parse_ok(
        std::string(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": )") + off +
        R"(, "tp_overlap_comm": true, "preset_model": "llama"}})");
  ParseResult typo = parse(R"({"train_batch_size": 8, "tensor_parallel": {"autotp_sise": 2}})");
  EXPECT_THAT(error_at(typo, "tensor_parallel.autotp_sise"),
              HasSubstr("did you mean 'autotp_size'?"));
  ParseResult sp = parse(R"({"train_batch_size": 8, "sequence_parallel_size": 4})");
  EXPECT_THAT(error_at(sp, "sequence_parallel_size"),
              HasSubstr("'sequence_parallel_size' is not supported by zerotrain (DeepSpeed: "
                        "Ulysses sequence parallelism"));
  testing::parse_ok(R"({"train_batch_size": 8, "sequence_parallel_size": 1})");
}

TEST(ConfigHonesty, WhatDeepSpeedIgnoresInContextIsAcceptedWithANoteAndNoEffect) {
  // DeepSpeed passes offload_param only to its stage-3 optimizer.
  ParseResult op = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2,
      "offload_param": {"device": "cpu", "pin_memory": true}}})");
  ASSERT_TRUE(op.config) << op.status().to_string();
  EXPECT_FALSE(op.config->zero.offload_param.enabled());
  EXPECT_THAT(all_messages(op), HasSubstr("zero_optimization.offload_param.device: ignored at "
                                          "zero_optimization.stage 2: DeepSpeed reads "
                                          "offload_param only at stage 3"));
  // At stage 3 it is the real thing.
  Config s3 = testing::parse_ok(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3,
      "offload_param": {"device": "cpu"}}})");
  EXPECT_TRUE(s3.zero.offload_param.enabled());
  // legacy_stage1 is read only where DeepSpeed builds a ZeRO optimizer.
  ParseResult ls = parse(R"({"train_batch_size": 8, "zero_optimization": {"stage": 0,
      "legacy_stage1": true}})");
  ASSERT_TRUE(ls.config) << ls.status().to_string();
  EXPECT_THAT(all_messages(ls), HasSubstr("legacy_stage1: ignored at zero_optimization.stage 0"));
  // Legacy top-level switches DeepSpeed parses and no longer acts on, and
  // ones that change only how it prints or communicates.
  ParseResult legacy = parse(R"({"train_batch_size": 8, "disable_allgather": true,
      "dump_state": true, "sparse_gradients": true})");
  ASSERT_TRUE(legacy.config) << legacy.status().to_string();
  EXPECT_THAT(all_messages(legacy),
              HasSubstr("disable_allgather: ignored: a legacy ZeRO-1 switch"));
  EXPECT_EQ(legacy.warnings.size(), 3u) << all_messages(legacy);
  // fp16 keys in a bf16 section, stage-3 keys below stage 3.
  ParseResult mixed = parse(R"({"train_batch_size": 8, "bf16": {"enabled": true,
      "loss_scale": 0}, "zero_optimization": {"stage": 1, "stage3_max_live_parameters": 5}})");
  ASSERT_TRUE(mixed.config) << mixed.status().to_string();
  EXPECT_EQ(mixed.warnings.size(), 2u) << all_messages(mixed);
}

TEST(ConfigHonesty, WhatDeepSpeedRefusesIsRefusedSayingSo) {
  struct Case {
    const char* text;
    const char* path;
    const char* reason;
  };
  const Case cases[] = {
      {R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",
          "ratio": 0.3}}})",
       "zero_optimization.offload_optimizer.ratio", "only supported at stage 3"},
      {R"({"zero_optimization": {"stage": 1, "legacy_stage1": true}})",
       "zero_optimization.legacy_stage1", "removed in 0.5.9"},
      {R"({"fp16": {"enabled": true, "fp16_master_weights_and_grads": true}})",
       "fp16.fp16_master_weights_and_grads", "only supported with ZeRO stage 1, 2 or 3"},
      {R"({"fp16": {"enabled": true, "fp16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2}})",
       "fp16.fp16_master_weights_and_grads", "needs ZeRO-Offload"},
      {R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true}})",
       "bf16.bf16_master_weights_and_grads", "only supported with ZeRO stage 1, 2 or 3"},
      {R"({"bf16": {"enabled": true, "bf16_optimizer_states": true},
          "zero_optimization": {"stage": 2}})",
       "bf16.bf16_optimizer_states", "requires bf16_master_weights_and_grads"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Json doc = with_batch(Json::parse(c.text));
    ParseResult r = parse(doc.dump());
    const std::string msg = error_at(r, c.path);
    EXPECT_THAT(msg, StartsWith("DeepSpeed refuses this too: "));
    EXPECT_THAT(msg, HasSubstr(c.reason));
  }
}

// Where DeepSpeed accepts the 16-bit master options, zerotrain refuses them:
// it keeps fp32 masters and would train with other numerics.
TEST(ConfigHonesty, NumericsChangingOptionsDeepSpeedAcceptsAreRefusedWithTheReason) {
  const char* cases[][2] = {
      {R"({"fp16": {"enabled": true, "fp16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})",
       "fp16.fp16_master_weights_and_grads"},
      {R"({"fp16": {"enabled": true, "fp16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 3}})",
       "fp16.fp16_master_weights_and_grads"},
      {R"({"bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 1}})",
       "bf16.bf16_master_weights_and_grads"},
      {R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu",
          "ratio": 0.3}}})",
       "zero_optimization.offload_optimizer.ratio"},
  };
  for (const auto& [text, path] : cases) {
    SCOPED_TRACE(text);
    ParseResult r = parse(with_batch(Json::parse(text)).dump());
    const std::string msg = error_at(r, path);
    EXPECT_THAT(msg, HasSubstr("is not supported by zerotrain (DeepSpeed: "));
    EXPECT_THAT(msg, Not(HasSubstr("DeepSpeed refuses")));
  }
}

TEST(ConfigHonesty, SwappedWordsGetTheRightSuggestion) {
  const char* cases[][3] = {
      {"zero_optimization", "comm_overlap", "overlap_comm"},
      {"zero_optimization", "bucket_size_reduce", "reduce_bucket_size"},
      {"zero_optimization", "persistence_threshold_param", "param_persistence_threshold"},
      {"zero_optimization.offload_optimizer", "memory_pin", "pin_memory"},
      {"", "size_batch_train", "train_batch_size"},
  };
  for (const auto& [section, key, right] : cases) {
    SCOPED_TRACE(key);
    std::string path = section[0] ? std::string(section) + "." + key : std::string(key);
    ParseResult r = parse(with_batch(nest(path, 1)).dump());
    EXPECT_THAT(error_at(r, path), HasSubstr("did you mean '" + std::string(right) + "'?"));
  }
}

}  // namespace
}  // namespace zerotrain::config

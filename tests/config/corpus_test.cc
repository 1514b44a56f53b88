// Real-world ds_configs (../shared/reference/ds-configs/: files from public
// projects, see SOURCES.md there) under the arguments `zerotrain train`
// gives with no flag but the world size: each is accepted, or refused at
// exactly the paths stated here, for the reason stated here (a real typo
// with its suggestion, invalid JSON, a named DeepSpeed feature zerotrain
// lacks). A new file in the corpus fails the test until its outcome is
// stated.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/default_config.h"

namespace zerotrain::config {
namespace {

struct Refusal {
  std::string path;    // as reported
  std::string reason;  // a substring of its message
};

// File name -> the refusals expected (none: accepted).
const std::map<std::string, std::vector<Refusal>>& expected() {
  static const std::map<std::string, std::vector<Refusal>> kExpected = {
      // Accepted.
      {"LLaVA-VL__LLaVA-NeXT__scripts__zero2_fused_adamw.json", {}},
      {"OpenRLHF__OpenRLHF__openrlhf__configs__ddpo_ds_config.json", {}},
      {"allenai__open-instruct__configs__ds_configs__stage2_clip1_accelerate.conf.json", {}},
      {"allenai__open-instruct__configs__ds_configs__stage3_offloading_accelerate.conf.json", {}},
      {"artidoro__qlora__deepspeed_config.json", {}},
      {"axolotl-ai-cloud__axolotl__deepspeed_configs__zero1_torch_compile.json", {}},
      {"axolotl-ai-cloud__axolotl__deepspeed_configs__zero3.json", {}},
      {"axolotl-ai-cloud__axolotl__deepspeed_configs__zero3_bf16_cpuoffload_all.json", {}},
      {"axolotl-ai-cloud__axolotl__deepspeed_configs__zero3_cpuoffload.json", {}},
      {"bigscience-workshop__Megatron-DeepSpeed__tests__ds_config_bf16.json", {}},
      {"haotian-liu__LLaVA__scripts__zero2.json", {}},
      {"haotian-liu__LLaVA__scripts__zero3_offload.json", {}},
      {"hiyouga__LLaMA-Factory__examples__deepspeed__ds_z1_config_gaudi.json", {}},
      {"hiyouga__LLaMA-Factory__examples__deepspeed__ds_z2_config.json", {}},
      {"hiyouga__LLaMA-Factory__examples__deepspeed__ds_z3_partial_offload_config.json", {}},
      {"huggingface__accelerate__examples__deepspeed_config_templates__zero_stage1_config.json",
       {}},
      {"huggingface__accelerate__examples__deepspeed_config_templates__zero_stage3_offload_config."
       "json",
       {}},
      {"huggingface__transformers__tests__deepspeed__ds_config_zero2.json", {}},
      {"huggingface__transformers__tests__deepspeed__ds_config_zero3.json", {}},
      {"lm-sys__FastChat__playground__deepspeed_config_s2.json", {}},
      {"microsoft__DeepSpeedExamples__bing_bert__deepspeed_bsz4k_progressive_layer_drop_config_"
       "seq128.json",
       {}},
      {"microsoft__DeepSpeedExamples__training__imagenet__config__ds_fp16_z1_config.json", {}},
      {"microsoft__DeepSpeed__deepspeed__autotuning__config_templates__template_zero3.json", {}},
      {"microsoft__DeepSpeed__tests__model__Megatron_GPT2__ds_config_func_scheduler.json", {}},
      {"microsoft__DeepSpeed__tests__torch_compile__ds_config.json", {}},
      {"microsoft__Megatron-DeepSpeed__examples__MoE__ds_config_gpt3-0.125B-tokendropping-"
       "graduallyIncrease-lr-3.0e-4.json",
       {}},
      {"tatsu-lab__stanford_alpaca__configs__default_offload_opt_param.json", {}},
      // Node-local checkpoint storage (zerotrain needs a directory all ranks share).
      {"catid__lllm__deepspeed_config.json",
       {{"checkpoint.use_node_local_storage",
         "'use_node_local_storage' is not supported by zerotrain"}}},
      // Ulysses sequence parallelism.
      {"hiyouga__LLaMA-Factory__examples__deepspeed__ds_z3_alst_config.json",
       {{"sequence_parallel",
         "'sequence_parallel' is not supported by zerotrain"}}},
      // fp8 training.
      {"hiyouga__LLaMA-Factory__examples__deepspeed__ds_z3_fp8_config.json",
       {{"fp8", "'fp8' is not supported by zerotrain"}}},
      // ZeRO++ quantized gradients.
      {"hiyouga__LLaMA-Factory__examples__deepspeed__hparam_sweep__ds_z3_e9_quant_grads.json",
       {{"zero_optimization.zero_quantized_gradients",
         "'zero_quantized_gradients' is not supported by zerotrain"}}},
      // A template: a script substitutes its CONFIG_CL_MIN placeholders before use.
      {"microsoft__DeepSpeedExamples__Megatron-LM-v1.1.5-ZeRO3__curriculum_learning__ds_zero_stage_"
       "2_config_curriculum_fixed_linear.json",
       {{"", "JSON syntax error at line 34"}}},
      // A real typo (DeepSpeed's pydantic model refuses it too) and NVMe offload.
      {"microsoft__DeepSpeedExamples__Megatron-LM-v1.1.5-ZeRO3__examples__ds_zero_stage_infinity_"
       "config.json",
       {{"zero_optimization.stage3_param_persitance_threshold",
         "did you mean 'stage3_param_persistence_threshold'?"},
        {"zero_optimization.offload_optimizer.device",
         "'nvme' is a DeepSpeed choice not supported by zerotrain"},
        {"zero_optimization.offload_optimizer.nvme_path",
         "'nvme_path' is not supported by zerotrain"},
        {"zero_optimization.offload_param.device",
         "'nvme' is a DeepSpeed choice not supported by zerotrain"},
        {"zero_optimization.offload_param.nvme_path",
         "'nvme_path' is not supported by zerotrain"}}},
      // MoQ quantized training.
      {"microsoft__DeepSpeedExamples__MoQ__test.json",
       {{"quantize_training",
         "'quantize_training' is not supported by zerotrain"}}},
      // The autotuner.
      {"microsoft__DeepSpeedExamples__autotuning__hf__dsconfigs__ds_config_tune.json",
       {{"autotuning", "'autotuning' is not supported by zerotrain"}}},
      // Compression training.
      {"microsoft__DeepSpeedExamples__compression__gpt2__config__ds_config_W8A8_Qgroup64_fp16.json",
       {{"compression_training",
         "'compression_training' is not supported by zerotrain"}}},
      // The 1-bit LAMB optimizer (its params are not checked against Adam's).
      {"microsoft__DeepSpeedExamples__training__bing_bert__1-bit_lamb__nccl__deepspeed_bsz64k_"
       "onebitlamb_config_seq128_nccl.json",
       {{"optimizer.type", "'OneBitLamb' is a DeepSpeed choice not supported by zerotrain"}}},
      // The eigenvalue monitor (its tensorboard section is accepted).
      {"microsoft__DeepSpeed__tests__model__BingBertSquad__deepspeed_bsz24_fp16_eigenvalue_"
       "quantize_config.json",
       {{"eigenvalue", "'eigenvalue' is not supported by zerotrain"}}},
  };
  return kExpected;
}

std::string corpus_dir() {
  if (const char* env = std::getenv("ZEROTRAIN_DS_CONFIG_CORPUS")) return env;
  return std::string(ZT_SOURCE_DIR) + "/../shared/reference/ds-configs";
}

// The arguments `zerotrain train --deepspeed FILE` gives on gpt2-tiny at 2
// ranks: none from flags, every default.
TrainerArgs given_by_train() {
  TrainerArgs a;
  a.world_size = 2;
  return a;
}

TEST(DsConfigCorpus, EachFileIsAcceptedOrRefusedForItsStatedReason) {
  const std::string dir = corpus_dir();
  if (!std::filesystem::is_directory(dir))
    GTEST_SKIP() << "the ds_config corpus is not on this machine (" << dir
                 << "; set ZEROTRAIN_DS_CONFIG_CORPUS): it lives beside the repository, not in it";
  const TrainerArgs defaults = train::default_trainer_args(train::DefaultTrainerArgs::kSteps, 64);
  int files = 0, accepted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const ParseResult r = parse_config_detailed(text, given_by_train(), defaults);
    auto it = expected().find(name);
    if (it == expected().end()) {
      ADD_FAILURE() << "no stated outcome for this file; it gives:\n" << r.status().to_string();
      continue;
    }
    if (it->second.empty()) {
      EXPECT_TRUE(r.config.has_value()) << r.status().to_string();
      accepted += r.config.has_value();
      continue;
    }
    std::vector<std::string> got, want;
    for (const ConfigError& e : r.errors) got.push_back(e.path);
    for (const Refusal& f : it->second) want.push_back(f.path);
    EXPECT_EQ(got, want) << r.status().to_string();
    for (const Refusal& f : it->second)
      for (const ConfigError& e : r.errors)
        if (e.path == f.path)
          EXPECT_NE(e.message.find(f.reason), std::string::npos)
              << f.path << ": '" << e.message << "' does not say '" << f.reason << "'";
  }
  EXPECT_EQ(files, static_cast<int>(expected().size())) << "a stated file is missing from " << dir;
  std::printf("[corpus] %d files, %d accepted\n", files, accepted);
}

}  // namespace
}  // namespace zerotrain::config

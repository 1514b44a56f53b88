# The two commands: `make run` (install, build, run the main job) and
# `make test` (install, build, run every test). See README.md.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
# Unity builds (CMake batches of 16 sources): a clean build compiles each
# header (nlohmann/json, gtest) once per batch instead of once per file,
# which keeps `make test` (two full builds) inside CI's budget on 2 cores.
# UNITY=OFF for a developer tree where one edited file should rebuild alone.
UNITY ?= ON

.PHONY: all deps configure build run test bench bench-zero bench-peer bench-llama bench-generate bench-lora bench-tokenizer clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_UNITY_BUILD=$(UNITY) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	@scripts/run-default.sh $(BUILD)

# Release suite, then unit + reliability under ASan/UBSan (scripts/test.sh;
# SANITIZE=0 skips the sanitizer pass).
test: build
	@scripts/test.sh $(BUILD) $(JOBS)

# Benchmarks (not tests): peak probes, kernels, AdamW, Gloo collectives;
# writes bench/RESULTS.md.
bench: build
	@scripts/bench.sh $(BUILD)

# Only the ZeRO bench (stages x offload x overlap_comm at 2 ranks, ~3 min):
# replaces its section of bench/RESULTS.md.
bench-zero: build
	@scripts/bench_zero.sh $(BUILD)

# zerotrain against PyTorch (issue #6): installs Debian's python3-torch if
# missing (bench/peer/install.sh), runs bench/compare (~15 min; QUICK=1 for
# --quick), writes its section of bench/RESULTS.md.
bench-peer: build
	@bench/compare --build $(BUILD) $(if $(QUICK),--quick)

# The Llama family against the PyTorch reference (issue #19): llama-tiny and
# smollm-135m, tokens/s, MFU, activation checkpointing's time and memory
# (~3 min); writes its section of bench/RESULTS.md.
bench-llama: build
	@bench/llama_compare --build $(BUILD)

# KV-cached greedy generation against a PyTorch KV-cache loop (issue #35):
# llama-tiny and smollm-135m at batch 1 and 8, tokens/s (~1 min); writes its
# section of bench/RESULTS.md.
bench-generate: build
	@bench/generate_compare --build $(BUILD)

# Full fine-tuning vs LoRA vs QLoRA (issue #33): smollm-135m all three,
# tinyllama-1.1b LoRA and QLoRA (its full fine-tuning needs 17 GiB of
# states); tokens/s, peak RSS, model-state bytes (~2 min).
bench-lora: build
	@bench/lora_compare --build $(BUILD) --model smollm-135m --model tinyllama-1.1b \
	    --no-full tinyllama-1.1b --steps 5

# zerotrain's tokenizer against npm's reference encoders, MB/s.
bench-tokenizer: build
	@bench/tokenizer_compare --build $(BUILD)

clean:
	rm -rf $(BUILD)

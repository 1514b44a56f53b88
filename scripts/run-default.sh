#!/usr/bin/env bash
# The main job of `make run`: validate every bundled example config (as
# `zerotrain config check` would for a user), then train gpt2-tiny with the
# built-in trainer: 2 workers through `zerotrain run`, rendezvous over the
# authenticated TCP store, gradients all-reduced over Gloo.
set -euo pipefail
build=${1:-build}
bin="$build/bin/zerotrain"

# Trainer arguments that the examples' "auto" values resolve from, as the
# Hugging Face integration resolves them from TrainingArguments.
trainer_args=(--world-size 2 --lr 3e-4 --betas 0.9 0.999 --eps 1e-8 --weight-decay 0.01 --warmup-steps 100
              --total-steps 1000 --micro-batch 8 --grad-accum 1 --max-grad-norm 1.0
              --hidden-size 256)

echo "== zerotrain config check (examples/*.json, world size 2)"
# A config without "auto" is checked as written: trainer arguments that
# disagree with explicit values are errors, as in the HF integration.
for f in examples/*.json; do
  if grep -q '"auto"' "$f"; then args=("${trainer_args[@]}"); else args=(--world-size 2); fi
  "$bin" config check "${args[@]}" "$f" >/dev/null
  echo "   ok  $f"
done
echo "== effective config of examples/ds_config_zero3.json"
"$bin" config check "${trainer_args[@]}" examples/ds_config_zero3.json

# The built-in trainer with its embedded ds_config (fp32, AdamW, WarmupLR,
# ZeRO stage 0): gpt2-tiny on the generated corpus, 2 data-parallel ranks,
# saving a checkpoint at the end.
ckpt=$(mktemp -d "${TMPDIR:-/tmp}/zerotrain-run.XXXXXX")
trap 'rm -rf "$ckpt"' EXIT
echo "== zerotrain run --num_gpus 2 -- zerotrain train --save CKPT (embedded default config)"
"$bin" run --num_gpus 2 -- "$bin" train --save "$ckpt"

# What it learned: a sample from the checkpoint (KV-cached, byte tokens),
# within the 64 positions it was trained on.
echo "== zerotrain generate --model CKPT --prompt \"the \" (temperature 0.7, top-k 20, seed 1)"
"$bin" generate --model "$ckpt" --prompt "the " --max-new-tokens 60 --temperature 0.7 \
  --top-k 20 --seed 1

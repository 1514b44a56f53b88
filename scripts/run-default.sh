#!/usr/bin/env bash
# The main job of `make run` until the built-in trainer lands: validate every
# bundled example config (as `zerotrain config check` would for a user), then
# launch a 2-worker job through `zerotrain run` whose workers rendezvous over
# the authenticated TCP store and check Gloo collectives end to end.
set -euo pipefail
build=${1:-build}
bin="$build/bin/zerotrain"

# Trainer arguments that the examples' "auto" values resolve from, as the
# Hugging Face integration resolves them from TrainingArguments.
trainer_args=(--world-size 2 --lr 3e-4 --betas 0.9 0.999 --eps 1e-8 --weight-decay 0.01 --warmup-steps 100
              --total-steps 1000 --micro-batch 8 --grad-accum 1 --max-grad-norm 1.0
              --hidden-size 256)

echo "== zerotrain config check (examples/*.json, world size 2)"
for f in examples/*.json; do
  "$bin" config check "${trainer_args[@]}" "$f" >/dev/null
  echo "   ok  $f"
done
echo "== effective config of examples/ds_config_zero3.json"
"$bin" config check "${trainer_args[@]}" examples/ds_config_zero3.json

echo "== zerotrain run --num_gpus 2 -- zt_collective_worker (Gloo over TCP, 2 processes)"
"$bin" run --num_gpus 2 -- "$build/bin/zt_collective_worker"

#!/usr/bin/env bash
# Runs two zerotrain binaries side by side on the same configs and checks
# that every step's metrics (loss, grad norm, lr, loss scale, skips) are
# bit-identical: ZeRO stages 0-3, offload off/on (optimizer; + param at
# stage 3), fp32/bf16/fp16, 1, 2 and 4 ranks, overlap_comm alternating.
# Used to show a refactor changed no behaviour (issue #18).
#   scripts/compare_builds.sh OLD_BIN NEW_BIN [--quick]   # --quick: 1 and 2 ranks
# Exit status: 0 when every config matches, 1 otherwise.
set -uo pipefail
old=${1:?old binary}; new=${2:?new binary}; quick=${3:-}
work=$(mktemp -d /tmp/zt-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
steps=${STEPS:-12}
ranks_list="1 2 4"; [ "$quick" = --quick ] && ranks_list="1 2"
pass=0; fail=0; n=0

config() {  # stage dtype offload overlap
  local stage=$1 dtype=$2 offload=$3 overlap=$4 off=""
  if [ "$offload" = 1 ]; then
    off=', "offload_optimizer": {"device": "cpu", "pin_memory": true}'
    [ "$stage" = 3 ] && off="$off"', "offload_param": {"device": "cpu"}'
  fi
  local s3=""
  [ "$stage" = 3 ] && s3=', "stage3_param_persistence_threshold": 200, "stage3_prefetch_bucket_size": 40000, "stage3_max_reuse_distance": 0'
  cat <<JSON
{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
 "steps_per_print": 1000,
 "bf16": {"enabled": $([ "$dtype" = bf16 ] && echo true || echo false)},
 "fp16": {"enabled": $([ "$dtype" = fp16 ] && echo true || echo false), "initial_scale_power": 12},
 "optimizer": {"type": "AdamW", "params": {"lr": 0.002, "weight_decay": 0.01}},
 "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 4}},
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 60000, "allgather_bucket_size": 90000,
   "overlap_comm": $([ "$overlap" = 1 ] && echo true || echo false)$off$s3}}
JSON
}

run() {  # bin ranks cfg out
  "$1" run --num_gpus "$2" -- "$1" train --deepspeed "$3" --steps "$steps" --metrics "$4" \
    --eval-interval 0 >"$4.log" 2>&1
}

for ranks in $ranks_list; do
  for stage in 0 1 2 3; do
    for dtype in fp32 bf16 fp16; do
      for offload in 0 1; do
        [ "$stage" = 0 ] && [ "$offload" = 1 ] && continue
        overlap=$(( (n + stage) % 2 )); n=$((n + 1))
        name="r${ranks}_s${stage}_${dtype}_off${offload}_ov${overlap}"
        config "$stage" "$dtype" "$offload" "$overlap" >"$work/$name.json"
        run "$old" "$ranks" "$work/$name.json" "$work/$name.old" || { echo "FAIL $name: old binary failed"; tail -3 "$work/$name.old.log"; fail=$((fail+1)); continue; }
        run "$new" "$ranks" "$work/$name.json" "$work/$name.new" || { echo "FAIL $name: new binary failed"; tail -3 "$work/$name.new.log"; fail=$((fail+1)); continue; }
        # Everything but wall-clock fields must match byte for byte.
        strip() { sed -E 's/"(tokens_per_s|step_ms|rss_mib|time_s|elapsed_s)":[^,}]*,?//g' "$1"; }
        if cmp -s <(strip "$work/$name.old") <(strip "$work/$name.new") && [ -s "$work/$name.old" ]; then
          pass=$((pass+1)); echo "ok   $name ($(wc -l <"$work/$name.old") steps, last $(tail -1 "$work/$name.new" | grep -o '"loss":[^,]*'))"
        else
          fail=$((fail+1)); echo "FAIL $name"; diff <(strip "$work/$name.old") <(strip "$work/$name.new") | head -4
        fi
      done
    done
  done
done
echo "compare_builds: $pass configs bit-identical, $fail differ or failed"
[ "$fail" = 0 ]

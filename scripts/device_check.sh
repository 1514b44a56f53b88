#!/usr/bin/env bash
# The GPU check of the CUDA backend (issue #20), one command on a machine
# with one H100/H200 (about 6 minutes): unpack the bundle that
# scripts/device_bundle.sh made on a build machine, then
#   1. env: GPU, driver, torch, where the CUDA wheels are;
#   2. correctness: the smoke test, every op against the CPU op
#      (ops_conformance_test), ZeRO stages 0-3 on the GPU against the CPU at
#      1 rank and 2 ranks sharing the GPU, a capped capacity with offload,
#      the staged/NCCL communicator tests; gtest JSON;
#   3. compute-sanitizer memcheck on the CUDA op cases;
#   4. GPT-2 124M bf16: the first steps' losses on the GPU against the CPU's;
#   5. throughput: the cuBLASLt bf16 GEMM ceiling, then zerotrain GPT-2 124M
#      bf16 B=16 T=1024 tokens/s, and the PyTorch peer on the same model,
#      batch and precision; while the bench runs, `zerotrain gpus` must
#      list the GPU nvidia-smi lists and `zerotrain holders` the bench;
#   6. the summary table (MFU against 989 TFLOP/s and the measured GEMM
#      ceiling, the ratio to PyTorch), last.
# Results go to $OUT (default gpu-out/, at most 8 files). Each step has its
# own timeout; a failing step is reported and the next one still runs.
#   scripts/device_bundle.sh                       # on the build machine
#   scripts/device_check.sh                        # there (carry .gpu-bundle.tar.xz)
#   ZT_DEVICE_CHECK_NO_GPU=1 PYTHON=/usr/bin/python3 scripts/device_check.sh   # dry run, CPU only
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
T0=$SECONDS
say() { printf '[%3ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$OUT/summary.txt"; }
no_gpu=${ZT_DEVICE_CHECK_NO_GPU:-0}
PY=${PYTHON:-python3}  # the one with torch (the GPU machine's venv; /usr/bin/python3 here)
# The dry run (no GPU) drives every step on the CPU, small, to prove the plumbing.
gpu=cuda
[ "$no_gpu" = 0 ] || gpu=cpu

# ---- 0. environment and the bundle ----
B=$(mktemp -d)/bundle
tar -C "$(dirname "$B")" -xJf .gpu-bundle.tar.xz || { say "no .gpu-bundle.tar.xz (run scripts/device_bundle.sh)"; exit 1; }
SP=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null || true)
libs="$B/lib"
[ -n "$SP" ] && libs="$libs:$SP/nvidia/nccl/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cublas/lib"
export LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}"
{
  echo "bundle $(cat "$B/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total --format=csv 2>&1
  nvcc --version 2>&1 | tail -1
  "$PY" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1
  [ -n "$SP" ] && find "$SP/nvidia" -name 'lib*.so*' | sort
  for f in "$B"/bin/*; do echo "== ldd $(basename "$f")"; ldd "$f" | grep -E 'not found|cublas|nccl' ; done
} >"$OUT/env.txt" 2>&1
say "env: $(head -3 "$OUT/env.txt" | tail -1)"

# ---- 1-2. correctness ----
: >"$OUT/check.log"
failed=0
for t in cuda_smoke_test cuda_host_logic_test ops_conformance_test comm_staging_test comm_nccl_test zero_cuda_test; do
  [ -x "$B/bin/$t" ] || { say "$t: not in the bundle"; continue; }
  timeout 150 "$B/bin/$t" --gtest_output="json:$OUT/$t.json" >>"$OUT/check.log" 2>&1
  rc=$?
  fails=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$OUT/check.log" || true)
  skips=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for s in d['testsuites'] for c in s['testsuite'] if c.get('result')=='SKIPPED'))" "$OUT/$t.json" 2>/dev/null || echo '?')
  say "$t rc=$rc (failed so far: $fails, skipped here: $skips)"
  [ "$rc" = 0 ] || failed=1
done
# One JSON file back instead of five.
python3 - "$OUT" <<'PY' 2>/dev/null
import glob, json, os, sys
out = sys.argv[1]; merged = {}
for f in sorted(glob.glob(os.path.join(out, "*_test.json"))):
    merged[os.path.basename(f)] = json.load(open(f)); os.remove(f)
json.dump(merged, open(os.path.join(out, "check.json"), "w"))
PY

# ---- 3. memcheck on the CUDA op cases ----
if command -v compute-sanitizer >/dev/null && [ "$no_gpu" = 0 ]; then
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/bin/ops_conformance_test" \
    --gtest_filter='*/cuda' >"$OUT/sanitizer.txt" 2>&1
  say "memcheck rc=$? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitizer.txt") clean summaries)"
else
  say "memcheck: skipped (no compute-sanitizer or no GPU)"
fi

# ---- 4. GPT-2 124M bf16: GPU losses against the CPU's ----
ZT="$B/bin/zerotrain"
work=$(mktemp -d)
if [ "$no_gpu" = 0 ]; then model=gpt2; steps=4; mb=4; seq=256; else model=gpt2-tiny; steps=3; mb=2; seq=64; fi
for side in gpu cpu; do
  dev=cpu
  [ "$side" = gpu ] && dev=$gpu
  timeout 150 "$ZT" train --device "$dev" --model "$model" --bf16 --steps "$steps" --micro-batch "$mb" \
    --seq-len "$seq" --corpus-bytes 4000000 --metrics "$work/$side.jsonl" >>"$OUT/check.log" 2>&1
  say "train $model bf16 on $dev rc=$?"
done
python3 - "$work/gpu.jsonl" "$work/cpu.jsonl" <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, sys
def losses(p):
    try: return [json.loads(l)["loss"] for l in open(p) if l.strip()]
    except Exception as e: return []
g, c = losses(sys.argv[1]), losses(sys.argv[2])
n = min(len(g), len(c))
if n == 0: print("loss curve: FAILED (no losses from one side)"); sys.exit()
worst = max(abs(a - b) / abs(b) for a, b in zip(g[:n], c[:n]))
print(f"loss curve: {'PASSED' if worst <= 2e-2 and n == len(c) else 'FAILED'}: {n} steps, "
      f"gpu {['%.4f' % x for x in g[:n]]} cpu {['%.4f' % x for x in c[:n]]}, largest relative "
      f"difference {worst:.2e} (bf16 tolerance 2e-2)")
PY

# ---- 5. throughput; `zerotrain gpus` and `holders` against the driver ----
if [ "$no_gpu" = 0 ]; then bm=16; bt=1024; ws=3; ts=10; else bm=2; bt=64; ws=1; ts=2; fi
timeout 150 "$B/bin/zt_train_bench" --device "$gpu" --gemm-ceiling --model "$model" --precision bf16 \
  --batch "$bm" --seq "$bt" --warmup "$ws" --steps "$ts" --json "$OUT/perf.jsonl" >>"$OUT/check.log" 2>&1 &
bench=$!
if [ "$no_gpu" = 0 ]; then
  sleep 20  # the bench holds the GPU by now (it is timing GEMMs or steps)
  {
    echo "== zerotrain gpus (NVML) during the bench"; "$ZT" gpus 2>&1
    echo "== nvidia-smi"; nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv 2>&1
    echo "== zerotrain holders /dev/nvidia* (the bench runs under timeout, pid $bench)"
    "$ZT" holders --pattern '/dev/nvidia*' 2>&1
  } >>"$OUT/env.txt"
  if "$ZT" holders --pattern '/dev/nvidia*' 2>/dev/null | grep -q zt_train_bench; then
    say "holders: names the running bench"
  else
    say "holders: FAILED to name the running bench; see env.txt"
  fi
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  if [ -n "$gpu_name" ] && "$ZT" gpus 2>/dev/null | grep -qF "$gpu_name"; then
    say "gpus: lists $gpu_name as nvidia-smi does"
  else
    say "gpus: FAILED to list '$gpu_name'; see env.txt"
  fi
fi
wait "$bench"
say "zt_train_bench rc=$?"
"$ZT" data generate "$work/data" >>"$OUT/check.log" 2>&1
if [ "$model" = gpt2 ]; then shape="--layers 12 --width 768 --heads 12 --vocab 50257 --block 1024"
else shape="--layers 2 --width 64 --heads 2 --vocab 50257 --block 64"; fi
# shellcheck disable=SC2086
timeout 150 "$PY" bench/peer/gpt_peer.py --device "$gpu" --mode ddp-bf16-autocast --procs 1 \
  --data "$work/data" $shape --seq-len "$bt" --micro-batch "$bm" --warmup "$ws" --steps "$ts" \
  >>"$OUT/perf.jsonl" 2>>"$OUT/check.log"
say "pytorch peer rc=$?"

# ---- 6. summary ----
python3 bench/device/table.py "$OUT/perf.jsonl" 2>&1 | tee -a "$OUT/summary.txt"
python3 bench/device/table.py --markdown "$OUT/perf.jsonl" >>"$OUT/summary.txt" 2>&1
say "done: correctness $([ $failed = 0 ] && echo passed || echo FAILED); files in $OUT"
exit $failed

#!/usr/bin/env bash
# scripts/bench.sh BUILD_DIR [RESULTS_MD]: runs every benchmark once and
# writes RESULTS_MD (default bench/RESULTS.md). Run by `make bench`, which
# builds BUILD_DIR (bench/ is part of the normal build) first.
#   1. zt_probe          fp32 FMA / bf16 dot / AMX peaks, STREAM bandwidth
#   2. zt_train_bench    training-step tokens/s and MFU, gpt2-tiny and
#                        gpt2-small-ish, fp32 and bf16: 1 process x all cores,
#                        then 2 ranks x cores/2 under `zerotrain run`
#   3. zt_kernels_bench  GEMM and op times at GPT-2 small shapes (5 repetitions)
#   4. zt_adamw_bench    fused AdamW step vs triad (5 repetitions)
#   5. zt_comm_bench     allreduce / reduce_scatter / allgather under
#                        `zerotrain run --num_gpus 2`
#   6. scripts/bench_zero.sh  ZeRO stages x offload x overlap_comm at 2 ranks
#                        (zt_zero_bench, one process a case; ~3 min), its own
#                        marked section, appended after the report is written
# The marked bench/compare and notes sections of RESULTS_MD are kept.
# Threads: one process uses every core; the 2-rank runs use cores/2
# threads a rank. The train bench runs right after the probe, so the peaks
# its MFU divides by were measured under about the same load. Raw JSON and
# console logs stay in BUILD_DIR/bench-results.
# A failing step is reported and leaves its section empty; the exit status
# is then 1. ZT_BENCH_NOTE, if set, is printed at the top of the report.
# About 7-9 minutes on 2 cores (the train bench ~1.5-2 of them, the ZeRO bench ~3).
set -uo pipefail

build=${1:-build}
results=${2:-bench/RESULTS.md}
bin="$build/bin"
ranks=2
cores=$(nproc)
comm_threads=$(( cores / ranks > 0 ? cores / ranks : 1 ))

for b in zt_probe zt_train_bench zt_kernels_bench zt_adamw_bench zt_comm_bench zt_bench_report \
  zt_zero_bench zerotrain; do
  if [ ! -x "$bin/$b" ]; then
    echo "bench.sh: $bin/$b is missing; build first (make build, or make bench)" >&2
    exit 2
  fi
done
mkdir -p "$build/bench-results"
out=$(cd "$build/bench-results" && pwd)
rm -f "$out"/*.json "$out"/*.txt

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load_start=$(loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit (dirty tree)"
fi
status=0
begin=$SECONDS
load_steps=""

# step NAME LOG COMMAND...: runs COMMAND, console output to the terminal and LOG.
step() {
  local name=$1 log=$2 t0=$SECONDS
  shift 2
  echo "== $name"
  if "$@" 2>&1 | tee "$out/$log"; then
    echo "   $name: $((SECONDS - t0)) s"
    load_steps+="${load_steps:+; }after ${name%% *}: $(loadavg)"
  else
    echo "bench.sh: $name failed (log: $out/$log)" >&2
    status=1
  fi
}

probe() { OMP_NUM_THREADS=$cores "$bin/zt_probe" > "$out/probe.json"; }
gbench() {  # gbench BINARY JSON MIN_TIME [FILTER]
  OMP_NUM_THREADS=$cores "$bin/$1" --benchmark_repetitions=5 --benchmark_min_time="$3" \
    --benchmark_out="$out/$2" --benchmark_out_format=json ${4:+--benchmark_filter="$4"}
}
train() {  # both layouts append to one JSON-lines file
  OMP_NUM_THREADS=$cores "$bin/zt_train_bench" --json "$out/train.json" &&
    OMP_NUM_THREADS=$comm_threads "$bin/zerotrain" run --num_gpus "$ranks" -- \
      "$bin/zt_train_bench" --json "$out/train.json"
}
comm() {
  OMP_NUM_THREADS=$comm_threads "$bin/zerotrain" run --num_gpus "$ranks" \
    "$bin/zt_comm_bench" --json "$out/comm.json"
}

step "zt_probe (peaks, STREAM)" probe.txt probe
step "zt_train_bench (1 x $cores, $ranks x $comm_threads)" train.txt train
step "zt_kernels_bench" kernels.txt gbench zt_kernels_bench kernels.json 0.1
step "zt_adamw_bench" adamw.txt gbench zt_adamw_bench adamw.json 0.2
step "zt_comm_bench ($ranks ranks)" comm.txt comm

load_end=$(loadavg)
note=${ZT_BENCH_NOTE:-}
# Highest 1-minute load seen at start, after each step, or at the end.
busy=$(printf '%s\n' "$load_start" "$load_end" ${load_steps:+"$load_steps"} |
  grep -o ': [0-9.]*\|^[0-9.]*' | tr -d ': ' |
  awk -v c="$cores" '$1 > m { m = $1 } END { if (m > 0.5 * c) print m }')
if [ -z "$note" ] && [ -n "$busy" ]; then
  note="Provisional: the machine was shared and loaded (1-minute load average up to $busy"
  note+=" on $cores cores during the run); read the spreads, and re-run on a quiet machine"
  note+=" for final numbers."
fi
json_escape() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
cat > "$out/meta.json" <<JSON
{"date": "$date_utc", "commit": "$(json_escape "$commit")",
 "load_start": "$load_start", "load_end": "$load_end",
 "threads": "probes, kernels, AdamW: 1 process x $cores threads; train: 1 x $cores and $ranks x $comm_threads; comm: $ranks ranks x $comm_threads",
 "load_steps": "$(json_escape "$load_steps")",
 "seconds": $((SECONDS - begin)), "note": "$(json_escape "$note")"}
JSON

# bench/compare (make bench-peer), bench/llama_compare (make
# bench-llama) and bench/tokenizer_compare (make bench-tokenizer) own marked
# sections of the same file, and the readings
# people wrote of the tables another (between '<!-- notes: begin -->' and
# '<!-- notes: end -->'): keep them across the re-render.
peer_section=""
notes_section=""
llama_section=""
tokenizer_section=""
if [ -f "$results" ]; then
  tokenizer_section=$(sed -n '/^<!-- bench\/tokenizer_compare: begin/,/^<!-- bench\/tokenizer_compare: end -->/p' "$results")
  peer_section=$(sed -n '/^<!-- bench\/compare: begin/,/^<!-- bench\/compare: end -->/p' "$results")
  notes_section=$(sed -n '/^<!-- notes: begin -->/,/^<!-- notes: end -->/p' "$results")
  llama_section=$(sed -n '/^<!-- bench\/llama_compare: begin/,/^<!-- bench\/llama_compare: end -->/p' "$results")
fi
if ! "$bin/zt_bench_report" --dir "$out" --out "$results"; then
  echo "bench.sh: zt_bench_report failed" >&2
  exit 1
fi
if [ -n "$peer_section" ]; then
  printf '\n%s\n' "$peer_section" >> "$results"
fi
# The ZeRO section (bench_zero.sh) is re-measured and appended.
if ! scripts/bench_zero.sh "$build" "$results"; then
  echo "bench.sh: scripts/bench_zero.sh failed (log: $out/zero.txt)" >&2
  status=1
fi
if [ -n "$notes_section" ]; then
  printf '\n%s\n' "$notes_section" >> "$results"
fi
if [ -n "$llama_section" ]; then
  printf '\n%s\n' "$llama_section" >> "$results"
fi
if [ -n "$tokenizer_section" ]; then
  printf '\n%s\n' "$tokenizer_section" >> "$results"
fi
echo "== wrote $results ($((SECONDS - begin)) s; raw JSON in $out)"
exit $status

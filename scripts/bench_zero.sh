#!/usr/bin/env bash
# scripts/bench_zero.sh BUILD_DIR [RESULTS_MD]: the ZeRO bench (issue #4).
# Runs zt_zero_bench (gpt2-small-ish, bf16, B 1 x T 128 a rank) once per
# case at 2 ranks x 1 thread under
# `zerotrain run --num_gpus 2` — stage 0; stages 1, 2, 3 x offload off/on x
# overlap_comm off/on, each overlap-on case also timing compute alone and
# communication alone (--decompose) — 8 timed steps after 2 warm-up, one
# process per case so each rank's VmHWM is that case's peak. Then replaces (or appends) the marked ZeRO
# section of RESULTS_MD (default bench/RESULTS.md). Run by scripts/bench.sh
# (`make bench`) and alone by `make bench-zero`; about 3 minutes on 2 cores.
# Raw JSON lines: BUILD_DIR/bench-results/zero.json. Exit 1 if a case failed
# (its row is missing; the others are still written).
set -uo pipefail

build=${1:-build}
results=${2:-bench/RESULTS.md}
bin="$build/bin"
for b in zt_zero_bench zerotrain; do
  if [ ! -x "$bin/$b" ]; then
    echo "bench_zero.sh: $bin/$b is missing; build first (make build)" >&2
    exit 2
  fi
done
mkdir -p "$build/bench-results"
out=$(cd "$build/bench-results" && pwd)
json="$out/zero.json"
rm -f "$json"
status=0
begin=$SECONDS

run_case() {  # run_case ARGS...: one zt_zero_bench case at 2 ranks x 1 thread
  echo "-- zt_zero_bench $*"
  if ! OMP_NUM_THREADS=1 "$bin/zerotrain" run --num_gpus 2 -- "$bin/zt_zero_bench" \
      --seq 128 --warmup 2 --steps 8 --json "$json" "$@" >> "$out/zero.txt" 2>&1; then
    echo "bench_zero.sh: case '$*' failed (log: $out/zero.txt)" >&2
    status=1
  fi
}

: > "$out/zero.txt"
run_case --stage 0
for stage in 1 2 3; do
  for offload in "" --offload; do
    run_case --stage "$stage" $offload
    run_case --stage "$stage" $offload --overlap --decompose
  done
done

section=$("$bin/zt_zero_bench" --report "$json") || { echo "bench_zero.sh: report failed" >&2; exit 1; }
if [ -f "$results" ] && grep -q '^<!-- bench/zero: begin -->' "$results"; then
  # Replace the old section in place; keep everything else.
  tmp=$(mktemp)
  awk -v section="$section" '
    /^<!-- bench\/zero: begin -->/ { print section; skip = 1; next }
    /^<!-- bench\/zero: end -->/ { skip = 0; next }
    !skip { print }' "$results" > "$tmp" && mv "$tmp" "$results"
else
  printf '\n%s\n' "$section" >> "$results"
fi
echo "== bench_zero.sh: wrote the ZeRO section of $results ($((SECONDS - begin)) s; raw JSON $json)"
exit $status

#!/usr/bin/env bash
# Prepares, on a build machine (no GPU), what scripts/device_check.sh runs on
# the GPU machine, which has no network and none of zerotrain's Debian
# libraries: a CUDA Release build (build-gpu/, sm_90) of the GPU tests, the
# CLI and the train bench, stripped, with the non-CUDA shared libraries
# they load (oneDNN, Gloo, PCRE2, ICU, ...: found with ldd), packed into
# .gpu-bundle.tar.xz (git-ignored; the device tool carries at most 64 MiB).
# CUDA's own libraries (cuBLASLt, NCCL) come from that machine's wheels.
#   scripts/device_bundle.sh            # then: run the check with carry [".gpu-bundle.tar.xz"]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_GPU:-build-gpu}
targets="zerotrain zt_train_bench ops_conformance_test cuda_smoke_test cuda_host_logic_test zero_cuda_test comm_staging_test comm_nccl_test"
# A fresh folder is configured as a unity Release build; an existing build
# (BUILD_GPU=build) keeps its settings but must have the CUDA backend.
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DZEROTRAIN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_UNITY_BUILD=ON >/dev/null
fi
cmake -S . -B "$build" -DZEROTRAIN_CUDA=ON >/dev/null
known=$(cmake --build "$build" --target help 2>/dev/null)
existing=""
for t in $targets; do
  if grep -qw -- "$t" <<<"$known"; then existing="$existing $t"; fi
done
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target $existing
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/bin" "$stage/bundle/lib"
for t in $existing; do
  f=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "device_bundle: $t was not built" >&2; exit 1; }
  strip -o "$stage/bundle/bin/$t" "$f"
done
# Shared libraries outside glibc/libstdc++ and CUDA's (those the GPU machine has).
for f in "$stage"/bundle/bin/*; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    libcublas*|libcudart*|libnccl*|libcuda.so*) ;;
    *) cp -L "$lib" "$stage/bundle/lib/" ;;
  esac
done
git rev-parse --short HEAD > "$stage/bundle/COMMIT"
tar -C "$stage" -cJf .gpu-bundle.tar.xz bundle
size=$(stat -c %s .gpu-bundle.tar.xz)
echo "device_bundle: .gpu-bundle.tar.xz $((size / 1048576)) MiB: $(ls "$stage/bundle/bin" | tr '\n' ' ')"
[ "$size" -lt $((60 * 1048576)) ] || { echo "device_bundle: over the 60 MiB the device tool carries" >&2; exit 1; }

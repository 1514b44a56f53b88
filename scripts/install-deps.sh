#!/usr/bin/env bash
# Installs the Debian 12 packages zerotrain builds against, if any are missing.
# Idempotent and quiet when everything is present. Run by `make` targets.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libgloo-dev            # CPU collectives (TCP transport)
  libdnnl-dev ocl-icd-opencl-dev  # oneDNN GEMM; its CMake config needs OpenCL headers
  libomp-dev             # OpenMP runtime for compute threads
  nlohmann-json3-dev     # ds_config parsing
  libcli11-dev           # command line
  libpcre2-dev libicu-dev  # tokenizers: Unicode pre-tokenizer patterns, normalization forms
  libprotobuf-dev protobuf-compiler  # TensorBoard event files
  openmpi-bin mpich      # tests: workers started by mpirun / mpiexec
  slurm-client           # tests: scontrol expands Slurm node lists (no daemon)
  python3-torch libopenblas0  # tests: the PyTorch reference of the Llama family
  libgtest-dev googletest libbenchmark-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js and npm install the readers tests check output files with
# (tests/npm). Any node on PATH will do (machines may carry a newer one than
# Debian's, whose npm package would conflict with it).
command -v npm >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "zerotrain: installing missing Debian packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "zerotrain: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# bench/peer/install.sh: makes Debian's python3-torch (1.13) importable by
# /usr/bin/python3, the interpreter the peer benchmark always uses (never
# another python3 earlier on PATH), with OpenBLAS as its BLAS. libtorch1.13
# only Recommends libopenblas0; without it libblas.so.3 is netlib's reference
# BLAS and the peer's fp32 GEMMs would be several times slower than a normal
# install, an unfair baseline. Idempotent: does nothing when torch imports
# and OpenBLAS is installed. Run by bench/compare and `make bench-peer`, never
# by the build or the tests. Needs root or sudo for apt-get.
set -euo pipefail

py=/usr/bin/python3
if [ ! -x "$py" ]; then
  echo "bench/peer/install.sh: $py is missing (Debian's python3 package)" >&2
  exit 1
fi
have_openblas() { dpkg-query -W -f='${Status}' libopenblas0 2>/dev/null | grep -q 'ok installed'; }
if "$py" -c 'import torch' >/dev/null 2>&1 && have_openblas; then
  exit 0
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "bench/peer/install.sh: python3-torch or libopenblas0 is missing and this is not root (no sudo)" >&2
    exit 1
  fi
  as_root=(sudo)
fi
echo "bench/peer/install.sh: installing python3-torch and libopenblas0 with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show python3-torch >/dev/null 2>&1; then
  "${as_root[@]}" apt-get update -q
fi
"${as_root[@]}" apt-get install -y -q --no-install-recommends python3-torch libopenblas0
if ! "$py" -c 'import torch' >/dev/null 2>&1; then
  echo "bench/peer/install.sh: python3-torch installed but '$py -c \"import torch\"' fails:" >&2
  "$py" -c 'import torch' >&2 || true
  exit 1
fi

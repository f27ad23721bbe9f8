#!/usr/bin/env bash
# Configures (once) and builds Hector into build/ with Ninja.
#   scripts/build.sh [ninja targets...]   (default: everything, dialect docs included)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCUDAToolkit_ROOT=/usr/local/cuda
fi
if [ $# -eq 0 ]; then set -- all mlir-doc; fi
ninja -C "$build" "$@"

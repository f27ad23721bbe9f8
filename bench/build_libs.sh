#!/usr/bin/env bash
# Builds the CUDA training libraries bench/layers.py loads (lib<model>_<width>_<heads>.so)
# for the benchmark's configurations, with extra hectorc flags, so that variants of one
# tree can be timed side by side (--hector-libs a=DIR1,b=DIR2):
#   bench/build_libs.sh OUT_DIR [hectorc flags...]
#   bench/build_libs.sh build/ab/reg --gemm-staging=registers
# HECTOR_CONFIGS overrides the list ("model:width:heads ...").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"
out="${1:?usage: bench/build_libs.sh OUT_DIR [hectorc flags...]}"
shift
python="$("$root/scripts/python-env.sh")"
configs="${HECTOR_CONFIGS:-rgcn:64:1 rgat:64:1 hgt:64:1 rgat:64:4 hgt:64:4 rgcn:128:1 rgat:128:1 hgt:128:1}"
mkdir -p "$out"
for config in $configs; do
  IFS=: read -r model width heads <<< "$config"
  source="$out/${model}_${width}_${heads}.mlir"
  "$python" "$root/examples/generate.py" "$model" --width "$width" --heads "$heads" > "$source"
  "$build/bin/hectorc" "$source" --target=cuda --training "$@" \
    -o "$out/lib${model}_${width}_${heads}.so"
  rm "$source"
done
echo "built $(ls "$out"/lib*_*_*.so | wc -l) libraries in $out (with libhector_runtime.so)"

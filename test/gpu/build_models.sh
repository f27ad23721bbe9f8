#!/usr/bin/env bash
# Compiles every model configuration of the GPU validation for the cuda
# target into one directory (default build/gpu-models), since the GPU
# machines have no compiler: the simple loop kernels (lib*.so) and, with
# --gpu-templates, the tiled/warp-reduced kernels (tmpl/lib*.so).
#   test/gpu/build_models.sh [out-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"
out="${1:-$build/gpu-models}"
mkdir -p "$out/tmpl"

configs="$(PYTHONPATH="$root/test/python:$root/test" /usr/bin/python3 -c '
from model_cases import CONFIGS
for model, width, heads in CONFIGS:
    print(model, width, heads)')"
while read -r model width heads; do
  name="lib${model}_${width}_${heads}.so"
  python3 "$root/examples/generate.py" "$model" --width "$width" --heads "$heads" \
    > "$out/$name.mlir"
  "$build/bin/hectorc" "$out/$name.mlir" --target=cuda -o "$out/$name"
  if ! "$build/bin/hectorc" "$out/$name.mlir" --target=cuda --gpu-templates \
      -o "$out/tmpl/$name" 2> "$out/tmpl/$name.log"; then
    echo "build_models: --gpu-templates failed for $name (see $out/tmpl/$name.log)" >&2
  fi
done <<< "$configs"
echo "build_models: wrote $(ls "$out"/*.so | grep -vc runtime) libraries to $out"

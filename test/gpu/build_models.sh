#!/usr/bin/env bash
# Compiles every model configuration of the GPU validation for the cuda
# target into one directory (default build/gpu-models), since the GPU
# machines have no compiler: the tiled/warp-reduced kernels of htmpl-to-gpu
# (the default, tmpl/lib*.so) and the simple loop kernels of htmpl-to-loops
# (--gpu-templates=false, lib*.so). The template libraries are built with
# --training, also with --precision=tf32 (tf32/lib*.so: the row-mode GEMMs on
# TF32 tensor cores, for bench/layers.py --hector-libs-tf32).
#   test/gpu/build_models.sh [out-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"
out="${1:-$build/gpu-models}"
mkdir -p "$out/tmpl" "$out/tf32"
# Debian's python3 with hector installed from python/ (scripts/python-env.sh).
python="$("$root/scripts/python-env.sh")"

configs="$(PYTHONPATH="$root/test/python:$root/test" "$python" -c '
from model_cases import CONFIGS
for model, width, heads in CONFIGS:
    print(model, width, heads)')"
while read -r model width heads; do
  name="lib${model}_${width}_${heads}.so"
  "$python" "$root/examples/generate.py" "$model" --width "$width" --heads "$heads" \
    > "$out/$name.mlir"
  "$build/bin/hectorc" "$out/$name.mlir" --target=cuda --gpu-templates=false -o "$out/$name"
  # The template libraries carry the training entry points too
  # (test/gpu/training_gpu.py, bench/layers.py --modes training).
  "$build/bin/hectorc" "$out/$name.mlir" --target=cuda --training -o "$out/tmpl/$name"
  "$build/bin/hectorc" "$out/$name.mlir" --target=cuda --training --precision=tf32 \
    -o "$out/tf32/$name"
done <<< "$configs"

# The C++ example and the main job's forward pass, for the GPU machine:
# run_forward with its runtime, RGCN for the GPU and the CPU, RGAT for the
# bundled graph (width 64, 4 heads, as examples/forward_debian.py uses).
mkdir -p "$out/example"
cp "$build/bin/run_forward" "$out/example/"
"$build/bin/hectorc" "$root/examples/rgcn.mlir" --target=cuda -o "$out/example/librgcn_cuda.so"
"$build/bin/hectorc" "$root/examples/rgcn.mlir" --target=cpu -o "$out/example/librgcn_cpu.so"
"$python" "$root/examples/generate.py" rgat --width 64 --heads 4 > "$out/example/rgat.mlir"
"$build/bin/hectorc" "$out/example/rgat.mlir" --target=cuda -o "$out/example/librgat.so"
# The C++ training example (test/gpu/cpp_training_gpu.sh).
cp "$build/bin/train_step" "$out/example/"
for model in rgcn rgat hgt; do
  for target in cuda cpu; do
    "$build/bin/hectorc" "$root/examples/$model.mlir" --training --target=$target \
      -o "$out/example/lib${model}_train_$target.so"
  done
done
# hector.nn on the GPU (test/gpu/test_nn_gpu.py) and the main job's layers
# (examples/train_debian.py), as hector.compile caches that need no hectorc.
export HECTOR_BUILD_DIR="$build"
"$python" "$root/test/gpu/test_nn_gpu.py" --build "$out/nn-cache"
"$python" "$root/examples/train_debian.py" --aot-dir "$out/nn-cache"

# The kernels of htmpl-to-gpu on their own (test/gpu/test_htmpl_gpu.py; the
# GEMMs also with --precision=tf32).
"$python" "$root/test/gpu/test_htmpl_gpu.py" --build "$out/htmpl"
# The gradient ops and training entries (test/gpu/test_gradient_ops_gpu.py).
HECTOR_BUILD_DIR="$build" "$python" "$root/test/gpu/test_gradient_ops_gpu.py" --build "$out/gradients"
# Attention dropout: the CUDA mask against its specification (test/gpu/test_dropout_gpu.py).
HECTOR_BUILD_DIR="$build" "$python" "$root/test/gpu/test_dropout_gpu.py" --build "$out/dropout"
# Host-resident node features: --host-resident=h (test/gpu/test_host_resident_gpu.py).
HECTOR_BUILD_DIR="$build" "$python" "$root/test/gpu/test_host_resident_gpu.py" --build "$out/host"
echo "build_models: wrote $(ls "$out"/*.so | grep -vc runtime) model libraries to $out"

#!/usr/bin/env bash
# Everything the GPU machine checks, in one run (it has no compiler: run
# test/gpu/build_models.sh here first and carry build/gpu-models and
# build/runtime). Logs and JSON go to $OUT (or ./gpu-validation); the last
# lines are the summary.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out="${OUT:-gpu-validation}"
models=build/gpu-models
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# hector as installed where this Python has it, else python/ on PYTHONPATH
# (the repository is copied to the GPU machines without an install step).
PYTHONPATH="$(python3 test/hector_checkout.py)"; export PYTHONPATH

nvidia-smi -L
python3 test/gpu/models_gpu.py --libs "$models" --json "$out/loops.json" > "$out/loops.log" 2>&1
echo "loop kernels: $(tail -1 "$out/loops.log")"
python3 test/gpu/models_gpu.py --libs "$models/tmpl" --label templates \
  --json "$out/templates.json" > "$out/templates.log" 2>&1
echo "template kernels: $(tail -1 "$out/templates.log")"

# Training steps: gradients vs torch autograd, the 8 dataset shapes timed.
python3 test/gpu/training_gpu.py --libs "$models/tmpl" --json "$out/training.json" \
  > "$out/training.log" 2>&1
echo "training steps: $(tail -1 "$out/training.log")"

# The GPU templates on their own: every GEMM and traversal form vs torch.
HECTOR_HTMPL_GPU_DIR="$models/htmpl" python3 -m pytest -q -p no:cacheprovider \
  test/gpu/test_htmpl_gpu.py > "$out/htmpl_gpu.log" 2>&1
echo "htmpl-to-gpu kernels: $(tail -1 "$out/htmpl_gpu.log")"

# The gradient ops and training entries vs float64 torch.
HECTOR_GRADIENT_GPU_DIR="$models/gradients" python3 -m pytest -q -p no:cacheprovider \
  test/gpu/test_gradient_ops_gpu.py > "$out/gradient_ops_gpu.log" 2>&1
echo "gradient ops: $(tail -1 "$out/gradient_ops_gpu.log")"

# Attention dropout (hgraph.dropout): the CUDA mask bit for bit against its specification.
HECTOR_DROPOUT_GPU_DIR="$models/dropout" python3 -m pytest -q -p no:cacheprovider \
  test/gpu/test_dropout_gpu.py > "$out/dropout_gpu.log" 2>&1
echo "attention dropout: $(tail -1 "$out/dropout_gpu.log")"

# Host-resident h (hectorc --host-resident): unified vs device h, no copy, timings.
python3 test/gpu/test_host_resident_gpu.py --libs "$models/host" --bench --json "$out/host_resident.json" > "$out/host_resident.log" 2>&1; tail -1 "$out/host_resident.log"

# The C++ example: the same graph and seed on the GPU and the CPU.
python3 - "$out/graph.txt" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(0)
n, e, t, r = 2000, 30000, 3, 8
with open(sys.argv[1], "w") as f:
    f.write(f"{n} {e} {t} {r}\n" + " ".join(map(str, rng.integers(0, t, n))) + "\n")
    for s, d, k in zip(rng.integers(0, n, e), rng.integers(0, n, e), rng.integers(0, r, e)):
        f.write(f"{s} {d} {k}\n")
PY
export LD_LIBRARY_PATH="$PWD/$models/example:$PWD/build/runtime"
for target in cuda cpu; do
  "$models/example/run_forward" "$models/example/librgcn_$target.so" "$out/graph.txt" \
    --seed 7 --out "$out/run_forward_$target.bin" > "$out/run_forward_$target.log" 2>&1
  echo "run_forward ($target): exit $?"
done
python3 - "$out" <<'PY'
import sys, numpy as np
gpu = np.fromfile(f"{sys.argv[1]}/run_forward_cuda.bin", np.float32)
cpu = np.fromfile(f"{sys.argv[1]}/run_forward_cpu.bin", np.float32)
err = np.abs(gpu - cpu).max() / np.abs(cpu).max() if cpu.size and gpu.size == cpu.size else np.inf
print(f"run_forward cuda vs cpu: {gpu.size} values, relative error {err:.1e}:",
      "pass" if err < 1e-5 else "FAIL")
PY

test/gpu/cpp_training_gpu.sh "$models/example" > "$out/cpp_training.log" 2>&1; tail -5 "$out/cpp_training.log"

# The main job's forward pass on the bundled graph, on the GPU.
HECTOR_NN_GPU_CACHE="$models/nn-cache" python3 -m pytest -q -p no:cacheprovider \
  test/gpu/test_nn_gpu.py > "$out/nn_gpu.log" 2>&1
echo "hector.nn layers: $(tail -1 "$out/nn_gpu.log")"

# The main job on the GPU: 2-layer RGAT trained on the bundled Debian graph.
HECTOR_CACHE_DIR="$models/nn-cache" python3 examples/train_debian.py --epochs 40 \
  > "$out/train_debian.log" 2>&1
echo "train_debian: exit $?"; tail -4 "$out/train_debian.log"

python3 examples/forward_debian.py --library "$models/example/librgat.so" --heads 4 \
  > "$out/forward_debian.log" 2>&1
echo "forward_debian: exit $?"; tail -3 "$out/forward_debian.log"

#!/usr/bin/env bash
# The C++ training example on the GPU: examples/cpp/train_step runs 10 Adam
# steps of RGCN, RGAT and HGT (examples/*.mlir, width 64) from libraries
# built with `hectorc --training` for the cuda and the cpu target, on one
# seeded graph. Checks, per model: the CUDA loss decreases (step 10 and the
# final loss below step 1) and the step-1 losses of CUDA and CPU agree to
# 1e-4 relative. Prints a table; exit status 1 if any check fails.
#
# It builds nothing (the GPU machine has no compiler). It expects, in
# $1 (default build/gpu-models/example):
#   train_step, lib{rgcn,rgat,hgt}_train_{cuda,cpu}.so (+ .json manifests)
# and libhector_runtime.so in build/runtime. Logs go to $OUT (or
# ./gpu-validation).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
dir="${1:-build/gpu-models/example}"
out="${OUT:-gpu-validation}/cpp_training"
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$dir:$PWD/build/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# A seeded graph with skewed in-degrees (a few hubs), like the benchmark
# graphs of BRIEF.md section 5: 3000 nodes of 4 types, 40000 edges of 10 types.
python3 - "$out/graph.txt" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(1)
nodes, types, edges, etypes = 3000, 4, 40000, 10
weight = 1.0 / np.arange(1, nodes + 1) ** 0.8   # power-law popularity of destinations
dst = rng.choice(nodes, edges, p=weight / weight.sum())
lines = [f"{nodes} {edges} {types} {etypes}", " ".join(map(str, rng.integers(0, types, nodes)))]
lines += [f"{s} {d} {k}" for s, d, k in zip(rng.integers(0, nodes, edges), dst,
                                            rng.integers(0, etypes, edges))]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
[ -s "$out/graph.txt" ] || { echo "cpp training: FAIL: no graph (python3 with numpy?)"; exit 1; }

for model in rgcn rgat hgt; do
  for target in cuda cpu; do
    "$dir/train_step" "$dir/lib${model}_train_$target.so" "$out/graph.txt" --steps 10 \
      --seed 5 --optimizer adam --lr 0.01 > "$out/${model}_$target.log" 2>&1
    echo "$?" > "$out/${model}_$target.rc"
  done
done

python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]

def read(model, target):
    """(exit status, per-step losses, final loss or None, last log line)."""
    text = open(f"{out}/{model}_{target}.log").read()
    rc = int(open(f"{out}/{model}_{target}.rc").read())
    steps = [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", text, re.M)]
    final = re.search(r"^final loss (\S+) ", text, re.M)
    lines = text.strip().splitlines()
    return rc, steps, float(final.group(1)) if final else None, lines[-1] if lines else ""

failed = 0
print(f"{'model':6} {'cpu step 1':>12} {'cuda step 1':>12} {'rel diff':>9} "
      f"{'cuda step 10':>12} {'cuda final':>11}  result")
for model in ("rgcn", "rgat", "hgt"):
    cuda, cpu = read(model, "cuda"), read(model, "cpu")
    problems = [f"{t} exit {r[0]}: {r[3]}" for t, r in (("cuda", cuda), ("cpu", cpu))
                if r[0] != 0 or len(r[1]) != 10 or r[2] is None]
    if problems:
        failed += 1
        print(f"{model:6} FAIL: " + "; ".join(problems))
        continue
    diff = abs(cuda[1][0] - cpu[1][0]) / abs(cpu[1][0])
    decreased = cuda[2] < cuda[1][0] and cuda[1][-1] < cuda[1][0]
    ok = diff < 1e-4 and decreased
    failed += not ok
    print(f"{model:6} {cpu[1][0]:12.7f} {cuda[1][0]:12.7f} {diff:9.1e} {cuda[1][-1]:12.7f} "
          f"{cuda[2]:11.7f}  {'pass' if ok else 'FAIL'}"
          + ("" if decreased else " (the loss did not decrease)"))
print(f"cpp training: {3 - failed} of 3 models pass")
sys.exit(1 if failed else 0)
PY

#!/usr/bin/env bash
# Builds, here (the GPU machines have no compiler), every library that
# bench/ablation.py needs on the GPU: RGAT and HGT, width 64, one head, the
# four variants of `hectorc --variant` compiled for each of the 8 synthetic
# datasets as hector.tune.prebuild would (--graph-sizes of the graph,
# --typed-endpoints for reorder/both), with --training, plus the libraries
# without --training that hector.tune times for inference. Output: a
# hector.compile cache, plan.json and the runtime in one directory.
#   bash bench/build_ablation.sh [out-dir] [extra options of `ablation.py build`]
# default out-dir: $HECTOR_BUILD_DIR/gpu-models/ablation (build/gpu-models/ablation)
# Then on the GPU machine (carry the out-dir):
#   python3 bench/ablation.py run --libs build/gpu-models/ablation --out OUT
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"
out="${1:-$build/gpu-models/ablation}"
shift || true
if [ ! -x "$build/bin/hectorc" ]; then
  echo "build_ablation.sh: no $build/bin/hectorc (scripts/build.sh hectorc hector_runtime)" >&2
  exit 1
fi
# A fresh directory: nothing stale travels to the GPU machine.
rm -rf "$out/cache" "$out/plan.json" "$out/libhector_runtime.so"
mkdir -p "$out"
HECTOR_BUILD_DIR="$build" /usr/bin/python3 "$root/bench/ablation.py" build \
  --out "$out" --hectorc "$build/bin/hectorc" "$@"

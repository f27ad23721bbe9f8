#!/usr/bin/env bash
# The main job: install, build, compile a 2-layer RGAT with hectorc (forward
# and backward) and train it on the bundled Debian package graph, on the GPU
# when torch sees one, else with the CPU backend; prints the test accuracy
# next to the majority-class baseline and writes a plot of the loss and the
# accuracies per epoch, train_debian.png here (examples/train_debian.py).
#   scripts/main.sh [train_debian.py options, e.g. --epochs 20]
#   scripts/main.sh --nproc 2     # data-parallel mini-batches on 2 ranks (docs/distributed.md)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" hectorc hector_runtime
python="$("$root/scripts/python-env.sh")"

echo "== Training a 2-layer RGAT on the bundled Debian package graph"
# .venv: Debian's python3 (numpy, torch) with hector installed from python/
# (scripts/python-env.sh); hector.compile finds hectorc in
# $HECTOR_BUILD_DIR/bin and caches the libraries (~/.cache/hector).
HECTOR_BUILD_DIR="$build" "$python" "$root/examples/train_debian.py" "$@"

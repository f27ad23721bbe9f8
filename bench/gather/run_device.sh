#!/usr/bin/env bash
# One device call: GPU tests, gather table + sweep, and (with E2E=1) the
# end-to-end run. Expects the runtime built here in build-rt/ (carried).
# Logs and JSON go to $OUT (default: bench/gather/out).
#   bash bench/gather/run_device.sh            # tests + gather bench
#   E2E=1 bash bench/gather/run_device.sh      # + end-to-end training run
#   E2E_BACKINGS="malloc thp vmm" E2E_ARGS="--epochs 2"   # its host-memory kinds
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/gather/out}
mkdir -p "$OUT"
export HECTOR_RUNTIME_LIB=${HECTOR_RUNTIME_LIB:-$PWD/build-rt/libhector_runtime.so}
export PYTHONUNBUFFERED=1
# hector as installed where this Python has it, else python/ on PYTHONPATH
# (the repository is copied to the GPU machines without an install step).
PYTHONPATH="$(python3 test/hector_checkout.py)"; export PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
  --format=csv 2>&1 | tee "$OUT/gpu.txt"
if [ "${TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -p no:cacheprovider test/gpu/test_unified_gather.py 2>&1 \
    | tail -n 60 | tee "$OUT/tests.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  python3 bench/gather/bench_gather.py --out "$OUT/gather.json" ${BENCH_ARGS:-} 2>&1 \
    | tee "$OUT/gather.log"
fi
if [ "${E2E:-0}" = 1 ]; then
  for b in ${E2E_BACKINGS:-malloc}; do
    python3 bench/gather/e2e_sage.py --backing "$b" --out "$OUT/e2e_$b.json" ${E2E_ARGS:-} \
      2>&1 | tee "$OUT/e2e_$b.log"
  done
fi

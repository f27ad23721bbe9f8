#!/usr/bin/env bash
# One device call: GPU tests, gather table + sweep, and (with E2E=1) the
# end-to-end run. Expects the runtime built here in build-rt/ (carried).
# Logs and JSON go to $OUT (default: bench/gather/out).
#   bash bench/gather/run_device.sh            # tests + gather bench
#   E2E=1 bash bench/gather/run_device.sh      # + end-to-end training run
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/gather/out}
mkdir -p "$OUT"
export HECTOR_RUNTIME_LIB=${HECTOR_RUNTIME_LIB:-$PWD/build-rt/libhector_runtime.so}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
  --format=csv 2>&1 | tee "$OUT/gpu.txt"
if [ "${TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -x test/gpu/test_unified_gather.py 2>&1 | tail -n 40 | tee "$OUT/tests.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  python3 bench/gather/bench_gather.py --out "$OUT/gather.json" ${BENCH_ARGS:-} 2>&1 \
    | tee "$OUT/gather.log"
fi
if [ "${E2E:-0}" = 1 ]; then
  python3 bench/gather/e2e_sage.py --out "$OUT/e2e.json" ${E2E_ARGS:-} 2>&1 | tee "$OUT/e2e.log"
fi

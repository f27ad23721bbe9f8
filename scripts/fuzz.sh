#!/usr/bin/env bash
# Builds hectorc-fuzzer (libFuzzer + AddressSanitizer over all of Hector's
# code, in a build directory of its own) and fuzzes hectorc's parser and
# pipeline for a bounded time, starting from the seed corpus
# test/fuzz/corpus (docs/robustness.md).
#
#   scripts/fuzz.sh [SECONDS]      (default 90; HECTOR_FUZZ_SECONDS too)
#
# A crash, a sanitizer report, an input slower than HECTOR_FUZZ_TIMEOUT
# seconds (default 30: a hang, if it is slow again when run once more) or one
# that needs more than 3 GB is a failure: the reproducer is kept in <build>/test-results/fuzz-artifacts/,
# the hectorc options it ran with are printed, and the exit status is 1.
# Writes <build>/test-results/fuzz.xml (one JUnit test case), which
# scripts/test.sh counts.
#
# Environment: HECTOR_BUILD_DIR (default build/; the fuzzer is built in
# <build>-fuzz unless HECTOR_FUZZ_BUILD_DIR says otherwise), HECTOR_FUZZ_SEED
# (default 0: a random seed, printed), HECTOR_FUZZ_JOBS (parallel fuzzing
# processes, default 1).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"
fuzz_build="${HECTOR_FUZZ_BUILD_DIR:-${build%/}-fuzz}"
seconds="${1:-${HECTOR_FUZZ_SECONDS:-90}}"
timeout="${HECTOR_FUZZ_TIMEOUT:-30}"
seed="${HECTOR_FUZZ_SEED:-0}"
jobs="${HECTOR_FUZZ_JOBS:-1}"
results="$build/test-results"
artifacts="$results/fuzz-artifacts"
xml="$results/fuzz.xml"
log="$results/fuzz.log"
mkdir -p "$results"
rm -f "$xml"

junit() {  # junit <failure message or empty> <seconds>
  local message="$1" time="$2"
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuites><testsuite name=\"fuzz\" tests=\"1\" failures=\"$([ -n "$message" ] && echo 1 || echo 0)\">"
    echo "<testcase classname=\"fuzz\" name=\"hectorc-fuzzer\" time=\"$time\">"
    if [ -n "$message" ]; then
      printf '<failure message="%s"><![CDATA[\n' "$(printf '%s' "$message" | head -c 300 |
        sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g' | tr '\n' ' ')"
      tail -c 20000 "$log" 2>/dev/null | sed 's/]]>/]] >/g'
      echo ']]></failure>'
    fi
    echo '</testcase></testsuite></testsuites>'
  } > "$xml"
}

echo "== fuzz: building hectorc-fuzzer in $fuzz_build"
if [ ! -f "$fuzz_build/build.ninja" ]; then
  if ! cmake -S "$root" -B "$fuzz_build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
      -DHECTOR_FUZZER=ON > "$log" 2>&1; then
    cat "$log"; junit "configuring the fuzzer build failed" 0; exit 1
  fi
fi
if ! ninja -C "$fuzz_build" hectorc-fuzzer > "$log" 2>&1; then
  tail -n 40 "$log"; junit "building hectorc-fuzzer failed" 0; exit 1
fi

fuzzer="$fuzz_build/bin/hectorc-fuzzer"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$artifacts"
mkdir -p "$artifacts"
# LLVM's allocators poison memory for ASan in our (instrumented) inline code
# but not in libMLIR.so (not instrumented): user poisoning is turned off, or
# every arena reuse would be reported.
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=0:handle_abort=1:${ASAN_OPTIONS:-}"
echo "== fuzz: $seconds s, timeout $timeout s per input, corpus test/fuzz/corpus"
start=$(date +%s)
args=(-max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=3072
      -report_slow_units="$timeout" -max_len=16384 -detect_leaks=0
      -print_final_stats=1 -seed="$seed"
      -dict="$root/test/fuzz/hgraph.dict" -artifact_prefix="$artifacts/")
if [ "$jobs" -gt 1 ]; then
  args+=(-jobs="$jobs" -workers="$jobs")
fi
(cd "$work" && "$fuzzer" "${args[@]}" "$work" "$root/test/fuzz/corpus") > "$log" 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
if [ "$jobs" -gt 1 ]; then cat "$work"/fuzz-*.log >> "$log" 2>/dev/null; fi

runs=$(grep -h '^stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
# A time-out is a hang only if it happens again: hectorc-fuzzer is
# deterministic (one thread, options from the input's bytes), but a busy
# machine can stall a process for seconds. One that runs in time again is
# reported and kept, not counted.
for reproducer in "$artifacts"/timeout-*; do
  [ -f "$reproducer" ] || continue
  if timeout "$timeout" "$fuzzer" "$reproducer" > /dev/null 2>&1; then
    echo "hectorc-fuzzer: $reproducer timed out once but runs in time again (a stall of the machine, not a hang)"
    mv "$reproducer" "$artifacts/stall-${reproducer##*/timeout-}"
    [ "$status" -ne 0 ] && status=0
  fi
done
crashes=$(find "$artifacts" -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' | wc -l)
hangs=$(find "$artifacts" -name 'timeout-*' | wc -l)
echo "hectorc-fuzzer: $runs inputs in $elapsed s, $crashes crashes, $hangs hangs (exit status $status)"
if [ "$status" -eq 0 ] && [ "$crashes" -eq 0 ] && [ "$hangs" -eq 0 ]; then
  junit "" "$elapsed"
  exit 0
fi

grep -E 'ERROR:|SUMMARY:|==[0-9]+==|deadly signal|timeout after' "$log" | head -n 20
message="hectorc-fuzzer failed (exit status $status): $crashes crashes, $hangs hangs"
for reproducer in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-* "$artifacts"/leak-*; do
  [ -f "$reproducer" ] || continue
  options=$(HECTOR_FUZZ_VERBOSE=1 timeout 10 "$fuzzer" "$reproducer" 2>&1 |
            grep -m1 '^hectorc-fuzzer: hectorc' | sed 's/^hectorc-fuzzer: //; s/ ([0-9]* bytes)$//')
  echo "reproducer: $reproducer"
  echo "  reproduce: $fuzzer $reproducer"
  echo "  or:        ${options:-hectorc} $reproducer"
  message="$message; reproducer $reproducer (${options:-hectorc})"
done
junit "$message" "$elapsed"
exit 1

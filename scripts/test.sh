#!/usr/bin/env bash
# Runs every test: installs missing dependencies, builds, then runs the lit
# suite (IR and compiler-driver tests), the pytest suite (Python package,
# references, runtime) and a bounded fuzzing session of hectorc
# (scripts/fuzz.sh, HECTOR_FUZZ_SECONDS, default 90; one test case), and ends
# with one line `N passed, N failed`.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HECTOR_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh" || exit 1
"$root/scripts/build.sh" || exit 1
# Debian's python3 (numpy, pytest, torch) in a venv with hector installed
# from python/ in editable mode: the tests import it as users do.
python="$("$root/scripts/python-env.sh")" || exit 1

mkdir -p "$build/test-results"
lit_xml="$build/test-results/lit.xml"
pytest_xml="$build/test-results/pytest.xml"
rm -f "$lit_xml" "$pytest_xml"

echo "== lit: IR and compiler tests"
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$lit_xml" "$build/test"

echo "== pytest: Python package, references and runtime"
(cd "$root" && "$python" -m pytest -q -p no:cacheprovider \
  --junitxml "$pytest_xml" test/python)

echo "== fuzz: hectorc's parser and pipeline (scripts/fuzz.sh, docs/robustness.md)"
"$root/scripts/fuzz.sh" "${HECTOR_FUZZ_SECONDS:-90}"

"$python" "$root/scripts/summarize-tests.py" "$lit_xml" "$pytest_xml" \
  "$build/test-results/fuzz.xml"

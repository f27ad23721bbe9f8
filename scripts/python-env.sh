#!/usr/bin/env bash
# Makes this checkout's Python environment, .venv: a venv over Debian's
# python3 that sees its numpy and torch (--system-site-packages), with the
# hector package (python/) installed in editable mode, as a user installs it
# (docs/python.md, "Installing the package"). Offline: pip uses no index, the
# system's setuptools and no dependencies. Does nothing when the venv already
# imports hector from this checkout. Prints the venv's python.
#   scripts/python-env.sh     (scripts/test.sh and scripts/main.sh run it)
#   HECTOR_VENV=DIR scripts/python-env.sh      (a venv elsewhere than .venv)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${HECTOR_VENV:-$root/.venv}"
python="$venv/bin/python"

# Whether the venv's Python, by itself (no PYTHONPATH, no user site), imports
# this checkout's python/hector.
installed() {
  [ -x "$python" ] && (cd / && env -u PYTHONPATH "$python" -s -c '
import importlib.util, os, sys
spec = importlib.util.find_spec("hector")
sys.exit(spec is None or spec.origin != os.path.join(sys.argv[1], "hector", "__init__.py"))
' "$root/python") 2>/dev/null
}

if ! installed; then
  echo "python-env: installing python/ into $venv (editable)" >&2
  [ -x "$python" ] || /usr/bin/python3 -m venv --system-site-packages --without-pip "$venv"
  "$python" -m pip install --quiet --no-index --no-deps --no-build-isolation \
    --editable "$root/python"
  installed || { echo "python-env: $python does not import $root/python/hector" >&2; exit 1; }
fi
echo "$python"

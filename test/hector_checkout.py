"""`import hector` for the repository's own scripts and tests: the installed
package when the running Python has one (the checkout's .venv, made by
scripts/python-env.sh, has it installed in editable mode), else this
checkout's python/ (a GPU machine's Python, to which the repository is
copied without an install step; or /usr/bin/python3 outside the venv).
docs/python.md, "Installing the package", says which Python finds what.

This module is the only place that falls back: test/python's conftest.py,
test/gpu/gpu_paths.py and bench/repo_paths.py import it (they put test/ on
sys.path for the test helpers anyway). The fallback also goes into
PYTHONPATH, so that the Python processes a test starts find the same
package. Run as a script it prints that PYTHONPATH, for shell scripts that
run examples (test/gpu/run_validation.sh, bench/gather/run_device.sh):
    PYTHONPATH="$(python3 test/hector_checkout.py)"; export PYTHONPATH"""

import importlib.util
import os
import sys

PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")

_spec = importlib.util.find_spec("hector")
# A namespace package (a folder named hector without __init__.py on the
# path, e.g. include/hector from the current directory) is not the package.
INSTALLED = _spec is not None and _spec.origin is not None
if not INSTALLED and PYTHON not in sys.path:
    sys.path.insert(0, PYTHON)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (PYTHON, os.environ.get("PYTHONPATH")) if p)

if __name__ == "__main__":
    print(os.environ.get("PYTHONPATH", ""))

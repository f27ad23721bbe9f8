"""Finding the built `hectorc` and compiling models with it, for tests."""

from __future__ import annotations

import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hectorc() -> str:
    """$HECTOR_BUILD_DIR/bin/hectorc or build/bin/hectorc; CI builds it first."""
    candidates = []
    if os.environ.get("HECTOR_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["HECTOR_BUILD_DIR"], "bin", "hectorc"))
    candidates.append(os.path.join(REPO, "build", "bin", "hectorc"))
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    pytest.fail("hectorc not found (tried " + ", ".join(candidates) + "): build it first, "
                "e.g. scripts/build.sh hectorc")


def build(directory, source: str, *options: str, name: str = "libmodel.so") -> str:
    """Compiles MLIR `source` into `directory`/`name`; returns the library path."""
    model = os.path.join(str(directory), name + ".mlir")
    with open(model, "w") as f:
        f.write(source)
    out = os.path.join(str(directory), name)
    result = subprocess.run([hectorc(), model, "-o", out, *options],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out

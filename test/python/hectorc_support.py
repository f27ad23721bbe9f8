"""Finding the built tools (`hectorc`, `run_forward`) and compiling models
with hectorc, for tests."""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_tool(name: str) -> str:
    """The path of a built tool, or None: $HECTOR_BUILD_DIR/bin, else build/bin."""
    candidates = []
    if os.environ.get("HECTOR_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["HECTOR_BUILD_DIR"], "bin", name))
    candidates.append(os.path.join(REPO, "build", "bin", name))
    return next((path for path in candidates if os.access(path, os.X_OK)), None)


def tool(name: str) -> str:
    """A built tool; fails the test when it is missing (CI builds everything first)."""
    path = find_tool(name)
    if path is None:
        pytest.fail(f"{name} not found in $HECTOR_BUILD_DIR/bin or build/bin: build it "
                    f"first, e.g. scripts/build.sh {name}")
    return path


def hectorc() -> str:
    return tool("hectorc")


@contextlib.contextmanager
def compile_cache_in(directory):
    """hector.compile (and hector.nn) compile into `directory`, with the
    built hectorc, inside the block."""
    from hector import compiler

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(compiler.CACHE_ENV, str(directory))
        mp.setenv(compiler.BUILD_DIR_ENV, os.path.dirname(os.path.dirname(hectorc())))
        yield


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

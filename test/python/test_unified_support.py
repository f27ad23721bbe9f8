"""Support for the unified-tensor tests (no tests here): finds libhector_runtime.so, building the
runtime into a temporary folder when no build exists yet (CI runs pytest on a
fresh clone). Skips only when there is no compiler toolchain to build it."""

import os
import shutil
import subprocess

import pytest

from hector import _runtime

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def runtime_library(tmp_path_factory):
    try:
        return _runtime.load()
    except _runtime.RuntimeLibraryNotFound:
        pass
    if not shutil.which("cmake"):
        pytest.skip("libhector_runtime.so is not built and cmake is missing")
    build = tmp_path_factory.mktemp("hector-runtime-build")
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(
        ["cmake", "-S", os.path.join(_REPO, "runtime"), "-B", str(build), *gen],
        check=True, capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build), "-j", "2"], check=True, capture_output=True)
    os.environ[_runtime.ENV_VAR] = str(build / _runtime.LIB_NAME)
    return _runtime.load()


def cuda_driver_present() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False

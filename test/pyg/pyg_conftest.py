"""conftest.py of the folder where run_pyg_tests.py runs PyG's tests (copied
there under that name). It changes no test; it only picks where they run and
records what they compile, through environment variables the runner sets:

- HECTOR_PYG_DEVICE=cpu|cuda: of the tests parametrized by `device` (PyG's
  withDevice/withCUDA), keep those of that device type. With cuda, the tests
  that take no device (RGATConv's, HGTConv's) run with torch's default
  device set to CUDA (torch.set_default_device), so that their tensors and
  layers are CUDA ones; with cpu they run as written.
- HECTOR_PYG_RECORD=FILE: append the model spec of every library a hector.nn
  layer asks for to FILE (one per line; what --prebuild builds).
- HECTOR_PYG_NO_COMPILER=1: never run hectorc, load libraries from the
  cache only (what a GPU machine does; to check a prebuilt cache here).
"""

import os

import pytest
import torch

DEVICE = os.environ.get("HECTOR_PYG_DEVICE", "cpu")


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        device = params.get("device")
        if device is not None and torch.device(device).type != DEVICE:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _default_device(request):
    """CUDA as torch's default device for the tests that take no device."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if DEVICE != "cuda" or "device" in params:
        yield
        return
    previous = torch.get_default_device()
    torch.set_default_device("cuda")
    try:
        yield
    finally:
        torch.set_default_device(previous)


def _record_libraries(path):
    from hector.nn._base import CompiledLayer

    library = CompiledLayer.library

    def recording(self, device, training, spec=None):
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{self.model_spec if spec is None else spec}\n")
        return library(self, device, training, spec)

    CompiledLayer.library = recording


def _without_compiler():
    from hector import compiler

    find = compiler.find_compiler
    compiler.find_compiler = lambda path=None: find(False if path is None else path)


if os.environ.get("HECTOR_PYG_RECORD"):
    _record_libraries(os.environ["HECTOR_PYG_RECORD"])
if os.environ.get("HECTOR_PYG_NO_COMPILER") == "1":
    _without_compiler()

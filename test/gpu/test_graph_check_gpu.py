"""hector_graph_check_array on device memory (run on a GPU machine):
arrays of a preprocessed graph on the GPU pass; a corrupted one is refused
with INDEX_OUT_OF_RANGE naming the array, index and value, including a bad
value past the first 16 MiB chunk the check reads back.

    python3 -m pytest test/gpu/test_graph_check_gpu.py
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import gpu_paths  # noqa: E402,F401  (sets the import paths)

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from hector import _runtime, graph as g  # noqa: E402


def check(name, tensor, sizes):
    lib = g._lib()
    fn = lib.hector_graph_check_array
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64,
                   ctypes.POINTER(g._GraphSizes), ctypes.c_int]
    s = g._GraphSizes(*sizes)
    status = fn(name.encode(), tensor.data_ptr(), tensor.numel(), ctypes.byref(s),
                tensor.device.index)
    return status, lib.hector_last_error().decode()


def test_device_arrays():
    rng = np.random.default_rng(0)
    n, e, t, r = 1000, 5_000_000, 3, 7  # 20 MB per edge array: two chunks
    pre = g.preprocess(rng.integers(0, t, n), rng.integers(0, n, e), rng.integers(0, n, e),
                       rng.integers(0, r, e), t, r)
    sizes = (pre.N, pre.E, pre.T, pre.R, pre.P)
    for name, array in pre.arrays().items():
        if name == "edge_norm":
            continue
        on_gpu = torch.from_numpy(np.array(array)).cuda()
        assert check(name, on_gpu, sizes) == (_runtime.OK, ""), name
    bad = torch.from_numpy(np.array(pre.compact_map)).cuda()
    bad[4_500_000] = 1 << 30  # in the second chunk
    status, message = check("compact_map", bad, sizes)
    assert status == _runtime.INDEX_OUT_OF_RANGE
    assert f"'compact_map' holds {1 << 30} at index 4500000" in message
    offsets = torch.from_numpy(np.array(pre.csr_row_ptr)).cuda()
    offsets[10] = -1
    status, message = check("csr_row_ptr", offsets, sizes)
    assert status == _runtime.INDEX_OUT_OF_RANGE and "never decrease" in message

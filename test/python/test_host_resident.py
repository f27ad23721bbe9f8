"""hectorc --host-resident on the CPU side (no GPU needed): the manifest flag
and hector.compiled's argument checks, with fake CUDA and unified tensors.
The GPU side (results, no device copy, timings) is
test/gpu/test_host_resident_gpu.py."""

from __future__ import annotations

import importlib
import json
import os
import shutil

import numpy as np
import pytest

from hector import compiled
from hectorc_support import REPO, build

torch = pytest.importorskip("torch")
# The module (hector.unified is also the name of its function).
unified = importlib.import_module("hector.unified")

W = 8
MODEL = f"""
hgraph.func @two(%g: !hgraph.graph, %h: !hgraph.node<{W}xf32> {{hgraph.name = "h"}},
                 %x2: !hgraph.node<{W}xf32> {{hgraph.name = "x2"}},
                 %W: !hgraph.weight<edge, {W}x{W}xf32> {{hgraph.name = "W"}}) -> !hgraph.node<{W}xf32> {{
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, {W}x{W}xf32>, !hgraph.node<{W}xf32> -> !hgraph.edge<{W}xf32>
  %a = hgraph.aggregate sum %z : !hgraph.edge<{W}xf32> -> !hgraph.node<{W}xf32>
  %s = hgraph.add %a, %x2 : !hgraph.node<{W}xf32>
  hgraph.return %s : !hgraph.node<{W}xf32>
}}
"""

# A hand-lowered entry point whose input is marked host-resident, for the
# CPU target (where hectorc --host-resident is refused, but a hand-written
# mark is harmless: every buffer is host memory).
CPU_MODEL = """
func.func @copy(%x: memref<?x4xf32> {hector.arg = {role = "input", name = "x", shape = ["N", 4], host_resident = true}},
                %out: memref<?x4xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 4]}}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c4) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x4xf32>
    memref.store %v, %out[%i, %j] : memref<?x4xf32>
    scf.reduce
  }
  return
}
"""


def cuda_build_missing():
    build_dir = os.environ.get("HECTOR_BUILD_DIR") or os.path.join(REPO, "build")
    if not os.path.exists(os.path.join(build_dir, "runtime", "libhector_runtime.so")):
        return "libhector_runtime.so not built"
    cuda = os.environ.get("CUDA_ROOT") or "/usr/local/cuda"
    if not (os.access(os.path.join(cuda, "bin", "ptxas"), os.X_OK) or shutil.which("ptxas")):
        return "ptxas not found (no CUDA toolkit)"
    return None


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    missing = cuda_build_missing()
    if missing:
        pytest.skip(missing)
    path = build(tmp_path_factory.mktemp("host"), MODEL, "--target=cuda", "--host-resident=h")
    return compiled.load(path)


class FakeCuda(torch.Tensor):
    """A CPU tensor that says it is on a CUDA device (argument checks only;
    never passed to a kernel)."""

    @property
    def is_cuda(self):
        return True

    @property
    def device(self):
        return torch.device("cuda", getattr(self, "index", 0))

    def data_ptr(self):
        return 0x10000


FakeCuda.__module__ = "torch.fake"  # hector.compiled recognises torch types by module


def cuda(array, index=0):
    t = torch.as_tensor(np.ascontiguousarray(array)).as_subclass(FakeCuda)
    t.index = index
    return t


def fake_unified(host, index=0, dev_ptr=0x7F0000000000):
    """A UnifiedTensor as hector.unified makes it, without the driver."""
    u = object.__new__(unified.UnifiedTensor)
    u.host, u.device, u.check = host, torch.device("cuda", index), True
    u._rows = host.shape[0]
    u._row_bytes = host[0].numel() * host.element_size() if host.shape[0] else 0
    u._row_stride = host.stride(0) * host.element_size()
    u._dev_ptr = dev_ptr
    return u


def arguments(entry, n=5, e=7, r=2, t=2):
    """Fake CUDA tensors for every argument of `entry` (shapes from the
    manifest's symbols)."""
    sizes = {"N": n, "E": e, "R": r, "T": t, "P": e}
    values = {}
    for arg in entry.arguments:
        shape = []
        for dim in arg.shape:
            if isinstance(dim, int):
                shape.append(dim)
            else:
                name, _, plus = dim.partition("+")
                shape.append(sizes[name] + int(plus or 0))
        values[arg.name] = cuda(np.zeros(shape, dtype=arg.dtype))
    return values


def test_manifest_marks_only_the_named_input(lib):
    raw = json.load(open(lib.manifest_path))
    flags = {a["name"]: a.get("host_resident") for a in raw["entries"][0]["arguments"]}
    assert flags["h"] is True
    assert all(v is None for k, v in flags.items() if k != "h")
    entry = lib.two
    assert [a.name for a in entry.arguments if a.host_resident] == ["h"]


def test_unified_tensor_is_accepted(lib):
    entry = lib.two
    args = arguments(entry)
    args["h"] = fake_unified(torch.zeros(5, W))
    assert entry.check(**args)["N"] == 5
    _, described, device, _ = entry._prepare((), args)
    ptr = {arg.name: p for arg, p, _, _ in described}
    assert ptr["h"] == 0x7F0000000000  # the device-visible address, not a copy
    assert device[0] == torch.device("cuda", 0)


def test_cuda_tensor_is_accepted_too(lib):
    args = arguments(lib.two)
    assert lib.two.check(**args)["N"] == 5


def test_pageable_host_tensor_is_rejected(lib):
    args = arguments(lib.two)
    args["h"] = torch.zeros(5, W)
    with pytest.raises(TypeError, match=r"argument 'h' is host-resident .* pageable memory.*"
                                        r"hector\.unified\(h\)"):
        lib.two.check(**args)


def test_numpy_array_is_rejected(lib):
    args = arguments(lib.two)
    args["h"] = np.zeros((5, W), np.float32)
    with pytest.raises(TypeError, match="must be a torch CUDA tensor or a hector.unified tensor"):
        lib.two.check(**args)


def test_unified_tensor_for_a_device_argument_is_rejected(lib):
    args = arguments(lib.two)
    args["x2"] = fake_unified(torch.zeros(5, W))
    with pytest.raises(TypeError, match=r"argument 'x2' is a hector.unified tensor .*"
                                        r"hectorc --host-resident=x2"):
        lib.two.check(**args)
    args = arguments(lib.two)
    args["W"] = fake_unified(torch.zeros(2, W, W))
    with pytest.raises(TypeError, match="argument 'W' is a hector.unified tensor"):
        lib.two.check(**args)


@pytest.mark.parametrize("host, error, message", [
    (torch.zeros(5, W, dtype=torch.float64), TypeError, "must have dtype float32, got float64"),
    (torch.zeros(10, W)[::2], ValueError, "must be contiguous"),
    (torch.zeros(6, W), ValueError, r"has size 6 in dimension 0 \(N\), but N = 5"),
    (torch.zeros(5, W + 1), ValueError, "must have size 8 in dimension 1"),
    (torch.zeros(5), ValueError, "must have rank 2"),
])
def test_unified_tensor_is_checked_like_any_argument(lib, host, error, message):
    args = arguments(lib.two)
    args["h"] = fake_unified(host)
    # h comes first among the node-wise values, so a size mismatch is
    # reported at x2 against h's N (or at h against the graph arrays').
    with pytest.raises(error, match=message):
        lib.two.check(**args)


def test_unified_tensor_mapped_for_another_device(lib):
    args = arguments(lib.two)
    args["h"] = fake_unified(torch.zeros(5, W), index=1)
    with pytest.raises(ValueError, match=r"argument 'h' is mapped for cuda:1 but '\w+' is on "
                                         r"cuda:0: all arguments must be on one device"):
        lib.two.check(**args)


def test_pinned_cpu_tensor_is_mapped_for_the_call(lib, monkeypatch):
    args = arguments(lib.two)
    args["x2"] = cuda(np.zeros((5, W), np.float32), index=0)
    host = torch.zeros(5, W)
    args["h"] = host
    calls = []

    def fake_map(tensor, device=None, check=True):
        calls.append((tensor, device))
        return fake_unified(tensor, index=device, dev_ptr=0x7F0000001000)

    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self: True)
    monkeypatch.setattr(unified, "unified", fake_map)
    _, described, _, _ = lib.two._prepare((), args)
    ptr = {arg.name: p for arg, p, _, _ in described}
    assert ptr["h"] == 0x7F0000001000
    assert len(calls) == 1 and calls[0][0] is host and calls[0][1] == 0


@pytest.fixture(scope="module")
def cpu_lib(tmp_path_factory):
    path = build(tmp_path_factory.mktemp("hostcpu"), CPU_MODEL, "--target=cpu")
    return compiled.load(path)


def test_cpu_library_takes_host_arrays_and_refuses_unified(cpu_lib):
    assert cpu_lib.copy.arguments[0].host_resident
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros_like(x)
    cpu_lib.copy(x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(TypeError, match=r"is a hector.unified tensor .* pass its CPU tensor"):
        cpu_lib.copy(fake_unified(torch.from_numpy(x)), out)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(host_resident="yes"), "has host_resident 'yes'"),
    (lambda a: a.update(host_resident=True, role="output"), "is host_resident but has role"),
])
def test_bad_manifest_flags(tmp_path, cpu_lib, change, message):
    manifest = json.load(open(cpu_lib.manifest_path))
    change(manifest["entries"][0]["arguments"][0])
    copy = tmp_path / "libcopy.so"
    shutil.copy(cpu_lib.path, copy)
    (tmp_path / "libcopy.so.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=message):
        compiled.load(copy)

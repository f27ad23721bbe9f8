"""hector.compiled on the CPU: hand-written entry points over memrefs (what
hgraph-to-htmpl + htmpl-to-loops produce) built with `hectorc --target=cpu`,
loaded from their manifest, checked against numpy, and every argument check.

hectorc is taken from $HECTOR_BUILD_DIR/bin or build/bin; it must have been
built (CI builds it first). The CUDA library test also needs the runtime and
the CUDA toolkit (ptxas), and is skipped, saying so, without them.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from hector import compiled
from hectorc_support import REPO, build

F = 8  # feature width of the test model

MODEL = r"""
// out[dst[e], f] += norm[e] * h[src[e], f]  (out is zeroed first)
func.func @gather_scale_scatter(
    %src: memref<?xi32> {hector.arg = {role = "graph", name = "edge_src", shape = ["E"]}},
    %dst: memref<?xi32> {hector.arg = {role = "graph", name = "edge_dst", shape = ["E"]}},
    %norm: memref<?xf32> {hector.arg = {role = "graph", name = "edge_norm", shape = ["E"]}},
    %h: memref<?x8xf32> {hector.arg = {role = "input", name = "h", shape = ["N", 8]}},
    %out: memref<?x8xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 8]}})
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %out, %c0 : memref<?x8xf32>
  %e = memref.dim %src, %c0 : memref<?xi32>
  scf.parallel (%i, %f) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    memref.store %zero, %out[%i, %f] : memref<?x8xf32>
  }
  scf.parallel (%k, %f) = (%c0, %c0) to (%e, %c8) step (%c1, %c1) {
    %s = memref.load %src[%k] : memref<?xi32>
    %d = memref.load %dst[%k] : memref<?xi32>
    %si = arith.index_cast %s : i32 to index
    %di = arith.index_cast %d : i32 to index
    %v = memref.load %h[%si, %f] : memref<?x8xf32>
    %w = memref.load %norm[%k] : memref<?xf32>
    %p = arith.mulf %v, %w : f32
    %old = memref.atomic_rmw addf %p, %out[%di, %f] : (f32, memref<?x8xf32>) -> f32
  }
  return
}

// out[t, f] = scale[f] * sum of h[csr_src[k], f], k in [row_ptr[t], row_ptr[t+1])
func.func @aggregate(
    %row_ptr: memref<?xi32> {hector.arg = {role = "graph", name = "csr_row_ptr", shape = ["N+1"]}},
    %col: memref<?xi32> {hector.arg = {role = "graph", name = "csr_src", shape = ["E"]}},
    %h: memref<?x8xf32> {hector.arg = {role = "input", name = "h", shape = ["N", 8]}},
    %scale: memref<8xf32> {hector.arg = {role = "weight", name = "scale", shape = [8]}},
    %out: memref<?x8xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 8]}})
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %out, %c0 : memref<?x8xf32>
  scf.parallel (%t, %f) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    %t1 = arith.addi %t, %c1 : index
    %b = memref.load %row_ptr[%t] : memref<?xi32>
    %e = memref.load %row_ptr[%t1] : memref<?xi32>
    %bi = arith.index_cast %b : i32 to index
    %ei = arith.index_cast %e : i32 to index
    %sum = scf.for %k = %bi to %ei step %c1 iter_args(%acc = %zero) -> (f32) {
      %s = memref.load %col[%k] : memref<?xi32>
      %si = arith.index_cast %s : i32 to index
      %v = memref.load %h[%si, %f] : memref<?x8xf32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    %w = memref.load %scale[%f] : memref<8xf32>
    %r = arith.mulf %sum, %w : f32
    memref.store %r, %out[%t, %f] : memref<?x8xf32>
  }
  return
}

// y = tanh(x) / (1 + |x|) in float64, through a temporary; no hector.arg:
// names and roles are derived.
func.func @softsign_tanh(%x: memref<?x?xf64>, %y: memref<?x?xf64>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %n = memref.dim %x, %c0 : memref<?x?xf64>
  %m = memref.dim %x, %c1 : memref<?x?xf64>
  %t = memref.alloc(%n, %m) : memref<?x?xf64>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x?xf64>
    %a = math.absf %v : f64
    %d = arith.addf %a, %one : f64
    memref.store %d, %t[%i, %j] : memref<?x?xf64>
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x?xf64>
    %d = memref.load %t[%i, %j] : memref<?x?xf64>
    %th = math.tanh %v : f64
    %q = arith.divf %th, %d : f64
    memref.store %q, %y[%i, %j] : memref<?x?xf64>
  }
  memref.dealloc %t : memref<?x?xf64>
  return
}
"""


@pytest.fixture(scope="module")
def lib_path(tmp_path_factory):
    return build(tmp_path_factory.mktemp("cpu"), MODEL, "--target=cpu")


@pytest.fixture(scope="module")
def lib(lib_path):
    return compiled.load(lib_path)


# ---- independent references (float64, from the math) ----------------------

def ref_gather_scale_scatter(src, dst, norm, h):
    out = np.zeros(h.shape, np.float64)
    np.add.at(out, dst, norm.astype(np.float64)[:, None] * h.astype(np.float64)[src])
    return out


def ref_aggregate(row_ptr, col, h, scale):
    n = len(row_ptr) - 1
    out = np.zeros((n, h.shape[1]), np.float64)
    for t in range(n):
        out[t] = h[col[row_ptr[t]:row_ptr[t + 1]]].astype(np.float64).sum(axis=0)
    return out * scale.astype(np.float64)


def random_graph(rng, n, e):
    src = rng.integers(0, max(n, 1), e).astype(np.int32)
    dst = rng.integers(0, max(n, 1), e).astype(np.int32)
    return src, dst


# ---- the manifest and the library ------------------------------------------

def test_manifest_describes_every_entry(lib, lib_path):
    with open(lib_path + ".json") as f:
        manifest = json.load(f)
    assert manifest["format"] == "hector-library-manifest"
    assert manifest["target"] == "cpu" and manifest["gpu_arch"] is None
    assert manifest["library"] == "libmodel.so"
    assert manifest["hectorc_version"]
    assert set(lib.entries) == {"gather_scale_scatter", "aggregate", "softsign_tanh"}

    gss = lib.gather_scale_scatter
    assert gss.symbol == "_mlir_ciface_gather_scale_scatter"
    assert gss.preprocessing == ("edge_src", "edge_dst", "edge_norm")
    assert [(a.role, a.name, a.dtype, a.rank, a.shape) for a in gss.arguments] == [
        ("graph", "edge_src", "int32", 1, ("E",)),
        ("graph", "edge_dst", "int32", 1, ("E",)),
        ("graph", "edge_norm", "float32", 1, ("E",)),
        ("input", "h", "float32", 2, ("N", 8)),
        ("output", "out", "float32", 2, ("N", 8)),
    ]
    agg = lib.aggregate
    assert agg.arguments[0].shape == ("N+1",)
    assert (agg.arguments[3].role, agg.arguments[3].shape) == ("weight", (8,))
    # Derived: arg<k> names, written arguments are outputs.
    soft = lib["softsign_tanh"]
    assert [(a.role, a.name, a.dtype, a.shape) for a in soft.arguments] == [
        ("input", "arg0", "float64", (None, None)),
        ("output", "arg1", "float64", (None, None)),
    ]


def test_library_needs_no_llvm_or_mlir(lib_path):
    dynamic = subprocess.run(["readelf", "-d", lib_path], capture_output=True, text=True,
                             check=True).stdout
    needed = [line.split("[")[1].rstrip("]") for line in dynamic.splitlines()
              if "(NEEDED)" in line]
    # The dynamic loader too, on glibc: it defines __tls_get_addr, which the
    # CPU runtime's per-thread status (temporaries.h) uses; every dynamically
    # linked process has it loaded already.
    loader = {name for name in needed if name.startswith("ld-linux")}
    assert set(needed) - loader <= {"libc.so.6", "libm.so.6"}, needed
    ldd = subprocess.run(["ldd", lib_path], capture_output=True, text=True, check=True).stdout
    assert "LLVM" not in ldd and "MLIR" not in ldd, ldd


# ---- numbers ----------------------------------------------------------------

@pytest.mark.parametrize("n,e,seed", [(1, 0, 0), (1, 1, 1), (5, 17, 2), (64, 1000, 3),
                                      (300, 50, 4), (0, 0, 5)])
def test_gather_scale_scatter_matches_numpy(lib, n, e, seed):
    rng = np.random.default_rng(seed)
    src, dst = random_graph(rng, n, e)
    norm = rng.standard_normal(e).astype(np.float32)
    h = rng.standard_normal((n, F)).astype(np.float32)
    out = np.full((n, F), np.nan, np.float32)  # the entry point zeroes it
    lib.gather_scale_scatter(src, dst, norm, h, out)
    np.testing.assert_allclose(out, ref_gather_scale_scatter(src, dst, norm, h),
                               rtol=1e-5, atol=1e-5)


def test_hub_node_receives_every_edge(lib):
    # All edges into one node: the scatter-add must not lose updates.
    rng = np.random.default_rng(7)
    n, e = 10, 5000
    src = rng.integers(0, n, e).astype(np.int32)
    dst = np.full(e, 3, np.int32)
    norm = np.ones(e, np.float32)
    h = rng.random((n, F)).astype(np.float32)
    out = np.zeros((n, F), np.float32)
    lib.gather_scale_scatter(src, dst, norm, h, out)
    np.testing.assert_allclose(out, ref_gather_scale_scatter(src, dst, norm, h), rtol=1e-4)
    assert np.all(out[np.arange(n) != 3] == 0)


@pytest.mark.parametrize("n,max_degree,seed", [(0, 0, 0), (1, 0, 1), (6, 4, 2), (200, 12, 3)])
def test_csr_aggregate_matches_numpy(lib, n, max_degree, seed):
    rng = np.random.default_rng(seed)
    degrees = rng.integers(0, max_degree + 1, n)
    row_ptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int32)
    e = int(row_ptr[-1])
    col = rng.integers(0, max(n, 1), e).astype(np.int32)
    h = rng.standard_normal((n, F)).astype(np.float32)
    scale = rng.standard_normal(F).astype(np.float32)
    out = np.empty((n, F), np.float32)
    lib.aggregate(row_ptr, col, h, scale, out)
    np.testing.assert_allclose(out, ref_aggregate(row_ptr, col, h, scale), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (7, 13), (33, 64)])
def test_math_and_temporaries_match_numpy(lib, shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape) * 3
    y = np.empty(shape)
    lib.softsign_tanh(x, y)
    np.testing.assert_allclose(y, np.tanh(x) / (1 + np.abs(x)), rtol=1e-12, atol=1e-14)


def test_keywords_and_cpu_torch_tensors(lib):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    src, dst = random_graph(rng, 4, 9)
    norm = rng.random(9).astype(np.float32)
    h = rng.random((4, F)).astype(np.float32)
    out = torch.zeros(4, F)
    lib.gather_scale_scatter(src, dst, edge_norm=torch.from_numpy(norm), h=h, out=out)
    np.testing.assert_allclose(out.numpy(), ref_gather_scale_scatter(src, dst, norm, h),
                               rtol=1e-5)


def test_check_returns_symbol_values(lib):
    src, dst = np.zeros(6, np.int32), np.zeros(6, np.int32)
    h = np.zeros((4, F), np.float32)
    symbols = lib.gather_scale_scatter.check(src, dst, np.zeros(6, np.float32), h,
                                             np.zeros((4, F), np.float32))
    assert symbols == {"E": 6, "N": 4}
    row_ptr = np.zeros(5, np.int32)
    symbols = lib.aggregate.check(row_ptr, np.zeros(0, np.int32), h, np.zeros(F, np.float32),
                                  np.zeros((4, F), np.float32))
    assert symbols == {"N": 4, "E": 0}


# ---- argument checks: clear errors naming the argument, nothing called ------

def gss_args(n=4, e=6):
    return dict(edge_src=np.zeros(e, np.int32), edge_dst=np.zeros(e, np.int32),
                edge_norm=np.ones(e, np.float32), h=np.ones((n, F), np.float32),
                out=np.full((n, F), 42, np.float32))


@pytest.mark.parametrize("change,error,message", [
    (dict(edge_src=np.zeros(6, np.int64)), TypeError,
     "argument 'edge_src' must have dtype int32, got int64"),
    (dict(h=np.ones((4, F), np.float64)), TypeError,
     "argument 'h' must have dtype float32, got float64"),
    (dict(h=np.ones((4, F), ">f4")), TypeError, "argument 'h' must have dtype float32"),
    (dict(h=[[1.0] * F] * 4), TypeError, "argument 'h' must be a numpy array, got list"),
    (dict(h=np.ones(4 * F, np.float32)), ValueError, "argument 'h' must have rank 2"),
    (dict(h=np.ones((4, 2 * F), np.float32)[:, ::2]), ValueError,
     "argument 'h' must be contiguous"),
    (dict(out=np.ones((4, 9), np.float32)), ValueError,
     "argument 'out' must have size 8 in dimension 1"),
    (dict(edge_dst=np.zeros(5, np.int32)), ValueError,
     "argument 'edge_dst' has size 5 in dimension 0 (E), but E = 6 from argument 'edge_src'"),
    (dict(out=np.ones((3, F), np.float32)), ValueError,
     "argument 'out' has size 3 in dimension 0 (N), but N = 4 from argument 'h'"),
])
def test_bad_arguments_are_rejected_before_the_call(lib, change, error, message):
    args = gss_args()
    args.update(change)
    with pytest.raises(error) as info:
        lib.gather_scale_scatter(**args)
    assert message in str(info.value)
    assert "gather_scale_scatter()" in str(info.value)
    if "out" not in change:
        assert np.all(args["out"] == 42), "the entry point must not have run"


def test_read_only_output_is_rejected(lib):
    args = gss_args()
    args["out"].setflags(write=False)
    with pytest.raises(ValueError, match="argument 'out' is an output but is read-only"):
        lib.gather_scale_scatter(**args)


def test_symbol_plus_one_is_checked(lib):
    h = np.zeros((4, F), np.float32)
    with pytest.raises(ValueError, match=r"argument 'h' has size 4 in dimension 0 \(N\), but "
                                         r"N = 5 from argument 'csr_row_ptr'"):
        lib.aggregate(np.zeros(6, np.int32), np.zeros(0, np.int32), h,
                      np.zeros(F, np.float32), h.copy())
    with pytest.raises(ValueError, match="N would be negative"):
        lib.aggregate(np.zeros(0, np.int32), np.zeros(0, np.int32), h[:0],
                      np.zeros(F, np.float32), h[:0].copy())


def test_weight_static_size_is_checked(lib):
    h = np.zeros((2, F), np.float32)
    with pytest.raises(ValueError, match="argument 'scale' must have size 8 in dimension 0"):
        lib.aggregate(np.zeros(3, np.int32), np.zeros(0, np.int32), h,
                      np.zeros(F + 1, np.float32), h.copy())


def test_call_signature_errors(lib):
    args = gss_args()
    values = list(args.values())
    with pytest.raises(TypeError, match="missing arguments: out"):
        lib.gather_scale_scatter(*values[:-1])
    with pytest.raises(TypeError, match="takes 5 arguments, got 6"):
        lib.gather_scale_scatter(*values, values[0])
    with pytest.raises(TypeError, match="no argument named 'x'"):
        lib.gather_scale_scatter(*values, x=1)
    with pytest.raises(TypeError, match="got argument 'edge_src' twice"):
        lib.gather_scale_scatter(*values, edge_src=values[0])
    with pytest.raises(AttributeError, match="no entry point 'nope'"):
        lib.nope
    with pytest.raises(KeyError):
        lib["nope"]


def test_gpu_tensor_on_cpu_library(lib):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device to make a GPU tensor")
    args = gss_args()
    args["h"] = torch.ones(4, F, device="cuda")
    with pytest.raises(TypeError, match="argument 'h' must be on the CPU"):
        lib.gather_scale_scatter(**args)


# ---- loading errors ---------------------------------------------------------

def test_missing_or_bad_manifest(tmp_path, lib_path):
    lonely = tmp_path / "libalone.so"
    lonely.write_bytes(open(lib_path, "rb").read())
    with pytest.raises(FileNotFoundError, match="manifest not found"):
        compiled.load(lonely)
    (tmp_path / "libalone.so.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a valid hectorc manifest"):
        compiled.load(lonely)
    manifest = json.load(open(lib_path + ".json"))
    manifest["format_version"] = 99
    (tmp_path / "libalone.so.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="format_version 99"):
        compiled.load(lonely)
    manifest = json.load(open(lib_path + ".json"))
    manifest["entries"][0]["symbol"] = "_mlir_ciface_missing"
    (tmp_path / "libalone.so.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="no symbol _mlir_ciface_missing"):
        compiled.load(lonely)
    manifest = json.load(open(lib_path + ".json"))
    manifest["entries"][0]["arguments"][0]["dtype"] = "complex64"
    (tmp_path / "libalone.so.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="dtype 'complex64'"):
        compiled.load(lonely)
    with pytest.raises(FileNotFoundError):
        compiled.load(tmp_path / "libnothing.so")


# ---- a CUDA library on a machine without a GPU --------------------------------

def has_cuda_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def cuda_build_tools() -> str | None:
    """Why a CUDA library cannot be built here, or None."""
    build_dir = os.environ.get("HECTOR_BUILD_DIR") or os.path.join(REPO, "build")
    runtime = os.path.join(build_dir, "runtime", "libhector_runtime.so")
    if not os.path.exists(runtime):
        return f"{runtime} not built (no CUDA toolkit headers?)"
    cuda = os.environ.get("CUDA_ROOT") or "/usr/local/cuda"
    if not (os.access(os.path.join(cuda, "bin", "ptxas"), os.X_OK) or shutil.which("ptxas")):
        return "ptxas not found (no CUDA toolkit)"
    return None


def test_cuda_library_loads_and_reports_no_driver(tmp_path):
    missing = cuda_build_tools()
    if missing:
        pytest.skip(missing)
    path = build(tmp_path, MODEL, "--target=cuda")
    assert os.path.exists(os.path.join(tmp_path, "libhector_runtime.so"))
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                             check=True).stdout
    assert "[libhector_runtime.so]" in dynamic and "$ORIGIN" in dynamic
    assert "LLVM" not in dynamic and "MLIR" not in dynamic
    # Loading registers the kernels but touches no GPU.
    lib = compiled.load(path)
    assert lib.target == "cuda" and lib.gpu_arch == "sm_90"
    assert lib.module_loads() == 0
    args = gss_args()
    with pytest.raises(TypeError, match="argument 'edge_src' must be a torch CUDA tensor"):
        lib.gather_scale_scatter(**args)
    if has_cuda_driver():
        return
    # Called anyway (descriptors of host arrays, never dereferenced): the
    # launch runtime records the missing driver instead of aborting, and
    # every later mgpu* call of the entry point does nothing.
    entry = lib.gather_scale_scatter
    descriptors = []
    for arg, value in zip(entry.arguments, args.values()):
        d = compiled._descriptor_type(arg.rank)()
        d.allocated = d.aligned = value.ctypes.data
        d.sizes[:] = list(value.shape)
        d.strides[:] = compiled._row_major_strides(value.shape)
        descriptors.append(d)
    raw = lib._lib
    raw.hector_launch_clear()
    entry._fn(*[ctypes.addressof(d) for d in descriptors])
    assert raw.hector_launch_status() == 2  # HECTOR_ERROR_NO_DRIVER
    assert b"no CUDA driver" in raw.hector_launch_error()
    raw.hector_launch_clear()
    assert raw.hector_launch_status() == 0 and raw.hector_launch_error() == b""
    assert np.all(args["out"] == 42)

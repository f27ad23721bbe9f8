"""GPU tests of `hectorc --target=cuda` libraries loaded with hector.compiled.

The GPU machines have no hectorc, so the libraries are built here first:

    python3 test/gpu/test_compiled_gpu.py --build build-backend/gpu-compiled

(hectorc from $HECTOR_BUILD_DIR/bin or build/bin), and the folder travels to
the GPU machine, where

    HECTOR_COMPILED_DIR=build-backend/gpu-compiled python3 -m pytest test/gpu/test_compiled_gpu.py

checks every entry point against torch. Not collected by CI (CI runs
test/python only). `--bench` prints rough timings (not a test).
"""

from __future__ import annotations

import os
import subprocess
import sys

from gpu_paths import REPO as _REPO  # noqa: E402  (sets the import paths)

from hectorc_support import find_tool  # noqa: E402

F = 64  # feature width of the flat-loop models

# Flat scf.parallel loops (the backend maps them onto a 1-D grid), a
# blocks x threads nest as htmpl-to-loops shapes it, temporaries (gpu.alloc),
# libdevice math, float64, and real htmpl instances lowered by htmpl-to-loops.
MODELS = {
    "flat": r"""
func.func @gather_scale_scatter(
    %src: memref<?xi32> {hector.arg = {role = "graph", name = "edge_src", shape = ["E"]}},
    %dst: memref<?xi32> {hector.arg = {role = "graph", name = "edge_dst", shape = ["E"]}},
    %norm: memref<?xf32> {hector.arg = {role = "graph", name = "edge_norm", shape = ["E"]}},
    %h: memref<?x64xf32> {hector.arg = {role = "input", name = "h", shape = ["N", 64]}},
    %out: memref<?x64xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 64]}})
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %out, %c0 : memref<?x64xf32>
  %e = memref.dim %src, %c0 : memref<?xi32>
  scf.parallel (%i, %f) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
    memref.store %zero, %out[%i, %f] : memref<?x64xf32>
  }
  scf.parallel (%k, %f) = (%c0, %c0) to (%e, %c64) step (%c1, %c1) {
    %s = memref.load %src[%k] : memref<?xi32>
    %d = memref.load %dst[%k] : memref<?xi32>
    %si = arith.index_cast %s : i32 to index
    %di = arith.index_cast %d : i32 to index
    %v = memref.load %h[%si, %f] : memref<?x64xf32>
    %w = memref.load %norm[%k] : memref<?xf32>
    %p = arith.mulf %v, %w : f32
    %old = memref.atomic_rmw addf %p, %out[%di, %f] : (f32, memref<?x64xf32>) -> f32
  }
  return
}

func.func @aggregate(
    %row_ptr: memref<?xi32> {hector.arg = {role = "graph", name = "csr_row_ptr", shape = ["N+1"]}},
    %col: memref<?xi32> {hector.arg = {role = "graph", name = "csr_src", shape = ["E"]}},
    %h: memref<?x64xf32> {hector.arg = {role = "input", name = "h", shape = ["N", 64]}},
    %scale: memref<64xf32> {hector.arg = {role = "weight", name = "scale", shape = [64]}},
    %out: memref<?x64xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 64]}})
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %out, %c0 : memref<?x64xf32>
  scf.parallel (%t, %f) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
    %t1 = arith.addi %t, %c1 : index
    %b = memref.load %row_ptr[%t] : memref<?xi32>
    %e = memref.load %row_ptr[%t1] : memref<?xi32>
    %bi = arith.index_cast %b : i32 to index
    %ei = arith.index_cast %e : i32 to index
    %sum = scf.for %k = %bi to %ei step %c1 iter_args(%acc = %zero) -> (f32) {
      %s = memref.load %col[%k] : memref<?xi32>
      %si = arith.index_cast %s : i32 to index
      %v = memref.load %h[%si, %f] : memref<?x64xf32>
      %next = arith.addf %acc, %v : f32
      scf.yield %next : f32
    }
    %w = memref.load %scale[%f] : memref<64xf32>
    %r = arith.mulf %sum, %w : f32
    memref.store %r, %out[%t, %f] : memref<?x64xf32>
  }
  return
}

// y = tanh(x) / (1 + |x|) in float64 through a temporary (gpu.alloc).
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

// A block per row, a thread per column: y = exp(x) * 2.
func.func @rows_by_columns(%x: memref<?x32xf32>, %y: memref<?x32xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %two = arith.constant 2.0 : f32
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c32) step (%c1) {
      %v = memref.load %x[%i, %j] : memref<?x32xf32>
      %e = math.exp %v : f32
      %w = arith.mulf %e, %two : f32
      memref.store %w, %y[%i, %j] : memref<?x32xf32>
    }
  }
  return
}
""",
    # Real template instances; htmpl-to-loops lowers them inside hectorc.
    "htmpl": r"""
func.func @gemm_typed(%lhs: memref<?x16xf32>, %rows: memref<?xi32>,
                      %rhs: memref<?x16x8xf32>, %out: memref<?x8xf32>,
                      %seg: memref<?xi32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x16xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x16x8xf32>)
             out(%out : memref<?x8xf32>)
             segments(%seg : memref<?xi32>)
  return
}
""",
}


def _hectorc() -> str:
    path = find_tool("hectorc")
    if path is None:
        raise SystemExit("hectorc not found in $HECTOR_BUILD_DIR/bin or build/bin")
    return path


def build(directory: str) -> None:
    """Builds every model into `directory` with hectorc --target=cuda."""
    os.makedirs(directory, exist_ok=True)
    for name, source in MODELS.items():
        model = os.path.join(directory, f"{name}.mlir")
        with open(model, "w") as f:
            f.write(source)
        out = os.path.join(directory, f"lib{name}.so")
        subprocess.run([_hectorc(), model, "--target=cuda", "-o", out], check=True)
        print("built", out)


# ---- the tests (GPU machine) ----------------------------------------------

if __name__ != "__main__":
    import pytest

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU", allow_module_level=True)

    from hector import compiled

    DIR = os.environ.get("HECTOR_COMPILED_DIR",
                         os.path.join(_REPO, "build-backend", "gpu-compiled"))
    DEV = torch.device("cuda", 0)

    def _load(name):
        path = os.path.join(DIR, f"lib{name}.so")
        if not os.path.exists(path):
            pytest.fail(f"{path} missing: build it with "
                        f"`python3 test/gpu/test_compiled_gpu.py --build {DIR}`")
        return compiled.load(path)

    @pytest.fixture(scope="module")
    def flat():
        return _load("flat")

    @pytest.fixture(scope="module")
    def htmpl():
        return _load("htmpl")

    def graph(n, e, seed, hub=None):
        g = torch.Generator().manual_seed(seed)
        src = torch.randint(0, max(n, 1), (e,), generator=g, dtype=torch.int32)
        dst = torch.randint(0, max(n, 1), (e,), generator=g, dtype=torch.int32)
        if hub is not None:
            dst[: e // 2] = hub
        norm = torch.randn(e, generator=g)
        h = torch.randn(n, F, generator=g)
        return [t.to(DEV) for t in (src, dst, norm, h)]

    def ref_gss(src, dst, norm, h):
        out = torch.zeros(h.shape, dtype=torch.float64, device=DEV)
        out.index_add_(0, dst.long(), norm.double()[:, None] * h.double()[src.long()])
        return out

    @pytest.mark.parametrize("n,e,hub", [(1, 0, None), (1, 1, None), (7, 33, None),
                                         (1000, 20000, None), (100_000, 1_000_000, 17),
                                         (0, 0, None)])
    def test_gather_scale_scatter(flat, n, e, hub):
        src, dst, norm, h = graph(n, e, n + e, hub)
        out = torch.full((n, F), float("nan"), device=DEV)
        flat.gather_scale_scatter(src, dst, norm, h, out)
        # fp32 atomics in any order: a hub row sums 500k terms.
        torch.testing.assert_close(out.double(), ref_gss(src, dst, norm, h),
                                   rtol=1e-3, atol=1e-3)

    @pytest.mark.parametrize("n,max_degree", [(0, 0), (1, 0), (9, 5), (5000, 40)])
    def test_csr_aggregate(flat, n, max_degree):
        g = torch.Generator().manual_seed(n)
        degree = torch.randint(0, max_degree + 1, (n,), generator=g)
        row_ptr = torch.cat([torch.zeros(1, dtype=torch.long), degree.cumsum(0)])
        e = int(row_ptr[-1])
        col = torch.randint(0, max(n, 1), (e,), generator=g, dtype=torch.int32)
        h = torch.randn(n, F, generator=g)
        scale = torch.randn(F, generator=g)
        ref = torch.zeros(n, F, dtype=torch.float64)
        dst = torch.repeat_interleave(torch.arange(n), degree)
        ref.index_add_(0, dst, h.double()[col.long()])
        ref *= scale.double()
        out = torch.empty(n, F, device=DEV)
        flat.aggregate(row_ptr.int().to(DEV), col.to(DEV), h.to(DEV), scale.to(DEV), out)
        torch.testing.assert_close(out.double().cpu(), ref, rtol=1e-4, atol=1e-4)

    @pytest.mark.parametrize("shape", [(0, 3), (1, 1), (17, 300), (1000, 1000)])
    def test_math_float64_and_temporaries(flat, shape):
        x = torch.randn(shape, dtype=torch.float64, device=DEV) * 3
        y = torch.empty_like(x)
        flat.softsign_tanh(x, y)
        torch.testing.assert_close(y, torch.tanh(x) / (1 + x.abs()), rtol=1e-12, atol=1e-14)

    def test_temporaries_come_from_torch(flat):
        """softsign_tanh's float64 temporary is allocated by torch's caching
        allocator (torch's peak counts it, its memory is torch's to reuse);
        the allocator cannot be swapped while nothing is live either way."""
        assert flat.temporaries_in_torch
        x = torch.randn(4096, 1024, dtype=torch.float64, device=DEV)
        y = torch.empty_like(x)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        flat.peak_temporary_bytes(reset=True)
        flat.softsign_tanh(x, y)
        torch.cuda.synchronize()
        temporaries = flat.peak_temporary_bytes()
        assert temporaries >= x.numel() * 8
        assert torch.cuda.max_memory_allocated() - before >= temporaries
        assert torch.cuda.memory_allocated() == before  # freed to torch
        torch.testing.assert_close(y, torch.tanh(x) / (1 + x.abs()), rtol=1e-12, atol=1e-14)

    @pytest.mark.parametrize("rows", [0, 1, 70000])
    def test_blocks_by_threads_nest(flat, rows):
        x = torch.randn(rows, 32, device=DEV)
        y = torch.empty_like(x)
        flat.rows_by_columns(x, y)
        torch.testing.assert_close(y, torch.exp(x) * 2, rtol=1e-5, atol=1e-6)

    def test_modules_load_once(flat):
        x = torch.randn(5, 32, device=DEV)
        y = torch.empty_like(x)
        flat.rows_by_columns(x, y)
        loaded = flat.module_loads()
        assert loaded >= 1
        for _ in range(5):
            flat.rows_by_columns(x, y)
        assert flat.module_loads() == loaded

    def test_caller_stream_and_async(flat):
        src, dst, norm, h = graph(3000, 50000, 5)
        ref = ref_gss(src, dst, norm, h)
        stream = torch.cuda.Stream(DEV)
        outs = []
        with torch.cuda.stream(stream):
            for sync in (True, False):
                out = torch.empty(3000, F, device=DEV)
                flat.gather_scale_scatter(src, dst, norm, h, out, synchronize=sync)
                outs.append(out)
        stream.synchronize()
        for out in outs:
            torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-4)

    def test_htmpl_gemm_through_htmpl_to_loops(htmpl):
        g = torch.Generator().manual_seed(3)
        t, m, n_lhs = 3, 50, 40
        counts = torch.tensor([20, 0, 30])
        seg = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)]).int()
        rows = torch.randint(0, n_lhs, (m,), generator=g, dtype=torch.int32)
        lhs = torch.randn(n_lhs, 16, generator=g)
        rhs = torch.randn(t, 16, 8, generator=g)
        types = torch.repeat_interleave(torch.arange(t), counts)
        ref = torch.einsum("mk,mkn->mn", lhs[rows.long()].double(), rhs[types].double())
        out = torch.full((m, 8), float("nan"), device=DEV)
        htmpl.gemm_typed(lhs.to(DEV), rows.to(DEV), rhs.to(DEV), out, seg.to(DEV))
        torch.testing.assert_close(out.double().cpu(), ref, rtol=1e-4, atol=1e-4)

    def test_argument_errors(flat):
        src, dst, norm, h = graph(4, 6, 1)
        out = torch.empty(4, F, device=DEV)
        with pytest.raises(TypeError, match="argument 'h' must be on a CUDA device"):
            flat.gather_scale_scatter(src, dst, norm, h.cpu(), out)
        with pytest.raises(TypeError, match="argument 'edge_norm' must have dtype float32"):
            flat.gather_scale_scatter(src, dst, norm.double(), h, out)
        with pytest.raises(ValueError, match="but E = 6 from argument 'edge_src'"):
            flat.gather_scale_scatter(src, dst[:5], norm, h, out)

    def test_fast_argument_checks_agree_with_the_full_checks(flat):
        # The common call (contiguous CUDA tensors of the declared dtypes)
        # takes a shorter path; it must bind the same sizes, pointers and
        # device as the full checks, and leave every other call to them.
        entry = flat.entries["gather_scale_scatter"]
        src, dst, norm, h = graph(9, 40, 3)
        out = torch.empty(9, F, device=DEV)
        values = entry._bind((src, dst, norm, h, out), {})
        fast = entry._prepare_cuda_tensors(values)
        full = entry._prepare_checked(values)
        assert fast is not None
        assert fast[0] == full[0]
        assert [(a.name, p, tuple(s)) for a, p, s, _ in fast[1]] == \
            [(a.name, p, tuple(s)) for a, p, s, _ in full[1]]
        assert fast[2] == full[2]
        wide = torch.empty(9, 2 * F, device=DEV)
        for bad in ([src, dst, norm, h.cpu(), out], [src, dst, norm.double(), h, out],
                    [src, dst[:39], norm, h, out], [src, dst, norm, h.t().contiguous().t(), out],
                    [src, dst, norm, h, wide[:, :F]], [src.long(), dst, norm, h, out]):
            assert entry._prepare_cuda_tensors(entry._bind(tuple(bad), {})) is None
        # Repeated calls reuse the cached descriptors and still compute.
        for _ in range(3):
            flat.gather_scale_scatter(src, dst, norm, h, out)
        torch.testing.assert_close(out.double(), ref_gss(src, dst, norm, h), rtol=1e-5, atol=1e-5)

    def test_kernel_fault_raises_launch_error():
        # An out-of-range index is refused by the default graph check (on
        # the GPU tensors); with the check off it faults the kernel, and the
        # context is unusable afterwards, so this runs in its own process
        # (which finds hector as this one does: installed, else PYTHONPATH).
        code = (
            "import torch\n"
            "from hector import compiled\n"
            "lib = compiled.load(%r)\n"
            "d = torch.device('cuda', 0)\n"
            "src = torch.tensor([0, 1 << 30], dtype=torch.int32, device=d)\n"
            "dst = torch.zeros(2, dtype=torch.int32, device=d)\n"
            "norm = torch.ones(2, device=d); h = torch.ones(2, %d, device=d)\n"
            "out = torch.empty(2, %d, device=d)\n"
            "try:\n"
            "    lib.gather_scale_scatter(src, dst, norm, h, out)\n"
            "except ValueError as e:\n"
            "    print('Checked', e)\n"
            "try:\n"
            "    lib.gather_scale_scatter(src, dst, norm, h, out, check_indices=False)\n"
            "except compiled.LaunchError as e:\n"
            "    print('LaunchError', e.status, e)\n"
        ) % (os.path.join(DIR, "libflat.so"), F, F)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                timeout=120)
        assert "Checked" in result.stdout and "holds 1073741824" in result.stdout, \
            result.stdout + result.stderr
        assert "LaunchError 4" in result.stdout, result.stdout + result.stderr
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in result.stdout, result.stdout

    def test_library_loaded_before_torch_touches_the_gpu():
        code = (
            "from hector import compiled\n"
            "lib = compiled.load(%r)\n"
            "import torch\n"
            "x = torch.randn(3, 32, device='cuda'); y = torch.empty_like(x)\n"
            "lib.rows_by_columns(x, y)\n"
            "print('ok', bool(torch.allclose(y, torch.exp(x) * 2)))\n"
        ) % os.path.join(DIR, "libflat.so")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                timeout=120)
        assert "ok True" in result.stdout, result.stdout + result.stderr


def bench(directory: str) -> None:
    """Rough timings of the flat gather-scale-scatter against torch (info)."""
    import torch

    from hector import compiled

    lib = compiled.load(os.path.join(directory, "libflat.so"))
    dev = torch.device("cuda", 0)
    name = torch.cuda.get_device_name(dev)
    for n, e in ((94_806, 672_884), (881_680, 5_668_682)):
        g = torch.Generator().manual_seed(0)
        src = torch.randint(0, n, (e,), generator=g, dtype=torch.int32).to(dev)
        dst = torch.randint(0, n, (e,), generator=g, dtype=torch.int32).to(dev)
        norm, h = torch.randn(e, device=dev), torch.randn(n, F, device=dev)
        out = torch.empty(n, F, device=dev)

        def ours():
            lib.gather_scale_scatter(src, dst, norm, h, out, synchronize=False)

        def theirs():
            out.zero_().index_add_(0, dst.long(), norm[:, None] * h[src.long()])

        for label, fn in (("hector", ours), ("torch", theirs)):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
            start.record()
            for _ in range(20):
                fn()
            stop.record()
            stop.synchronize()
            print(f"{name}: gather-scale-scatter N={n} E={e} F={F} {label}: "
                  f"{start.elapsed_time(stop) / 20:.3f} ms")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--build":
        build(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--bench":
        bench(sys.argv[2])
    else:
        raise SystemExit(__doc__)

"""Host-resident node features on a GPU: RGCN, RGAT and HGT compiled with
`hectorc --target=cuda --host-resident=h`, called with `h` in a
`hector.unified` tensor (pinned, mapped host memory that the kernels read in
place over PCIe), give the same result as the same library with `h` on the
device, and as the float32 torch reference; no device copy of `h` is made.

Checks (pytest):
- every model on the edge-case graphs of test/python/model_cases.py
  (isolated nodes, empty edge types, self loops and duplicates, a hub):
  unified vs device h (max|a - b| / max|b| < 1e-5: atomics may reorder
  float32 sums) and vs torch (< 1e-4), every output written (NaN-filled);
- no copy: a 256 MiB h; torch's allocator does not grow during the call
  (max_memory_allocated: nothing on the Python side copies h), and the
  library's temporaries (peak_temporary_bytes) are exactly those of the
  call with h on the device (the generated code has no staging buffer:
  hectorc's hector-check-host-resident refuses any host-side use of h);
- in place: writing to the host tensor after wrapping it changes the next
  result (the kernels read host memory, not a cached copy);
- a pinned CPU tensor (torch pin_memory) works like a unified one; a
  pageable one raises TypeError.

Timings (`--bench`, informational, never asserted): the 8 dataset shapes at
width 64, one head, each model: h on the device, h host-resident, and h
copied from pinned host memory to the device before every call (what a
caller without the option does).

The GPU machines have no hectorc, so the libraries are built here first:
    python3 test/gpu/test_host_resident_gpu.py --build build/gpu-models/host
(test/gpu/build_models.sh does it), then on the GPU machine:
    python3 test/gpu/test_host_resident_gpu.py --bench [--json out.json]
runs the pytest checks and then the timings; the last line sums up
(test/gpu/run_validation.sh). Not collected by CI.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys

from gpu_paths import REPO as _REPO  # noqa: E402  (sets the import paths)

import numpy as np  # noqa: E402

from cuda_torch import cuda_torch  # noqa: E402

from model_cases import GRAPHS, library_name  # noqa: E402

MODELS = [("rgcn", 64, 1), ("rgat", 64, 1), ("rgat", 64, 4), ("hgt", 64, 1), ("hgt", 64, 4)]
DATASETS = ("aifb", "mutag", "bgs", "am", "fb15k", "biokg", "wikikg2", "mag")
DIR_ENV = "HECTOR_HOST_RESIDENT_DIR"
DEFAULT_DIR = os.path.join(_REPO, "build", "gpu-models", "host")


def build(directory: str) -> None:
    """Compiles every model of MODELS with --host-resident=h for cuda."""
    from hectorc_support import find_tool

    hectorc = find_tool("hectorc")
    if hectorc is None:
        raise SystemExit("hectorc not found in $HECTOR_BUILD_DIR/bin or build/bin")
    os.makedirs(directory, exist_ok=True)
    for model, width, heads in MODELS:
        path = os.path.join(directory, library_name(model, width, heads))
        source = subprocess.run(
            [sys.executable, os.path.join(_REPO, "examples", "generate.py"), model,
             "--width", str(width), "--heads", str(heads)],
            check=True, capture_output=True, text=True).stdout
        with open(path + ".mlir", "w") as f:
            f.write(source)
        subprocess.run([hectorc, path + ".mlir", "--target=cuda", "--host-resident=h",
                        "-o", path], check=True)
    print(f"test_host_resident_gpu: wrote {len(MODELS)} libraries to {directory}")


# ---- shared by the tests and the timings ---------------------------------------

def load(model, width, heads):
    from hector import compiled

    directory = os.environ.get(DIR_ENV, DEFAULT_DIR)
    path = os.path.join(directory, library_name(model, width, heads))
    if not os.path.exists(path):
        import pytest

        pytest.skip(f"{path} not built (test/gpu/build_models.sh)")
    lib = compiled.load(path)
    assert [a.name for a in lib[model].arguments if a.host_resident] == ["h"]
    return lib


class Case:
    """One model on one graph: graph arrays and weights on the GPU, h on the host."""

    def __init__(self, lib, model, graph, width, heads, seed):
        import torch
        from hector import graph as hgraph

        self.torch, self.lib, self.model, self.heads = torch, lib, model, heads
        self.graph = graph
        self.device = torch.device("cuda")
        pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                                graph["num_node_types"], graph["num_edge_types"],
                                device=self.device)
        from reference import params

        rng = np.random.default_rng(seed)
        self.n = len(graph["node_type"])
        self.h_host = torch.from_numpy(
            rng.standard_normal((self.n, width)).astype(np.float32))
        weights = params.make_params(model, graph, width, width, heads, seed=seed)
        self.weights = {k: torch.from_numpy(v).to(self.device) for k, v in weights.items()}
        self.arrays = pre.arrays()
        self.width = width

    def call(self, h, synchronize=True, out=None):
        torch = self.torch
        if out is None:
            out = torch.full((self.n, self.width), float("nan"), device=self.device)
        entry = self.lib[self.model]
        values = dict(self.arrays, h=h, result0=out, **self.weights)
        entry(**{a.name: values[a.name] for a in entry.arguments}, synchronize=synchronize)
        return out

    def reference(self):
        from reference import models_torch

        torch = self.torch
        tg = models_torch.TorchGraph(self.graph, device=self.device, float_dtype=torch.float32)
        with torch.no_grad():
            return models_torch.forward(self.model, tg, self.h_host.to(self.device),
                                        self.weights, self.heads)


def relative(a, b):
    scale = float(b.abs().max().clamp_min(1e-30)) if b.numel() else 1.0
    return float((a - b).abs().max()) / scale if a.numel() else 0.0


# ---- pytest ------------------------------------------------------------------------


def _params():
    return [(m, w, h, g) for m, w, h in MODELS for g in sorted(GRAPHS)]


def pytest_generate_tests(metafunc):
    if "edge_case" in metafunc.fixturenames:
        metafunc.parametrize("edge_case", _params(), ids=lambda c: "-".join(map(str, c)))
    if "config" in metafunc.fixturenames:
        metafunc.parametrize("config", MODELS, ids=lambda c: "-".join(map(str, c)))


def test_same_result_as_device_features(edge_case):
    torch = cuda_torch()
    from hector.unified import unified

    model, width, heads, kind = edge_case
    lib = load(model, width, heads)
    graph = GRAPHS[kind](np.random.default_rng([width, heads, len(kind)]))
    case = Case(lib, model, graph, width, heads, seed=width + heads)
    on_device = case.call(case.h_host.to(case.device))
    host = case.call(unified(case.h_host))
    torch.cuda.synchronize()
    assert bool(torch.isfinite(host).all()), "an output row was not written"
    assert relative(host, on_device) < 1e-5
    assert relative(host, case.reference()) < 1e-4


def test_no_device_copy_of_h(config):
    torch = cuda_torch()
    from hector.unified import unified

    model, width, heads = config
    lib = load(model, width, heads)
    n = (256 << 20) // (width * 4)  # h: 256 MiB
    rng = np.random.default_rng(1)
    graph = {"node_type": rng.integers(0, 3, n), "src": rng.integers(0, n, 2 * n),
             "dst": rng.integers(0, n, 2 * n), "etype": rng.integers(0, 4, 2 * n),
             "num_node_types": 3, "num_edge_types": 4}
    case = Case(lib, model, graph, width, heads, seed=3)
    h_bytes = case.h_host.numel() * 4
    out = torch.empty((n, width), device=case.device)

    on_device = case.h_host.to(case.device)
    lib.peak_temporary_bytes(reset=True)
    case.call(on_device, out=out)
    device_temporaries = lib.peak_temporary_bytes(reset=True)
    expected = out.clone()
    del on_device
    torch.cuda.synchronize()

    h = unified(case.h_host)
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    case.call(h, out=out)
    torch.cuda.synchronize()
    host_temporaries = lib.peak_temporary_bytes(reset=True)
    # torch made no copy (its allocator did not grow during the call) ...
    assert torch.cuda.max_memory_allocated() - before < h_bytes // 16
    # ... nor did the library: the same temporaries as with h on the device.
    assert host_temporaries == device_temporaries
    assert relative(out, expected) < 1e-5


def test_reads_host_memory_in_place(config):
    torch = cuda_torch()
    from hector.unified import unified

    model, width, heads = config
    lib = load(model, width, heads)
    graph = GRAPHS["random_graph"](np.random.default_rng(5))
    case = Case(lib, model, graph, width, heads, seed=5)
    h = unified(case.h_host)
    first = case.call(h).clone()
    case.h_host.mul_(-2.0)  # the caller's host tensor, after it was wrapped
    second = case.call(h)
    expected = case.call(case.h_host.to(case.device))
    torch.cuda.synchronize()
    assert relative(second, expected) < 1e-5
    assert relative(second, first) > 1e-3


def test_pinned_and_pageable_host_tensors():
    import pytest

    torch = cuda_torch()
    lib = load("rgat", 64, 1)
    graph = GRAPHS["random_graph"](np.random.default_rng(6))
    case = Case(lib, "rgat", graph, 64, 1, seed=6)
    expected = case.call(case.h_host.to(case.device))
    pinned = case.call(case.h_host.pin_memory())
    torch.cuda.synchronize()
    assert relative(pinned, expected) < 1e-5
    with pytest.raises(TypeError, match="pageable memory"):
        case.call(case.h_host)


# ---- timings -----------------------------------------------------------------------

def timed(torch, fn, repeats=10):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return float(np.median(times))


def bench(datasets):
    import torch
    from hector.datasets import synthetic
    from hector.unified import unified

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for name in datasets:
        graph = synthetic.generate(name, seed=0)
        graph = {"node_type": graph.node_type, "src": graph.src, "dst": graph.dst,
                 "etype": graph.etype, "num_node_types": graph.num_node_types,
                 "num_edge_types": graph.num_edge_types}
        for model, width, heads in MODELS:
            if heads != 1:
                continue
            from hector import compiled

            path = os.path.join(os.environ.get(DIR_ENV, DEFAULT_DIR),
                                library_name(model, width, heads))
            lib = compiled.load(path)
            row = {"dataset": name, "model": model, "nodes": len(graph["node_type"]),
                   "edges": len(graph["src"])}
            try:
                case = Case(lib, model, graph, width, heads, seed=0)
                pinned = case.h_host.pin_memory()
                dev = pinned.to(case.device)
                out = torch.empty((case.n, width), device=case.device)
                h = unified(pinned)
                row["device_ms"] = timed(torch, lambda: case.call(dev, False, out))
                row["host_resident_ms"] = timed(torch, lambda: case.call(h, False, out))

                def copy_then_call():
                    dev.copy_(pinned, non_blocking=True)
                    case.call(dev, False, out)

                row["copy_then_call_ms"] = timed(torch, copy_then_call)
                case.call(h, True, out)
                expected = case.call(dev, True)
                row["error"] = relative(out, expected)
                del dev, out, h, case
            except (torch.cuda.OutOfMemoryError, RuntimeError) as err:
                row["status"] = f"{type(err).__name__}: {str(err)[:200]}"
            torch.cuda.empty_cache()
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


class _Outcomes:
    """Counts test outcomes (a pytest plugin)."""

    def __init__(self):
        self.counts = collections.Counter()

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.counts[report.outcome] += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", metavar="DIR", help="compile the libraries into DIR (here)")
    parser.add_argument("--bench", action="store_true", help="run the checks, then the timings")
    parser.add_argument("--libs", help=f"libraries (default ${DIR_ENV}, else {DEFAULT_DIR})")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--json", help="write the timings here")
    args = parser.parse_args()
    if args.build:
        build(args.build)
        return 0
    if args.libs:
        os.environ[DIR_ENV] = os.path.abspath(args.libs)
    import pytest
    import torch

    counts = _Outcomes()
    rc = pytest.main(["-q", "-p", "no:cacheprovider", __file__], plugins=[counts])
    rows = bench(args.datasets.split(",")) if args.bench else []
    if rows:
        print(f"\nGPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, width 64, "
              "1 head, ms (median of 10, CUDA events)")
        print("| dataset | model | h on device | h host-resident | copy h, then call | "
              "rel. error |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            if "status" in r:
                print(f"| {r['dataset']} | {r['model']} | {r['status']} | | | |")
                continue
            print(f"| {r['dataset']} | {r['model']} | {r['device_ms']:.3f} | "
                  f"{r['host_resident_ms']:.3f} | {r['copy_then_call_ms']:.3f} | "
                  f"{r['error']:.1e} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "pytest_exit": int(rc), "timings": rows}, f, indent=1)
    c = counts.counts
    print(f"host-resident checks: {c['passed']} passed, {c['failed']} failed, "
          f"{c['skipped']} skipped (pytest exit {int(rc)})"
          + (f"; {len(rows)} timings" if rows else ""))
    return int(rc)


if __name__ == "__main__":
    sys.exit(main())

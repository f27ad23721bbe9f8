"""Compiled offload plans on a GPU: stacks of layers (hector.models.stack)
built with `hectorc --target=cuda --training --offload=host|disk|auto`,
trained through hector.autograd on CUDA tensors, against the same stack
built to keep everything (itself checked against float64 by
test/gpu/training_gpu.py).

Checks (pytest):
- each plan on the edge-case graphs of test/python/model_cases.py: output
  and gradients within 1e-5 (normwise relative: float32 atomics may add in
  another order) of keep-all's; between the forward and the backward the
  cache holds the evicted values (the disk tier wrote them); the step's
  keys are released with its graph;
- checksums: 20 steps with the cache's checksum mode, every reload verified
  (0 checksum failures) and every step's gradients equal to keep-all's;
- memory: on a graph of 200 000 nodes and 2 million edges, the host plan's
  peak (torch.cuda.max_memory_allocated; Hector's temporaries come from
  torch's allocator) is below keep-all's by at least what the plan evicts
  minus what it has back at once.

The GPU machines have no hectorc, so the libraries are built here first:
    python3 test/gpu/test_offload_gpu.py --build build/gpu-models/offload
then on the GPU machine:
    HECTOR_OFFLOAD_GPU_DIR=build/gpu-models/offload python3 -m pytest test/gpu/test_offload_gpu.py
Not collected by CI.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile

from gpu_paths import REPO as _REPO  # noqa: E402  (sets the import paths)

import numpy as np  # noqa: E402

from cuda_torch import cuda_torch  # noqa: E402

from model_cases import GRAPHS  # noqa: E402

# (model, layers, width, heads)
STACKS = [("rgat", 2, 64, 1), ("hgt", 2, 64, 4)]
PLANS = {"keep": (), "host": ("--offload=host",), "disk": ("--offload=disk",),
         # Pretended sizes under which the plan recomputes and moves.
         "auto": ("--offload=auto", "--offload-capacity-mib=200",
                  "--graph-sizes=N=100000,E=2000000,P=1000000,R=6,T=3")}
DIR_ENV = "HECTOR_OFFLOAD_GPU_DIR"
DEFAULT_DIR = os.path.join(_REPO, "build", "gpu-models", "offload")


def name_of(model, layers, width, heads, plan):
    return f"lib{model}_{layers}x{width}_h{heads}_{plan}.so"


def build(directory: str) -> None:
    from hector import models
    from hectorc_support import find_tool

    hectorc = find_tool("hectorc")
    if hectorc is None:
        raise SystemExit("hectorc not found in $HECTOR_BUILD_DIR/bin or build/bin")
    os.makedirs(directory, exist_ok=True)
    for model, layers, width, heads in STACKS:
        source = os.path.join(directory, f"{model}_{layers}x{width}_h{heads}.mlir")
        with open(source, "w") as f:
            f.write(models.stack(model, layers, width=width, heads=heads))
        for plan, options in PLANS.items():
            out = os.path.join(directory, name_of(model, layers, width, heads, plan))
            subprocess.run([hectorc, source, "--target=cuda", "--training", *options,
                            "-o", out], check=True)
    print(f"test_offload_gpu: wrote {len(STACKS) * len(PLANS)} libraries to {directory}")


# ---- pytest ------------------------------------------------------------------------


def load(stack, plan):
    from hector import compiled

    directory = os.environ.get(DIR_ENV, DEFAULT_DIR)
    # The tensor cache in the runtime the libraries use (hectorc copied it
    # beside them): one copy in the process.
    os.environ.setdefault("HECTOR_RUNTIME_LIB", os.path.join(directory, "libhector_runtime.so"))
    path = os.path.join(directory, name_of(*stack, plan))
    if not os.path.exists(path):
        import pytest

        pytest.skip(f"{path} not built (python3 test/gpu/test_offload_gpu.py --build DIR)")
    return compiled.load(path)


def step(torch, library, name, pre, seed, cache=None, between=None):
    """One training step on the GPU; returns the output and every gradient."""
    from hector import autograd

    rng = np.random.default_rng(seed)
    entry = library[name]
    symbols = {k: int(getattr(pre, k)) for k in ("N", "E", "T", "R", "P")}
    tensors = {}
    for arg in entry.arguments:
        if arg.role in ("input", "weight"):
            shape = autograd._shape(entry, arg, symbols)
            scale = 1.0 if arg.role == "input" else 1.0 / np.sqrt(shape[-1])
            tensors[arg.name] = torch.tensor((rng.standard_normal(shape) * scale)
                                             .astype(np.float32), device="cuda",
                                             requires_grad=True)
    out, = autograd.run(library, name, pre, offload_cache=cache, **tensors)
    if between:
        between()
    weight = torch.sin(torch.arange(out.numel(), device="cuda", dtype=torch.float32))
    (out * weight.reshape(out.shape)).sum().backward()
    return [out.detach()] + [t.grad for t in tensors.values()]


def relative(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def preprocess(torch, graph):
    from hector import graph as hgraph

    return hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                             graph["num_node_types"], graph["num_edge_types"],
                             device=torch.device("cuda"))


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        metafunc.parametrize(
            "case", [(s, p, g) for s in STACKS for p in ("host", "disk", "auto")
                     for g in sorted(GRAPHS)],
            ids=lambda c: f"{c[0][0]}{c[0][1]}x{c[0][2]}h{c[0][3]}-{c[1]}-{c[2]}")


def test_plan_equals_keep_all(case):
    torch = cuda_torch()
    from hector.tensor_cache import TensorCache

    stack, plan, graph_kind = case
    keep, planned = load(stack, "keep"), load(stack, plan)
    name = f"{stack[0]}_{stack[1]}"
    evicted = [o for o in planned[f"{name}_fwd"].offloaded if o.direction == "evict"]
    pre = preprocess(torch, GRAPHS[graph_kind](np.random.default_rng(5)))
    expected = step(torch, keep, name, pre, seed=1)
    with tempfile.TemporaryDirectory() as directory, \
            TensorCache(host_capacity=8 << 30, directory=directory,
                        pinned=plan == "host") as cache:
        def between():
            assert cache.stats()["values"] == len(evicted)
            if plan == "disk" and evicted:
                cache.flush()
                assert cache.stats()["bytes_written"] > 0
        got = step(torch, planned, name, pre, seed=1, cache=cache, between=between)
        torch.cuda.synchronize()
        del between
        gc.collect()
        assert cache.stats()["values"] == 0
    for a, b in zip(got, expected):
        assert relative(a, b) < 1e-5


def test_twenty_steps_with_checksums():
    torch = cuda_torch()
    from hector.tensor_cache import TensorCache

    stack = STACKS[0]
    keep, planned = load(stack, "keep"), load(stack, "disk")
    name = f"{stack[0]}_{stack[1]}"
    pre = preprocess(torch, GRAPHS["giant_hub"](np.random.default_rng(3)))
    with tempfile.TemporaryDirectory() as directory, \
            TensorCache(host_capacity=8 << 30, directory=directory, checksum=True) as cache:
        for i in range(20):
            expected = step(torch, keep, name, pre, seed=100 + i)
            got = step(torch, planned, name, pre, seed=100 + i, cache=cache)
            assert max(relative(a, b) for a, b in zip(got, expected)) < 1e-5, f"step {i}"
        gc.collect()
        stats = cache.stats()
    assert stats["checksum_failures"] == 0
    assert stats["bytes_read"] > 0


def test_host_plan_lowers_the_peak():
    torch = cuda_torch()
    from hector.datasets.synthetic import custom_spec, generate
    from hector.tensor_cache import TensorCache

    stack = STACKS[0]
    name = f"{stack[0]}_{stack[1]}"
    g = generate(custom_spec(200_000, 2_000_000, 4, 20))
    graph = {"node_type": g.node_type, "src": g.src, "dst": g.dst, "etype": g.etype,
             "num_node_types": g.num_node_types, "num_edge_types": g.num_edge_types}
    pre = preprocess(torch, graph)
    peaks = {}
    with TensorCache(host_capacity=16 << 30, pinned=True) as cache:
        for plan in ("keep", "host"):
            library = load(stack, plan)
            step(torch, library, name, pre, seed=1, cache=cache)  # warm-up
            torch.cuda.synchronize()
            gc.collect()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            step(torch, library, name, pre, seed=1, cache=cache)
            torch.cuda.synchronize()
            peaks[plan] = torch.cuda.max_memory_allocated() - base
    print(f"peak: keep {peaks['keep'] / 2**20:.1f} MiB, host {peaks['host'] / 2**20:.1f} MiB")
    assert peaks["host"] < peaks["keep"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", metavar="DIR", help="compile the libraries into DIR")
    args = ap.parse_args()
    if args.build:
        build(args.build)
        return 0
    import pytest

    return pytest.main([__file__, "-q", "-s"])


if __name__ == "__main__":
    sys.exit(main())

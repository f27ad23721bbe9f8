"""The gradient ops and the training entries compiled with
`hectorc --target=cuda`, on a GPU, against float64 torch on the same GPU.

The cases are those of the CPU test (test/python/gradient_cases.py:
typed_linear transpose, aggregate to src and its scattering GEMM,
weight_grad of every index kind, compact gradients, type_sum, sums of
weights, zeros, degree_norm, slice, equal, leaky_relu_grad, the by_type
edge_softmax and group_sum, and the f /
f_fwd / f_bwd trio with a compact saved tensor), on the edge-case graphs and
the large graphs (many edge types with Zipf hubs, 2M edges) of
model_cases.py. Their references are the same functions, run by torch in
float64 on the GPU. A case passes when max|out - ref| / max|ref| < 1e-4 (as
the model validation; atomics reorder the float32 sums) and every output
element was written (outputs start as NaN).

The GPU machines have no hectorc, so the libraries are built here first:

    python3 test/gpu/test_gradient_ops_gpu.py --build build/gpu-models/gradients

(hectorc from $HECTOR_BUILD_DIR/bin or build/bin; test/gpu/build_models.sh
does it), and the folder travels to the GPU machine, where

    HECTOR_GRADIENT_GPU_DIR=build/gpu-models/gradients \\
        python3 -m pytest test/gpu/test_gradient_ops_gpu.py

runs the checks (test/gpu/run_validation.sh). Not collected by CI.
"""

from __future__ import annotations

import os
import subprocess
import sys

import gpu_paths  # noqa: E402,F401  (sets the import paths)

import gradient_cases  # noqa: E402
from hectorc_support import find_tool  # noqa: E402

TOLERANCE = 1e-4
GRADIENTS, TRAINING = "libgradients.so", "libtraining.so"


def build(directory: str) -> None:
    """Compiles every case (one library) and the training module for cuda."""
    hectorc = find_tool("hectorc")
    if hectorc is None:
        raise SystemExit("hectorc not found in $HECTOR_BUILD_DIR/bin or build/bin")
    os.makedirs(directory, exist_ok=True)
    sources = {GRADIENTS: "".join(case.ir for case in gradient_cases.cases()),
               TRAINING: gradient_cases.training_module(64)}
    for name, source in sources.items():
        path = os.path.join(directory, name)
        with open(path + ".mlir", "w") as f:
            f.write(source)
        subprocess.run([hectorc, path + ".mlir", "--target=cuda", "-o", path], check=True)
    print(f"test_gradient_ops_gpu: wrote {', '.join(sources)} to {directory}")


class TorchOps:
    """gradient_cases' array operations in torch, float64 on `device`."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def f64(self, x):
        return self.torch.as_tensor(x, device=self.device).double()

    def ids(self, x):
        return self.torch.as_tensor(x, device=self.device).long()

    def zeros(self, *shape):
        return self.torch.zeros(shape, dtype=self.torch.float64, device=self.device)

    def einsum(self, spec, *operands):
        return self.torch.einsum(spec, *operands)

    def index_add(self, out, index, values):
        return out.index_add_(0, index, values)

    def where(self, cond, a, b):
        return self.torch.where(cond, a, b)

    def indicator(self, cond):
        return cond.double()

    def total(self, x):
        return x.sum(0)

    def arange(self, n):
        return self.torch.arange(n, device=self.device)

    def repeat(self, values, counts):
        return self.torch.repeat_interleave(values, counts)

    def diff(self, x):
        return self.torch.diff(x)

    def bincount(self, x, n):
        return self.torch.bincount(x, minlength=n).double()


if __name__ != "__main__":
    import pytest

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU", allow_module_level=True)
    DIR = os.environ.get("HECTOR_GRADIENT_GPU_DIR")
    if not DIR:
        pytest.skip("set HECTOR_GRADIENT_GPU_DIR to the folder written by --build",
                    allow_module_level=True)

    import numpy as np

    from hector import compiled, graph as hgraph
    from model_cases import GRAPHS as SMALL_GRAPHS, LARGE_GRAPHS

    GRAPHS = dict(SMALL_GRAPHS, **LARGE_GRAPHS)

    DEV = torch.device("cuda", 0)
    OPS = TorchOps(torch, DEV)
    CASES = {case.name: case for case in gradient_cases.cases()}

    @pytest.fixture(scope="module")
    def library():
        return compiled.load(os.path.join(DIR, GRADIENTS))

    @pytest.fixture(scope="module")
    def training():
        return compiled.load(os.path.join(DIR, TRAINING))

    def preprocessed(graph_kind, seed):
        rng = np.random.default_rng(seed)
        graph = GRAPHS[graph_kind](rng)
        pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                                graph["num_node_types"], graph["num_edge_types"])
        return {k: torch.as_tensor(v, device=DEV) for k, v in pre.arrays().items()}, rng

    def symbols(g):
        return {"N": len(g["node_type"]), "E": len(g["edge_src"]),
                "R": len(g["etype_offsets"]) - 1, "T": len(g["ntype_offsets"]) - 1,
                "P": len(g["compact_src"])}

    def call(entry, g, rng, given=None):
        """Runs `entry` with random inputs (or `given` ones) and NaN-filled
        outputs; returns (all values by name, outputs by name)."""
        sym = symbols(g)
        values, outputs = dict(g), {}
        for arg in entry.arguments:
            if arg.role == "graph":
                continue
            shape = tuple(sym[d] if isinstance(d, str) else d for d in arg.shape)
            if arg.is_output:
                outputs[arg.name] = values[arg.name] = torch.full(
                    shape, float("nan"), dtype=torch.float32, device=DEV)
            elif given is not None and arg.name in given:
                values[arg.name] = given[arg.name]
            else:
                values[arg.name] = torch.as_tensor(
                    rng.standard_normal(shape).astype(np.float32), device=DEV)
        entry(**{a.name: values[a.name] for a in entry.arguments})
        return values, outputs

    def reference(fn, g, values):
        floats = {k: OPS.f64(v) for k, v in values.items() if k not in g}
        return fn(floats, {k: OPS.ids(v) for k, v in g.items()}, OPS)

    def check(outputs, expected):
        assert set(outputs) == set(expected)
        for name, out in outputs.items():
            want = expected[name]
            assert tuple(out.shape) == tuple(want.shape), name
            assert not torch.isnan(out).any(), f"{name}: some elements were never written"
            scale = float(want.abs().max()) if want.numel() else 0.0
            if scale == 0.0:
                assert out.numel() == 0 or out.abs().max().item() == 0, \
                    f"{name} must be all zeros"
                continue
            error = float((out.double() - want).abs().max()) / scale
            assert error < TOLERANCE, f"{name}: relative error {error:.2e}"

    @pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
    @pytest.mark.parametrize("case", sorted(CASES))
    def test_case_matches_torch(library, case, graph_kind):
        g, rng = preprocessed(graph_kind, [len(case), len(graph_kind)])
        values, outputs = call(library[case], g, rng)
        check(outputs, reference(CASES[case].reference, g, values))

    @pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
    def test_training_entries(training, graph_kind):
        g, rng = preprocessed(graph_kind, 11)
        values, outputs = call(training["f_fwd"], g, rng)
        inference = call(training["f"], g, rng, given=values)[1]
        bwd_values, grads = call(training["f_bwd"], g, rng, given=dict(values, **outputs))
        expected = reference(gradient_cases.training_reference, g, bwd_values)
        check(outputs, {k: expected[k] for k in outputs})
        check(inference, {"result0": expected["result0"]})
        check(grads, {k: expected[k] for k in grads})

    def test_training_manifest(training):
        fwd, bwd = training.training_entries("f")
        assert (fwd.kind, bwd.kind) == ("training_forward", "training_backward")
        saved = [a for a in bwd.arguments if a.role == "saved"]
        assert [(a.name, a.shape, a.is_output) for a in saved] == [("saved0", ("P", 64), False)]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--build":
        build(sys.argv[2])
    else:
        raise SystemExit(__doc__)

"""Long and deeply shared row expressions (test/long_programs.py), compiled
for the CPU, against PyTorch autograd in float64.

hgraph-to-htmpl evaluates each shared subexpression once and cuts row
expressions longer than its fusion bound into stored pieces
(test/hectorc/compile-time.mlir checks that they compile in time); here the
inference, training forward and backward entries of such programs must
give torch's result and gradients: a doubling chain, swish and residual
chains long enough to be cut in the forward and (recomputed) in the
backward, and a chain of mixed unary ops.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import long_programs  # noqa: E402
from hector import compiled, graph as hgraph  # noqa: E402
from hectorc_support import build  # noqa: E402
from model_cases import random_graph, relative_error  # noqa: E402

WIDTH = 8
PROGRAMS = [("add", 10), ("swish", 40), ("residual", 150), ("chain", 40)]


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("long")
    return {(kind, steps): compiled.load(build(
        directory, long_programs.program(kind, steps, WIDTH), "--target=cpu", "--training",
        name=f"lib{kind}{steps}.so")) for kind, steps in PROGRAMS}


def call(entry, values, sizes):
    """Runs `entry`; its outputs are allocated from their manifest shapes
    (NaN-filled: every element must be written) and returned by name."""
    outputs = {}
    for a in entry.arguments:
        if a.is_output:
            shape = [sizes[s] if isinstance(s, str) else s for s in a.shape]
            outputs[a.name] = np.full(shape, np.nan, np.float32)
    entry(**{a.name: outputs.get(a.name, values.get(a.name)) for a in entry.arguments})
    return outputs


def reference(kind, steps, graph, h, W, d_out):
    """The layer's output and d(sum(out * d_out))/d(h, W) by torch autograd."""
    h64 = torch.tensor(h, dtype=torch.float64, requires_grad=True)
    W64 = torch.tensor(W, dtype=torch.float64, requires_grad=True)
    src, dst, etype = (torch.tensor(graph[k], dtype=torch.long) for k in ("src", "dst", "etype"))
    v = torch.bmm(h64[src].unsqueeze(1), W64[etype]).squeeze(1)
    v = long_programs.reference(kind, steps, v)
    out = torch.zeros(h.shape, dtype=torch.float64).index_add(0, dst, v)
    (out * torch.tensor(d_out, dtype=torch.float64)).sum().backward()
    return out.detach().numpy(), h64.grad.numpy(), W64.grad.numpy()


@pytest.mark.parametrize("kind,steps", PROGRAMS)
def test_long_program_matches_torch(libraries, kind, steps):
    lib = libraries[(kind, steps)]
    rng = np.random.default_rng(steps)
    graph = random_graph(rng)
    n, r = graph["node_type"].shape[0], graph["num_edge_types"]
    h = rng.standard_normal((n, WIDTH)).astype(np.float32)
    # Small weights keep the doubling chain's values and the swish chain's
    # gradients in float32's comfortable range.
    W = (rng.standard_normal((r, WIDTH, WIDTH)) / (4 * WIDTH)).astype(np.float32)
    d_out = rng.standard_normal((n, WIDTH)).astype(np.float32)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    arrays = pre.arrays()
    sizes = {"N": n, "E": graph["src"].shape[0], "R": r, "T": graph["num_node_types"],
             "P": arrays["compact_src"].shape[0]}
    values = dict(arrays, h=h, W=W)
    expected_out, expected_dh, expected_dW = reference(kind, steps, graph, h, W, d_out)

    out = call(lib["f"], values, sizes)["result0"]
    assert relative_error(out, expected_out) < 1e-5
    forward = call(lib["f_fwd"], values, sizes)
    assert relative_error(forward["result0"], expected_out) < 1e-5
    values.update(forward, d_result0=d_out)
    gradients = call(lib["f_bwd"], values, sizes)
    assert relative_error(gradients["d_h"], expected_dh) < 1e-4
    assert relative_error(gradients["d_W"], expected_dW) < 1e-4

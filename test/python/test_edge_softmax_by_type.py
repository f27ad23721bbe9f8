"""`hgraph.edge_softmax ... by_type` (the softmax within each (destination,
edge type) group, PyG RGATConv's 'within-relation') and `hgraph.group_sum`,
compiled by hectorc for the CPU, forward and backward (`--training`).

Against float64 NumPy written from the math: α_e = exp(s_e − max_g s) /
Σ_g exp(s − max_g s) and ds_e = α_e (dα_e − Σ_g α dα) for the group g of
(destination, edge type) of e. Random graphs of several sizes with one head
and four, each with nodes that have no incoming edges, relations absent at
some destinations (and one absent everywhere), groups of one edge, a hub
with many groups, and scores in the hundreds (float32 exp overflows past
88: each group must subtract its own maximum). Outputs start as NaN, so
every element must be written.
"""

from __future__ import annotations

import numpy as np
import pytest

from hector import compiled, graph as hgraph
from hectorc_support import build
from model_cases import relative_error

TOLERANCE = 1e-5
HEADS = (1, 4)


def program(heads):
    e = f"!hgraph.edge<{heads}xf32, heads = {heads}>"
    return f"""
hgraph.func @within{heads}(%g: !hgraph.graph, %s: {e} {{hgraph.name = "s"}},
                     %x: {e} {{hgraph.name = "x"}}) -> ({e}, {e}) {{
  %t = hgraph.const_scale %s by 2.000000e+00 : {e}
  %a = hgraph.edge_softmax %t by_type : {e}
  %y = hgraph.group_sum %x : {e}
  hgraph.return %a, %y : {e}, {e}
}}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    source = "".join(program(h) for h in HEADS)
    directory = tmp_path_factory.mktemp("by_type")
    forward = compiled.load(build(directory, source, "--target=cpu", name="libfwd.so"))
    training = compiled.load(build(directory, source, "--target=cpu", "--training",
                                   name="libtrain.so"))
    return forward, training


def random_graph(rng, nodes, edges, relations):
    """Edges into the first 3/4 of the nodes (the rest have no in-edges); the
    random edges leave relation R-1 out; one destination with one edge of
    relation 0 and one of relation 1 (groups of one; with R > 2, relation
    R-1 is used nowhere); node 0 a hub with three edges of every relation
    below R-1."""
    receivers = max(1, (3 * nodes) // 4)
    src = rng.integers(0, nodes, edges)
    dst = rng.integers(0, receivers, edges)
    etype = rng.integers(0, max(1, relations - 1), edges)
    lonely = receivers - 1  # exactly two edges, of relations 0 and 1
    keep = dst != lonely
    src, dst, etype = src[keep], dst[keep], etype[keep]
    hub = 0
    extra = np.arange(relations - 1).repeat(3)
    src = np.concatenate([src, rng.integers(0, nodes, 2), rng.integers(0, nodes, extra.size)])
    dst = np.concatenate([dst, [lonely, lonely], np.full(extra.size, hub)])
    etype = np.concatenate([etype, [0, min(1, relations - 1)], extra])
    order = rng.permutation(src.size)  # any input order
    return dict(node_type=np.zeros(nodes, np.int64), src=src[order], dst=dst[order],
                etype=etype[order], num_node_types=1, num_edge_types=relations)


def groups_of(arrays, relations):
    """The (destination, edge type) group id of every canonical edge."""
    return arrays["edge_dst"].astype(np.int64) * relations + arrays["edge_type"]


def softmax_reference(s, groups):
    s = s.astype(np.float64)
    alpha = np.empty_like(s)
    for g in np.unique(groups):
        rows = groups == g
        shifted = np.exp(s[rows] - s[rows].max(axis=0))
        alpha[rows] = shifted / shifted.sum(axis=0)
    return alpha


def group_sum_reference(x, groups):
    x = x.astype(np.float64)
    out = np.empty_like(x)
    for g in np.unique(groups):
        rows = groups == g
        out[rows] = x[rows].sum(axis=0)
    return out


def call(entry, values, sizes):
    outputs = {}
    for arg in entry.arguments:
        if arg.is_output:
            shape = [sizes[d] if isinstance(d, str) else d for d in arg.shape]
            outputs[arg.name] = values[arg.name] = np.full(shape, np.nan, np.float32)
    entry(**{a.name: values[a.name] for a in entry.arguments})
    for name, out in outputs.items():
        assert not np.isnan(out).any(), f"{name}: some elements were never written"
    return outputs


SHAPES = [(3, 4, 2), (7, 20, 2), (40, 300, 3), (200, 3000, 6)]


@pytest.mark.parametrize("scale", [1.0, 100.0], ids=["unit", "large"])
@pytest.mark.parametrize("nodes,edges,relations", SHAPES)
@pytest.mark.parametrize("heads", HEADS)
def test_forward_and_backward(library, heads, nodes, edges, relations, scale):
    forward, training = library
    rng = np.random.default_rng([heads, nodes, edges, relations])
    graph = random_graph(rng, nodes, edges, relations)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    arrays = pre.arrays()
    E = pre.E
    sizes = {"N": pre.N, "E": E, "R": pre.R, "T": pre.T, "P": pre.P}
    groups = groups_of(arrays, relations)
    # the cases the graph promises: a group of one edge, a node without in-edges
    _, counts = np.unique(groups, return_counts=True)
    assert counts.min() == 1 and np.unique(arrays["edge_dst"]).size < pre.N

    s = (rng.standard_normal((E, heads)) * scale).astype(np.float32)
    x = rng.standard_normal((E, heads)).astype(np.float32)
    values = dict(arrays, s=s, x=x)
    alpha_ref = softmax_reference(2.0 * s.astype(np.float64), groups)
    out = call(forward[f"within{heads}"], dict(values), sizes)
    assert relative_error(out["result0"], alpha_ref) < TOLERANCE
    assert relative_error(out["result1"], group_sum_reference(x, groups)) < TOLERANCE
    sums = group_sum_reference(out["result0"], groups)
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)

    # Backward: d(result0) and d(result1) random; ds = 2 α (dα − Σ_g α dα),
    # dx = group_sum(dy).
    fwd = call(training[f"within{heads}_fwd"], dict(values), sizes)
    assert relative_error(fwd["result0"], alpha_ref) < TOLERANCE
    da = rng.standard_normal((E, heads)).astype(np.float32)
    dy = rng.standard_normal((E, heads)).astype(np.float32)
    bwd_values = dict(values, **fwd, d_result0=da, d_result1=dy)
    grads = call(training[f"within{heads}_bwd"], bwd_values, sizes)
    weighted = alpha_ref * da.astype(np.float64)
    ds_ref = 2.0 * (weighted - alpha_ref * group_sum_reference(weighted, groups))
    if scale == 1.0:
        assert relative_error(grads["d_s"], ds_ref) < TOLERANCE * 10
    else:
        # Scores in the hundreds make most α 0 or 1, and ds = α dα − α Σ α dα
        # cancels to far below its terms: float32 can only promise an error
        # small against the terms (2 |α dα|), not against ds itself.
        terms = 2.0 * np.abs(weighted).max()
        assert np.abs(grads["d_s"] - ds_ref).max() < TOLERANCE * terms
    assert relative_error(grads["d_x"], group_sum_reference(dy, groups)) < TOLERANCE


@pytest.mark.parametrize("heads", HEADS)
def test_no_edges(library, heads):
    """A graph without edges: nothing to normalise, nothing written, no fault."""
    forward, training = library
    pre = hgraph.preprocess(np.zeros(5, np.int64), np.zeros(0, np.int64),
                            np.zeros(0, np.int64), np.zeros(0, np.int64), 1, 3)
    sizes = {"N": pre.N, "E": 0, "R": pre.R, "T": pre.T, "P": pre.P}
    empty = np.zeros((0, heads), np.float32)
    values = dict(pre.arrays(), s=empty, x=empty)
    out = call(forward[f"within{heads}"], dict(values), sizes)
    assert out["result0"].shape == (0, heads) and out["result1"].shape == (0, heads)

"""Models written in the Python DSL, compiled for the CPU, against NumPy.

This is the independent check that the DSL means what it says: the IR that
hector.frontend emits for examples/models/{rgcn,rgat,hgt}.py is compiled with
`hectorc --target=cpu` and run on the edge-case graphs of model_cases.py
(isolated nodes, edge types without edges, self-loops, duplicate edges, a
giant hub); the float64 references of test/reference/models_numpy.py are
written from BRIEF.md §4, not from the IR. A further model uses the
constructs the three layers do not (mean/max aggregation, +=, concat, edge
inputs and results, node-typed vectors, ...) against a NumPy reference
written here from its definition.
"""

from __future__ import annotations

import numpy as np
import pytest

from hector import compiled, graph as hgraph
from hector.frontend import emit, emit_source
from hectorc_support import build
from model_cases import GRAPHS, reference, relative_error
from reference import params
from test_frontend_support import example_model

TOLERANCE = 1e-5

# (model, DSL sizes, (din, dout, heads))
CONFIGS = [
    ("rgcn", {"IN": 16, "OUT": 16}, (16, 16, 1)),
    ("rgcn", {"IN": 16, "OUT": 32}, (16, 32, 1)),
    ("rgat", {"IN": 32, "OUT": 32, "H": 1}, (32, 32, 1)),
    ("rgat", {"IN": 32, "OUT": 32, "H": 4}, (32, 32, 4)),
    ("rgat", {"IN": 16, "OUT": 32, "H": 2}, (16, 32, 2)),
    ("hgt", {"D": 32, "H": 1}, (32, 32, 1)),
    ("hgt", {"D": 32, "H": 4}, (32, 32, 4)),
    ("hgt", {"D": 16, "H": 16}, (16, 16, 16)),
]


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """IR text -> loaded CPU library, compiled on first use."""
    directory = tmp_path_factory.mktemp("dsl_models")
    cache = {}

    def get(ir: str):
        if ir not in cache:
            path = build(directory, ir, "--target=cpu", name=f"libdsl{len(cache)}.so")
            cache[ir] = compiled.load(path)
        return cache[ir]

    return get


def preprocess(graph):
    return hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                             graph["num_node_types"], graph["num_edge_types"])


def call(entry, pre, outputs, **values):
    """Runs `entry`; `outputs` are the result shapes. Every output starts as NaN,
    so a row that is never written fails the comparison."""
    results = {f"result{i}": np.full(shape, np.nan, np.float32)
               for i, shape in enumerate(outputs)}
    arguments = dict(pre.arrays(), **values, **results)
    entry(**{a.name: arguments[a.name] for a in entry.arguments})
    return [results[f"result{i}"] for i in range(len(outputs))]


@pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
@pytest.mark.parametrize("model,sizes,dims", CONFIGS)
def test_dsl_model_matches_numpy(libraries, model, sizes, dims, graph_kind):
    din, dout, heads = dims
    lib = libraries(emit(example_model(model), **sizes))
    rng = np.random.default_rng([din, dout, heads, len(graph_kind)])
    graph = GRAPHS[graph_kind](rng)
    n = graph["node_type"].shape[0]
    h = rng.standard_normal((n, din)).astype(np.float32)
    weights = params.make_params(model, graph, din, dout, heads, seed=din + heads)
    (out,) = call(lib[model], preprocess(graph), [(n, dout)], h=h, **weights)
    expected = reference(model, graph, h, weights, heads)
    assert not np.isnan(out).any(), "some output rows were never written"
    assert relative_error(out, expected) < TOLERANCE


# ---- a model made of the other constructs ------------------------------------

VARIANT = '''
from __future__ import annotations
from hector.frontend import *


@model
def variant(g: Graph, h: NodeFeature[D], x: EdgeFeature[D], K: NodeWeight[D, D],
            W: EdgeWeight[D, D], c: NodeWeight[D], S: Weight[D, D], *, D: int = 8):
    for n in g.nodes():
        n["k"] = tanh(typed_linear(K, n["h"], n.ntype)) - typed_vector(c, n.ntype)
    for e in g.edges():
        e["m"] = sigmoid(typed_linear(W, e["x"], e.etype)) * e.src["k"] \\
            + typed_linear(K, e.dst["h"], e.dst.ntype) / 2
        e["w"] = exp(-relu(dot(e.src["h"], e.dst["k"])))
    for n in g.dst_nodes():
        n["mx"] = max(e["m"] for e in n.incoming_edges())
        n["mn"] = mean(leaky_relu(e["m"]) for e in n.incoming_edges())
        n["acc"] = typed_linear(S, n["h"])
        for e in n.incoming_edges():
            n["acc"] += e["w"] * e["m"]
        n["out"] = concat(n["mx"], n["mn"] / exp(tanh(n["acc"])) - n["k"])
    return g.ndata["out"], g.edata["w"]
'''


def variant_reference(graph, h, x, K, W, c, S):
    """The definition of VARIANT, in float64 NumPy, edges in the caller's order."""
    nt, src, dst, et = (graph[k] for k in ("node_type", "src", "dst", "etype"))
    h, x, K, W, c, S = (v.astype(np.float64) for v in (h, x, K, W, c, S))
    n = h.shape[0]
    sigmoid = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    k = np.tanh(np.einsum("ni,nio->no", h, K[nt])) - c[nt]
    m = sigmoid(np.einsum("ei,eio->eo", x, W[et])) * k[src] \
        + np.einsum("ei,eio->eo", h[dst], K[nt[dst]]) / 2
    w = np.exp(-np.maximum((h[src] * k[dst]).sum(axis=1, keepdims=True), 0.0))
    incoming = np.bincount(dst, minlength=n)
    mx = np.full(h.shape, -np.inf)
    np.maximum.at(mx, dst, m)
    mx[incoming == 0] = 0.0  # no incoming edges: 0
    mn = np.zeros(h.shape)
    np.add.at(mn, dst, np.where(m > 0, m, 0.01 * m))
    mn /= np.maximum(incoming, 1)[:, None]
    acc = h @ S
    np.add.at(acc, dst, w * m)
    return np.concatenate([mx, mn / np.exp(np.tanh(acc)) - k], axis=1), w


@pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
def test_other_constructs_match_numpy(libraries, graph_kind):
    d = 8
    lib = libraries(emit_source(VARIANT, D=d))
    rng = np.random.default_rng([d, len(graph_kind)])
    graph = GRAPHS[graph_kind](rng)
    n, e = graph["node_type"].shape[0], graph["src"].shape[0]
    t, r = graph["num_node_types"], graph["num_edge_types"]
    values = {"h": rng.standard_normal((n, d)), "x": rng.standard_normal((e, d)),
              "K": rng.uniform(-0.5, 0.5, (t, d, d)), "W": rng.uniform(-0.5, 0.5, (r, d, d)),
              "c": rng.standard_normal((t, d)), "S": rng.uniform(-0.5, 0.5, (d, d))}
    values = {k: v.astype(np.float32) for k, v in values.items()}
    pre = preprocess(graph)
    inputs = dict(values, x=pre.to_canonical(values["x"]))  # edge-wise data: canonical order
    out, w = call(lib["variant"], pre, [(n, 2 * d), (e, 1)], **inputs)
    expected_out, expected_w = variant_reference(graph, **values)
    assert not np.isnan(out).any() and not np.isnan(w).any()
    assert relative_error(out, expected_out) < TOLERANCE
    assert relative_error(w, pre.to_canonical(expected_w)) < TOLERANCE

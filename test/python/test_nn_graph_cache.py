"""hector.nn's per-graph preprocessing cache never serves a foreign graph
(issue 16, finding 2): two HGTConv layers whose metadata number the node and
edge types differently never share a preprocessing. Every answer is compared
with the float64 NumPy reference written from BRIEF.md §4 (test/reference).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
from hector import compiler  # noqa: E402
from hectorc_support import hectorc  # noqa: E402
from reference import models_numpy  # noqa: E402

TOL = 1e-5
N, E, R = 40, 300, 4


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(compiler.CACHE_ENV, str(tmp_path_factory.mktemp("hector-cache")))
        mp.setenv(compiler.BUILD_DIR_ENV, os.path.dirname(os.path.dirname(hectorc())))
        yield


@pytest.fixture(autouse=True)
def fresh_graph_cache():
    hnn.graph_cache.clear()
    yield
    hnn.graph_cache.clear()


def rel_err(actual, expected):
    actual = actual.detach().double().numpy()
    return float(np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-30))


# ---- finding 2: layers whose metadata number types differently ---------------------

def hgt_reference(conv, meta, sizes, x_dict, eid):
    """The float64 HGT of BRIEF.md §4 on the graph numbered by `meta` (node
    ids: node types' rows concatenated in metadata order; edge type ids: the
    metadata's indices), split back by node type."""
    node_types, edge_types = meta
    offset = dict(zip(node_types, np.cumsum([0] + [sizes[t] for t in node_types])[:-1]))
    present = [et for et in edge_types if et in eid]
    g = {"node_type": np.concatenate([np.full(sizes[t], i) for i, t in enumerate(node_types)]),
         "src": np.concatenate([eid[et][0].numpy() + offset[et[0]] for et in present]),
         "dst": np.concatenate([eid[et][1].numpy() + offset[et[2]] for et in present]),
         "etype": np.concatenate([np.full(eid[et].shape[1], edge_types.index(et))
                                  for et in present])}
    h = torch.cat([x_dict[t] for t in node_types]).numpy()
    params = [p.detach().numpy() for p in (conv.k_weight, conv.q_weight, conv.v_weight,
                                           conv.a_weight, conv.k_rel, conv.v_rel, conv.p_rel)]
    out = models_numpy.hgt(g, h, *params)
    return {t: out[offset[t]:offset[t] + sizes[t]] for t in node_types}


AB, BA = ("a", "to", "b"), ("b", "back", "a")
PERMUTED = {
    # Node types in another order, the same edge types in the same order.
    "node types permuted": ((["a", "b"], [AB, BA]), (["b", "a"], [AB, BA])),
    # The one edge type present sits at another index.
    "edge type at another index": ((["a", "b"], [AB, BA]), (["a", "b"], [BA, AB])),
    # Both at once.
    "both": ((["a", "b"], [AB, BA]), (["b", "a"], [BA, AB])),
}


@pytest.mark.parametrize("case", list(PERMUTED))
def test_hgt_layers_with_permuted_metadata_do_not_share_a_graph(case):
    meta1, meta2 = PERMUTED[case]
    sizes = {"a": 10, "b": 10}  # equal counts: the node count tuple can not tell them apart
    rng = np.random.default_rng(6)
    eid = {AB: torch.as_tensor(np.stack([rng.integers(0, 10, 60), rng.integers(0, 10, 60)]))}
    x_dict = {t: torch.randn(n, 8, generator=torch.Generator().manual_seed(i))
              for i, (t, n) in enumerate(sizes.items())}
    torch.manual_seed(4)
    layers = [hnn.HGTConv(8, 8, meta, heads=2) for meta in (meta1, meta2)]
    for conv in layers:
        with torch.no_grad():
            conv.p_rel.uniform_(0.5, 1.5)
            conv.k_rel.normal_()
    with torch.no_grad():
        outs = [conv(x_dict, eid) for conv in layers]
    for conv, meta, out in zip(layers, (meta1, meta2), outs):
        expected = hgt_reference(conv, meta, sizes, x_dict, eid)
        for t in out:
            assert rel_err(out[t], expected[t]) < TOL, (meta, t)
    # The same layer (or one with equal metadata) still shares its preprocessing.
    with torch.no_grad():
        hnn.HGTConv(8, 8, meta1, heads=2)(x_dict, eid)
    assert hnn.graph_cache.hits == 1 and hnn.graph_cache.misses == 2

"""hector.nn's per-graph preprocessing cache never serves a stale or a
foreign graph (issue 16, findings 1 and 2).

Stale: the cache is keyed by the content of the index tensors, so every way
of changing a tensor in place is seen, including the ones that do not bump
its version counter (a `torch.from_numpy` buffer refilled with the next
batch, a write through `.numpy()` or `.data`). Foreign: two HGTConv layers
whose metadata number the node and edge types differently never share a
preprocessing. Every answer is compared with the float64 NumPy references
written from BRIEF.md §4 (test/reference).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
from hectorc_support import compile_cache_in  # noqa: E402
from hgt_pyg_reference import hgt_pyg, pyg_params_of  # noqa: E402
from reference import models_numpy  # noqa: E402

TOL = 1e-5
N, E, R = 40, 300, 4


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


@pytest.fixture(autouse=True)
def fresh_graph_cache():
    hnn.graph_cache.clear()
    yield
    hnn.graph_cache.clear()


def rel_err(actual, expected):
    actual = actual.detach().double().numpy()
    return float(np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-30))


def random_graph(seed):
    """(edge_index [2, E], edge_type [E]) as int64 numpy arrays; each seed a different graph
    of the same shape."""
    rng = np.random.default_rng(seed)
    return (np.stack([rng.integers(0, N, E), rng.integers(0, N, E)]),
            rng.integers(0, R, E))


def rgcn_reference(conv, x, edge_index, edge_type):
    g = {"node_type": np.zeros(N, np.int64), "src": np.asarray(edge_index[0]),
         "dst": np.asarray(edge_index[1]), "etype": np.asarray(edge_type),
         "num_node_types": 1, "num_edge_types": R}
    return models_numpy.rgcn(g, x.numpy(), conv.weight.detach().numpy(),
                             conv.root.detach().numpy()) + conv.bias.detach().numpy()


def _refill_from_numpy(tensor, buffer, values):
    buffer[...] = values


def _write_numpy_view(tensor, buffer, values):
    tensor.numpy()[...] = values


def _write_data(tensor, buffer, values):
    tensor.data[...] = torch.from_numpy(values)


def _copy_into_data(tensor, buffer, values):
    tensor.data.copy_(torch.from_numpy(values))


def _in_place_op(tensor, buffer, values):  # bumps the version counter
    tensor.copy_(torch.from_numpy(values))


def _index_assignment(tensor, buffer, values):  # bumps the version counter
    tensor[...] = torch.from_numpy(values)


CHANGES = {
    "from_numpy buffer refilled": _refill_from_numpy,
    ".numpy() written": _write_numpy_view,
    ".data written": _write_data,
    ".data.copy_": _copy_into_data,
    "copy_ (version bumped)": _in_place_op,
    "index assignment (version bumped)": _index_assignment,
}


@pytest.mark.parametrize("which", ["edge_index", "edge_type"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_graph_changed_in_place_is_never_served_stale(change, which):
    """Each way of changing an index tensor in place, on edge_index or on
    edge_type: the layer's answer is the new graph's, not the cached one's."""
    torch.manual_seed(0)
    conv = hnn.RGCNConv(8, 6, R)
    torch.nn.init.normal_(conv.bias)
    x = torch.randn(N, 8)
    (ei0, et0), (ei1, et1) = random_graph(1), random_graph(2)
    buffers = {"edge_index": ei0.copy(), "edge_type": et0.copy()}
    tensors = {k: torch.from_numpy(v) for k, v in buffers.items()}
    with torch.no_grad():
        first = conv(x, tensors["edge_index"], tensors["edge_type"])
        assert rel_err(first, rgcn_reference(conv, x, ei0, et0)) < TOL
        CHANGES[change](tensors[which], buffers[which], ei1 if which == "edge_index" else et1)
        second = conv(x, tensors["edge_index"], tensors["edge_type"])
    expected = rgcn_reference(conv, x, tensors["edge_index"].numpy(),
                              tensors["edge_type"].numpy())
    assert rel_err(second, expected) < TOL
    assert hnn.graph_cache.misses == 2


@pytest.mark.parametrize("permute", ["swap two edges' sources", "reverse every edge",
                                     "swap two edges' types"])
def test_changes_that_keep_the_multiset_of_ids(permute):
    """Changes a sum or a sorted view of the ids cannot see: the fingerprint
    weighs every element by its position."""
    torch.manual_seed(1)
    conv = hnn.RGCNConv(8, 6, R)
    x = torch.randn(N, 8)
    ei, et = random_graph(3)
    et[0], et[1] = 0, 1
    ei[0, 0], ei[0, 1] = 5, 7
    buf_ei, buf_et = ei.copy(), et.copy()
    edge_index, edge_type = torch.from_numpy(buf_ei), torch.from_numpy(buf_et)
    with torch.no_grad():
        conv(x, edge_index, edge_type)
        if permute == "swap two edges' sources":
            buf_ei[0, [0, 1]] = buf_ei[0, [1, 0]]
        elif permute == "reverse every edge":
            buf_ei[...] = buf_ei[::-1].copy()
        else:
            buf_et[[0, 1]] = buf_et[[1, 0]]
        out = conv(x, edge_index, edge_type)
    assert rel_err(out, rgcn_reference(conv, x, buf_ei, buf_et)) < TOL


def test_equal_content_hits_and_any_difference_misses():
    torch.manual_seed(2)
    conv = hnn.RGCNConv(8, 6, R)
    x = torch.randn(N, 8)
    ei, et = (torch.from_numpy(a) for a in random_graph(4))
    with torch.no_grad():
        first = conv(x, ei, et)
        assert (hnn.graph_cache.hits, hnn.graph_cache.misses) == (0, 1)
        # New tensors with equal content: a clone, a stack rebuilt each step.
        assert torch.equal(conv(x, ei.clone(), et.clone()), first)
        assert torch.equal(conv(x, torch.stack([ei[0], ei[1]]), et), first)
        assert (hnn.graph_cache.hits, hnn.graph_cache.misses) == (2, 1)
        hnn.RGATConv(8, 6, R)(x, ei, et)  # another layer, same graph: shared
        assert hnn.graph_cache.hits == 3
        conv(x, ei.to(torch.int32), et)  # another dtype: a miss (conservative)
        assert hnn.graph_cache.misses == 2
        # Another node count numbers the same ids into another graph.
        conv(torch.randn(N + 1, 8), ei, et)
        assert hnn.graph_cache.misses == 3
    with torch.inference_mode():  # no version counter, still cached by content
        assert torch.equal(conv(x, ei, et), first)
        assert hnn.graph_cache.hits == 4


def test_hgt_edge_index_refilled_in_place():
    meta = (["a", "b"], [("a", "to", "b"), ("b", "back", "a")])
    sizes = {"a": 12, "b": 9}
    rng = np.random.default_rng(5)
    buffers = {et: np.stack([rng.integers(0, sizes[et[0]], 50),
                             rng.integers(0, sizes[et[2]], 50)]) for et in meta[1]}
    eid = {et: torch.from_numpy(b) for et, b in buffers.items()}
    torch.manual_seed(3)
    conv = hnn.HGTConv(8, 8, meta, heads=2)
    x_dict = {t: torch.randn(n, 8) for t, n in sizes.items()}
    with torch.no_grad():
        conv(x_dict, eid)
        buffers[meta[1][1]][0] = rng.integers(0, sizes["b"], 50)  # no version bump
        out = conv(x_dict, eid)
    expected = hgt_reference(conv, meta, sizes, x_dict, eid)
    for t in out:
        assert rel_err(out[t], expected[t]) < TOL, t


def test_fingerprint_is_by_content_shape_dtype_and_device():
    from hector.nn._base import fingerprint
    t = torch.arange(12).view(2, 6)
    assert fingerprint(t) == fingerprint(t.clone())
    assert fingerprint(t) == fingerprint(t.t().contiguous().t())  # strides do not matter
    assert fingerprint(t) != fingerprint(t.view(3, 4))
    assert fingerprint(t) != fingerprint(t.to(torch.int32))
    assert fingerprint(t) != fingerprint(t.flip(1))
    u = t.clone()
    u[1, 5] += 1
    assert fingerprint(t) != fingerprint(u)
    assert fingerprint(torch.zeros(0, dtype=torch.int64)) != \
        fingerprint(torch.zeros(0, 2, dtype=torch.int64))
    # Differences in the high bits, and large ids.
    big = torch.tensor([2**40, 3], dtype=torch.int64)
    assert fingerprint(big) != fingerprint(big + 2**50)


# ---- finding 2: layers whose metadata number types differently ---------------------

def hgt_reference(conv, meta, sizes, x_dict, eid):
    """PyG's HGTConv in float64 (hgt_pyg_reference) on the graph typed by
    `meta`, with the layer's parameters: {node type: output}."""
    params = {n: p.detach().double() for n, p in conv.named_parameters()}
    widths = {t: x.shape[1] for t, x in x_dict.items()}
    xr = {t: x.double() for t, x in x_dict.items()}
    out = hgt_pyg(xr, {et: eid[et] for et in meta[1] if et in eid},
                  pyg_params_of(params, meta, conv.heads, widths), meta, conv.heads)
    return {t: v.numpy() for t, v in out.items()}


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

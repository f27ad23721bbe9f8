"""The graph inputs PyG users have, for the hector.nn layers: sparse
adjacencies (torch.sparse COO/CSR/CSC, torch_sparse.SparseTensor) instead
of edge_index.

Outputs and the gradients of every float input and every parameter are
compared with float64 references written from PyG 2.8's documented math
(RGCN below; RGAT and HGT from test_nn_cpu and test/reference), on random
graphs with a relation without edges, isolated nodes, duplicate and
unsorted edges, one node, and no edges at all.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
from hector.nn import _adjacency  # noqa: E402
from reference import models_torch  # noqa: E402
from test_nn_cpu import (META, SIZES, TOL, cache, dense_reference_weight,  # noqa: E402,F401
                         features, float64_params, hetero, hgt_params, randomize_prior,
                         rel_err, require_training, rgat_reference)

pytestmark = [pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta"),
              pytest.mark.filterwarnings(r"ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings(r"ignore:Sparse CSC tensor support is in beta")]


# ---- graphs -----------------------------------------------------------------------

def random_edges(kind, num_src, num_dst, num_relations, seed=0):
    """(edge_index [2, E], edge_type [E], num_src, num_dst) of a graph of
    `kind`; one_node overrides the node counts with 1."""
    rng = np.random.default_rng(seed)
    if kind == "one_node":
        num_src = num_dst = 1
    e = {"no_edges": 0, "one_node": 4}.get(kind, 3 * max(num_src, num_dst))
    src, dst = rng.integers(0, num_src, e), rng.integers(0, num_dst, e)
    etype = rng.integers(0, num_relations, e)
    if kind == "empty_relation":  # the last relation has no edges
        etype = rng.integers(0, num_relations - 1, e)
    elif kind == "isolated":  # the upper half of both sides has no edges at all
        src, dst = src % max(num_src // 2, 1), dst % max(num_dst // 2, 1)
    elif kind == "duplicates":  # every edge twice, a few three times
        src, dst, etype = (np.concatenate([a, a, a[:5]]) for a in (src, dst, etype))
    elif kind == "unsorted":  # destinations, then relations, descending
        order = np.lexsort((-etype, -dst))
        src, dst, etype = src[order], dst[order], etype[order]
    edge_index = torch.as_tensor(np.stack([src, dst]), dtype=torch.int64).reshape(2, -1)
    return edge_index, torch.as_tensor(etype, dtype=torch.int64), num_src, num_dst


def distinct_edges(edge_index, edge_type):
    """The edges with the first of each repeated (source, destination) pair
    only: torch checks that a CSR row (CSC column) holds each index once."""
    keys = (edge_index[1] * (edge_index[0].max() + 1 if edge_index.numel() else 1)
            + edge_index[0]).tolist()
    first = sorted({k: i for i, k in reversed(list(enumerate(keys)))}.values())
    return edge_index[:, first], edge_type[first]


def sparse_adjacency(layout, edge_index, values, num_src, num_dst):
    """PyG's adj_t [num_dst, num_src] of the edges, with `values` per edge,
    built directly in `layout` (never through a dense matrix, which would
    drop relation 0, nor by coalescing, which would add duplicate edges'
    values). CSR and CSC need distinct edges (distinct_edges)."""
    src, dst = edge_index
    size = (num_dst, num_src)
    if layout == "coo":  # uncoalesced, in edge order
        return torch.sparse_coo_tensor(torch.stack([dst, src]), values, size)
    major, minor, count = (dst, src, num_dst) if layout == "csr" else (src, dst, num_src)
    order = torch.argsort(major * max(num_src, num_dst) + minor, stable=True)
    ptr = torch.zeros(count + 1, dtype=torch.int64)
    ptr[1:] = torch.cumsum(torch.bincount(major, minlength=count), 0)
    if layout == "csr":
        return torch.sparse_csr_tensor(ptr, minor[order], values[order], size)
    return torch.sparse_csc_tensor(ptr, minor[order], values[order], size)


class FakeSparseTensor:
    """torch_sparse.SparseTensor's interface as hector uses it (coo(),
    sparse_sizes(), dim()), for a machine without torch_sparse; the real
    class is tested on the GPU machine (test/gpu/test_nn_gpu.py)."""

    __module__ = "torch_sparse.tensor"

    def __init__(self, row, col, value, sparse_sizes):
        order = torch.argsort(row * sparse_sizes[1] + col, stable=True)  # row-major, as it keeps
        self._row, self._col = row[order], col[order]
        self._value = None if value is None else value[order]
        self._sizes = sparse_sizes

    def coo(self):
        return self._row, self._col, self._value

    def sparse_sizes(self):
        return self._sizes

    def dim(self):
        return 2


@pytest.fixture
def fake_torch_sparse(monkeypatch):
    monkeypatch.setattr(_adjacency, "_sparse_tensor_class", lambda: FakeSparseTensor)


def as_adjacency(layout, edge_index, edge_type, num_src, num_dst):
    """(adjacency, edge_type to pass, the edges it holds: edge_index,
    edge_type): the relation ids as the values (PyG's convention), except
    "coo+edge_type", whose values are ones and whose relation ids are passed
    as edge_type (in the stored order). CSR and CSC hold distinct_edges."""
    if layout == "edge_index":
        return edge_index, edge_type, edge_index, edge_type
    if layout == "sparse_tensor":
        return FakeSparseTensor(edge_index[1], edge_index[0], edge_type,
                                (num_dst, num_src)), None, edge_index, edge_type
    if layout == "coo+edge_type":
        ones = torch.ones(edge_index.size(1))
        return sparse_adjacency("coo", edge_index, ones, num_src, num_dst), edge_type, \
            edge_index, edge_type
    if layout in ("csr", "csc"):
        edge_index, edge_type = distinct_edges(edge_index, edge_type)
    return sparse_adjacency(layout, edge_index, edge_type, num_src, num_dst), None, \
        edge_index, edge_type


LAYOUTS = ["edge_index", "coo", "csr", "csc", "coo+edge_type", "sparse_tensor"]


# ---- the float64 reference ----------------------------------------------------------

def rgcn_reference(x_src, x_dst, edge_index, edge_type, weight, root, aggr):
    """PyG's RGCNConv from its documented math, in float64:
    out_i = x_i·Θ_root + Σ_r Σ_{j ∈ N_r(i)} c_{i,r} x_j·Θ_r with
    c_{i,r} = 1/|N_r(i)| (aggr='mean') or 1 ('add'); the j are rows of
    x_src, the i rows of x_dst. Featureless inputs are one-hot rows."""
    src, dst = edge_index
    n, r = x_dst.size(0), weight.size(0)
    messages = torch.einsum("ei,eio->eo", x_src[src], weight[edge_type])
    if aggr == "mean":
        slot = dst * r + edge_type
        count = torch.zeros(n * r, dtype=messages.dtype).index_add(
            0, slot, torch.ones_like(slot, dtype=messages.dtype))
        messages = messages / count[slot, None]
    out = torch.zeros(n, weight.size(2), dtype=messages.dtype).index_add(0, dst, messages)
    return out + x_dst @ root


def check(conv, call, inputs, reference):
    """`call(*inputs)` against `reference(params, *inputs)` in float64: the
    output, and for a random cotangent the gradients of every float input
    and every parameter. Integer inputs (node ids) pass through as they are."""
    require_training(conv)
    leaves = [t.detach().clone().requires_grad_() if _float(t) else t for t in inputs]
    out = call(*leaves)
    cot = torch.randn(out.shape, dtype=torch.float64)
    (out.double() * cot).sum().backward()
    params = float64_params(conv, grad=True)
    refs = [t.detach().double().requires_grad_() if _float(t) else t for t in inputs]
    ref = reference(params, *refs)
    (ref * cot).sum().backward()
    assert out.shape == ref.shape and out.dtype == torch.float32
    assert rel_err(out, ref) < TOL
    for mine, theirs in zip(leaves, refs):
        if _float(mine):
            assert rel_err(mine.grad, theirs.grad) < TOL
    for name, p in conv.named_parameters():
        assert p.grad is not None, name
        assert rel_err(p.grad, params[name].grad) < TOL, name


def _float(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def rgcn_params(conv, p):
    """(dense [R, in_src, out] weight, root [in_dst, out] or zeros, bias or 0)."""
    root = p.get("root", torch.zeros(conv.in_channels, conv.out_channels,
                                      dtype=torch.float64))
    return dense_reference_weight(conv, p), root, p.get("bias", 0)


def make_rgcn(cls, in_channels, out, r, seed, **options):
    torch.manual_seed(seed)
    conv = cls(in_channels, out, r, **options)
    if conv.bias is not None:
        torch.nn.init.normal_(conv.bias)  # PyG starts it at 0; make it matter
    return conv


# ---- sparse adjacency ------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", ["random", "duplicates", "unsorted", "empty_relation"])
def test_rgcn_sparse_adjacency(layout, kind, fake_torch_sparse):
    edge_index, edge_type, n, _ = random_edges(kind, 20, 20, 4, seed=len(kind))
    adj, et, edge_index, edge_type = as_adjacency(layout, edge_index, edge_type, n, n)
    conv = make_rgcn(hnn.RGCNConv, 8, 5, 4, seed=1, num_bases=2)

    def reference(p, x):
        weight, root, bias = rgcn_params(conv, p)
        return rgcn_reference(x, x, edge_index, edge_type, weight, root, "mean") + bias

    check(conv, lambda x: conv(x, adj, et), [features(n, 8, seed=2)], reference)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rgat_sparse_adjacency(layout, fake_torch_sparse):
    edge_index, edge_type, n, _ = random_edges("duplicates", 15, 15, 3, seed=11)
    adj, et, edge_index, edge_type = as_adjacency(layout, edge_index, edge_type, n, n)
    torch.manual_seed(12)
    conv = hnn.RGATConv(6, 4, 3, heads=2)
    torch.nn.init.normal_(conv.bias)
    g = {"src": edge_index[0].numpy(), "dst": edge_index[1].numpy(),
         "etype": edge_type.numpy()}

    def reference(p, x):
        return rgat_reference(g, x, p["weight"], p["att_src"], p["att_dst"], 2,
                              conv.negative_slope) + p["bias"]

    check(conv, lambda x: conv(x, adj, et), [features(n, 6, seed=13)], reference)


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "sparse_tensor"])
def test_hgt_sparse_adjacency(layout, fake_torch_sparse):
    """Every edge type of edge_index_dict as an adj_t [destinations, sources]
    (values, here arbitrary, are not read, as in PyG)."""
    eid, g, offset = hetero(3)
    sparse = {}
    for (s, rel, d), ei in eid.items():
        values = torch.arange(ei.size(1)) * 7 % 5
        sparse[(s, rel, d)], _, kept, _ = as_adjacency(layout, ei, values, SIZES[s], SIZES[d])
        eid[(s, rel, d)] = kept
    g = dict(g, **{key: np.concatenate([f(et, ei) for et, ei in eid.items()]) for key, f in (
        ("src", lambda et, ei: ei[0].numpy() + offset[et[0]]),
        ("dst", lambda et, ei: ei[1].numpy() + offset[et[2]]),
        ("etype", lambda et, ei: np.full(ei.size(1), META[1].index(et))))})
    torch.manual_seed(14)
    conv = hnn.HGTConv(16, 16, META, heads=2)
    require_training(conv)
    randomize_prior(conv)
    x_dict = {t: features(SIZES[t], 16, seed=i).requires_grad_()
              for i, t in enumerate(META[0])}
    out = conv(x_dict, sparse)
    assert set(out) == {"author", "paper", "venue"}
    cots = {t: torch.randn(v.shape, dtype=torch.float64) for t, v in out.items()}
    sum((out[t].double() * cots[t]).sum() for t in out).backward()

    h = torch.cat([x_dict[t].detach() for t in META[0]]).double().requires_grad_()
    params = [p.detach().double().requires_grad_() for p in hgt_params(conv)]
    ref = models_torch.hgt(models_torch.TorchGraph(g), h, *params)
    sum((ref[offset[t]:offset[t] + SIZES[t]] * cots[t]).sum() for t in out).backward()
    for t in out:
        assert rel_err(out[t], ref[offset[t]:offset[t] + SIZES[t]]) < TOL, t
    for t in META[0]:
        assert rel_err(x_dict[t].grad, h.grad[offset[t]:offset[t] + SIZES[t]]) < TOL, t
    for mine, theirs in zip(hgt_params(conv), params):
        assert rel_err(mine.grad, theirs.grad) < TOL


def test_sparse_adjacency_hits_the_graph_cache():
    """The sparse adjacency becomes an edge list on every forward; the
    cache keys it by content, so the second forward is a hit."""
    edge_index, edge_type, n, _ = random_edges("random", 20, 20, 4, seed=15)
    edge_index, edge_type = distinct_edges(edge_index, edge_type)
    csr = sparse_adjacency("csr", edge_index, edge_type, n, n)
    conv, x = hnn.RGCNConv(8, 5, 4), features(n, 8)
    hnn.graph_cache.clear()
    with torch.no_grad():
        first = conv(x, csr)
        assert torch.equal(conv(x, csr), first)
        assert (hnn.graph_cache.hits, hnn.graph_cache.misses) == (1, 1)
        # The same edges as an edge_index (in another order): another key, the same result.
        assert rel_err(conv(x, edge_index, edge_type), first) < TOL


# ---- errors ---------------------------------------------------------------------------

def test_bad_inputs_say_what_is_wrong():
    edge_index, edge_type, n, _ = random_edges("random", 10, 10, 3, seed=31)
    conv, x = hnn.RGCNConv(8, 5, 3), features(n, 8)
    rgat = hnn.RGATConv(8, 5, 3)
    ones = torch.ones(edge_index.size(1))
    with torch.no_grad():
        # sparse adjacencies
        with pytest.raises(ValueError, match="needs edge_type: edge_index has values of "
                                             "dtype torch.float32"):
            conv(x, sparse_adjacency("coo", edge_index, ones, n, n))
        with pytest.raises(ValueError, match=r"sparse adjacency is \[10, 12\]"):
            conv(x, sparse_adjacency("coo", edge_index, edge_type, 12, n))
        with pytest.raises(ValueError, match="edge_type has 29 entries for 30 edges"):
            conv(x, sparse_adjacency("coo", edge_index, ones, n, n), edge_type[:-1])
        three = torch.sparse_coo_tensor(torch.zeros(3, 1, dtype=torch.int64), [1], (2, 2, 2))
        with pytest.raises(ValueError, match="sparse matrix"):
            conv(x, three)
        with pytest.raises(NotImplementedError, match="edge features"):
            rgat(x, torch.sparse_coo_tensor(edge_index.flip(0), torch.ones(30, 4), (n, n, 4)),
                 edge_type)
        with pytest.raises(NotImplementedError, match="featureless"):
            rgat(None, edge_index, edge_type)
        with pytest.raises(NotImplementedError, match="bipartite"):
            rgat((x, x), edge_index, edge_type)

"""The graph and feature inputs PyG users have, for the hector.nn layers:
sparse adjacencies (torch.sparse COO/CSR/CSC, torch_sparse.SparseTensor)
instead of edge_index, featureless RGCN (x=None or node ids) and bipartite
RGCN (in_channels=(in_src, in_dst), x=(x_src, x_dst)).

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
from test_nn_cpu import (META, SIZES, TOL, cache, check_hgt_step,  # noqa: E402,F401
                         dense_reference_weight, features, float64_params, hetero,
                         homogeneous, randomize_hgt, rel_err, require_training,
                         rgat_reference)

pytestmark = [pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta"),
              pytest.mark.filterwarnings(r"ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings(r"ignore:Sparse CSC tensor support is in beta")]


# ---- graphs -----------------------------------------------------------------------

GRAPH_KINDS = ["random", "empty_relation", "isolated", "duplicates", "unsorted", "one_node",
               "no_edges"]


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
    sparse_sizes()), for a machine without torch_sparse; the real class is
    tested on the GPU machine (test/gpu/test_nn_gpu.py)."""

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


def one_hot(ids, count):
    return torch.eye(count, dtype=torch.float64)[ids]


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
    root = p.get("root", torch.zeros(conv.in_channels_r, conv.out_channels,
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


@pytest.mark.parametrize("layout", ["coo", "csr", "sparse_tensor"])
@pytest.mark.parametrize("cls", [hnn.RGCNConv, hnn.FastRGCNConv])
def test_rgcn_sparse_add_bipartite_and_featureless(layout, cls, fake_torch_sparse):
    """A sparse adjacency with every other input: aggr='add', bipartite
    features (its shape gives the two sides), featureless."""
    edge_index, edge_type, ns, nd = random_edges("random", 9, 6, 3, seed=5)
    adj, et, edge_index, edge_type = as_adjacency(layout, edge_index, edge_type, ns, nd)
    bi = make_rgcn(cls, (7, 4), 5, 3, seed=6, aggr="add")

    def bipartite(p, xs, xd):
        weight, root, bias = rgcn_params(bi, p)
        return rgcn_reference(xs, xd, edge_index, edge_type, weight, root, "add") + bias

    check(bi, lambda xs, xd: bi((xs, xd), adj, et),
          [features(ns, 7, seed=7), features(nd, 4, seed=8)], bipartite)

    edge_index, edge_type, n, _ = random_edges("duplicates", 9, 9, 3, seed=6)
    adj, et, edge_index, edge_type = as_adjacency(layout, edge_index, edge_type, n, n)
    bare = make_rgcn(cls, 9, 5, 3, seed=9)

    def featureless(p):
        weight, root, bias = rgcn_params(bare, p)
        eye = one_hot(torch.arange(n), n)
        return rgcn_reference(eye, eye, edge_index, edge_type, weight, root, "mean") + bias

    check(bare, lambda: bare(None, adj, et), [], featureless)


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
    eid, _, _ = hetero(3)
    sparse = {}
    for (s, rel, d), ei in eid.items():
        values = torch.arange(ei.size(1)) * 7 % 5
        sparse[(s, rel, d)], _, kept, _ = as_adjacency(layout, ei, values, SIZES[s], SIZES[d])
        eid[(s, rel, d)] = kept
    torch.manual_seed(14)
    conv = hnn.HGTConv(16, 16, META, heads=2)
    require_training(conv)
    randomize_hgt(conv)
    x_dict = {t: features(SIZES[t], 16, seed=i).requires_grad_()
              for i, t in enumerate(META[0])}
    out = conv(x_dict, sparse)
    assert set(out) == {"author", "paper", "venue"}
    check_hgt_step(conv, x_dict, out, eid, 2)


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


# ---- featureless RGCN ---------------------------------------------------------------

RGCN_OPTIONS = [dict(), dict(aggr="add"), dict(num_bases=2), dict(root_weight=False),
                dict(bias=False)]


def _options_id(o):
    return ",".join(f"{k}={v}" for k, v in o.items()) or "default"


@pytest.mark.parametrize("kind", GRAPH_KINDS)
@pytest.mark.parametrize("options", RGCN_OPTIONS, ids=_options_id)
def test_rgcn_featureless(kind, options):
    """x=None: in_channels nodes; the message of s → t under r is row s of
    W_r, the root term row t of root (x is the identity, one-hot rows)."""
    edge_index, edge_type, n, _ = random_edges(kind, 11, 11, 3, seed=len(kind))
    conv = make_rgcn(hnn.RGCNConv, n, 5, 3, seed=16, **options)
    aggr = options.get("aggr", "mean")

    def reference(p):
        weight, root, bias = rgcn_params(conv, p)
        eye = one_hot(torch.arange(n), n)
        return rgcn_reference(eye, eye, edge_index, edge_type, weight, root, aggr) + bias

    check(conv, lambda: conv(None, edge_index, edge_type), [], reference)


@pytest.mark.parametrize("kind", ["random", "duplicates", "isolated"])
def test_rgcn_node_ids(kind):
    """x as node ids (PyG: trainable embeddings): node v's rows are row x[v]
    of W_r and of root; x=arange(N) is x=None; FastRGCNConv agrees."""
    edge_index, edge_type, n, _ = random_edges(kind, 8, 8, 3, seed=17)
    ids = torch.as_tensor(np.random.default_rng(18).integers(0, 12, n))  # repeats some rows
    conv = make_rgcn(hnn.RGCNConv, 12, 5, 3, seed=19)

    def reference(p):
        weight, root, bias = rgcn_params(conv, p)
        x = one_hot(ids, 12)
        return rgcn_reference(x, x, edge_index, edge_type, weight, root, "mean") + bias

    check(conv, lambda: conv(ids, edge_index, edge_type), [], reference)
    fast = hnn.FastRGCNConv(12, 5, 3)
    fast.load_state_dict(conv.state_dict())
    with torch.no_grad():
        assert rel_err(fast(ids, edge_index, edge_type), conv(ids, edge_index, edge_type)) \
            < TOL
        square = make_rgcn(hnn.RGCNConv, 8, 5, 3, seed=20)
        assert rel_err(square(torch.arange(8), edge_index, edge_type),
                       square(None, edge_index, edge_type)) < TOL


@pytest.mark.parametrize("source_ids", [False, True])
def test_rgcn_featureless_bipartite(source_ids):
    """x=(None or source ids, destination ids) with in_channels=(in_src, in_dst)."""
    edge_index, edge_type, ns, nd = random_edges("random", 7, 4, 3, seed=21)
    conv = make_rgcn(hnn.RGCNConv, (7, 10), 5, 3, seed=22)
    dst_ids = torch.tensor([9, 0, 3, 3])
    src_ids = torch.tensor([6, 5, 4, 3, 2, 1, 0]) if source_ids else None

    def reference(p):
        weight, root, bias = rgcn_params(conv, p)
        xs = one_hot(src_ids if source_ids else torch.arange(ns), 7)
        return rgcn_reference(xs, one_hot(dst_ids, 10), edge_index, edge_type, weight, root,
                              "mean") + bias

    check(conv, lambda: conv((src_ids, dst_ids), edge_index, edge_type), [], reference)


def test_rgcn_featureless_trains():
    """Gradients reach the embedding rows: a featureless layer fits labels."""
    edge_index, edge_type, n, _ = random_edges("random", 30, 30, 4, seed=23)
    torch.manual_seed(23)
    conv = hnn.RGCNConv(n, 4, 4)
    require_training(conv)
    labels = torch.randint(0, 4, (n,))
    opt = torch.optim.Adam(conv.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(conv(None, edge_index, edge_type), labels)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


# ---- bipartite RGCN ------------------------------------------------------------------

@pytest.mark.parametrize("kind", GRAPH_KINDS)
@pytest.mark.parametrize("channels,sizes", [((6, 4), (9, 5)), ((3, 8), (4, 12)),
                                            ((5, 5), (6, 6))])
def test_rgcn_bipartite(kind, channels, sizes):
    """Messages from x_src, root from x_dst, one output row per x_dst row;
    in_src < in_dst, in_src > in_dst and equal widths (zero-padded to one)."""
    edge_index, edge_type, ns, nd = random_edges(kind, *sizes, 3, seed=len(kind) + sizes[0])
    conv = make_rgcn(hnn.RGCNConv, channels, 5, 3, seed=24)
    assert repr(conv) == f"RGCNConv({channels}, 5, num_relations=3)"

    def reference(p, xs, xd):
        weight, root, bias = rgcn_params(conv, p)
        return rgcn_reference(xs, xd, edge_index, edge_type, weight, root, "mean") + bias

    check(conv, lambda xs, xd: conv((xs, xd), edge_index, edge_type),
          [features(ns, channels[0], seed=25), features(nd, channels[1], seed=26)], reference)


@pytest.mark.parametrize("options", [dict(aggr="add", num_bases=2),
                                     dict(num_blocks=2, root_weight=False),
                                     dict(aggr="sum", bias=False)], ids=_options_id)
def test_rgcn_bipartite_options(options):
    edge_index, edge_type, ns, nd = random_edges("duplicates", 10, 3, 4, seed=27)
    conv = make_rgcn(hnn.FastRGCNConv, (6, 2), 4, 4, seed=28, **options)
    aggr = "add" if options.get("aggr") in ("add", "sum") else "mean"

    def reference(p, xs, xd):
        weight, root, bias = rgcn_params(conv, p)
        return rgcn_reference(xs, xd, edge_index, edge_type, weight, root, aggr) + bias

    check(conv, lambda xs, xd: conv((xs, xd), edge_index, edge_type),
          [features(ns, 6, seed=29), features(nd, 2, seed=30)], reference)


def test_rgcn_pair_of_one_node_set_is_the_homogeneous_layer():
    """x=(x, x) is the same graph as x: sources and destinations coincide."""
    _, edge_index, edge_type = homogeneous("self_loops_and_duplicates")
    conv = hnn.RGCNConv(16, 8, 6)
    x = features(edge_index.max().item() + 1, 16)
    with torch.no_grad():
        assert rel_err(conv((x, x), edge_index, edge_type), conv(x, edge_index, edge_type)) \
            < TOL


# ---- errors ---------------------------------------------------------------------------

def test_bad_inputs_say_what_is_wrong(fake_torch_sparse):
    edge_index, edge_type, n, _ = random_edges("random", 10, 10, 3, seed=31)
    conv, x = hnn.RGCNConv(8, 5, 3), features(n, 8)
    bi = hnn.RGCNConv((8, 4), 5, 3)
    rgat = hnn.RGATConv(8, 5, 3)
    ones = torch.ones(edge_index.size(1))
    with torch.no_grad():
        # sparse adjacencies
        with pytest.raises(ValueError, match="needs edge_type: edge_index has values of "
                                             "dtype torch.float32"):
            conv(x, sparse_adjacency("coo", edge_index, ones, n, n))
        with pytest.raises(ValueError, match="needs edge_type: edge_index has no values"):
            conv(x, FakeSparseTensor(edge_index[1], edge_index[0], None, (n, n)))
        with pytest.raises(ValueError, match=r"sparse adjacency is \[10, 12\]"):
            conv(x, sparse_adjacency("coo", edge_index, edge_type, 12, n))
        with pytest.raises(ValueError, match="edge_type has 29 entries for 30 edges"):
            conv(x, sparse_adjacency("coo", edge_index, ones, n, n), edge_type[:-1])
        three = torch.sparse_coo_tensor(torch.zeros(3, 1, dtype=torch.int64), [1], (2, 2, 2))
        with pytest.raises(ValueError, match="sparse matrix"):
            conv(x, three)
        # [E, F] values are PyG's edge_attr: they need edge_dim (test_nn_rgat_options.py)
        with pytest.raises(ValueError, match=r"\[E, F\] values.*no edge_dim"):
            rgat(x, torch.sparse_coo_tensor(edge_index.flip(0), torch.ones(30, 4), (n, n, 4)),
                 edge_type)
        with pytest.raises(ValueError, match=r"\[E, F\] values.*no edge_dim"):
            rgat(x, FakeSparseTensor(edge_index[1], edge_index[0], torch.ones(30, 4), (n, n)),
                 edge_type)
        # featureless and bipartite x
        with pytest.raises(ValueError, match="holds source node [89], but there are 8 source "):
            hnn.RGCNConv(8, 5, 3)(None, edge_index, edge_type)
        with pytest.raises(ValueError, match="x holds node id 8, but there are 8 rows"):
            conv(torch.arange(10), edge_index, edge_type)
        with pytest.raises(ValueError, match="num_blocks"):
            hnn.RGCNConv(10, 4, 3, num_blocks=2)(None, edge_index, edge_type)
        with pytest.raises(NotImplementedError, match="mix source features"):
            bi((x, torch.arange(10)), edge_index, edge_type)
        with pytest.raises(NotImplementedError, match="mix featureless sources"):
            bi((None, features(n, 4)), edge_index, edge_type)
        with pytest.raises(ValueError, match=r"takes x=\(x_src, x_dst\)"):
            bi(x, edge_index, edge_type)
        with pytest.raises(ValueError, match=r"x\[1\] must have shape \[N, 4\]"):
            bi((x, x), edge_index, edge_type)
        with pytest.raises(ValueError, match="holds destination node [6-9], but there are 6"):
            bi((x, features(6, 4)), edge_index, edge_type)
        with pytest.raises(ValueError, match="holds source node [7-9], but there are 7"):
            bi((x[:7], features(n, 4)), edge_index, edge_type)
        with pytest.raises(NotImplementedError, match="featureless"):
            rgat(None, edge_index, edge_type)
        with pytest.raises(NotImplementedError, match="bipartite"):
            rgat((x, x), edge_index, edge_type)

"""hector.nn.RGATConv's PyG options on the CPU: return_attention_weights,
attention_mode='multiplicative-self-attention' (with dim > 1),
attention_mechanism='within-relation', mod ('additive', 'scaled',
'f-additive', 'f-scaled') and edge_dim with edge_attr, each a compiled model
variant (hector.models.rgat). Every case is checked against a float64
reference written here from PyG 2.8's RGATConv.message (per-edge messages,
then a sum per destination), in hector's parameterisation (per-relation
attention vectors instead of PyG's shared q, k, e: docs/python.md):
outputs, α, and the gradients of x, edge_attr and every parameter, on
random graphs in random edge order with isolated nodes, self loops and
duplicate edges, and a graph without edges. Plus the options that stay refused, with their errors.
(dropout in training mode: test_rgat_dropout.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
from hector import models  # noqa: E402
from hectorc_support import compile_cache_in  # noqa: E402

TOL = 1e-5
pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


def rel_err(actual, expected):
    actual, expected = actual.detach().double(), expected.detach().double()
    assert actual.shape == expected.shape
    if expected.numel() == 0:
        return 0.0
    return float((actual - expected).abs().max() / max(expected.abs().max(), 1e-30))


# ---- the float64 reference, from PyG 2.8's RGATConv.message/update ----------------

def reference(p, x, edge_index, edge_type, edge_attr, *, heads, channels, mode, mod,
              negative_slope, concat, dim=1, within=False):
    """out [N, H·D·C or D·C] and α [E, H·D] (before mod, as PyG's _alpha),
    float64, D = dim. `p` holds the layer's parameters (float64 leaves)."""
    src, dst = edge_index[0], edge_index[1]
    n, e, h, c, d = x.size(0), src.numel(), heads, channels, dim
    w_e = p["weight"][edge_type]                                     # [E, in, H·C]
    out_j = torch.bmm(x[src].unsqueeze(1), w_e).squeeze(1).view(e, h, 1, c)  # source
    out_i = torch.bmm(x[dst].unsqueeze(1), w_e).squeeze(1).view(e, h, 1, c)  # destination

    def score(rows, vectors):  # [E, H, D]: one C-vector per (relation, head, d)
        return (rows * vectors[edge_type].view(e, h, d, c)).sum(-1)

    terms = [score(out_i, p["att_dst"]), score(out_j, p["att_src"])]
    if edge_attr is not None:
        attr = edge_attr.view(-1, 1) if edge_attr.dim() == 1 else edge_attr
        if attr.size(0) != e:
            attr = attr[edge_type]
        proj = (attr @ p["lin_edge.weight"].t()).view(e, h, 1, c)
        terms.append(score(proj, p["att_edge"]))
    if mode == "additive":
        score = torch.nn.functional.leaky_relu(sum(terms), negative_slope)
    else:
        score = terms[0]
        for t in terms[1:]:
            score = score * t
    # softmax over the incoming edges of each destination (within-relation: of
    # each destination and relation), one group per (group, head, d)
    alpha = torch.empty_like(score)
    groups = dst * R + edge_type if within else dst
    for t in groups.unique():
        m = groups == t
        alpha[m] = torch.softmax(score[m], dim=0)
    degree = torch.bincount(dst, minlength=n).double()[dst].view(e, 1, 1, 1)
    coef = alpha.unsqueeze(-1)                                        # [E, H, D, 1]
    if mod == "additive":
        msg = out_j * coef + p["w"] * (out_j * torch.ones(e, h, d, 1, dtype=torch.float64))
    elif mod == "scaled":
        s = torch.relu(degree.view(e, 1) @ p["l1"] + p["b1"]) @ p["l2"] + p["b2"]  # [E, C]
        msg = out_j * coef * s.view(e, 1, 1, c)
    else:
        if mod == "f-additive":
            coef = torch.where(coef > 0, coef + 1, coef)
        elif mod == "f-scaled":
            coef = coef * degree
        msg = coef * out_j
    out = torch.zeros(n, h, d, c, dtype=torch.float64).index_add(0, dst, msg)
    out = out.reshape(n, h * d * c) if concat else out.mean(dim=1).reshape(n, d * c)
    if p.get("bias") is not None:
        out = out + p["bias"]
    return out, alpha.reshape(e, h * d)


# ---- graphs -------------------------------------------------------------------------

def graph(kind, num_relations, seed):
    """(N, edge_index, edge_type) in random edge order."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        n, e = 30, 160
        src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    elif kind == "isolated":  # nodes 20..39 receive nothing, some send nothing
        n, e = 40, 90
        src, dst = rng.integers(0, 30, e), rng.integers(0, 20, e)
    elif kind == "loops_duplicates":
        n = 12
        src, dst = rng.integers(0, n, 40), rng.integers(0, n, 40)
        loops = np.arange(n)
        src = np.concatenate([src, loops, src[:10]])
        dst = np.concatenate([dst, loops, dst[:10]])
    elif kind == "empty":  # no edges: every output row is the bias
        n = 7
        src = dst = np.zeros(0, dtype=np.int64)
    else:
        raise ValueError(kind)
    etype = rng.integers(0, num_relations, src.size)
    order = rng.permutation(src.size)
    edge_index = torch.as_tensor(np.stack([src[order], dst[order]]), dtype=torch.int64)
    return n, edge_index, torch.as_tensor(etype[order], dtype=torch.int64)


GRAPHS = ("random", "isolated", "loops_duplicates", "empty")
IN, R = 6, 3


def randomize(conv, seed):
    """Parameters away from their initial values (bias, w, l1, b1, b2 start
    at 0 or 1), so that each one reaches the output."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, q in conv.named_parameters():
            q.copy_(torch.randn(q.shape, generator=g) * 0.7)


def randomize_mild_mod(conv, seed):
    """randomize, with the cardinality MLP's first layer (l1, b1) scaled
    down, for the variants whose scores multiply (dim > 1, within-relation)."""
    randomize(conv, seed)
    with torch.no_grad():
        for name in ("l1", "b1"):
            if hasattr(conv, name):
                getattr(conv, name).mul_(0.2)


def check(conv, kind, seed, edge_attr_rows=None, attention=False):
    """conv's output (and α) and the gradients of x, edge_attr and every
    parameter against the float64 reference."""
    torch.manual_seed(seed)
    n, edge_index, edge_type = graph(kind, R, seed)
    x = torch.randn(n, IN, requires_grad=True)
    edge_attr = None
    if edge_attr_rows is not None:
        rows = edge_index.size(1) if edge_attr_rows == "edges" else R
        edge_attr = torch.randn(rows, conv.edge_dim, requires_grad=True)
        if conv.edge_dim == 1 and edge_attr_rows == "edges":
            edge_attr = torch.randn(rows, requires_grad=True)  # PyG's [E] form
    result = conv(x, edge_index, edge_type, edge_attr,
                  return_attention_weights=True if attention else None)
    out, alpha = (result[0], result[1][1]) if attention else (result, None)
    if attention:
        assert result[1][0] is edge_index
        assert alpha.shape == (edge_index.size(1), conv.heads * conv.dim)

    p = {k: v.detach().double().requires_grad_() for k, v in conv.named_parameters()}
    xr = x.detach().double().requires_grad_()
    er = None if edge_attr is None else edge_attr.detach().double().requires_grad_()
    ref, ref_alpha = reference(
        p, xr, edge_index, edge_type, er, heads=conv.heads, channels=conv.out_channels,
        mode="multiplicative" if conv.attention_mode.startswith("multiplicative") else "additive",
        mod=conv.mod, negative_slope=conv.negative_slope, concat=conv.concat, dim=conv.dim,
        within=conv.attention_mechanism == "within-relation")
    assert out.shape == ref.shape
    assert rel_err(out, ref) < TOL
    if attention:
        assert rel_err(alpha, ref_alpha) < TOL

    cot = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1))
    loss, ref_loss = (out * cot).sum(), (ref * cot.double()).sum()
    if attention:  # α's gradient flows back through the compiled backward too
        acot = torch.randn(alpha.shape, generator=torch.Generator().manual_seed(seed + 2))
        loss, ref_loss = loss + (alpha * acot).sum(), ref_loss + (ref_alpha * acot.double()).sum()
    loss.backward()
    ref_loss.backward()

    def grad(leaf):  # a reference leaf that no edge reaches (no edges) has none
        return torch.zeros_like(leaf) if leaf.grad is None else leaf.grad

    assert rel_err(x.grad, grad(xr)) < TOL
    if edge_attr is not None:
        assert rel_err(edge_attr.grad, grad(er)) < TOL
    for name, q in conv.named_parameters():
        assert q.grad is not None, name
        assert rel_err(q.grad, grad(p[name])) < TOL, name


# ---- the options --------------------------------------------------------------------

@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("heads,concat", [(2, True), (1, True), (2, False)])
def test_return_attention_weights(kind, heads, concat):
    conv = hnn.RGATConv(IN, 4, R, heads=heads, concat=concat)
    randomize(conv, 1)
    check(conv, kind, 3, attention=True)


def test_return_attention_weights_false_also_returns_them():
    """PyG returns (out, (edge_index, α)) for any bool, False included."""
    conv = hnn.RGATConv(IN, 4, R, heads=2)
    n, ei, et = graph("random", R, 0)
    x = torch.randn(n, IN)
    with torch.no_grad():
        out, (adj, alpha) = conv(x, ei, et, return_attention_weights=False)
        assert torch.allclose(out, conv(x, ei, et), atol=1e-6)
    assert adj is ei and alpha.shape == (ei.size(1), 2)
    # α sums to one over the incoming edges of every destination, per head
    sums = torch.zeros(n, 2).index_add(0, ei[1], alpha)
    has_in = torch.bincount(ei[1], minlength=n) > 0
    assert torch.allclose(sums[has_in], torch.ones(int(has_in.sum()), 2), atol=1e-5)


def test_return_attention_weights_sparse():
    """A torch.sparse adj_t gives (out, (adj_t with α as values, α)), α in
    stored order; CSR keeps its layout."""
    conv = hnn.RGATConv(IN, 4, R, heads=2)
    n, ei, et = graph("random", R, 5)
    keep = np.unique((ei[0] * n + ei[1]).numpy(), return_index=True)[1]  # no duplicates:
    ei, et = ei[:, np.sort(keep)], et[np.sort(keep)]      # CSR would add them up
    x = torch.randn(n, IN)
    with torch.no_grad():
        _, (_, alpha) = conv(x, ei, et, return_attention_weights=True)
        coo = torch.sparse_coo_tensor(ei.flip(0), et, (n, n))
        out, (adj, a) = conv(x, coo, return_attention_weights=True)
        assert torch.allclose(a, alpha, atol=1e-6)
        assert adj.layout == torch.sparse_coo and adj.shape == (n, n, 2)
        assert torch.allclose(adj.to_dense(), torch.sparse_coo_tensor(
            ei.flip(0), alpha, (n, n, 2)).to_dense(), atol=1e-6)
        csr = coo.coalesce().to_sparse_csr()
        _, (adj, a) = conv(x, csr, return_attention_weights=True)
        assert adj.layout == torch.sparse_csr and torch.equal(adj.values(), a)


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("heads", [1, 2])
def test_multiplicative(kind, heads):
    conv = hnn.RGATConv(IN, 4, R, heads=heads, attention_mode="multiplicative-self-attention")
    assert "mode=multiplicative" in conv.model_spec
    randomize(conv, 2)
    check(conv, kind, 4, attention=heads == 2)


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("mod", ["additive", "scaled", "f-additive", "f-scaled"])
def test_mod(kind, mod):
    conv = hnn.RGATConv(IN, 4, R, heads=2, mod=mod)
    assert f"mod={mod}" in conv.model_spec
    randomize(conv, 3)
    with torch.no_grad():  # keep scaled's MLP input (degrees up to ~20) in a sane range
        for name in ("l1", "b1"):
            if hasattr(conv, name):
                getattr(conv, name).mul_(0.2)
    check(conv, kind, 5)


@pytest.mark.parametrize("mod", ["additive", "scaled"])
def test_mod_multiplicative_mean(mod):
    conv = hnn.RGATConv(IN, 4, R, heads=2, mod=mod, concat=False,
                        attention_mode="multiplicative-self-attention")
    randomize(conv, 6)
    with torch.no_grad():
        for name in ("l1", "b1"):
            if hasattr(conv, name):
                getattr(conv, name).mul_(0.2)
    check(conv, "random", 7)


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("heads,dim,concat,mod,edge", [
    (2, 3, True, None, False), (1, 2, False, None, True), (2, 2, True, "scaled", True),
    (2, 2, False, "additive", False), (2, 2, True, "f-scaled", False)])
def test_dim(kind, heads, dim, concat, mod, edge):
    """dim > 1 (multiplicative only): H·D scores per edge, output [N, H·D·C]
    (concat) or [N, D·C]; PyG's per-(head, d) α."""
    conv = hnn.RGATConv(IN, 4, R, heads=heads, dim=dim, concat=concat, mod=mod,
                        edge_dim=3 if edge else None,
                        attention_mode="multiplicative-self-attention")
    assert f"heads={heads * dim}" in conv.model_spec
    randomize_mild_mod(conv, 19)
    check(conv, kind, 20, edge_attr_rows="edges" if edge else None, attention=True)


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("heads,mode,mod,dim", [
    (2, "additive-self-attention", None, 1), (1, "multiplicative-self-attention", None, 1),
    (2, "additive-self-attention", "f-scaled", 1),
    (2, "multiplicative-self-attention", "scaled", 2)])
def test_within_relation(kind, heads, mode, mod, dim):
    """PyG's attention_mechanism='within-relation': α sums to one over the
    incoming edges of each (destination, relation)."""
    conv = hnn.RGATConv(IN, 4, R, heads=heads, attention_mechanism="within-relation",
                        attention_mode=mode, mod=mod, dim=dim)
    assert f"within={R}" in conv.model_spec
    randomize_mild_mod(conv, 21)
    check(conv, kind, 22, attention=True)


def test_within_relation_is_stable():
    """Scores 1000 apart in different relations of one destination: each
    relation's group subtracts its own maximum (PyG's per-relation softmax),
    so nothing underflows to 0/0."""
    conv = hnn.RGATConv(2, 1, 2, attention_mechanism="within-relation", bias=False,
                        negative_slope=1.0)  # score = z_s
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([[[1.0], [0.0]], [[1.0], [0.0]]]))
        conv.att_src.fill_(1.0)
        conv.att_dst.zero_()
    x = torch.tensor([[1000.0, 0.0], [999.0, 0.0], [-1000.0, 0.0], [-1001.0, 0.0], [0, 0]])
    ei = torch.tensor([[0, 1, 2, 3], [4, 4, 4, 4]])
    with torch.no_grad():
        out, (_, alpha) = conv(x, ei, torch.tensor([0, 0, 1, 1]), return_attention_weights=True)
    e = 1 / (1 + np.exp(-1.0))
    assert torch.allclose(alpha[:, 0], torch.tensor([e, 1 - e, e, 1 - e]).float(), atol=1e-6)
    assert torch.isfinite(out).all()


def test_f_additive_where_alpha_underflows():
    """f-additive adds 1 only where α > 0: with scores 200 apart, float32's
    exp underflows and α = 0 exactly on the losing edge (PyG's torch.where)."""
    conv = hnn.RGATConv(2, 1, 1, mod="f-additive", bias=False)
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([[[1.0], [0.0]]]))
        conv.att_src.fill_(1.0)
        conv.att_dst.zero_()
    x = torch.tensor([[300.0, 0.0], [1.0, 0.0], [5.0, 0.0]])
    ei = torch.tensor([[0, 1], [2, 2]])
    with torch.no_grad():
        out, (_, alpha) = conv(x, ei, torch.zeros(2, dtype=torch.int64),
                               return_attention_weights=True)
    assert alpha[1, 0] == 0 and alpha[0, 0] == 1
    # edge 0 brings (1 + 1)·300, edge 1 (α = 0) brings nothing
    assert torch.allclose(out[2], torch.tensor([600.0]))


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("mode", ["additive-self-attention", "multiplicative-self-attention"])
def test_edge_attr(kind, mode):
    conv = hnn.RGATConv(IN, 4, R, heads=2, edge_dim=3, attention_mode=mode)
    assert "edge_dim=3" in conv.model_spec
    randomize(conv, 8)
    check(conv, kind, 9, edge_attr_rows="edges", attention=True)


def test_edge_attr_per_relation_and_one_dimensional():
    """PyG's other edge_attr forms: one row per relation (picked by
    edge_type) and [E] when edge_dim is 1."""
    conv = hnn.RGATConv(IN, 4, R, heads=2, edge_dim=3)
    randomize(conv, 10)
    check(conv, "random", 11, edge_attr_rows="relations")
    conv = hnn.RGATConv(IN, 4, R, heads=1, edge_dim=1, mod="f-scaled")
    randomize(conv, 12)
    check(conv, "isolated", 13, edge_attr_rows="edges")


def test_edge_attr_as_sparse_values():
    """A sparse adj_t with [E, F] values: PyG reads them as edge_attr (the
    relations then come from edge_type); an explicit edge_attr wins. α
    comes back as the values of the same layout."""
    conv = hnn.RGATConv(IN, 4, R, heads=2, edge_dim=3)
    randomize(conv, 16)
    n, ei, et = graph("random", R, 17)
    keep = np.sort(np.unique((ei[0] * n + ei[1]).numpy(), return_index=True)[1])
    ei, et = ei[:, keep], et[keep]
    x, attr = torch.randn(n, IN), torch.randn(ei.size(1), 3)
    coo = torch.sparse_coo_tensor(ei.flip(0), attr, (n, n, 3))
    with torch.no_grad():
        out, (_, alpha) = conv(x, ei, et, attr, return_attention_weights=True)
        assert torch.allclose(conv(x, coo, et), out, atol=1e-6)
        assert torch.allclose(conv(x, coo, et, attr), out, atol=1e-6)
        mine, (adj, a) = conv(x, coo, et, return_attention_weights=True)
        assert torch.allclose(a, alpha, atol=1e-6) and adj.shape == (n, n, 2)
        assert not torch.allclose(conv(x, coo, et, torch.zeros_like(attr)), out, atol=1e-3)


def test_size_repeats_the_node_count():
    conv = hnn.RGATConv(IN, 4, R)
    n, ei, et = graph("random", R, 18)
    x = torch.randn(n, IN)
    with torch.no_grad():
        out = conv(x, ei, et)
        assert torch.equal(conv(x, ei, et, size=(n, n)), out)
        assert torch.equal(conv(x, ei, et, size=(None, n)), out)
        with pytest.raises(ValueError, match="both the sources and the destinations"):
            conv(x, ei, et, size=(n, n + 1))


def test_edge_dim_without_edge_attr():
    """With edge_dim but no edge_attr, PyG adds no edge term: the layer
    runs the variant without the edge input (its edge parameters get no
    gradient)."""
    conv = hnn.RGATConv(IN, 4, R, heads=2, edge_dim=3)
    plain = hnn.RGATConv(IN, 4, R, heads=2)
    plain.load_state_dict({k: v for k, v in conv.state_dict().items()
                           if not k.startswith(("lin_edge", "att_edge"))})
    n, ei, et = graph("random", R, 14)
    x = torch.randn(n, IN)
    with torch.no_grad():
        assert torch.equal(conv(x, ei, et), plain(x, ei, et))
    assert conv.spec_for(edge_attr=False) == plain.model_spec


def test_dropout_in_eval_mode():
    """dropout only acts in training mode (PyG's self.training): eval runs."""
    conv = hnn.RGATConv(IN, 4, R, heads=2, dropout=0.5)
    plain = hnn.RGATConv(IN, 4, R, heads=2)
    plain.load_state_dict(conv.state_dict())
    n, ei, et = graph("random", R, 15)
    x = torch.randn(n, IN)
    conv.eval()
    with torch.no_grad():
        assert torch.equal(conv(x, ei, et), plain(x, ei, et))


# ---- specs ----------------------------------------------------------------------------

def test_specs_round_trip():
    for options in ({"mode": "multiplicative"}, {"mod": "f-scaled"}, {"edge_dim": 5},
                    {"alpha": "yes", "mod": "scaled", "edge_dim": 2}, {"within": 4}):
        text = models.spec("rgat", 16, 8, 2, **options)
        assert models.from_spec(text) == models.generate("rgat", 16, 8, 2, **options)
    assert models.spec("rgat", 16, 8, 2, mode="additive", mod="none", edge_dim=0,
                       alpha="no") == "rgat:width=16,out_width=8,heads=2"
    with pytest.raises(ValueError, match="mod must be one of"):
        models.generate("rgat", 16, mod="scaling")
    with pytest.raises(ValueError, match="edge_dim must be a non-negative integer"):
        models.generate("rgat", 16, edge_dim=-1)
    with pytest.raises(ValueError, match="within must be a non-negative integer"):
        models.generate("rgat", 16, within=1.5)
    with pytest.raises(ValueError, match="several results"):
        models.stack("rgat", 2, 16, alpha="yes")


# ---- refused, with clear errors -------------------------------------------------------

def test_refused():
    with pytest.raises(ValueError, match="attention_mechanism must be"):
        hnn.RGATConv(IN, 4, R, attention_mechanism="within")
    with pytest.raises(ValueError, match="attention_mode must be"):
        hnn.RGATConv(IN, 4, R, attention_mode="dot")
    with pytest.raises(ValueError, match="needs dim=1"):
        hnn.RGATConv(IN, 4, R, dim=2)
    with pytest.raises(ValueError, match="dim must be a positive integer"):
        hnn.RGATConv(IN, 4, R, dim=0, attention_mode="multiplicative-self-attention")
    with pytest.raises(ValueError, match="mod must be None or one of"):
        hnn.RGATConv(IN, 4, R, mod="scale")
    with pytest.raises(ValueError, match="mod must be None when dropout > 0"):
        hnn.RGATConv(IN, 4, R, mod="additive", dropout=0.1)
    with pytest.raises(ValueError, match="dropout must be a probability"):
        hnn.RGATConv(IN, 4, R, dropout=1.5)
    with pytest.raises(ValueError, match="edge_dim must be None or a positive integer"):
        hnn.RGATConv(IN, 4, R, edge_dim=0)

    n, ei, et = graph("random", R, 16)
    x = torch.randn(n, IN)
    conv = hnn.RGATConv(IN, 4, R)
    with pytest.raises(ValueError, match="has no edge_dim"):
        conv(x, ei, et, torch.randn(ei.size(1), 3))
    with pytest.raises(TypeError, match="return_attention_weights must be None or a bool"):
        conv(x, ei, et, return_attention_weights="yes")
    conv = hnn.RGATConv(IN, 4, R, edge_dim=3)
    with pytest.raises(ValueError, match=r"edge_attr must have shape \[N, 3\]"):
        conv(x, ei, et, torch.randn(ei.size(1), 2))
    with pytest.raises(ValueError, match="one per edge"):
        conv(x, ei, et, torch.randn(ei.size(1) - 1, 3))
    with pytest.raises(TypeError, match="edge_attr must be float32"):
        conv(x, ei, et, torch.randn(ei.size(1), 3, dtype=torch.float64))

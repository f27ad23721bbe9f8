"""Attention dropout, compiled (hgraph.dropout; hector.nn.RGATConv(dropout=p)
in training mode), on the CPU.

The mask is checked bit for bit against a NumPy implementation of the hash
written from its specification (the description of hgraph.dropout in
docs/dialects/HGraphDialect.md), not from the compiler's code: keep
(seed, n, j) iff fmix(fmix((n·W + j) ^ k1) + k2) >> 8 >= ceil(p·2^24), with n
the caller's edge index. Then:

- a standalone `hgraph.dropout` of an edge-wise value: exact values and
  gradient (the same mask on the incoming gradient), the keep fraction of
  200,000 elements within 5 sigma of 1 - p, p = 0 and p = 1;
- RGATConv with dropout in {0, 0.3, 1}, heads 1 and 4 (and
  attention_mechanism='within-relation'), random graphs in random edge order: output and the gradients of x and every parameter
  against a float64 reference of BRIEF.md §4's RGAT with the mask applied
  to α after the softmax (PyG's F.dropout(alpha) in RGATConv.message);
  α returned by return_attention_weights is before dropout (PyG's _alpha);
- the seed: drawn from torch's CPU generator per call, so torch.manual_seed
  repeats a step, another seed gives another mask, and eval mode drops
  nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dropout_reference import fmix, keep_mask

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
import hector.nn.rgat as rgat_module  # noqa: E402
from hector import autograd, compiled, graph as hgraph  # noqa: E402
from hectorc_support import build, compile_cache_in  # noqa: E402

TOL = 1e-5
IN, R = 6, 3


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


# ---- the mask, from its specification (dropout_reference.py) -----------------------------

def dropped(values: torch.Tensor, mask: np.ndarray, p: float) -> torch.Tensor:
    """values with the mask applied and the kept ones scaled by 1/(1-p)."""
    if p >= 1:
        return torch.zeros_like(values)
    keep = torch.as_tensor(mask, dtype=values.dtype)
    return values * keep / (1 - p)


def test_reference_hash_known_values():
    """Pins the specification: a change of the hash must change this test."""
    assert int(fmix(np.array([0], dtype=np.uint64))[0]) == 0
    assert int(fmix(np.array([1], dtype=np.uint64))[0]) == 0x514E28B7
    assert keep_mask(0, 4, 2, 0.0).all() and not keep_mask(0, 4, 2, 1.0).any()


# ---- a standalone hgraph.dropout --------------------------------------------------------

def _drop_ir(width, heads, p):
    t = f"!hgraph.edge<{width}xf32{', heads = %d' % heads if heads > 1 else ''}>"
    return f"""hgraph.func @drop(%g: !hgraph.graph, %x: {t} {{hgraph.name = "x"}},
                  %seed: !hgraph.seed {{hgraph.name = "seed"}}) -> {t} {{
  %y = hgraph.dropout %x, %seed p {p!r} : {t}
  hgraph.return %y : {t}
}}
"""


@pytest.fixture(scope="module")
def drop_library(tmp_path_factory):
    def make(width, heads, p):
        directory = tmp_path_factory.mktemp("drop")
        return compiled.load(build(directory, _drop_ir(width, heads, p), "--target=cpu",
                                   "--training", name="libdrop.so"))
    return make


def _random_graph(rng, n, e, types=R):
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    etype = rng.integers(0, types, e)
    return src, dst, etype


def _run_drop(lib, rng, n, e, width, seed, x_user, requires_grad=False):
    """Runs @drop on a random graph; x_user [E, width] in the caller's edge
    order. Returns (y in the caller's order, x leaf in canonical order, perm)."""
    src, dst, etype = _random_graph(rng, n, e)
    pre = hgraph.preprocess(np.zeros(n, dtype=np.int64), src, dst, etype, 1, R)
    perm = torch.from_numpy(np.asarray(pre.edge_perm).astype(np.int64))  # canonical -> caller
    x = x_user[perm].clone().requires_grad_(requires_grad)
    (y,) = autograd.run(lib, "drop", pre, x=x, seed=torch.tensor([seed], dtype=torch.int64))
    y_user = torch.empty_like(y).index_copy(0, perm, y)
    return y_user, x, perm, y


@pytest.mark.parametrize("width,heads", [(4, 4), (1, 1), (6, 2)])
@pytest.mark.parametrize("p", [0.3, 0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 12345, -7, 2**63 - 1])
def test_dropout_values_and_gradient(drop_library, width, heads, p, seed):
    lib = drop_library(width, heads, p)
    rng = np.random.default_rng(abs(seed) % 1000 + width)
    n, e = 25, 300
    x_user = torch.randn(e, width, dtype=torch.float32)
    y_user, x, perm, y = _run_drop(lib, rng, n, e, width, seed, x_user, requires_grad=True)
    mask = keep_mask(seed, e, width, p)
    expected = dropped(x_user.double(), mask, p)
    assert torch.allclose(y_user.double(), expected, rtol=1e-6, atol=0)
    # the gradient: the incoming gradient times the same mask and scale
    cot = torch.randn(y.shape, generator=torch.Generator().manual_seed(3))
    (y * cot).sum().backward()
    cot_user = torch.empty_like(cot).index_copy(0, perm, cot)
    expected_grad = dropped(cot_user.double(), mask, p)
    grad_user = torch.empty_like(x.grad).index_copy(0, perm, x.grad)
    assert torch.allclose(grad_user.double(), expected_grad, rtol=1e-6, atol=0)


def test_keep_fraction(drop_library):
    """200,000 elements: the kept fraction is 1 - p within 5 sigma, and the
    mask is the specified one exactly."""
    p, width = 0.3, 4
    lib = drop_library(width, width, p)
    rng = np.random.default_rng(11)
    e = 50_000
    y_user, *_ = _run_drop(lib, rng, 5_000, e, width, 987654321, torch.ones(e, width))
    kept = (y_user != 0).numpy()
    sigma = math.sqrt(p * (1 - p) / kept.size)
    assert abs(kept.mean() - (1 - p)) < 5 * sigma
    assert np.array_equal(kept, keep_mask(987654321, e, width, p))
    assert torch.all(y_user[y_user != 0] == torch.tensor(1 / (1 - p), dtype=torch.float32))
    # per column (head) too: no head is favoured
    for j in range(width):
        assert abs(kept[:, j].mean() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / e)


def test_seeds_give_different_masks(drop_library):
    lib = drop_library(4, 4, 0.5)
    e = 2_000
    masks = []
    for seed in (1, 2, 2**32 + 1):  # the high word matters too
        y_user, *_ = _run_drop(lib, np.random.default_rng(5), 200, e, 4, seed, torch.ones(e, 4))
        masks.append((y_user != 0).numpy())
    assert (masks[0] != masks[1]).mean() > 0.4
    assert (masks[0] != masks[2]).mean() > 0.4
    again, *_ = _run_drop(lib, np.random.default_rng(5), 200, e, 4, 1, torch.ones(e, 4))
    assert np.array_equal(masks[0], (again != 0).numpy())


# ---- RGATConv(dropout=p) ----------------------------------------------------------------

def rgat_reference(p, x, edge_index, edge_type, *, heads, channels, mask, drop, within=False):
    """BRIEF.md §4's RGAT (hector's parameterisation, one attention vector per
    relation) in float64, with α dropped by `mask` [E, H] after the softmax
    (over the incoming edges of each destination, or with `within` of each
    destination and relation, PyG's 'within-relation')."""
    src, dst = edge_index[0], edge_index[1]
    n, e, h, c = x.size(0), src.numel(), heads, channels
    w = p["weight"][edge_type]                                         # [E, in, H·C]
    z = torch.bmm(x[src].unsqueeze(1), w).squeeze(1).view(e, h, c)
    zt = torch.bmm(x[dst].unsqueeze(1), w).squeeze(1).view(e, h, c)
    score = (z * p["att_src"][edge_type].view(e, h, c)).sum(-1) \
        + (zt * p["att_dst"][edge_type].view(e, h, c)).sum(-1)
    score = torch.nn.functional.leaky_relu(score, 0.2)
    alpha = torch.empty_like(score)
    groups = dst * R + edge_type if within else dst
    for t in groups.unique():
        m = groups == t
        alpha[m] = torch.softmax(score[m], dim=0)
    coef = dropped(alpha, mask, drop)
    out = torch.zeros(n, h, c, dtype=torch.float64).index_add(0, dst, coef.unsqueeze(-1) * z)
    return out.reshape(n, h * c) + p["bias"], alpha


def rgat_graph(seed, n=30, e=200):
    rng = np.random.default_rng(seed)
    src, dst, etype = _random_graph(rng, n, e)
    src[:5], dst[:5] = dst[:5], dst[:5]  # self loops
    return n, torch.as_tensor(np.stack([src, dst])), torch.as_tensor(etype)


def randomize(conv, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, q in conv.named_parameters():
            q.copy_(torch.randn(q.shape, generator=g) * 0.7)


def rel_err(actual, expected):
    actual, expected = actual.detach().double(), expected.detach().double()
    assert actual.shape == expected.shape
    return float((actual - expected).abs().max() / max(expected.abs().max(), 1e-30))


RGAT_CASES = [(heads, channels, drop, False) for heads, channels in ((1, 4), (4, 2), (4, 3))
              for drop in (0.3, 0.0, 1.0)] + [(1, 4, 0.3, True), (4, 2, 0.3, True)]


@pytest.mark.parametrize("heads,channels,drop,within", RGAT_CASES)
def test_rgat_dropout_against_reference(monkeypatch, heads, channels, drop, within):
    seed = 0x5DEECE66D * heads + channels
    monkeypatch.setattr(rgat_module, "draw_seed",
                        lambda device: torch.tensor([seed], dtype=torch.int64, device=device))
    torch.manual_seed(heads * 10 + channels)
    conv = hnn.RGATConv(IN, channels, R, heads=heads, dropout=drop, attention_mechanism=(
        "within-relation" if within else "across-relation"))
    randomize(conv, heads + channels)
    n, edge_index, edge_type = rgat_graph(heads * 7 + channels)
    x = torch.randn(n, IN, requires_grad=True)
    out, (_, alpha) = conv(x, edge_index, edge_type, return_attention_weights=True)

    mask = keep_mask(seed, edge_index.size(1), heads, drop)
    p = {k: v.detach().double().requires_grad_() for k, v in conv.named_parameters()}
    xr = x.detach().double().requires_grad_()
    ref, ref_alpha = rgat_reference(p, xr, edge_index, edge_type, heads=heads,
                                    channels=channels, mask=mask, drop=drop, within=within)
    assert rel_err(out, ref) < TOL
    assert rel_err(alpha, ref_alpha) < TOL  # before dropout, as PyG's _alpha

    g = torch.Generator().manual_seed(9)
    cot = torch.randn(out.shape, generator=g)
    acot = torch.randn(alpha.shape, generator=g)
    ((out * cot).sum() + (alpha * acot).sum()).backward()
    ((ref * cot.double()).sum() + (ref_alpha * acot.double()).sum()).backward()
    assert rel_err(x.grad, xr.grad) < TOL
    for name, q in conv.named_parameters():
        assert q.grad is not None, name
        assert rel_err(q.grad, p[name].grad) < TOL, name


def test_rgat_dropout_is_seeded_by_torch():
    """Each call draws a seed from torch's CPU generator: torch.manual_seed
    repeats a step exactly, the next call drops other coefficients."""
    conv = hnn.RGATConv(IN, 4, R, heads=2, dropout=0.5)
    randomize(conv, 1)
    n, edge_index, edge_type = rgat_graph(4, n=40, e=400)
    x = torch.randn(n, IN)
    torch.manual_seed(123)
    first = conv(x, edge_index, edge_type)
    second = conv(x, edge_index, edge_type)
    torch.manual_seed(123)
    repeat = conv(x, edge_index, edge_type)
    assert torch.equal(first, repeat)
    assert not torch.allclose(first, second)
    # the seed is the documented draw: torch's next int64 from the CPU generator
    torch.manual_seed(123)
    seed = int(torch.empty(1, dtype=torch.int64).random_())
    conv.eval()
    with torch.no_grad():
        plain = conv(x, edge_index, edge_type)  # eval: no dropout
    assert not torch.allclose(first, plain)
    mask = keep_mask(seed, edge_index.size(1), 2, 0.5)
    p = {k: v.detach().double() for k, v in conv.named_parameters()}
    ref, _ = rgat_reference(p, x.double(), edge_index, edge_type, heads=2, channels=4,
                            mask=mask, drop=0.5)
    assert rel_err(first, ref) < TOL


def test_rgat_dropout_specs():
    conv = hnn.RGATConv(IN, 4, R, heads=2, dropout=0.25)
    assert conv.spec_for(training=True).endswith(",dropout=0.25")
    assert "dropout" not in conv.spec_for(training=False)
    assert "dropout" not in conv.model_spec
    plain = hnn.RGATConv(IN, 4, R, heads=2, dropout=0.0)
    assert "dropout" not in plain.spec_for(training=True)

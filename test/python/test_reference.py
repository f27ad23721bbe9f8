"""The model references: hand-computed cases, and numpy (float64) against torch (float64)."""

import math

import numpy as np
import pytest

from reference import PARAM_NAMES, make_params
from reference import models_numpy as mn

try:
    import torch
    from reference import models_torch as mt
except ImportError:  # Debian: apt-get install -y python3-torch
    torch = mt = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (Debian: python3-torch)")


def graph(node_type, edges, num_edge_types=None):
    """A graph dict from a node-type list and (src, dst, etype) triples."""
    e = np.array(edges, dtype=np.int64).reshape(-1, 3)
    g = {"node_type": np.array(node_type), "src": e[:, 0], "dst": e[:, 1], "etype": e[:, 2]}
    if num_edge_types is not None:
        g["num_edge_types"] = num_edge_types
    return g


def run_numpy(model, g, h, p, heads=1):
    args = [p[k] for k in PARAM_NAMES[model]]
    return mn.rgat(g, h, *args, heads=heads) if model == "rgat" else getattr(mn, model)(g, h, *args)


# ------------------------------------------------------------ hand-computed cases
def test_rgcn_by_hand():
    # 0 -> 2 and 1 -> 2 of type 0 (so c = 1/2 each), 0 -> 1 of type 1 (c = 1).
    g = graph([0, 0, 0], [(0, 2, 0), (1, 2, 0), (0, 1, 1)])
    h = np.array([[1.0], [2.0], [3.0]])
    W = np.array([[[2.0]], [[5.0]]])
    W0 = np.array([[1.0]])
    expected = [[1.0], [2.0 + 1.0 * 5.0], [3.0 + 0.5 * 1.0 * 2.0 + 0.5 * 2.0 * 2.0]]
    assert np.allclose(mn.rgcn(g, h, W, W0), expected)


def test_rgcn_norm_counts_per_relation_and_duplicates():
    # Node 2 gets two type-0 edges from node 0 (a duplicate) and one of type 1: c = 1/2, 1/2, 1.
    g = graph([0, 0, 0], [(0, 2, 0), (0, 2, 0), (1, 2, 1)])
    h = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    W = np.stack([np.eye(2), 3 * np.eye(2)])
    out = mn.rgcn(g, h, W, np.zeros((2, 2)))
    assert np.allclose(out[2], [1.0, 3.0])
    assert np.allclose(out[:2], 0.0)


def test_rgat_by_hand_two_heads_and_leaky_relu():
    # h = [1, 2, 0], W = [[1, -1]]: z_0 = [1, -1], z_1 = [2, -2]; a = 1, b = 0.
    g = graph([0, 0, 0], [(0, 2, 0), (1, 2, 0)])
    h = np.array([[1.0], [2.0], [0.0]])
    W = np.array([[[1.0, -1.0]]])
    out = mn.rgat(g, h, W, np.ones((1, 2)), np.zeros((1, 2)), heads=2)
    e1, e2 = math.exp(1), math.exp(2)  # head 0 scores 1 and 2
    f1, f2 = math.exp(-0.2), math.exp(-0.4)  # head 1 scores leaky(-1), leaky(-2)
    expected = [(e1 * 1 + e2 * 2) / (e1 + e2), (f1 * -1 + f2 * -2) / (f1 + f2)]
    assert np.allclose(out[2], expected)
    assert np.allclose(out[:2], 0.0)  # no in-edges


def test_rgat_by_hand_destination_term():
    # Two relations, so b . (h_t W_r) differs per edge and does not cancel.
    g = graph([0, 0, 0], [(0, 2, 0), (1, 2, 1)])
    h = np.array([[1.0], [1.0], [2.0]])
    W = np.array([[[1.0]], [[3.0]]])
    a = np.array([[0.5], [0.0]])
    b = np.array([[1.0], [-1.0]])
    s0 = 0.5 * 1.0 + 1.0 * (2.0 * 1.0)  # = 2.5
    s1 = 0.0 * 3.0 + -1.0 * (2.0 * 3.0)  # = -6 -> leaky -1.2
    w0, w1 = math.exp(s0), math.exp(0.2 * s1)
    out = mn.rgat(g, h, W, a, b, heads=1)
    assert np.allclose(out[2], (w0 * 1.0 + w1 * 3.0) / (w0 + w1))


def test_hgt_by_hand():
    # d = 1, one head: score_e = (h_s K Watt)(h_t Q) mu; m_e = h_s V Wmsg; out = A sum + h.
    g = graph([0, 0, 1], [(0, 2, 0), (1, 2, 0)])
    h = np.array([[1.0], [2.0], [0.5]])
    K, Q, V, A = (np.array([[[x]], [[y]]]) for x, y in ((2.0, 9.0), (9.0, 3.0), (1.5, 9.0), (9.0, 4.0)))
    Watt, Wmsg, mu = np.array([[[[0.5]]]]), np.array([[[[2.0]]]]), np.array([[3.0]])
    s = [(hs * 2.0 * 0.5) * (0.5 * 3.0) * 3.0 for hs in (1.0, 2.0)]  # 4.5, 9
    w = [math.exp(x) for x in s]
    m = [hs * 1.5 * 2.0 for hs in (1.0, 2.0)]
    expected2 = 4.0 * (w[0] * m[0] + w[1] * m[1]) / (w[0] + w[1]) + 0.5
    out = mn.hgt(g, h, K, Q, V, A, Watt, Wmsg, mu)
    assert np.allclose(out[:, 0], [1.0, 2.0, expected2])  # nodes 0, 1: no in-edges, out = h


def test_hgt_scales_score_by_head_size():
    # d = 4, 2 heads (dh = 2): identity weights; per head score = (k_s . q_t) / sqrt(2).
    g = graph([0, 0, 0], [(0, 2, 0), (1, 2, 0)])
    h = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 2.0, 0.0]])
    eye = np.eye(4)[None]
    eyeh = np.broadcast_to(np.eye(2), (1, 2, 2, 2))
    out = mn.hgt(g, h, eye, eye, eye, eye, eyeh, eyeh, np.ones((1, 2)))
    for head, (s0, s1) in enumerate([(1.0, 1.0), (0.0, 2.0)]):
        w0, w1 = math.exp(s0 / math.sqrt(2)), math.exp(s1 / math.sqrt(2))
        blk = slice(2 * head, 2 * head + 2)
        assert np.allclose(out[2, blk], (w0 * h[0, blk] + w1 * h[1, blk]) / (w0 + w1) + h[2, blk])


def test_nll_loss_by_hand():
    assert mn.nll_loss(np.zeros((1, 2)), [1]) == pytest.approx(math.log(2))
    out = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert mn.nll_loss(out, [0, 1]) == pytest.approx((-(1 - math.log(math.e + 1)) + math.log(2)) / 2)


def test_edge_softmax_is_stable_for_large_scores():
    alpha = mn.edge_softmax(np.array([[1000.0], [1001.0], [-1000.0]]), np.array([0, 0, 1]), 2)
    assert np.allclose(alpha[:, 0], [1 / (1 + math.e), math.e / (1 + math.e), 1.0])


# ------------------------------------------------------- numpy against torch
def random_graph(seed, n=60, e=400, t=3, r=6, hub=True):
    """Random types (not contiguous), an empty edge type, isolated nodes, self-loops,
    duplicate edges and (optionally) a hub receiving a third of the edges."""
    rng = np.random.default_rng(seed)
    node_type = rng.integers(0, t, n)
    live = n - 5  # the last 5 nodes stay isolated
    src = rng.integers(0, live, e)
    dst = rng.integers(0, live, e)
    if hub:
        dst[: e // 3] = 7
    etype = rng.integers(0, r - 1, e)  # type r-1 has no edges
    loops = rng.integers(0, live, 10)
    src = np.concatenate([src, loops, src[:15]])
    dst = np.concatenate([dst, loops, dst[:15]])
    etype = np.concatenate([etype, rng.integers(0, r - 1, 10), etype[:15]])
    return {"node_type": node_type, "src": src, "dst": dst, "etype": etype,
            "num_node_types": t, "num_edge_types": r}


CASES = [  # model, din, dout, heads
    ("rgcn", 5, 7, 1), ("rgcn", 16, 8, 1),
    ("rgat", 6, 8, 1), ("rgat", 6, 8, 4), ("rgat", 3, 12, 3),
    ("hgt", 8, 8, 1), ("hgt", 12, 12, 3),
]


@needs_torch
@pytest.mark.parametrize("model, din, dout, heads", CASES)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tile", [None, 4])
def test_numpy_and_torch_agree(model, din, dout, heads, seed, tile):
    g = random_graph(seed, hub=seed == 0)
    h = np.random.default_rng(seed + 10).standard_normal((60, din))
    p = make_params(model, g, din, dout, heads=heads, seed=seed, dtype=np.float64)
    ref = run_numpy(model, g, h, p, heads)
    tg = mt.TorchGraph(g, tile=tile)
    out = mt.forward(model, tg, torch.tensor(h), mt.to_torch(p, dtype=torch.float64), heads=heads)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-10)


@needs_torch
@pytest.mark.parametrize("model", ["rgcn", "rgat", "hgt"])
def test_agree_on_synthetic_aifb(model):
    from hector.datasets.synthetic import generate

    g = generate("aifb", seed=2)  # 48,810 edges: the numpy reference must stay quick here
    h = np.random.default_rng(0).standard_normal((g.num_nodes, 16))
    heads = 1 if model == "rgcn" else 2
    p = make_params(model, g, 16, 16, heads=heads, seed=3, dtype=np.float64)
    ref = run_numpy(model, g, h, p, heads)
    out = mt.forward(model, mt.TorchGraph(g), torch.tensor(h), mt.to_torch(p, dtype=torch.float64), heads=heads)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-9, atol=1e-9)


@needs_torch
def test_graph_without_edges():
    g = graph([0, 1, 0], [], num_edge_types=2)
    h = np.random.default_rng(0).standard_normal((3, 4))
    for model in ("rgcn", "rgat", "hgt"):
        p = make_params(model, g, 4, 4, heads=2 if model != "rgcn" else 1, seed=0, dtype=np.float64)
        ref = run_numpy(model, g, h, p, 2)
        out = mt.forward(model, mt.TorchGraph(g), torch.tensor(h), mt.to_torch(p, dtype=torch.float64), heads=2)
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)
    assert np.allclose(run_numpy("hgt", g, h, make_params("hgt", g, 4, 4, seed=0, dtype=np.float64)), h)


@needs_torch
def test_float32_close_to_float64():
    g = random_graph(3)
    h = np.random.default_rng(1).standard_normal((60, 8))
    p = make_params("rgat", g, 8, 8, heads=2, seed=1)
    ref = run_numpy("rgat", g, h, p, 2)
    out = mt.forward("rgat", mt.TorchGraph(g), torch.tensor(h, dtype=torch.float32), mt.to_torch(p), heads=2)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("model", ["rgcn", "rgat", "hgt"])
def test_torch_gradients(model):
    """Autograd against finite differences, and a training step reaching every input and weight."""
    g = random_graph(4, n=20, e=60, t=2, r=3)
    tg = mt.TorchGraph(g, tile=4)
    heads = 1 if model == "rgcn" else 2
    p = mt.to_torch(make_params(model, g, 4, 4, heads=heads, seed=0), dtype=torch.float64, requires_grad=True)
    h = torch.randn(20, 4, dtype=torch.float64, requires_grad=True)
    names = list(PARAM_NAMES[model])

    def f(h, *ws):
        return mt.forward(model, tg, h, dict(zip(names, ws)), heads=heads)

    assert torch.autograd.gradcheck(f, (h, *[p[k] for k in names]), eps=1e-6, atol=1e-5)
    labels = torch.randint(0, 4, (20,), generator=torch.Generator().manual_seed(0))
    loss = mt.nll_loss(f(h, *[p[k] for k in names]), labels)
    loss.backward()
    for x in [h] + [p[k] for k in names]:
        assert x.grad is not None and torch.isfinite(x.grad).all()
    ref_loss = mn.nll_loss(run_numpy(model, g, h.detach().numpy(),
                                     {k: v.detach().numpy() for k, v in p.items()}, heads), labels.numpy())
    assert loss.item() == pytest.approx(ref_loss, rel=1e-10)


# ------------------------------------------------------------- params, errors
def test_make_params_shapes_and_determinism():
    g = random_graph(0)  # 3 node types, 6 edge types
    assert {k: v.shape for k, v in make_params("rgcn", g, 5, 7).items()} == {"W": (6, 5, 7), "W0": (5, 7)}
    assert {k: v.shape for k, v in make_params("rgat", g, 5, 8, heads=2).items()} == {
        "W": (6, 5, 8), "a": (6, 8), "b": (6, 8)}
    p = make_params("hgt", g, 8, 8, heads=2, seed=3, dtype=np.float64)
    assert {k: v.shape for k, v in p.items()} == {
        "K": (3, 8, 8), "Q": (3, 8, 8), "V": (3, 8, 8), "A": (3, 8, 8),
        "Watt": (6, 2, 4, 4), "Wmsg": (6, 2, 4, 4), "mu": (6, 2)}
    assert all(v.dtype == np.float64 for v in p.values())
    q = make_params("hgt", g, 8, 8, heads=2, seed=3, dtype=np.float64)
    assert all(np.array_equal(p[k], q[k]) for k in p)
    assert make_params("rgcn", g, 5, 7)["W"].dtype == np.float32
    # Counts come from the arrays when the graph has no num_* fields.
    bare = (g["node_type"], g["src"], g["dst"], g["etype"])
    assert make_params("rgcn", bare, 2, 2)["W"].shape == (5, 2, 2)


@pytest.mark.parametrize("call, message", [
    (lambda g: make_params("gcn", g, 4, 4), "unknown model"),
    (lambda g: make_params("rgat", g, 4, 6, heads=4), "multiple of heads"),
    (lambda g: make_params("hgt", g, 4, 8), "din must equal dout"),
    (lambda g: make_params("rgcn", g, 0, 8), "positive"),
    (lambda g: mn.rgat(g, np.zeros((3, 2)), np.zeros((1, 2, 6)), np.zeros((1, 6)), np.zeros((1, 6)), heads=4),
     "multiple of the number of heads"),
    (lambda g: mn.rgcn(g, np.zeros((4, 2)), np.zeros((1, 2, 2)), np.zeros((2, 2))), "num_nodes=3"),
    (lambda g: mn.rgcn(dict(g, src=np.array([5])), np.zeros((3, 2)), np.zeros((1, 2, 2)), np.zeros((2, 2))),
     "outside"),
    (lambda g: mn.rgcn(dict(g, etype=np.array([1])), np.zeros((3, 2)), np.zeros((1, 2, 2)), np.zeros((2, 2))),
     "types up to 1"),
    (lambda g: mn.rgcn(dict(g, src=np.array([0.5])), np.zeros((3, 2)), np.zeros((1, 2, 2)), np.zeros((2, 2))),
     "integers"),
])
def test_bad_inputs_raise_clear_errors(call, message):
    g = graph([0, 0, 0], [(0, 1, 0)])
    with pytest.raises(ValueError, match=message):
        call(g)


@needs_torch
def test_torch_bad_inputs_raise_clear_errors():
    g = graph([0, 0, 0], [(0, 1, 0)])
    tg = mt.TorchGraph(g)
    with pytest.raises(ValueError, match=r"h must be \[3, 2\]"):
        mt.rgcn(tg, torch.zeros(4, 2), torch.zeros(1, 2, 2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="etype holds a type"):
        mt.TorchGraph(dict(g, num_edge_types=1, etype=np.array([3])))
    with pytest.raises(ValueError, match="unknown model"):
        mt.forward("gat", tg, torch.zeros(3, 2), {})

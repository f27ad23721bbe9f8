"""hector.nn.HGTConv's in_channels as PyG 2.8 takes them: lazy -1, a dict of
per-node-type widths, widths other than out_channels; node types and edge
types of the metadata missing from a forward's dicts.

Outputs and the gradients of every input and parameter are checked against
hgt_pyg_reference.hgt_pyg: float64, per node type and edge type the way
PyG's HGTConv computes it (each node type projected from its own width with
its biases, per (relation, head) k_rel / v_rel, softmax over every incoming
edge of a destination, the exact GELU before the output linear, the gated
skip connection only where a type's input width equals out_channels), with
the layer's parameters mapped to PyG's state_dict names as docs/python.md
maps them. It shares nothing with the layer's code path (no padding, no
concatenated node ids); with GELU, biases and gate neutralised it is
checked against test/reference's models_torch.hgt (BRIEF.md §4).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
import hgt_pyg_reference  # noqa: E402
from hectorc_support import compile_cache_in  # noqa: E402
from hgt_pyg_reference import hgt_pyg, pyg_params_of  # noqa: E402
from reference import models_torch  # noqa: E402
from test_nn_cpu import META, features, rel_err, require_training  # noqa: E402

TOL = 1e-5
OUT = 16
pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")
Lazy = torch.nn.parameter.UninitializedParameter


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


def random_graph(seed):
    """Node counts and edges drawn at random over META. ("paper", "by",
    "author") is missing from the dict, so "author" receives no message;
    ("author", "empty", "venue") has no edges; "topic" is nobody's
    destination; "cites" has duplicate edges and self loops."""
    rng = np.random.default_rng(seed)
    sizes = {t: int(rng.integers(1, 25)) for t in META[0]}
    eid = {}
    for et in META[1]:
        s, rel, d = et
        if rel == "by":
            continue
        n = 0 if rel == "empty" else int(rng.integers(1, 60))
        src, dst = rng.integers(0, sizes[s], n), rng.integers(0, sizes[d], n)
        if rel == "cites":
            src = np.concatenate([src, src[:5], np.arange(min(5, sizes[s]))])
            dst = np.concatenate([dst, dst[:5], np.arange(min(5, sizes[s]))])
        eid[et] = torch.as_tensor(np.stack([src, dst]), dtype=torch.int64)
    return sizes, eid


def reference_parameters(conv):
    """float64 leaf copies of the layer's (materialized) parameters by name."""
    return {name: t.detach().double().requires_grad_()
            for name, t in conv.named_parameters() if not isinstance(t, Lazy)}


def randomize(conv):
    """PyG starts p_rel and skip at 1 (and gelu/biases are random already):
    make every parameter matter."""
    with torch.no_grad():
        conv.p_rel.uniform_(0.5, 1.5)
        conv.skip.normal_()


def check(conv, widths, sizes, eid, heads, seed=0):
    """The layer's output and every gradient against hgt_pyg."""
    torch.manual_seed(seed)
    conv.zero_grad()
    randomize(conv)
    x_dict = {t: features(sizes[t], widths[t], seed=seed + i).requires_grad_()
              for i, t in enumerate(META[0]) if t in widths}
    out = conv(x_dict, eid)
    with torch.no_grad():
        inference = conv(x_dict, eid)
    p = reference_parameters(conv)
    xr = {t: x.detach().double().requires_grad_() for t, x in x_dict.items()}
    ref = hgt_pyg(xr, eid, pyg_params_of(p, META, heads, widths), META, heads)
    assert set(out) == set(ref) == {"paper", "venue", "author"} & set(x_dict)
    cots = {t: torch.randn(v.shape, dtype=torch.float64) for t, v in out.items()}
    sum((out[t].double() * cots[t]).sum() for t in out).backward()
    sum((ref[t] * cots[t]).sum() for t in ref).backward()
    for t in out:
        assert out[t].shape == (sizes[t], OUT)
        assert rel_err(out[t], ref[t]) < TOL, t
        assert torch.equal(inference[t], out[t].detach()), t
    if "author" in out:  # no edge type into it is present: GELU(0) = 0, so out_lin's bias
        expected = hgt_pyg_reference.no_message_rows(conv, META[0].index("author"),
                                                     x_dict["author"], OUT)
        assert rel_err(out["author"], expected) < TOL
    for t, x in x_dict.items():  # "topic" is in no edge type: its gradient is zero
        theirs = xr[t].grad if xr[t].grad is not None else torch.zeros_like(xr[t])
        assert rel_err(x.grad, theirs) < TOL, t
    for name, mine in conv.named_parameters():
        if isinstance(mine, Lazy):
            continue
        theirs = p[name].grad
        if theirs is None:  # a node type absent from x_dict: its weights are unused
            theirs = torch.zeros_like(p[name])
        # no gradient for skip where no node type keeps the residual
        assert rel_err(mine.grad if mine.grad is not None else torch.zeros_like(mine),
                       theirs) < TOL, name
    return out


SHAPES = [  # (in_channels, the features' widths, heads)
    pytest.param(-1, {"author": 8, "paper": 20, "venue": 16, "topic": 4}, 1, id="lazy"),
    pytest.param(-1, {"author": 16, "paper": 16, "venue": 16, "topic": 16}, 2,
                 id="lazy-in=out"),
    pytest.param({"author": 8, "paper": 24, "venue": 12, "topic": 5}, None, 2,
                 id="dict-all-differ"),
    pytest.param({"author": 16, "paper": 24, "venue": 7, "topic": 16}, None, 1,
                 id="dict-some-equal-out"),
    pytest.param({"author": -1, "paper": 10, "venue": 16, "topic": -1},
                 {"author": 16, "paper": 10, "venue": 16, "topic": 3}, 2, id="dict-partly-lazy"),
    pytest.param(24, None, 2, id="in>out"),
    pytest.param(8, None, 1, id="in<out"),
    pytest.param(dict.fromkeys(META[0], 16), None, 2, id="dict-in=out"),
]


@pytest.mark.parametrize("in_channels,widths,heads", SHAPES)
def test_hgt_channels(in_channels, widths, heads):
    widths = widths or (in_channels if isinstance(in_channels, dict)
                        else dict.fromkeys(META[0], in_channels))
    torch.manual_seed(len(str(in_channels)) + heads)
    conv = hnn.HGTConv(in_channels, OUT, META, heads=heads)
    lazy = [t for t in META[0] if (in_channels if isinstance(in_channels, dict)
                                   else dict.fromkeys(META[0], in_channels))[t] == -1]
    assert all(isinstance(conv.k_weight[META[0].index(t)], Lazy) for t in lazy)
    assert repr(conv) == f"HGTConv(-1, {OUT}, heads={heads})"  # PyG's
    for seed in (1, 2):
        sizes, eid = random_graph(seed + heads)
        check(conv, widths, sizes, eid, heads, seed)
    for name in ("k_weight", "q_weight", "v_weight"):
        for i, t in enumerate(META[0]):
            assert tuple(getattr(conv, name)[i].shape) == (widths[t], OUT), (name, t)
    assert conv.model_spec.startswith(f"hgt:width={max(widths.values())},out_width={OUT},"
                                      f"heads={heads}")


def test_lazy_node_type_missing_from_the_first_forward():
    """As PyG's lazy linears: a type materializes at the first forward that
    has its features, so "venue" (absent at first) gets its width later;
    the compiled function is the one for the widths known at each call."""
    widths = {"author": 8, "paper": 12, "venue": OUT}
    conv = hnn.HGTConv(-1, OUT, META, heads=2)
    sizes, eid = random_graph(5)
    no_venue = {et: ei for et, ei in eid.items() if "venue" not in (et[0], et[2])}
    check(conv, {t: widths[t] for t in ("author", "paper")}, sizes, no_venue, 2)
    assert isinstance(conv.k_weight[2], Lazy) and isinstance(conv.k_weight[3], Lazy)
    assert conv.model_spec == f"hgt:width=12,out_width={OUT},heads=2,form=pyg"
    check(conv, widths, sizes, eid, 2, seed=3)
    assert tuple(conv.v_weight[2].shape) == (OUT, OUT) and isinstance(conv.k_weight[3], Lazy)
    assert conv.model_spec == f"hgt:width={OUT},out_width={OUT},heads=2,form=pyg,residual=separate"


def test_lazy_state_dict():
    """A lazy layer's state dict before its first forward holds the
    uninitialized weights; loading a materialized one materializes them."""
    widths = {"author": 8, "paper": 20, "venue": 16, "topic": 4}
    trained = hnn.HGTConv(-1, OUT, META)
    assert isinstance(trained.state_dict()["k_weight.1"], Lazy)
    sizes, eid = random_graph(4)
    x_dict = {t: features(sizes[t], widths[t], seed=i) for i, t in enumerate(META[0])}
    with torch.no_grad():
        expected = trained(x_dict, eid)
    state = trained.state_dict()
    assert state["k_weight.1"].shape == (20, OUT) and state["a_weight"].shape == (4, OUT, OUT)
    fresh = hnn.HGTConv(-1, OUT, META)
    fresh.load_state_dict(state)
    assert not any(isinstance(p, Lazy) for p in fresh.parameters())
    with torch.no_grad():
        got = fresh(x_dict, eid)
    assert all(torch.equal(got[t], expected[t]) for t in expected)


def test_reference_matches_models_torch(monkeypatch):
    """hgt_pyg and test/reference's models_torch.hgt (BRIEF.md §4 over
    concatenated node ids) agree where the latter applies: in == out, GELU
    the identity, zero biases and skip 0, where PyG's gate halves both
    terms: σ(0)·a + (1 − σ(0))·x = (a + x) / 2."""
    monkeypatch.setattr(hgt_pyg_reference, "gelu", lambda x: x)
    sizes, eid = random_graph(6)
    rng = torch.Generator().manual_seed(6)
    heads, T, R = 2, len(META[0]), len(META[1])
    x_dict = {t: torch.randn(sizes[t], OUT, generator=rng, dtype=torch.float64)
              for t in META[0]}
    K, Q, V, A = (torch.randn(T, OUT, OUT, generator=rng, dtype=torch.float64) / 4
                  for _ in range(4))
    k_rel, v_rel = (torch.randn(R, heads, OUT // heads, OUT // heads, generator=rng,
                                dtype=torch.float64) for _ in range(2))
    p_rel = torch.rand(R, heads, generator=rng, dtype=torch.float64) + 0.5
    zeros = torch.zeros(T, OUT, dtype=torch.float64)
    params = {"k_weight": K, "q_weight": Q, "v_weight": V, "a_weight": A, "k_rel": k_rel,
              "v_rel": v_rel, "p_rel": p_rel, "k_bias": zeros, "q_bias": zeros,
              "v_bias": zeros, "a_bias": zeros, "skip": torch.zeros(T, dtype=torch.float64)}
    ours = hgt_pyg(x_dict, eid, pyg_params_of(params, META, heads, dict.fromkeys(META[0], OUT)),
                   META, heads)
    offset = dict(zip(META[0], np.cumsum([0] + [sizes[t] for t in META[0]])[:-1].tolist()))
    g = {"node_type": np.concatenate([np.full(sizes[t], i) for i, t in enumerate(META[0])]),
         "src": np.concatenate([eid[et][0].numpy() + offset[et[0]] for et in eid]),
         "dst": np.concatenate([eid[et][1].numpy() + offset[et[2]] for et in eid]),
         "etype": np.concatenate([np.full(eid[et].shape[1], META[1].index(et)) for et in eid]),
         "num_node_types": T, "num_edge_types": R}
    theirs = models_torch.hgt(models_torch.TorchGraph(g), torch.cat(list(x_dict.values())),
                              K, Q, V, A, k_rel, v_rel, p_rel)
    for t, value in ours.items():
        assert rel_err(2 * value, theirs[offset[t]:offset[t] + sizes[t]]) < 1e-12, t


def test_bad_widths():
    sizes, eid = random_graph(7)
    conv = hnn.HGTConv({"author": 8, "paper": 24, "venue": -1, "topic": 5}, OUT, META)
    x_dict = {"author": features(sizes["author"], 8), "paper": features(sizes["paper"], 24),
              "venue": features(sizes["venue"], 3)}
    with torch.no_grad():
        with pytest.raises(ValueError, match=r"x_dict\['paper'\] must be a tensor \[N, 24\]"):
            conv(dict(x_dict, paper=features(sizes["paper"], 8)), eid)
        with pytest.raises(ValueError, match=r"x_dict\['venue'\] must be a tensor "
                                             r"\[N, in_channels > 0\], got \(\d+, 0\)"):
            conv(dict(x_dict, venue=features(sizes["venue"], 0)), eid)
        assert isinstance(conv.k_weight[2], Lazy)  # a refused call materializes nothing
        conv(x_dict, eid)
        with pytest.raises(ValueError, match=r"x_dict\['venue'\] must be a tensor \[N, 3\]"):
            conv(dict(x_dict, venue=features(sizes["venue"], 4)), eid)
    with pytest.raises(ValueError, match="only after its first forward"):
        hnn.HGTConv(-1, OUT, META).model_spec  # noqa: B018

"""hector.nn.HGTConv computes PyG 2.8's HGTConv: the CPU mirror of
test/gpu/test_nn_gpu.py::test_hgt_equals_pyg, with PyG's layer replaced by
its float64 math (hgt_pyg_reference.hgt_pyg) fed the layer's parameters
under PyG's state_dict names (docs/python.md's mapping): biases, exact GELU
before out_lin, the gated skip only where a type's width is out_channels,
nodes without incoming edges (out_lin's bias, gated with x_t). Also PyG's
parameter initialization.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
from hectorc_support import compile_cache_in  # noqa: E402
from hgt_pyg_reference import hgt_pyg, no_message_rows, pyg_params_of  # noqa: E402
from test_nn_cpu import rel_err, require_training  # noqa: E402

TOL = 1e-5
WIDTH = 16
META = (["author", "paper", "venue"],
        [("author", "writes", "paper"), ("paper", "cites", "paper"),
         ("paper", "in", "venue"), ("venue", "has", "paper"), ("author", "empty", "venue")])
pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


def hetero(seed):
    """Random sizes and edges over META, as the GPU test draws them; the
    "empty" edge type has no edges, "cites" self loops and duplicates."""
    rng = np.random.default_rng(seed)
    sizes = {"author": 30, "paper": 41, "venue": 9}
    eid = {}
    for (s, rel, d), count in zip(META[1], (90, 120, 41, 25, 0)):
        src, dst = rng.integers(0, sizes[s], count), rng.integers(0, sizes[d], count)
        if rel == "cites":
            src, dst = np.concatenate([src, src[:7], np.arange(5)]), \
                np.concatenate([dst, dst[:7], np.arange(5)])
        eid[(s, rel, d)] = torch.as_tensor(np.stack([src, dst]), dtype=torch.int64)
    return sizes, eid


CASES = [  # (in_channels, the features' widths, heads, an edge type left out)
    pytest.param(WIDTH, None, 4, ("venue", "has", "paper"), id="in=out-h4"),
    pytest.param(8, None, 1, ("paper", "in", "venue"), id="in<out-venue-no-messages"),
    pytest.param({"author": 8, "paper": 24, "venue": WIDTH}, None, 2, None, id="dict"),
    pytest.param(-1, {"author": 8, "paper": 24, "venue": WIDTH}, 2, ("paper", "in", "venue"),
                 id="lazy"),
]


@pytest.mark.parametrize("in_channels,widths,heads,missing", CASES)
def test_hgt_equals_pyg_math(in_channels, widths, heads, missing):
    sizes, eid = hetero(heads)
    eid = {et: ei for et, ei in eid.items() if et != missing}
    widths = widths or (in_channels if isinstance(in_channels, dict)
                        else dict.fromkeys(META[0], in_channels))
    torch.manual_seed(heads)
    conv = hnn.HGTConv(in_channels, WIDTH, META, heads=heads)
    require_training(*([] if in_channels == -1 else [conv]))
    x_dict = {t: torch.randn(sizes[t], widths[t]).requires_grad_() for t in META[0]}
    if in_channels == -1:  # materialize, as PyG's lazy layer does at its first forward
        with torch.no_grad():
            conv(x_dict, eid)
        require_training(conv)
    with torch.no_grad():  # move PyG's initial p_rel and skip (ones) off 1
        conv.p_rel.uniform_(0.5, 1.5)
        conv.skip.normal_()
    out = conv(x_dict, eid)

    params = {n: p.detach().double().requires_grad_() for n, p in conv.named_parameters()}
    xr = {t: x.detach().double().requires_grad_() for t, x in x_dict.items()}
    ref = hgt_pyg(xr, eid, pyg_params_of(params, META, heads, widths), META, heads)
    assert set(out) == set(ref) == {"paper", "venue"}
    for t in out:
        assert out[t].shape == (sizes[t], WIDTH)
        assert rel_err(out[t], ref[t]) < TOL, t
    if missing == ("paper", "in", "venue"):  # "venue" receives no message: out_lin's bias
        expected = no_message_rows(conv, META[0].index("venue"),
                                   x_dict["venue"], WIDTH)
        assert rel_err(out["venue"], expected) < TOL

    cots = {t: torch.randn(v.shape, dtype=torch.float64) for t, v in out.items()}
    sum((out[t].double() * cots[t]).sum() for t in out).backward()
    sum((ref[t] * cots[t]).sum() for t in ref).backward()
    for t in META[0]:
        assert rel_err(x_dict[t].grad, xr[t].grad) < TOL, t
    for name, mine in conv.named_parameters():
        theirs = params[name].grad
        theirs = theirs if theirs is not None else torch.zeros_like(params[name])
        # skip has no gradient where no type keeps a residual (PyG reads none)
        assert rel_err(mine.grad if mine.grad is not None else torch.zeros_like(mine),
                       theirs) < TOL, name
    assert (conv.skip.grad is None) == all(w != WIDTH for w in widths.values())


def test_pyg_initialization():
    """PyG's reset_parameters: K/Q/V weight and bias U(±1/√in_τ) (kqv_lin's
    Linear per type, lazily for -1), A and its bias U(±1/√d) (out_lin),
    k_rel and v_rel U(±1/√(d/H)) (HeteroLinear), p_rel and skip ones."""
    torch.manual_seed(0)
    d, heads = 64, 4
    widths = {"author": 16, "paper": 200, "venue": -1}
    conv = hnn.HGTConv(widths, d, META, heads=heads)

    def spans(p, fan_in):  # within the bound, and fills most of it
        bound = 1 / math.sqrt(fan_in)
        return float(p.abs().max()) <= bound and float(p.abs().max()) > 0.9 * bound

    for i, (t, w) in enumerate(widths.items()):
        for name in ("k", "q", "v"):
            bias = getattr(conv, f"{name}_bias")[i]
            if w == -1:
                assert isinstance(getattr(conv, f"{name}_weight")[i],
                                  torch.nn.parameter.UninitializedParameter)
                assert not bias.any()
                continue
            assert spans(getattr(conv, f"{name}_weight")[i], w), (name, t)
            assert spans(bias, w), (name, t)
    assert spans(conv.a_weight, d) and spans(conv.a_bias, d)
    assert spans(conv.k_rel, d // heads) and spans(conv.v_rel, d // heads)
    assert bool((conv.p_rel == 1).all()) and bool((conv.skip == 1).all())
    with torch.no_grad():  # the lazy type materializes with its width, biases included
        conv({"author": torch.randn(3, 16), "paper": torch.randn(3, 200),
              "venue": torch.randn(3, 7)}, {})
    assert spans(conv.k_weight[2], 7) and spans(conv.v_bias[2], 7)

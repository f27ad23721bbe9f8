"""models.hgt(form="pyg"), the IR hector.nn.HGTConv compiles, against PyG's
HGTConv math (hgt_pyg_reference.py), through the float64 hgraph interpreter
(no compiler): forward and the vector-Jacobian product of every argument,
for one input width equal to out_channels (gated residual), one that is not
(no residual) and residual="separate" (r and keep per node type); and the
interpreter's exact GELU and its derivative against torch's.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hgraph_interpreter as hi  # noqa: E402
from hector import models  # noqa: E402
from hgt_pyg_reference import hgt_pyg, pyg_params_of  # noqa: E402

pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")

META = (["a", "b", "c"], [("a", "r0", "b"), ("b", "r1", "b"), ("c", "r2", "a"),
                          ("b", "r3", "a")])


def graph(seed):
    """Sizes and edges; ("b", "r3", "a") is missing, so only some "a" nodes
    receive messages (from "c"), and "c" receives none (no edge type ends there)."""
    rng = np.random.default_rng(seed)
    sizes = {"a": 7, "b": 9, "c": 5}
    eid = {}
    for et, count in zip(META[1][:3], (14, 20, 3)):
        s, _, t = et
        eid[et] = torch.as_tensor(np.stack([rng.integers(0, sizes[s], count),
                                            rng.integers(0, sizes[t], count)]))
    return sizes, eid


def random_params(widths, d, heads, rng):
    t, r, dh = len(META[0]), len(META[1]), d // heads
    p = {f"{n}.{i}": torch.randn(widths[nt], d, generator=rng, dtype=torch.float64) / 3
         for n in ("k_weight", "q_weight", "v_weight") for i, nt in enumerate(META[0])}
    p.update({n: torch.randn(t, d, generator=rng, dtype=torch.float64)
              for n in ("k_bias", "q_bias", "v_bias", "a_bias")})
    p["a_weight"] = torch.randn(t, d, d, generator=rng, dtype=torch.float64) / 3
    p["k_rel"], p["v_rel"] = (torch.randn(r, heads, dh, dh, generator=rng,
                                          dtype=torch.float64) / 2 for _ in range(2))
    p["p_rel"] = torch.rand(r, heads, generator=rng, dtype=torch.float64) + 0.5
    p["skip"] = torch.randn(t, generator=rng, dtype=torch.float64)
    return {n: v.requires_grad_() for n, v in p.items()}


CASES = [  # (input widths by node type, out_channels, heads)
    pytest.param({"a": 8, "b": 8, "c": 8}, 8, 2, id="in=out"),
    pytest.param({"a": 6, "b": 6, "c": 6}, 8, 1, id="in<out"),
    pytest.param({"a": 8, "b": 12, "c": 5}, 8, 4, id="separate"),
]


@pytest.mark.parametrize("widths,d,heads", CASES)
def test_pyg_form_equals_reference(widths, d, heads):
    rng = torch.Generator().manual_seed(d + heads)
    sizes, eid = graph(heads)
    p = random_params(widths, d, heads, rng)
    x = {t: torch.randn(sizes[t], widths[t], generator=rng,
                        dtype=torch.float64).requires_grad_() for t in META[0]}
    ref = hgt_pyg(x, eid, pyg_params_of(p, META, heads, widths), META, heads)

    width = max(widths.values())
    separate = len(set(widths.values())) > 1
    func = hi.parse_function(models.generate(
        "hgt", width, d, heads, form="pyg", **({"residual": "separate"} if separate else {})))
    offsets = dict(zip(META[0], np.cumsum([0] + [sizes[t] for t in META[0]])[:-1]))
    g = hi.Graph(node_type=np.concatenate([np.full(sizes[t], i) for i, t in enumerate(META[0])]),
                 src=np.concatenate([eid[et][0].numpy() + offsets[et[0]] for et in eid]),
                 dst=np.concatenate([eid[et][1].numpy() + offsets[et[2]] for et in eid]),
                 etype=np.concatenate([np.full(eid[et].shape[1], META[1].index(et))
                                       for et in eid]),
                 num_node_types=len(META[0]), num_edge_types=len(META[1]))

    def padded(name):
        return np.stack([np.pad(p[f"{name}.{i}"].detach().numpy(),
                                ((0, width - widths[t]), (0, 0)))
                         for i, t in enumerate(META[0])])

    inputs = {"h": np.concatenate([np.pad(x[t].detach().numpy(),
                                          ((0, 0), (0, width - widths[t]))) for t in META[0]]),
              "K": padded("k_weight"), "Q": padded("q_weight"), "V": padded("v_weight"),
              "A": p["a_weight"].detach().numpy(), "Watt": p["k_rel"].detach().numpy(),
              "Wmsg": p["v_rel"].detach().numpy(), "mu": p["p_rel"].detach().numpy(),
              "bK": p["k_bias"].detach().numpy(), "bQ": p["q_bias"].detach().numpy(),
              "bV": p["v_bias"].detach().numpy(), "bA": p["a_bias"].detach().numpy()}
    if "skip" in [func.arg_name(i) for i in range(len(func.args))]:
        inputs["skip"] = p["skip"].detach().numpy()[:, None]
    if separate:
        inputs["r"] = np.concatenate([x[t].detach().numpy() if widths[t] == d else
                                      np.zeros((sizes[t], d)) for t in META[0]])
        inputs["keep"] = np.array([[float(widths[t] == d)] for t in META[0]])
    run = hi.evaluate(func, g, inputs)
    out = run.results[0]
    assert set(ref) == {"a", "b"}
    for t, value in ref.items():
        rows = slice(offsets[t], offsets[t] + sizes[t])
        np.testing.assert_allclose(out[rows], value.detach().numpy(), rtol=1e-12, atol=1e-12)

    cot = np.random.default_rng(0).standard_normal(out.shape)
    for t in META[0]:  # a node type that is nobody's destination has no output
        if t not in ref:
            cot[offsets[t]:offsets[t] + sizes[t]] = 0
    grads = hi.vjp(func, g, run, [cot])
    sum((ref[t] * torch.as_tensor(cot[offsets[t]:offsets[t] + sizes[t]])).sum()
        for t in ref).backward()

    def close(mine, theirs):
        theirs = np.zeros_like(mine) if theirs is None else theirs.numpy()
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-10)

    for i, t in enumerate(META[0]):
        rows = slice(offsets[t], offsets[t] + sizes[t])
        close(grads["h"][rows, :widths[t]] + (grads["r"][rows] if separate and
                                               widths[t] == d else 0), x[t].grad)
        for arg, name in (("K", "k_weight"), ("Q", "q_weight"), ("V", "v_weight")):
            close(grads[arg][i, :widths[t]], p[f"{name}.{i}"].grad)
    for arg, name in (("A", "a_weight"), ("Watt", "k_rel"), ("Wmsg", "v_rel"), ("mu", "p_rel"),
                      ("bK", "k_bias"), ("bQ", "q_bias"), ("bV", "v_bias"), ("bA", "a_bias")):
        close(grads[arg], p[name].grad)
    if "skip" in inputs:
        close(grads["skip"][:, 0], p["skip"].grad)


def test_interpreter_gelu_is_torchs():
    x = torch.linspace(-6, 6, 97, dtype=torch.float64).requires_grad_()
    y = torch.nn.functional.gelu(x)  # approximate='none': the erf form
    y.backward(torch.ones_like(y))
    func = hi.parse_function("""hgraph.func @f(%g: !hgraph.graph, %x: !hgraph.node<1xf32> {hgraph.name = "x"}) -> !hgraph.node<1xf32> {
  %y = hgraph.gelu %x : !hgraph.node<1xf32>
  hgraph.return %y : !hgraph.node<1xf32>
}""")
    g = hi.Graph(node_type=np.zeros(97), src=[], dst=[], etype=[], num_node_types=1,
                 num_edge_types=1)
    run = hi.evaluate(func, g, {"x": x.detach().numpy()[:, None]})
    np.testing.assert_allclose(run.results[0][:, 0], y.detach().numpy(), rtol=1e-14, atol=1e-15)
    grads = hi.vjp(func, g, run, [np.ones((97, 1))])
    np.testing.assert_allclose(grads["x"][:, 0], x.grad.numpy(), rtol=1e-13, atol=1e-15)

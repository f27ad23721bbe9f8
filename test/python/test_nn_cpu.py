"""hector.nn.RGCNConv, RGATConv and HGTConv on the CPU against the references
written from BRIEF.md §4 (test/reference): forward against the float64 NumPy
references, backward against the differentiable PyTorch references (float64),
on graphs with isolated nodes, empty edge types, self loops, duplicate edges
and a hub; plus the per-graph preprocessing cache and every refused option.

Backward tests build the layers' training libraries with `hectorc
--training`; a compile failure fails the test.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
from hector import compiler  # noqa: E402
from hector.autograd import TrainingNotAvailable  # noqa: E402
from hector.graph import GraphInputError  # noqa: E402
from hectorc_support import compile_cache_in, hectorc  # noqa: E402
from hgt_pyg_reference import hgt_pyg, pyg_params_of  # noqa: E402
from model_cases import GRAPHS  # noqa: E402
from reference import models_numpy, models_torch  # noqa: E402

TOL = 1e-5
pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """Every layer compiles into one cache for this module, with the built hectorc."""
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


def require_training(*convs):
    """Builds the training library of every layer (a compile error fails)."""
    assert compiler.supports_training(), "the hectorc in use has no --training"
    for conv in convs:
        conv.library("cpu", True)


def rel_err(actual, expected):
    actual = actual.detach().double().numpy() if hasattr(actual, "detach") else actual
    expected = expected.detach().double().numpy() if hasattr(expected, "detach") else expected
    return float(np.abs(actual - expected).max() / max(np.abs(expected).max(), 1e-30))


def homogeneous(kind, seed=0):
    """(x, edge_index, edge_type, graph dict for the references) of a model_cases graph."""
    rng = np.random.default_rng(seed)
    g = GRAPHS[kind](rng)
    g = dict(g, node_type=np.zeros_like(g["node_type"]), num_node_types=1)
    edge_index = torch.as_tensor(np.stack([g["src"], g["dst"]]), dtype=torch.int64)
    edge_type = torch.as_tensor(g["etype"], dtype=torch.int64)
    return g, edge_index, edge_type


def features(n, width, seed=0):
    return torch.randn(n, width, generator=torch.Generator().manual_seed(seed))


def float64_params(conv, grad=False):
    return {name: p.detach().double().requires_grad_(grad)
            for name, p in conv.named_parameters()}


def dense_reference_weight(conv, p):
    """The [R, in, out] weights of a layer from its parameters `p` (by PyG's
    names), written independently of the layer's own expansion."""
    if conv.num_bases is not None:
        basis, coeff = (p["weight"], p["comp"]) if "comp" in p else (p["basis"], p["att"])
        return torch.einsum("rb,bio->rio", coeff, basis)
    if conv.num_blocks is not None:
        return torch.stack([torch.block_diag(*blocks) for blocks in p["weight"]])
    return p["weight"]


# ---- RGCN ------------------------------------------------------------------------

RGCN_CASES = [dict(), dict(num_bases=2), dict(num_blocks=4), dict(root_weight=False),
              dict(bias=False)]


@pytest.mark.parametrize("kind", sorted(GRAPHS))
@pytest.mark.parametrize("options", RGCN_CASES, ids=lambda o: ",".join(o) or "default")
def test_rgcn_forward(kind, options):
    g, edge_index, edge_type = homogeneous(kind)
    torch.manual_seed(1)
    conv = hnn.RGCNConv(16, 32, g["num_edge_types"], **options)
    if conv.bias is not None:
        torch.nn.init.normal_(conv.bias)  # PyG starts it at 0; make it matter
    x = features(len(g["node_type"]), 16)
    with torch.no_grad():
        out = conv(x, edge_index, edge_type)
    p = float64_params(conv)
    root = p.get("root", torch.zeros(16, 32, dtype=torch.float64))
    ref = models_numpy.rgcn(g, x.numpy(), dense_reference_weight(conv, p).numpy(), root.numpy())
    if "bias" in p:
        ref = ref + p["bias"].numpy()
    assert out.shape == (len(g["node_type"]), 32) and out.dtype == torch.float32
    assert rel_err(out, ref) < TOL


def rgcn_sum_reference(x, edge_index, edge_type, weight, root):
    """PyG's RGCNConv with aggr='add', from its definition: out_t = x_t·root +
    Σ_{e=(s→t)} x_s·W_{type(e)}, in float64."""
    src, dst = edge_index
    messages = torch.bmm(x[src].unsqueeze(1), weight[edge_type]).squeeze(1)
    return (x @ root).index_add(0, dst, messages)


@pytest.mark.parametrize("kind", ["random_graph", "isolated_nodes", "self_loops_and_duplicates",
                                  "giant_hub", "empty_edge_types"])
@pytest.mark.parametrize("options", [dict(aggr="add"), dict(aggr="sum", num_bases=2),
                                     dict(aggr="add", root_weight=False, bias=False)],
                         ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_rgcn_sum_forward_and_backward(kind, options):
    g, edge_index, edge_type = homogeneous(kind)
    torch.manual_seed(3)
    conv = hnn.RGCNConv(16, 32, g["num_edge_types"], **options)
    assert conv.aggr == options["aggr"]
    assert conv.model_spec == "rgcn:width=16,out_width=32,heads=1,aggr=sum"
    from hector import models
    assert "relation_norm" not in models.from_spec(conv.model_spec)  # what aot builds
    if conv.bias is not None:
        torch.nn.init.normal_(conv.bias)
    check_rgcn_gradients(conv, g, edge_index, edge_type,
                         lambda x, weight, root: rgcn_sum_reference(x, edge_index, edge_type,
                                                                    weight, root))


@pytest.mark.parametrize("aggr", ["mean", "add"])
def test_fast_rgcn_is_rgcn(aggr):
    """PyG's FastRGCNConv computes RGCNConv's function with the same
    parameters: a state dict moves between them and the outputs agree."""
    g, edge_index, edge_type = homogeneous("random_graph")
    torch.manual_seed(4)
    fast = hnn.FastRGCNConv(16, 8, g["num_edge_types"], num_bases=2, aggr=aggr)
    plain = hnn.RGCNConv(16, 8, g["num_edge_types"], num_bases=2, aggr=aggr)
    plain.load_state_dict(fast.state_dict())
    assert repr(fast) == f"FastRGCNConv(16, 8, num_relations={g['num_edge_types']})"
    x = features(len(g["node_type"]), 16)
    with torch.no_grad():
        assert torch.equal(fast(x, edge_index, edge_type), plain(x, edge_index, edge_type))


@pytest.mark.parametrize("kind", ["random_graph", "isolated_nodes", "self_loops_and_duplicates"])
@pytest.mark.parametrize("options", RGCN_CASES, ids=lambda o: ",".join(o) or "default")
def test_rgcn_backward(kind, options):
    g, edge_index, edge_type = homogeneous(kind)
    torch.manual_seed(2)
    conv = hnn.RGCNConv(16, 32, g["num_edge_types"], **options)
    check_rgcn_gradients(conv, g, edge_index, edge_type,
                         lambda x, weight, root: models_torch.rgcn(models_torch.TorchGraph(g),
                                                                   x, weight, root))


def check_rgcn_gradients(conv, g, edge_index, edge_type, reference):
    """conv's output and the gradients of its input and every parameter
    against `reference(x, [R, in, out] weight, root)` (+ bias) in float64,
    for a random cotangent."""
    require_training(conv)
    x = features(len(g["node_type"]), 16).requires_grad_()
    out = conv(x, edge_index, edge_type)
    cot = torch.randn(out.shape, dtype=torch.float64)
    (out.double() * cot).sum().backward()

    params = float64_params(conv, grad=True)
    xr = x.detach().double().requires_grad_()
    root = params.get("root", torch.zeros(16, conv.out_channels, dtype=torch.float64))
    ref = reference(xr, dense_reference_weight(conv, params), root)
    if "bias" in params:
        ref = ref + params["bias"]
    (ref * cot).sum().backward()
    assert rel_err(out, ref) < TOL
    assert rel_err(x.grad, xr.grad) < TOL
    for name, p in conv.named_parameters():
        assert rel_err(p.grad, params[name].grad) < TOL, name


# ---- RGAT ------------------------------------------------------------------------

def rgat_reference(g, x, W, a, b, heads, slope):
    """BRIEF.md §4 RGAT in float64 torch with any LeakyReLU slope (the shared
    references fix it at 0.2; test_rgat_reference_matches checks the two agree)."""
    src, dst, et = (torch.as_tensor(g[k], dtype=torch.int64) for k in ("src", "dst", "etype"))
    n, e, width = x.shape[0], src.numel(), W.shape[2]
    z = torch.einsum("ei,eio->eo", x[src], W[et])
    zt = torch.einsum("ei,eio->eo", x[dst], W[et])
    score = (a[et] * z + b[et] * zt).view(e, heads, -1).sum(2)
    score = torch.nn.functional.leaky_relu(score, slope)
    peak = torch.full((n, heads), -np.inf, dtype=score.dtype).scatter_reduce(
        0, dst[:, None].expand(-1, heads), score.detach(), "amax", include_self=True)
    ex = torch.exp(score - peak[dst])
    alpha = ex / torch.zeros(n, heads, dtype=ex.dtype).index_add(0, dst, ex)[dst]
    return torch.zeros(n, width, dtype=z.dtype).index_add(
        0, dst, (alpha[:, :, None] * z.view(e, heads, -1)).view(e, width))


def test_rgat_reference_matches():
    g, _, _ = homogeneous("random_graph")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 8))
    W, a, b = rng.standard_normal((6, 8, 8)), rng.standard_normal((6, 8)), \
        rng.standard_normal((6, 8))
    mine = rgat_reference(g, *(torch.as_tensor(v) for v in (x, W, a, b)), 2, 0.2)
    assert rel_err(mine, models_numpy.rgat(g, x, W, a, b, 2)) < 1e-12


RGAT_CASES = [dict(heads=1), dict(heads=4), dict(heads=4, concat=False),
              dict(heads=2, negative_slope=0.05), dict(heads=2, num_bases=3),
              dict(heads=2, num_blocks=2), dict(heads=2, bias=False)]


def _rgat_id(o):
    return ",".join(f"{k}={v}" for k, v in o.items())


@pytest.mark.parametrize("kind", sorted(GRAPHS))
@pytest.mark.parametrize("options", RGAT_CASES, ids=_rgat_id)
def test_rgat_forward(kind, options):
    g, edge_index, edge_type = homogeneous(kind, seed=3)
    torch.manual_seed(3)
    conv = hnn.RGATConv(16, 8, g["num_edge_types"], **options)
    if conv.bias is not None:
        torch.nn.init.normal_(conv.bias)
    n, heads = len(g["node_type"]), conv.heads
    x = features(n, 16, seed=3)
    with torch.no_grad():
        out = conv(x, edge_index, edge_type)
    p = float64_params(conv)
    ref = rgat_reference(g, x.double(), dense_reference_weight(conv, p), p["att_src"],
                         p["att_dst"], heads, conv.negative_slope)
    if not conv.concat:
        ref = ref.view(n, heads, 8).mean(1)
    if "bias" in p:
        ref = ref + p["bias"]
    assert out.shape == ref.shape
    assert rel_err(out, ref) < TOL


@pytest.mark.parametrize("width_in,channels,heads", [(10, 6, 3), (7, 5, 1), (3, 2, 4)])
def test_rgat_widths_heads_do_not_divide(width_in, channels, heads):
    g, edge_index, edge_type = homogeneous("random_graph", seed=5)
    conv = hnn.RGATConv(width_in, channels, g["num_edge_types"], heads=heads)
    x = features(len(g["node_type"]), width_in, seed=5)
    with torch.no_grad():
        out = conv(x, edge_index, edge_type)
    p = float64_params(conv)
    ref = rgat_reference(g, x.double(), p["weight"], p["att_src"], p["att_dst"], heads, 0.2)
    assert out.shape == (60, heads * channels)
    assert rel_err(out, ref) < TOL


@pytest.mark.parametrize("kind", ["random_graph", "isolated_nodes", "giant_hub"])
@pytest.mark.parametrize("options", [o for o in RGAT_CASES if "negative_slope" not in o],
                         ids=_rgat_id)
def test_rgat_backward(kind, options):
    g, edge_index, edge_type = homogeneous(kind, seed=4)
    torch.manual_seed(4)
    conv = hnn.RGATConv(16, 8, g["num_edge_types"], **options)
    require_training(conv)
    n, heads = len(g["node_type"]), conv.heads
    x = features(n, 16, seed=4).requires_grad_()
    out = conv(x, edge_index, edge_type)
    cot = torch.randn(out.shape, dtype=torch.float64)
    (out.double() * cot).sum().backward()

    params = float64_params(conv, grad=True)
    xr = x.detach().double().requires_grad_()
    ref = models_torch.rgat(models_torch.TorchGraph(g), xr, dense_reference_weight(conv, params),
                            params["att_src"], params["att_dst"], heads)
    if not conv.concat:
        ref = ref.view(n, heads, 8).mean(1)
    if "bias" in params:
        ref = ref + params["bias"]
    (ref * cot).sum().backward()
    assert rel_err(out, ref) < TOL
    assert rel_err(x.grad, xr.grad) < TOL
    for name, p in conv.named_parameters():
        assert rel_err(p.grad, params[name].grad) < TOL, name


# ---- HGT -------------------------------------------------------------------------

META = (["author", "paper", "venue", "topic"],
        [("author", "writes", "paper"), ("paper", "cites", "paper"),
         ("paper", "in", "venue"), ("venue", "has", "paper"),
         ("author", "empty", "venue"), ("paper", "by", "author")])
SIZES = {"author": 13, "paper": 21, "venue": 4, "topic": 6}


def hetero(seed=0, hub=False):
    """x_dict sizes, edge_index_dict, and the same graph as global arrays in
    metadata order (node ids concatenated by type) for the references.
    ("paper", "by", "author") is in the metadata but not in the dict, and
    ("author", "empty", "venue") has no edges; "topic" is nobody's
    destination; "paper" -> "paper" has self loops and duplicate edges."""
    rng = np.random.default_rng(seed)
    counts = {"writes": 40, "cites": 50, "in": 21, "has": 10, "empty": 0}
    eid = {}
    for et in META[1][:5]:
        s, rel, d = et
        c = counts[rel]
        src, dst = rng.integers(0, SIZES[s], c), rng.integers(0, SIZES[d], c)
        if rel == "cites":
            src = np.concatenate([src, src[:10], np.arange(5)])
            dst = np.concatenate([dst, dst[:10], np.arange(5)])
        if hub and rel == "writes":
            dst = np.concatenate([dst, np.zeros(500, np.int64)])
            src = np.concatenate([src, rng.integers(0, SIZES[s], 500)])
        eid[et] = torch.as_tensor(np.stack([src, dst]), dtype=torch.int64)
    offset = dict(zip(META[0], np.cumsum([0] + [SIZES[t] for t in META[0]])[:-1]))
    g = {"node_type": np.concatenate([np.full(SIZES[t], i) for i, t in enumerate(META[0])]),
         "src": np.concatenate([eid[et][0].numpy() + offset[et[0]] for et in eid]),
         "dst": np.concatenate([eid[et][1].numpy() + offset[et[2]] for et in eid]),
         "etype": np.concatenate([np.full(eid[et].shape[1], META[1].index(et)) for et in eid]),
         "num_node_types": 4, "num_edge_types": 6}
    return eid, g, offset


def randomize_hgt(conv):
    """PyG starts p_rel and skip at 1; make them matter."""
    with torch.no_grad():
        conv.p_rel.uniform_(0.5, 1.5)
        conv.skip.normal_()


def pyg_reference(conv, x_dict, eid, heads, grad=False):
    """(PyG HGTConv's output by hgt_pyg_reference in float64, the float64
    parameter leaves by hector's names, the float64 feature leaves)."""
    params = float64_params(conv, grad)
    xr = {t: x.detach().double().requires_grad_(grad) for t, x in x_dict.items()}
    widths = {t: x.shape[1] for t, x in x_dict.items()}
    ref = hgt_pyg(xr, eid, pyg_params_of(params, META, heads, widths), META, heads)
    return ref, params, xr


@pytest.mark.parametrize("heads,hub", [(1, False), (4, False), (2, True)])
def test_hgt_forward(heads, hub):
    eid, _, _ = hetero(heads, hub)
    torch.manual_seed(5)
    conv = hnn.HGTConv(16, 16, META, heads=heads)
    randomize_hgt(conv)
    x_dict = {t: features(SIZES[t], 16, seed=i) for i, t in enumerate(META[0])}
    with torch.no_grad():
        out = conv(x_dict, eid)
    ref, _, _ = pyg_reference(conv, x_dict, eid, heads)
    assert set(out) == set(ref) == {"author", "paper", "venue"}  # "topic": no edge type
    for t, value in out.items():
        assert value.shape == (SIZES[t], 16)
        assert rel_err(value, ref[t]) < TOL, t
    # "author" only has the absent edge type: GELU(0) = 0, then out_lin's
    # bias, gated with x_t.
    gate = torch.sigmoid(conv.skip[0].detach())
    expected = gate * conv.a_bias[0].detach() + (1 - gate) * x_dict["author"]
    assert rel_err(out["author"], expected) < TOL


def test_hgt_in_channels_dict_and_missing_node_type():
    eid, _, _ = hetero(7)
    conv = hnn.HGTConv({t: 8 for t in META[0]}, 8, META, heads=2)
    x_dict = {t: features(SIZES[t], 8, seed=3) for t in ("author", "paper", "venue")}
    with torch.no_grad():
        out = conv(x_dict, eid)
    assert set(out) == {"author", "paper", "venue"}


@pytest.mark.parametrize("heads", [1, 2])
def test_hgt_backward(heads):
    eid, _, _ = hetero(heads)
    torch.manual_seed(6)
    conv = hnn.HGTConv(16, 16, META, heads=heads)
    require_training(conv)
    randomize_hgt(conv)
    x_dict = {t: features(SIZES[t], 16, seed=i).requires_grad_()
              for i, t in enumerate(META[0])}
    out = conv(x_dict, eid)
    check_hgt_step(conv, x_dict, out, eid, heads)


def check_hgt_step(conv, x_dict, out, eid, heads):
    """The output of conv(x_dict, eid) and the gradients of x_dict and of
    every parameter against PyG's HGTConv math (hgt_pyg_reference) in float64."""
    cots = {t: torch.randn(v.shape, dtype=torch.float64) for t, v in out.items()}
    sum((out[t].double() * cots[t]).sum() for t in out).backward()
    ref, params, xr = pyg_reference(conv, x_dict, eid, heads, grad=True)
    sum((ref[t] * cots[t]).sum() for t in out).backward()
    for t in out:
        assert rel_err(out[t], ref[t]) < TOL, t
    for t in META[0]:
        theirs = xr[t].grad if xr[t].grad is not None else torch.zeros_like(xr[t])
        assert rel_err(x_dict[t].grad, theirs) < TOL, t
    for name, mine in conv.named_parameters():
        theirs = params[name].grad
        assert rel_err(mine.grad, theirs if theirs is not None else torch.zeros_like(mine)) \
            < TOL, name


# ---- training end to end -----------------------------------------------------------

def test_two_layers_train():
    g, edge_index, edge_type = homogeneous("random_graph", seed=9)
    torch.manual_seed(9)
    n = len(g["node_type"])
    layers = torch.nn.ModuleList([hnn.RGCNConv(16, 16, 6), hnn.RGATConv(16, 4, 6, heads=2)])
    require_training(*layers)
    x = features(n, 16, seed=9)
    labels = torch.randint(0, 8, (n,))
    opt = torch.optim.Adam(layers.parameters(), lr=0.02)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        h = torch.relu(layers[0](x, edge_index, edge_type))
        loss = torch.nn.functional.cross_entropy(layers[1](h, edge_index, edge_type), labels)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.7 * losses[0]


def test_gradients_without_training_support_say_so(tmp_path):
    # A hectorc from before autodiff: no --training in its help, rejects the flag.
    old = tmp_path / "hectorc"
    old.write_text(f"""#!/bin/sh
case " $* " in *" --training "*) echo "Unknown command line argument '--training'" >&2; exit 1;;
esac
[ "$1" = --help ] && {{ {hectorc()} --help | grep -v -- --training; exit 0; }}
exec {hectorc()} "$@"
""")
    old.chmod(0o755)
    g, edge_index, edge_type = homogeneous("random_graph")
    conv = hnn.RGCNConv(16, 16, 6)
    conv.compiler, conv.cache_dir = str(old), str(tmp_path / "cache")
    with pytest.raises(TrainingNotAvailable, match="no --training"):
        conv(features(60, 16), edge_index, edge_type)
    with torch.no_grad():  # inference still works
        assert conv(features(60, 16), edge_index, edge_type).shape == (60, 16)


# ---- the preprocessing cache --------------------------------------------------------

def test_graph_cache_by_content():
    """The cache in brief; test_nn_graph_cache.py has every way a graph can change."""
    g, edge_index, edge_type = homogeneous("random_graph", seed=11)
    conv, x = hnn.RGCNConv(16, 8, 6), features(60, 16)
    hnn.graph_cache.clear()
    with torch.no_grad():
        first = conv(x, edge_index, edge_type)
        conv(x, edge_index, edge_type)
        assert (hnn.graph_cache.hits, hnn.graph_cache.misses) == (1, 1)
        hnn.RGATConv(16, 8, 6)(x, edge_index, edge_type)  # another layer, same graph
        assert hnn.graph_cache.hits == 2
        conv(x, edge_index.clone(), edge_type)  # equal values, new tensor: a hit
        assert (hnn.graph_cache.hits, hnn.graph_cache.misses) == (3, 1)
        edge_type[0] = (edge_type[0] + 1) % 6  # in place: other content
        changed = conv(x, edge_index, edge_type)
        assert hnn.graph_cache.misses == 2
        g["etype"] = edge_type.numpy().copy()
        ref = models_numpy.rgcn(g, x.numpy(), conv.weight.detach().numpy(),
                                conv.root.detach().numpy())
        assert rel_err(changed, ref) < TOL and not torch.equal(changed, first)


def test_graph_cache_capacity():
    cache = hnn.GraphCache(capacity=2)
    keep = [torch.full((3,), i) for i in range(3)]
    for i, t in enumerate(keep):
        cache.get((t,), (), lambda i=i: i)
    assert len(cache) == 2
    assert cache.get((keep[2],), (), lambda: "rebuilt") == 2
    assert cache.get((keep[0],), (), lambda: "rebuilt") == "rebuilt"
    assert cache.get((keep[0],), ("other numbering",), lambda: "other") == "other"


# ---- refused options and bad inputs ---------------------------------------------------

@pytest.mark.parametrize("make,error,message", [
    (lambda: hnn.RGCNConv(16, 8, 3, aggr="max"), NotImplementedError, "aggr='mean'"),
    (lambda: hnn.RGCNConv((16, -1), 8, 3), NotImplementedError, "lazy"),
    (lambda: hnn.RGCNConv(16, 8, 3, flow="target_to_source"), NotImplementedError, "flow"),
    (lambda: hnn.RGCNConv(16, 8, 3, num_bases=2, num_blocks=2), ValueError, "both"),
    (lambda: hnn.RGCNConv(16, 8, 3, num_blocks=3), ValueError, "must divide"),
    # RGATConv's mod, attention_mode, dim, edge_dim, dropout: test_nn_rgat_options.py
    (lambda: hnn.RGATConv(16, 8, 3, attention_mechanism="within"), ValueError,
     "across-relation"),
    (lambda: hnn.RGATConv(16, 8, 3, dim=2), ValueError, "needs dim=1"),
    (lambda: hnn.RGATConv(16, 8, 3, aggr="mean"), NotImplementedError, "aggr='add'"),
    (lambda: hnn.RGATConv(16, 8, 3, negative_slope=float("nan")), ValueError, "finite"),
    (lambda: hnn.HGTConv({"author": 8}, 16, META), ValueError, "lacks node type 'paper'"),
    (lambda: hnn.HGTConv(dict.fromkeys(META[0] + ["user"], 8), 16, META), ValueError,
     "in_channels has node type 'user'"),
    (lambda: hnn.HGTConv(0, 16, META), ValueError, "positive int or -1"),
    (lambda: hnn.HGTConv(dict.fromkeys(META[0], 8.0), 16, META), ValueError, "got 8.0"),
    (lambda: hnn.HGTConv(16, 16, META, heads=3), ValueError, "divisible"),
    (lambda: hnn.HGTConv(16, 16, META, aggr="mean"), NotImplementedError, "aggr"),
    (lambda: hnn.HGTConv(16, 16, (["a"], [("a", "r", "b")])), ValueError, "edge type"),
])
def test_refused_constructor_options(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_forward_inputs():
    _, edge_index, edge_type = homogeneous("random_graph")
    conv, x = hnn.RGCNConv(16, 8, 6), features(60, 16)
    rgat = hnn.RGATConv(16, 8, 6)
    with torch.no_grad():
        with pytest.raises(TypeError, match="x must be a torch.Tensor"):
            conv(x.numpy(), edge_index, edge_type)
        with pytest.raises(ValueError, match=r"shape \[N, 16\]"):
            conv(x[:, :8], edge_index, edge_type)
        with pytest.raises(TypeError, match="float32"):
            conv(x.double(), edge_index, edge_type)
        with pytest.raises(ValueError, match="needs edge_type"):
            conv(x, edge_index)
        with pytest.raises(ValueError, match=r"shape \[2, E\]"):
            conv(x, edge_index.t(), edge_type)
        with pytest.raises(TypeError, match="integer ids"):
            conv(x, edge_index.float(), edge_type)
        with pytest.raises(ValueError, match="entries for"):
            conv(x, edge_index, edge_type[:-1])
        with pytest.raises(GraphInputError, match="out of range"):
            conv(x, edge_index, edge_type + 6)
        with pytest.raises(GraphInputError, match="out of range"):
            conv(x[:30], edge_index, edge_type)
        with pytest.raises(ValueError, match=r"size=\(61, 60\), but x has 60 nodes"):
            rgat(x, edge_index, edge_type, size=(61, 60))
        with pytest.raises(ValueError, match="no edge_dim"):  # edge_attr needs edge_dim
            rgat(x, edge_index, edge_type, edge_attr=features(edge_type.numel(), 4))


def test_bad_hetero_inputs():
    eid, _, _ = hetero(0)
    conv = hnn.HGTConv(16, 16, META)
    x_dict = {t: features(SIZES[t], 16) for t in META[0]}
    with torch.no_grad():
        with pytest.raises(ValueError, match="node type 'user'"):
            conv(dict(x_dict, user=features(2, 16)), eid)
        with pytest.raises(ValueError, match="edge type"):
            conv(x_dict, {**eid, ("author", "likes", "topic"): eid[META[1][0]]})
        with pytest.raises(ValueError, match="needs features of node type 'venue'"):
            conv({t: x_dict[t] for t in ("author", "paper")}, eid)
        bad = dict(eid)
        bad[META[1][0]] = eid[META[1][0]].clone()
        bad[META[1][0]][1, 0] = SIZES["paper"]
        with pytest.raises(ValueError, match="destination node 21, but node type 'paper' "
                                             "has 21 nodes"):
            conv(x_dict, bad)
        with pytest.raises(ValueError, match=r"\[N, 16\]"):
            conv(dict(x_dict, paper=features(21, 8)), eid)
        with pytest.raises(TypeError, match="float32"):
            conv(dict(x_dict, paper=x_dict["paper"].double()), eid)


def test_model_specs_and_missing_artifacts(tmp_path):
    conv = hnn.RGATConv(16, 8, 3, heads=2, negative_slope=0.1)
    assert conv.model_spec == "rgat:width=16,out_width=16,heads=2,negative_slope=0.1"
    assert hnn.RGCNConv(16, 8, 3).model_spec == "rgcn:width=16,out_width=8,heads=1"
    assert hnn.HGTConv(16, 16, META, heads=4).model_spec == \
        "hgt:width=16,out_width=16,heads=4,form=pyg"
    conv.cache_dir, conv.compiler = tmp_path, False
    _, edge_index, edge_type = homogeneous("random_graph")
    edge_type = edge_type % 3
    with torch.no_grad(), pytest.raises(compiler.MissingArtifactError) as info:
        conv(features(60, 16), edge_index, edge_type)
    assert conv.model_spec in str(info.value)

"""hector.nn layers on a GPU against PyTorch references and PyTorch Geometric.

The GPU machines have no hectorc, so the layers' libraries are built here,
ahead of time, into a hector cache directory:

    python3 test/gpu/test_nn_gpu.py --build build-nn/nn-gpu-cache

(`python3 -m hector.aot --target cuda [--training]` for every layer below;
with training entries when this hectorc has --training). The folder travels
to the GPU machine, where

    HECTOR_NN_GPU_CACHE=build-nn/nn-gpu-cache python3 -m pytest -q test/gpu/test_nn_gpu.py

runs RGCNConv, RGATConv and HGTConv on CUDA tensors, loading the libraries
by key (never compiling), and checks them against the float64 PyTorch
references of test/reference/models_torch.py (forward, and backward when the
libraries have training entries), and against torch_geometric's RGCNConv and
RGATConv (which compute the same function for the parameters set here),
also for PyG's other inputs: sparse adjacencies (torch.sparse COO/CSR/CSC,
and torch_sparse.SparseTensor where that package is installed), featureless
x (None or node ids) and bipartite x=(x_src, x_dst), and RGATConv's options
(mod, within-relation and multiplicative attention, dim, edge_dim with
edge_attr, return_attention_weights) against PyG's RGATConv with the same
options.
Not collected by CI (CI runs test/python only).
"""

from __future__ import annotations

import os
import sys

import gpu_paths  # noqa: E402,F401  (sets the import paths)

import numpy as np  # noqa: E402

WIDTH = 32
META = (["author", "paper", "venue"],
        [("author", "writes", "paper"), ("paper", "cites", "paper"),
         ("paper", "in", "venue"), ("venue", "has", "paper"), ("author", "empty", "venue")])
# Per-type input widths of HGTConv: all different, "venue" keeps its residual (= WIDTH).
HGT_WIDTHS = {"author": 16, "paper": 48, "venue": WIDTH}


def layers(num_relations: int) -> dict:
    """Every layer configuration tested: name -> constructor."""
    import hector.nn as hnn

    return {
        "rgcn": lambda: hnn.RGCNConv(WIDTH, WIDTH, num_relations),
        "rgcn_bases": lambda: hnn.RGCNConv(WIDTH, WIDTH, num_relations, num_bases=4),
        "rgcn_add": lambda: hnn.RGCNConv(WIDTH, WIDTH, num_relations, aggr="add"),
        "rgcn_fast": lambda: hnn.FastRGCNConv(WIDTH, WIDTH, num_relations),
        "rgat_h1": lambda: hnn.RGATConv(WIDTH, WIDTH, num_relations, heads=1),
        "rgat_h4": lambda: hnn.RGATConv(WIDTH, WIDTH // 4, num_relations, heads=4),
        "rgat_h4_mean": lambda: hnn.RGATConv(WIDTH, WIDTH // 4, num_relations, heads=4,
                                             concat=False),
        "hgt_h1": lambda: hnn.HGTConv(WIDTH, WIDTH, META, heads=1),
        "hgt_h4": lambda: hnn.HGTConv(WIDTH, WIDTH, META, heads=4),
        "hgt_in48": lambda: hnn.HGTConv(48, WIDTH, META, heads=2),
        "hgt_in16": lambda: hnn.HGTConv(16, WIDTH, META, heads=1),
        # HGT_WIDTHS is also what the lazy layer of test_hgt_equals_pyg sees: one library.
        "hgt_dict": lambda: hnn.HGTConv(HGT_WIDTHS, WIDTH, META, heads=2),
        "hgt_dict_narrow": lambda: hnn.HGTConv({"author": 8, "paper": 24, "venue": 12}, WIDTH,
                                               META, heads=1),
    }


def input_layers(num_relations: int, num_nodes: int) -> dict:
    """The layers of the input tests (featureless, bipartite): name -> constructor."""
    import hector.nn as hnn

    return {
        "rgcn_featureless": lambda: hnn.RGCNConv(num_nodes, WIDTH, num_relations),
        "rgcn_featureless_add": lambda: hnn.RGCNConv(num_nodes, WIDTH, num_relations,
                                                     aggr="add"),
        "rgcn_featureless_bases": lambda: hnn.RGCNConv(num_nodes, WIDTH, num_relations,
                                                       num_bases=4),
        "rgcn_bipartite": lambda: hnn.RGCNConv((WIDTH, WIDTH // 2), WIDTH, num_relations),
        "rgcn_bipartite_fast": lambda: hnn.FastRGCNConv((WIDTH // 2, WIDTH), WIDTH,
                                                        num_relations, aggr="add"),
    }


def rgat_option_layers(num_relations: int) -> dict:
    """RGATConv with PyG's options, checked against PyG's RGATConv with the
    same options (test_rgat_options_equal_pyg): name -> constructor."""
    import hector.nn as hnn

    def conv(**options):
        return lambda: hnn.RGATConv(WIDTH, WIDTH // 4, num_relations, heads=4, **options)

    mult = "multiplicative-self-attention"
    return {
        "rgat_mult": conv(attention_mode=mult),
        "rgat_mod_additive": conv(mod="additive"),
        "rgat_mod_scaled": conv(mod="scaled"),
        "rgat_mod_f_additive": conv(mod="f-additive"),
        "rgat_mod_f_scaled": conv(mod="f-scaled"),
        "rgat_mult_scaled_mean": conv(attention_mode=mult, mod="scaled", concat=False),
        "rgat_edge": conv(edge_dim=EDGE_DIM),
        "rgat_edge_mult": conv(edge_dim=EDGE_DIM, attention_mode=mult),
        "rgat_dim3": conv(attention_mode=mult, dim=3),
        "rgat_within": conv(attention_mechanism="within-relation"),
        "rgat_within_mult_f_scaled": conv(attention_mechanism="within-relation",
                                          attention_mode=mult, mod="f-scaled"),
        "rgat_dim2_edge_additive_mean": conv(attention_mode=mult, dim=2, edge_dim=EDGE_DIM,
                                             mod="additive", concat=False),
    }


EDGE_DIM = 8


def library_specs() -> list:
    """The model spec of every library the tests ask for (featureless
    layers use their featureless_model_spec; RGATConv's options also the
    variant that returns α, and without edge_attr)."""
    specs = {make().model_spec for make in layers(3).values()}
    # within-relation compiles the relation count in: that of test_rgat_options_equal_pyg
    from model_cases import GRAPHS as graphs

    relations = graphs["random_graph"](np.random.default_rng(0))["num_edge_types"]
    for make in rgat_option_layers(relations).values():
        conv = make()
        specs.update(conv.spec_for(edge, attention)
                     for edge in (True, False) for attention in (False, True))
    specs.update(make().spec_for(True, True) for make in (layers(3)["rgat_h1"],
                                                        layers(3)["rgat_h4"]))
    for name, make in input_layers(3, 10).items():
        conv = make()
        specs.add(conv.featureless_model_spec)  # bipartite ones are also run featureless
        if "featureless" not in name:
            specs.add(conv.model_spec)
    return sorted(specs)


def build(directory: str) -> None:
    """Builds the cuda libraries of every layer into `directory` (here, with hectorc)."""
    from hector import aot, compiler

    specs = library_specs()
    for spec in specs:
        training = compiler.supports_training()
        try:
            (_, lib), = aot.build([spec], "cuda", training=training, cache_dir=directory)
        except compiler.CompileError as err:  # --training may not build every model yet
            print(f"test_nn_gpu: no training library for {spec}: {err}")
            (_, lib), = aot.build([spec], "cuda", cache_dir=directory)
            training = False
        print(f"{lib.key}  {spec}  ({'with' if training else 'WITHOUT'} training entries)")
    print(f"test_nn_gpu: {len(specs)} libraries in {directory}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--build":
        build(sys.argv[2])
        sys.exit(0)
    sys.exit(f"usage: {sys.argv[0]} --build DIR   (then run it with pytest on the GPU)")


import pytest  # noqa: E402

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import hector.nn as hnn  # noqa: E402
from hector import compiler  # noqa: E402
from model_cases import GRAPHS  # noqa: E402
from hgt_pyg_reference import hgt_pyg, pyg_params_of  # noqa: E402
from reference import kinks, models_torch  # noqa: E402

CACHE = os.environ.get("HECTOR_NN_GPU_CACHE")
if not CACHE:
    pytest.skip("set HECTOR_NN_GPU_CACHE to a folder built by `python3 test/gpu/"
                "test_nn_gpu.py --build DIR`", allow_module_level=True)
DEVICE = torch.device("cuda")
TOL = 1e-5


def make(name: str, num_relations: int, num_nodes=None):
    torch.manual_seed(len(name) + num_relations)
    made = {**layers(num_relations), **rgat_option_layers(num_relations)} \
        if num_nodes is None else input_layers(num_relations, num_nodes)
    conv = made[name]().to(DEVICE)
    conv.cache_dir, conv.compiler = CACHE, False  # load by key only, as a GPU machine must
    with torch.no_grad():
        if getattr(conv, "bias", None) is not None:
            conv.bias.normal_()
        if isinstance(conv, hnn.HGTConv):  # PyG starts both at 1: make them matter
            conv.p_rel.uniform_(0.5, 1.5)
            conv.skip.normal_()
    return conv


def has_training(conv, spec=None) -> bool:
    try:
        lib = conv.library(DEVICE, True, spec)
    except compiler.MissingArtifactError:
        return False
    return lib.training_entries(conv.model) is not None


# The largest relative error each test measured (over its outputs and
# gradients), written as a table to $HECTOR_NN_GPU_REPORT at the end of the
# session: the numeric comparison with PyG that docs/python.md records.
_LARGEST_ERRORS: dict = {}


def rel_err(actual, expected) -> float:
    a, e = actual.detach().double(), expected.detach().double()
    error = float((a - e).abs().max() / e.abs().max().clamp_min(1e-30))
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    if test:
        _LARGEST_ERRORS[test] = max(_LARGEST_ERRORS.get(test, 0.0), error)
    return error


@pytest.fixture(scope="session", autouse=True)
def _error_report():
    yield
    path = os.environ.get("HECTOR_NN_GPU_REPORT")
    if not path:
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"| test ({torch.cuda.get_device_name()}) "
                "| against | largest relative error (outputs and gradients) |\n|---|---|---:|\n")
        for test, error in sorted(_LARGEST_ERRORS.items()):
            name = test.split("::")[-1]
            against = "PyG 2.8" if "pyg" in name else "float64 reference"
            f.write(f"| `{name}` | {against} | {error:.1e} |\n")


def big_graph(rng):
    n, e, r = 20000, 200000, 12
    return {"node_type": np.zeros(n, np.int64), "src": rng.integers(0, n, e),
            "dst": rng.integers(0, n, e), "etype": rng.integers(0, r, e),
            "num_node_types": 1, "num_edge_types": r}


CASES = dict(GRAPHS, big_graph=big_graph)


def homogeneous(kind):
    g = CASES[kind](np.random.default_rng(len(kind)))
    g = dict(g, node_type=np.zeros_like(g["node_type"]), num_node_types=1)
    ei = torch.as_tensor(np.stack([g["src"], g["dst"]]), dtype=torch.int64, device=DEVICE)
    et = torch.as_tensor(g["etype"], dtype=torch.int64, device=DEVICE)
    return g, ei, et


def dense_weight(conv, p):
    if conv.num_bases is not None:
        basis, coeff = (p["weight"], p["comp"]) if "comp" in p else (p["basis"], p["att"])
        return torch.einsum("rb,bio->rio", coeff, basis)
    return p["weight"]


def reference(conv, g, x, p):
    """The layer's function in float64 through models_torch."""
    tg = models_torch.TorchGraph(g, device=DEVICE)
    if isinstance(conv, hnn.RGCNConv):
        if conv.aggr != "mean":  # 'add'/'sum': every message counts once (pad rows stay 0)
            tg.norm = (tg.norm > 0).to(tg.norm.dtype)
        return models_torch.rgcn(tg, x, dense_weight(conv, p), p["root"]) + p["bias"]
    out = models_torch.rgat(tg, x, dense_weight(conv, p), p["att_src"], p["att_dst"],
                            conv.heads)
    if not conv.concat:
        out = out.view(x.shape[0], conv.heads, -1).mean(1)
    return out + p["bias"]


HOMOGENEOUS = [n for n in layers(1) if not n.startswith("hgt")]


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("name", HOMOGENEOUS)
def test_homogeneous_layers(name, kind):
    g, ei, et = homogeneous(kind)
    conv = make(name, g["num_edge_types"])
    train = has_training(conv)
    x = torch.randn(len(g["node_type"]), WIDTH, device=DEVICE, requires_grad=train)
    p = {k: v.detach().double().requires_grad_(train) for k, v in conv.named_parameters()}
    if isinstance(conv, hnn.RGATConv):  # no gradient at LeakyReLU's kink (reference/kinks.py)
        g, _ = kinks.without_kink_edges(g, x.detach(), dense_weight(conv, p).detach(),
                                        p["att_src"].detach(), p["att_dst"].detach(), conv.heads)
        ei = torch.as_tensor(np.stack([g["src"], g["dst"]]), dtype=torch.int64, device=DEVICE)
        et = torch.as_tensor(g["etype"], dtype=torch.int64, device=DEVICE)
    xr = x.detach().double().requires_grad_(train)
    ref = reference(conv, g, xr, p)
    if not train:
        with torch.no_grad():
            out = conv(x, ei, et)
        assert rel_err(out, ref) < TOL
        pytest.skip("forward checked; the libraries have no training entries (backward)")
    out = conv(x, ei, et)
    cot = torch.randn(out.shape, dtype=torch.float64, device=DEVICE)
    (out.double() * cot).sum().backward()
    (ref * cot).sum().backward()
    assert rel_err(out, ref) < TOL
    assert rel_err(x.grad, xr.grad) < TOL
    for k, v in conv.named_parameters():
        assert rel_err(v.grad, p[k].grad) < TOL, k


def hetero(rng, scale=1):
    sizes = {"author": 300 * scale, "paper": 500 * scale, "venue": 20}
    eid = {}
    for et, count in zip(META[1], (3000, 4000, 500, 800, 0)):
        s, _, d = et
        count *= scale
        eid[et] = torch.stack([torch.as_tensor(rng.integers(0, sizes[s], count)),
                               torch.as_tensor(rng.integers(0, sizes[d], count))]).to(DEVICE)
    offset = dict(zip(META[0], np.cumsum([0] + [sizes[t] for t in META[0]])[:-1].tolist()))
    g = {"node_type": np.concatenate([np.full(sizes[t], i) for i, t in enumerate(META[0])]),
         "src": np.concatenate([eid[et][0].cpu().numpy() + offset[et[0]] for et in eid]),
         "dst": np.concatenate([eid[et][1].cpu().numpy() + offset[et[2]] for et in eid]),
         "etype": np.concatenate([np.full(eid[et].shape[1], META[1].index(et)) for et in eid]),
         "num_node_types": len(META[0]), "num_edge_types": len(META[1])}
    return sizes, eid, offset, g


@pytest.mark.parametrize("scale", [1, 20])
@pytest.mark.parametrize("name", ["hgt_h1", "hgt_h4"])
def test_hgt(name, scale):
    """Against PyG's HGTConv math in float64 (test/python/hgt_pyg_reference.py),
    the layer's parameters under PyG's names."""
    sizes, eid, offset, g = hetero(np.random.default_rng(scale), scale)
    conv = make(name, len(META[1]))
    train = has_training(conv)
    x_dict = {t: torch.randn(sizes[t], WIDTH, device=DEVICE, requires_grad=train)
              for t in META[0]}
    params = {n: p.detach().double().requires_grad_(train) for n, p in conv.named_parameters()}
    xr = {t: x.detach().double().requires_grad_(train) for t, x in x_dict.items()}
    with torch.set_grad_enabled(train):
        ref = hgt_pyg(xr, eid, pyg_params_of(params, META, conv.heads,
                                              dict.fromkeys(META[0], WIDTH)), META, conv.heads)
        out = conv(x_dict, eid)
    assert set(out) == set(ref) == {"paper", "venue"}
    for t, value in out.items():
        assert rel_err(value, ref[t]) < TOL, t
    if not train:
        pytest.skip("forward checked; the libraries have no training entries (backward)")
    cots = {t: torch.randn(v.shape, dtype=torch.float64, device=DEVICE) for t, v in out.items()}
    sum((out[t].double() * cots[t]).sum() for t in out).backward()
    sum((ref[t] * cots[t]).sum() for t in out).backward()
    for t in META[0]:
        assert rel_err(x_dict[t].grad, xr[t].grad) < TOL, t
    for k, theirs in params.items():
        assert rel_err(getattr(conv, k).grad, theirs.grad) < TOL, k


# ---- the same function in PyTorch Geometric ----------------------------------------

def _pyg():
    return pytest.importorskip("torch_geometric.nn")


@pytest.mark.parametrize("name", ["rgcn", "rgcn_bases", "rgcn_add"])
def test_rgcn_equals_pyg(name):
    pyg = _pyg()
    g, ei, et = homogeneous("random_graph")
    conv = make(name, g["num_edge_types"])
    theirs = pyg.RGCNConv(WIDTH, WIDTH, g["num_edge_types"], num_bases=conv.num_bases,
                          aggr=conv.aggr).to(DEVICE)
    theirs.load_state_dict(conv.state_dict())  # the same parameter names and shapes
    _compare(conv, theirs, g, ei, et, {k: k for k, _ in conv.named_parameters()})


def test_fast_rgcn_equals_pyg():
    pyg = _pyg()
    g, ei, et = homogeneous("random_graph")
    conv = make("rgcn_fast", g["num_edge_types"])
    theirs = pyg.FastRGCNConv(WIDTH, WIDTH, g["num_edge_types"], aggr="mean").to(DEVICE)
    theirs.load_state_dict(conv.state_dict())
    _compare(conv, theirs, g, ei, et, {k: k for k, _ in conv.named_parameters()})


@pytest.mark.parametrize("heads", [1, 4])
def test_rgat_equals_pyg(heads):
    """PyG's q, k ([H·C, H]) shared by all relations, block diagonal, equal
    hector's per-relation att_dst, att_src when every relation's rows are
    the same: then both compute the same function."""
    g, ei, et = homogeneous("random_graph")
    conv, theirs = _rgat_pair(heads, g["num_edge_types"])
    _compare(conv, theirs, g, ei, et, {"weight": "weight", "bias": "bias"})


def _rgat_pair(heads, num_relations, name=None):
    """A hector RGATConv and a PyG RGATConv (with the same options) that
    compute the same function: hector's per-relation attention vectors
    equal for every relation, PyG's q, k (and e) block diagonal with them;
    lin_edge, w, l1, b1, l2, b2 copied."""
    pyg = _pyg()
    conv = make(name or ("rgat_h1" if heads == 1 else "rgat_h4"), num_relations)
    c, heads = conv.out_channels, conv.heads
    dim = conv.dim
    theirs = pyg.RGATConv(WIDTH, c, num_relations, heads=heads, mod=conv.mod,
                          attention_mechanism=conv.attention_mechanism,
                          attention_mode=conv.attention_mode, concat=conv.concat,
                          dim=dim, edge_dim=conv.edge_dim).to(DEVICE)
    with torch.no_grad():
        if conv.mod == "scaled":  # away from the initial ones and zeros
            for p in (conv.l1, conv.b1, conv.l2, conv.b2):
                p.copy_(torch.rand_like(p) * 0.2)
        elif conv.mod == "additive":
            conv.w.uniform_(0.5, 1.5)
        pairs = [("att_dst", theirs.q), ("att_src", theirs.k)]
        if conv.edge_dim is not None:
            pairs.append(("att_edge", theirs.e))
            theirs.lin_edge.weight.copy_(conv.lin_edge.weight)
        for mine, matrix in pairs:
            vector = getattr(conv, mine)
            vector.copy_(vector[0].expand_as(vector))
            matrix.zero_()
            for j in range(heads * dim):  # score j = (head j // dim, d = j % dim)
                h = j // dim
                matrix[h * c:(h + 1) * c, j] = vector[0, j * c:(j + 1) * c]
        theirs.weight.copy_(conv.weight)
        theirs.bias.copy_(conv.bias)
        for param in ("w", "l1", "b1", "l2", "b2"):
            if hasattr(conv, param):
                getattr(theirs, param).copy_(getattr(conv, param))
    return conv, theirs


@pytest.mark.parametrize("attention", [False, True])
@pytest.mark.parametrize("name", sorted(rgat_option_layers(3)))
def test_rgat_options_equal_pyg(name, attention):
    """RGATConv's mod, attention_mechanism, attention_mode, dim, edge_dim
    (with edge_attr) and return_attention_weights against PyG's RGATConv
    with the same options:
    the output and α (compared as one vector, and differentiated together),
    the gradients of x, edge_attr and the parameters both layers share."""
    g, ei, et = homogeneous("random_graph")
    conv, theirs = _rgat_pair(4, g["num_edge_types"], name)
    same = {k: k for k in ("weight", "bias", "lin_edge.weight", "w", "l1", "b1", "l2", "b2")
            if k in dict(conv.named_parameters())}
    inputs = [torch.randn(len(g["node_type"]), WIDTH, device=DEVICE)]
    if conv.edge_dim is not None:
        inputs.append(torch.randn(ei.size(1), EDGE_DIM, device=DEVICE))

    def call(layer):
        def run(x, *edge_attr):
            if not attention:
                return layer(x, ei, et, *edge_attr)
            out, (adj, alpha) = layer(x, ei, et, *edge_attr, return_attention_weights=True)
            assert adj is ei and alpha.shape == (ei.size(1), 4 * layer.dim)
            return torch.cat([out.reshape(-1), alpha.reshape(-1)])
        return run

    _compare_calls(conv, theirs, inputs, call(conv), call(theirs), same,
                   conv.spec_for(True, attention))


def test_rgat_edge_attr_as_sparse_values_equal_pyg():
    """A CSR adj_t with [E, F] values and edge_type in its stored order: both
    read the values as edge_attr (PyG 2.8 raises on an uncoalesced COO)."""
    ei, et = distinct_graph(200, 200, 2000, 4, seed=10)
    conv, theirs = _rgat_pair(4, 4, "rgat_edge")
    attr = torch.randn(ei.size(1), EDGE_DIM, device=DEVICE)
    adj = adjacency("csr", ei, attr, 200, 200)
    stored = et[stored_order("csr", ei, 200, 200)]
    x = torch.randn(200, WIDTH, device=DEVICE)
    with torch.no_grad():
        assert rel_err(conv(x, adj, stored), theirs(x, adj, stored)) < 1e-4


def test_rgat_attention_weights_sparse_equal_pyg():
    """return_attention_weights with a torch.sparse CSR adj_t: PyG's
    (adj_t with α as values, α), α in stored order."""
    ei, et = distinct_graph(200, 200, 2000, 4, seed=9)
    conv, theirs = _rgat_pair(4, 4)
    adj = adjacency("csr", ei, et, 200, 200)
    x = torch.randn(200, WIDTH, device=DEVICE)
    with torch.no_grad():
        out, (mine, alpha) = conv(x, adj, return_attention_weights=True)
        # PyG reads no edge types from a torch.sparse tensor: its values, in
        # stored order, as edge_type.
        expected, (other, beta) = theirs(x, adj, adj.values(),
                                         return_attention_weights=True)
    assert rel_err(out, expected) < 1e-4 and rel_err(alpha, beta) < 1e-4
    assert mine.layout == other.layout == torch.sparse_csr
    assert rel_err(mine.values(), other.values()) < 1e-4


HGT_PYG_CASES = [  # (layer, an edge type left out of edge_index_dict)
    ("hgt_h1", None), ("hgt_h4", ("venue", "has", "paper")), ("hgt_in48", None),
    ("hgt_in16", ("paper", "in", "venue")), ("hgt_dict", ("venue", "has", "paper")),
    ("hgt_dict_narrow", None), ("hgt_lazy", ("paper", "in", "venue")),
    ("hgt_lazy", None)]


@pytest.mark.parametrize("name,missing", HGT_PYG_CASES)
def test_hgt_equals_pyg(name, missing):
    """PyG's HGTConv with hector's weights copied under its names
    (docs/python.md): K|Q|V and their biases into kqv_lin, A and its bias
    into out_lin, k_rel/v_rel [R, H] -> its [H·R] relation-head types,
    p_rel and skip per edge and node type. The two compute one function:
    biases, exact GELU before out_lin, the gated skip where a type's width
    is WIDTH. A left-out edge type contributes nothing; with ("paper",
    "in", "venue") left out, "venue" receives no message (out_lin's bias,
    gated with x_t)."""
    pyg = _pyg()
    sizes, eid, _, _ = hetero(np.random.default_rng(len(name)))
    eid = {et: ei for et, ei in eid.items() if et != missing}
    if name == "hgt_lazy":
        torch.manual_seed(1)
        conv = hnn.HGTConv(-1, WIDTH, META, heads=2).to(DEVICE)
        conv.cache_dir, conv.compiler = CACHE, False
        widths = HGT_WIDTHS
    else:
        conv = make(name, len(META[1]))
        widths = conv.in_channels
    x_dict = {t: torch.randn(sizes[t], widths[t], device=DEVICE) for t in META[0]}
    theirs = pyg.HGTConv(conv.in_channels, WIDTH, META, heads=conv.heads).to(DEVICE)
    d, h, r = WIDTH, conv.heads, len(META[1])
    with torch.no_grad():
        if name == "hgt_lazy":  # both materialize their weights at a first forward
            conv(x_dict, eid)
            theirs(x_dict, eid)
            conv.p_rel.uniform_(0.5, 1.5)
            conv.skip.normal_()
        for i, t in enumerate(META[0]):
            kqv = [getattr(conv, n)[i] for n in ("k_weight", "q_weight", "v_weight")]
            theirs.kqv_lin.lins[t].weight.copy_(torch.cat(kqv, 1).t())
            theirs.kqv_lin.lins[t].bias.copy_(
                torch.cat([getattr(conv, n)[i] for n in ("k_bias", "q_bias", "v_bias")]))
            theirs.out_lin.lins[t].weight.copy_(conv.a_weight[i].t())
            theirs.out_lin.lins[t].bias.copy_(conv.a_bias[i])
            theirs.skip[t].copy_(conv.skip[i:i + 1])
        theirs.k_rel.weight.copy_(conv.k_rel.transpose(0, 1).reshape(h * r, d // h, d // h))
        theirs.v_rel.weight.copy_(conv.v_rel.transpose(0, 1).reshape(h * r, d // h, d // h))
        for j, et in enumerate(META[1]):
            theirs.p_rel["__".join(et)].copy_(conv.p_rel[j][None])
    train = has_training(conv)
    xs = {t: x.clone().requires_grad_(train) for t, x in x_dict.items()}
    xt = {t: x.clone().requires_grad_(train) for t, x in x_dict.items()}
    with torch.set_grad_enabled(train):
        out = conv(xs, eid)
        expected = theirs(xt, eid)
    assert set(out) == set(expected) == {"paper", "venue"}
    for t in out:
        assert rel_err(out[t], expected[t]) < 1e-4, t
    if not train:
        pytest.skip("forward checked; the libraries have no training entries (backward)")
    cots = {t: torch.randn_like(v) for t, v in out.items()}
    sum((out[t] * cots[t]).sum() for t in out).backward()
    sum((expected[t] * cots[t]).sum() for t in out).backward()
    for t in META[0]:
        assert rel_err(xs[t].grad, xt[t].grad) < 1e-4, t

    def grad(p):
        return p.grad if p.grad is not None else torch.zeros_like(p)

    for i, t in enumerate(META[0]):
        kqv = grad(theirs.kqv_lin.lins[t].weight).t()
        kqv_bias = grad(theirs.kqv_lin.lins[t].bias)
        for j, n in enumerate(("k", "q", "v")):
            p = getattr(conv, f"{n}_weight")
            mine = p.grad[i] if isinstance(p, torch.nn.Parameter) else p[i].grad
            assert rel_err(mine, kqv[:, j * d:(j + 1) * d]) < 1e-4, (n, t)
            assert rel_err(grad(getattr(conv, f"{n}_bias"))[i],
                           kqv_bias[j * d:(j + 1) * d]) < 1e-4, (n, "bias", t)
        assert rel_err(conv.a_weight.grad[i], grad(theirs.out_lin.lins[t].weight).t()) \
            < 1e-4, ("a_weight", t)
        assert rel_err(conv.a_bias.grad[i], grad(theirs.out_lin.lins[t].bias)) < 1e-4, \
            ("a_bias", t)
        assert rel_err(grad(conv.skip)[i:i + 1], grad(theirs.skip[t])) < 1e-4, ("skip", t)
    for n in ("k_rel", "v_rel"):
        other = grad(getattr(theirs, n).weight).view(h, r, d // h, d // h).transpose(0, 1)
        assert rel_err(getattr(conv, n).grad, other) < 1e-4, n
    other = torch.cat([grad(theirs.p_rel["__".join(et)]) for et in META[1]])
    assert rel_err(conv.p_rel.grad, other) < 1e-4, "p_rel"


def _compare(conv, theirs, g, ei, et, same_grads):
    x = torch.randn(len(g["node_type"]), WIDTH, device=DEVICE)
    _compare_calls(conv, theirs, [x], lambda x: conv(x, ei, et), lambda x: theirs(x, ei, et),
                   same_grads)


def _compare_calls(conv, theirs, inputs, mine, other, same_grads, spec=None):
    """mine(*inputs) against other(*inputs): the output, then (when the
    library of `spec`, default conv.model_spec, has training entries) the
    gradients of the float inputs and of the parameters `same_grads` maps
    (hector's name -> PyG's)."""
    train = has_training(conv, spec)
    leaves = [t.detach().clone().requires_grad_(train and t.is_floating_point())
              for t in inputs]
    with torch.set_grad_enabled(train):
        out = mine(*leaves)
    copies = [t.detach().clone().requires_grad_(train and t.is_floating_point())
              for t in inputs]
    expected = other(*copies)
    assert out.shape == expected.shape
    assert rel_err(out, expected) < 1e-4
    if not train:
        pytest.skip("forward checked; the libraries have no training entries (backward)")
    cot = torch.randn_like(out)
    (out * cot).sum().backward()
    (expected * cot).sum().backward()
    for a, b in zip(leaves, copies):
        if a.is_floating_point():
            assert rel_err(a.grad, b.grad) < 1e-4
    params, ours = dict(theirs.named_parameters()), dict(conv.named_parameters())
    for mine, other in same_grads.items():
        assert rel_err(ours[mine].grad, params[other].grad) < 1e-4, mine


# ---- PyG's other inputs: sparse adjacency, featureless, bipartite -------------------------

def distinct_graph(num_src, num_dst, num_edges, num_relations, seed):
    """(edge_index, edge_type) on the GPU without repeated (source,
    destination) pairs (a CSR row holds each column once), in random order."""
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, num_src * num_dst, num_edges))
    rng.shuffle(keys)
    ei = torch.as_tensor(np.stack([keys % num_src, keys // num_src]), device=DEVICE)
    et = torch.as_tensor(rng.integers(0, num_relations, keys.size), device=DEVICE)
    return ei, et


def adjacency(layout, ei, values, num_src, num_dst):
    """PyG's adj_t [num_dst, num_src] with `values` per edge, built without
    coalescing (it would add up values) or a dense detour (it drops 0s)."""
    size = (num_dst, num_src) + tuple(values.shape[1:])  # [E, F] values: a dense dim
    coo = torch.sparse_coo_tensor(ei.flip(0), values, size)
    if layout == "coo":
        return coo
    order = stored_order(layout, ei, num_src, num_dst)
    src, dst = ei
    major, minor, count = (dst, src, num_dst) if layout == "csr" else (src, dst, num_src)
    ptr = torch.zeros(count + 1, dtype=torch.int64, device=DEVICE)
    ptr[1:] = torch.cumsum(torch.bincount(major, minlength=count), 0)
    make = torch.sparse_csr_tensor if layout == "csr" else torch.sparse_csc_tensor
    return make(ptr, minor[order], values[order], size)


def stored_order(layout, ei, num_src, num_dst):
    """The edges of `ei` in the order a CSR ([dst, src] rows) or CSC adj_t
    stores them (no repeated pairs)."""
    src, dst = ei
    major, minor = (dst, src) if layout == "csr" else (src, dst)
    return torch.argsort(major * max(num_src, num_dst) + minor)


def _rgcn_state(conv, theirs):
    theirs.load_state_dict(conv.state_dict())  # PyG's names and shapes
    return {k: k for k, _ in conv.named_parameters()}


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
@pytest.mark.parametrize("name", ["rgcn", "rgcn_add", "rgcn_fast"])
def test_rgcn_sparse_equals_pyg(name, layout):
    """A torch.sparse adj_t with the edge types as values, against PyG's
    FastRGCNConv on the same graph as edge_index and edge_type: PyG 2.8's
    layers do not take an uncoalesced COO or a CSC tensor (they fail inside
    PyG, measured on the GPU machine), and its RGCNConv takes no torch.sparse
    tensor at all (it reads a SparseTensor, below)."""
    pyg = _pyg()
    ei, et = distinct_graph(300, 300, 3000, 5, seed=len(layout))
    conv = make(name, 5)
    theirs = pyg.FastRGCNConv(WIDTH, WIDTH, 5, aggr=conv.aggr).to(DEVICE)
    same = _rgcn_state(conv, theirs)
    adj = adjacency(layout, ei, et, 300, 300)
    _compare_calls(conv, theirs, [torch.randn(300, WIDTH, device=DEVICE)],
                   lambda x: conv(x, adj), lambda x: theirs(x, ei, et), same)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_rgat_sparse_equals_pyg(layout):
    ei, et = distinct_graph(200, 200, 2000, 4, seed=7)
    conv, theirs = _rgat_pair(4, 4)
    adj = adjacency(layout, ei, et, 200, 200)
    # PyG's RGATConv reads no edge types from a torch.sparse tensor (it
    # fails without edge_type), so it gets the same graph as edge_index.
    _compare_calls(conv, theirs, [torch.randn(200, WIDTH, device=DEVICE)],
                   lambda x: conv(x, adj), lambda x: theirs(x, ei, et),
                   {"weight": "weight", "bias": "bias"})


def test_sparse_tensor_equals_pyg():
    """torch_sparse.SparseTensor (only where it is installed), values = edge types."""
    pyg = _pyg()
    torch_sparse = pytest.importorskip("torch_sparse")
    ei, et = distinct_graph(300, 300, 3000, 5, seed=8)
    adj_t = torch_sparse.SparseTensor(row=ei[1], col=ei[0], value=et, sparse_sizes=(300, 300))
    conv = make("rgcn", 5)
    theirs = pyg.RGCNConv(WIDTH, WIDTH, 5).to(DEVICE)
    same = _rgcn_state(conv, theirs)
    _compare_calls(conv, theirs, [torch.randn(300, WIDTH, device=DEVICE)],
                   lambda x: conv(x, adj_t), lambda x: theirs(x, adj_t), same)


@pytest.mark.parametrize("layout", ["coo", "csr", "sparse_tensor"])
def test_hgt_sparse_is_edge_index(layout):
    """HGT reads every edge type's adj_t as its edge list: against hector's
    own edge_index call, itself checked against PyG's HGTConv above."""
    if layout == "sparse_tensor":
        torch_sparse = pytest.importorskip("torch_sparse")
    sizes, eid, _, _ = hetero(np.random.default_rng(9))
    sparse = {}
    for (s, rel, d), ei in eid.items():
        ones = torch.ones(ei.size(1), device=DEVICE)
        if layout == "sparse_tensor":
            sparse[(s, rel, d)] = torch_sparse.SparseTensor(
                row=ei[1], col=ei[0], value=ones, sparse_sizes=(sizes[d], sizes[s]))
        else:
            if layout == "csr" and ei.size(1):
                ei = torch.unique(ei, dim=1)  # distinct edges for CSR
                eid[(s, rel, d)] = ei
                ones = ones[:ei.size(1)]
            sparse[(s, rel, d)] = adjacency(layout, ei, ones, sizes[s], sizes[d])
    conv = make("hgt_h4", len(META[1]))
    x_dict = {t: torch.randn(sizes[t], WIDTH, device=DEVICE) for t in META[0]}
    with torch.no_grad():
        mine, expected = conv(x_dict, sparse), conv(x_dict, eid)
    assert set(mine) == set(expected)
    for t in mine:
        assert rel_err(mine[t], expected[t]) < 1e-6, t


@pytest.mark.parametrize("ids", [False, True])
@pytest.mark.parametrize("name", ["rgcn_featureless", "rgcn_featureless_add",
                                  "rgcn_featureless_bases"])
def test_featureless_equals_pyg(name, ids):
    """x=None (or node ids; PyG: trainable embeddings) against PyG's RGCNConv."""
    pyg = _pyg()
    n = 400
    ei, et = distinct_graph(n, n, 4000, 5, seed=10)
    conv = make(name, 5, num_nodes=n)
    theirs = pyg.RGCNConv(n, WIDTH, 5, num_bases=conv.num_bases, aggr=conv.aggr).to(DEVICE)
    same = _rgcn_state(conv, theirs)
    x = torch.randperm(n, device=DEVICE) if ids else None
    _compare_calls(conv, theirs, [], lambda: conv(x, ei, et), lambda: theirs(x, ei, et), same,
                   conv.featureless_model_spec)


@pytest.mark.parametrize("name", ["rgcn_bipartite", "rgcn_bipartite_fast"])
def test_bipartite_equals_pyg(name):
    """x=(x_src, x_dst) with in_channels=(in_src, in_dst), and
    x=(None, destination ids), against PyG's layer of the same class; also
    through a COO adj_t [num_dst, num_src]."""
    pyg = _pyg()
    ns, nd = 500, 120
    ei, et = distinct_graph(ns, nd, 3000, 4, seed=11)
    conv = make(name, 4, num_nodes=0)
    cls = pyg.FastRGCNConv if isinstance(conv, hnn.FastRGCNConv) else pyg.RGCNConv
    theirs = cls(conv.in_channels, WIDTH, 4, aggr=conv.aggr).to(DEVICE)
    same = _rgcn_state(conv, theirs)
    inputs = [torch.randn(ns, conv.in_channels_l, device=DEVICE),
              torch.randn(nd, conv.in_channels_r, device=DEVICE)]
    _compare_calls(conv, theirs, inputs, lambda xs, xd: conv((xs, xd), ei, et),
                   lambda xs, xd: theirs((xs, xd), ei, et), same)
    adj = adjacency("coo", ei, et, ns, nd)
    with torch.no_grad():
        xs, xd = inputs
        assert rel_err(conv((xs, xd), adj), theirs((xs, xd), ei, et)) < 1e-4


def test_featureless_bipartite_equals_pyg():
    pyg = _pyg()
    ei, et = distinct_graph(WIDTH, 50, 600, 4, seed=12)  # in_src = WIDTH source nodes
    conv = make("rgcn_bipartite", 4, num_nodes=0)
    theirs = pyg.RGCNConv(conv.in_channels, WIDTH, 4).to(DEVICE)
    same = _rgcn_state(conv, theirs)
    dst_ids = torch.randint(0, conv.in_channels_r, (50,), device=DEVICE)
    _compare_calls(conv, theirs, [], lambda: conv((None, dst_ids), ei, et),
                   lambda: theirs((None, dst_ids), ei, et), same, conv.featureless_model_spec)


# ---- caching and errors ------------------------------------------------------------------

def test_preprocessing_runs_once_per_graph_on_the_device():
    g, ei, et = homogeneous("random_graph")
    conv = make("rgcn", g["num_edge_types"])
    hnn.graph_cache.clear()
    x = torch.randn(len(g["node_type"]), WIDTH, device=DEVICE)
    with torch.no_grad():
        for _ in range(3):
            conv(x, ei, et)
    assert (hnn.graph_cache.hits, hnn.graph_cache.misses) == (2, 1)
    pre = hnn.graph_cache.get((ei, et), (len(g["node_type"]), 1, g["num_edge_types"],
                                         str(x.device)), lambda: None)
    assert pre.edge_src.is_cuda  # built with torch on the GPU, never on the host


def test_missing_library_names_its_key(tmp_path):
    conv = hnn.RGATConv(WIDTH, 5, 3, heads=3).to(DEVICE)  # built by nobody
    conv.cache_dir, conv.compiler = str(tmp_path), False
    g, ei, et = homogeneous("random_graph")
    with torch.no_grad(), pytest.raises(compiler.MissingArtifactError) as info:
        conv(torch.randn(len(g["node_type"]), WIDTH, device=DEVICE), ei, et % 3)
    assert conv.model_spec in str(info.value) and "target cuda (sm_" in str(info.value)
    assert info.value.key in str(info.value)

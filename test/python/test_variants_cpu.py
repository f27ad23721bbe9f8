"""Every `hectorc --variant` (unopt, compact, reorder, both) computes what
the references of BRIEF.md §4 compute, forward and backward, on the CPU.

The models come from hector.models (RGCN, RGAT, HGT; one head and four),
compiled once per variant; forward results are checked against the float64
NumPy references, gradients (`hectorc --training`) against the float64
PyTorch references, on graphs with isolated nodes, edge types without
edges, self loops, duplicate edges and a hub. `--graph-sizes` with a huge
node count makes HGT's per-head key and message chains profitable, so that
the product of a node-typed matrix and an edge-typed per-head weight is
exercised too. A first test checks that each variant really rewrites what
it should (else the numerics would prove nothing).
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from hector import compiled, graph as hgraph, models
from hectorc_support import build, hectorc
from model_cases import GRAPHS, reference, relative_error
from reference import params

VARIANTS = ("unopt", "compact", "reorder", "both")
TYPED = "--typed-endpoints"
TOLERANCE = 1e-5
pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")
GRAD_TOLERANCE = 1e-4
# (model, width, heads, extra hectorc flags)
CONFIGS = [
    ("rgcn", 16, 1, ()),
    ("rgat", 16, 1, ()),
    ("rgat", 32, 4, ()),
    ("hgt", 16, 1, ()),
    ("hgt", 16, 1, (TYPED,)),
    ("hgt", 32, 4, (TYPED,)),
    ("hgt", 32, 4, (TYPED, "--graph-sizes=N=100000000,E=1000,R=10")),
]


def config_id(config):
    model, width, heads, flags = config
    return (f"{model}{width}h{heads}" + ("-typed" if TYPED in flags else "")
            + ("-sized" if any(f.startswith("--graph-sizes") for f in flags) else ""))


def typed_endpoint_graph(rng, n, t, r, e, empty_types=(), hub=False, loops=False):
    """A graph whose edge type r always joins a node of type src_type[r] to a
    node of type dst_type[r] (what --typed-endpoints promises), with the
    last 8 nodes isolated, 40 duplicated edges and, on request, edge types
    without edges, a hub receiving most edges and self loops."""
    node_type = np.concatenate([np.arange(t), rng.integers(0, t, n - t)])
    ends = rng.integers(0, t, (r, 2))
    if loops:
        ends[:, 1] = ends[:, 0]
    used = [k for k in range(r) if k not in empty_types]
    etype = rng.choice(used, e)
    connected = n - 8
    by_type = [np.flatnonzero(node_type[:connected] == k) for k in range(t)]
    src = np.array([rng.choice(by_type[ends[k, 0]]) for k in etype])
    dst = np.array([rng.choice(by_type[ends[k, 1]]) for k in etype])
    if hub:  # most edges of the hub's in-types end at the hub
        hub_type = node_type[0]
        dst = np.where((ends[etype, 1] == hub_type) & (rng.random(e) < 0.8), 0, dst)
    if loops:
        dst[: e // 4] = src[: e // 4]
    src, dst, etype = (np.concatenate([x, x[:40]]) for x in (src, dst, etype))
    return {"node_type": node_type, "src": src, "dst": dst, "etype": etype,
            "num_node_types": t, "num_edge_types": r}


TYPED_GRAPHS = {
    "typed_random": lambda rng: typed_endpoint_graph(rng, 70, 3, 6, 500),
    "typed_empty_types_hub": lambda rng: typed_endpoint_graph(
        rng, 60, 4, 8, 400, empty_types=(1, 6), hub=True),
    "typed_self_loops": lambda rng: typed_endpoint_graph(rng, 50, 2, 5, 300, loops=True),
}


def graph_kinds(config):
    """The graphs a config may run on: any, or typed-endpoint ones only."""
    return sorted(TYPED_GRAPHS if TYPED in config[3] else GRAPHS)


def cases(graphs=None):
    """(config, graph kind) pairs for parametrize."""
    return [pytest.param(c, g, id=f"{config_id(c)}-{g}") for c in CONFIGS
            for g in graph_kinds(c) if graphs is None or g in graphs]


def emit_hgraph(source, *flags):
    result = subprocess.run([hectorc(), "-", "--emit=hgraph", *flags], input=source,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


# ---- the variants transform what they should --------------------------------

# config -> (weight products expected with reordering, compact maps expected
# with compaction)
EXPECTED = {
    "rgcn16h1": (0, 1),   # the message GEMM runs per (source, type) pair
    "rgat16h1": (1, 1),   # b·(W h_t) -> (W b)·h_t; z = W h_s compact
    "rgat32h4": (1, 1),   # a matrix W with 4 heads: h_t·(W b cut into 4 heads)
    "hgt16h1": (0, 2),    # k_s W^att, v_s W^msg compact; node·edge products
                          # need --typed-endpoints
    "hgt16h1-typed": (2, 2),   # the chains become h_s (K W^att), h_s (V W^msg)
    "hgt32h4-typed": (0, 2),   # per head: a dense product costs more
    "hgt32h4-typed-sized": (2, 2),  # unless nodes vastly outnumber edges
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_variant_rewrites(config, variant):
    model, width, heads, flags = config
    text = emit_hgraph(models.generate(model, width, heads=heads), f"--variant={variant}",
                       *flags)
    products, compact = EXPECTED[config_id(config)]
    reorders = variant in ("reorder", "both")
    compacts = variant in ("compact", "both")
    assert text.count("hgraph.weight_product") == (products if reorders else 0)
    assert text.count("#hgraph.materialization<compact>") == (compact if compacts else 0)


def function_counts(text, needle):
    """{function name: occurrences of `needle` in its body}."""
    counts, name = {}, None
    for line in text.splitlines():
        found = re.search(r"hgraph\.func @(\w+)", line)
        if found:
            name = found.group(1)
            counts[name] = 0
        elif name:
            counts[name] += line.count(needle)
    return counts


@pytest.mark.parametrize("save,expected", [
    # Reordering runs before autodiff too: the forward forms h_t·(W b) and
    # never W h_t; the backward recomputes W b and forms dR·W for the
    # gradient of b (dW gets dR ⊗ b, a weight_outer); the gradient of W from
    # the source sums its rows per (source, type) pair.
    ("materialized", {"rgat": (1, 1), "rgat_fwd": (1, 1), "rgat_bwd": (2, 1)}),
    # Nothing saved: the backward also recomputes and compacts W h_s.
    ("none", {"rgat": (1, 1), "rgat_fwd": (1, 1), "rgat_bwd": (2, 2)}),
])
def test_training_functions_are_optimized(save, expected):
    text = emit_hgraph(models.generate("rgat", 16), "--training", f"--save={save}")
    products = function_counts(text, "hgraph.weight_product")
    compact = function_counts(text, "#hgraph.materialization<compact>")
    assert {f: (products[f], compact[f]) for f in products} == expected


# ---- forward ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """(config, variant, training) -> loaded library, compiled on first use."""
    directory = tmp_path_factory.mktemp("variants")
    cache = {}

    def get(config, variant, training=False, save=None):
        key = (config, variant, training, save)
        if key not in cache:
            model, width, heads, flags = config
            options = ["--target=cpu", f"--variant={variant}", *flags]
            if training:
                options.append("--training")
            if save:
                options.append(f"--save={save}")
            name = f"lib{config_id(config)}_{variant}{'_t' if training else ''}{save or ''}.so"
            path = build(directory, models.generate(model, width, heads=heads), *options,
                         name=name.replace("-", "_"))
            cache[key] = compiled.load(path)
        return cache[key]

    return get


def make_case(config, graph_kind, seed):
    model, width, heads, _ = config
    rng = np.random.default_rng([seed, width, heads, len(graph_kind)])
    graph = {**GRAPHS, **TYPED_GRAPHS}[graph_kind](rng)
    h = rng.standard_normal((graph["node_type"].shape[0], width)).astype(np.float32)
    weights = params.make_params(model, graph, width, width, heads, seed=seed + width)
    return graph, h, weights


def preprocess(graph):
    return hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                             graph["num_node_types"], graph["num_edge_types"])


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("config,graph_kind", cases())
def test_forward_matches_numpy(libraries, config, variant, graph_kind):
    model, _, heads, _ = config
    graph, h, weights = make_case(config, graph_kind, seed=1)
    entry = libraries(config, variant)[model]
    pre = preprocess(graph)
    out = np.full(h.shape, np.nan, np.float32)  # every row must be written
    values = dict(pre.arrays(), h=h, result0=out, **weights)
    entry(**{a.name: values[a.name] for a in entry.arguments})
    assert not np.isnan(out).any(), "some output rows were never written"
    assert relative_error(out, reference(model, graph, h, weights, heads)) < TOLERANCE


def test_variants_agree_bit_for_bit_where_nothing_changes(libraries):
    """HGT with 4 heads on typed endpoints is not reordered at the default
    sizes (the per-head products cost more): reorder and unopt are the same
    program."""
    config = ("hgt", 32, 4, (TYPED,))
    graph, h, weights = make_case(config, "typed_random", seed=2)
    pre = preprocess(graph)
    outs = []
    for variant in ("unopt", "reorder"):
        entry = libraries(config, variant)["hgt"]
        out = np.zeros(h.shape, np.float32)
        values = dict(pre.arrays(), h=h, result0=out, **weights)
        entry(**{a.name: values[a.name] for a in entry.arguments})
        outs.append(out)
    assert np.array_equal(outs[0], outs[1])


# ---- backward --------------------------------------------------------------------

@pytest.fixture(scope="module")
def training(tmp_path_factory):
    """Skips while hectorc cannot build training libraries (no --training,
    or gradient ops the lowering does not handle yet)."""
    pytest.importorskip("torch")
    from hector import compiler
    if not compiler.supports_training(hectorc()):
        pytest.skip("hectorc has no --training")
    out = tmp_path_factory.mktemp("probe") / "libprobe.so"
    result = subprocess.run([hectorc(), "-", "--training", "--target=cpu", "-o", str(out)],
                            input=models.generate("rgcn", 8), capture_output=True, text=True)
    if result.returncode != 0 and re.search(r"hgraph-to-htmpl: .*not (supported|lowered)",
                                            result.stderr):
        pytest.skip("hgraph-to-htmpl does not lower the gradient ops yet: "
                    + result.stderr.strip().splitlines()[0])


def _weighted_sum_backward(out):
    """Backpropagates sum(out * G) for a fixed random G."""
    import torch
    cotangent = torch.as_tensor(
        np.random.default_rng(5).standard_normal(tuple(out.shape)), dtype=out.dtype)
    (out * cotangent).sum().backward()


def reference_gradients(model, graph, h, weights, heads):
    """Gradients by the float64 PyTorch reference."""
    import torch
    from reference import models_torch
    leaves = {k: torch.tensor(np.asarray(v), dtype=torch.float64, requires_grad=True)
              for k, v in dict(h=h, **weights).items()}
    out = models_torch.forward(model, models_torch.TorchGraph(graph), leaves["h"],
                               {k: v for k, v in leaves.items() if k != "h"}, heads)
    _weighted_sum_backward(out)
    return {k: v.grad.numpy() for k, v in leaves.items()}


def compiled_gradients(lib, model, graph, h, weights):
    """Gradients by the library's training entries (hector.autograd)."""
    import torch
    from hector import autograd
    leaves = {k: torch.tensor(np.asarray(v), dtype=torch.float32, requires_grad=True)
              for k, v in dict(h=h, **weights).items()}
    out, = autograd.run(lib, model, preprocess(graph), **leaves)
    _weighted_sum_backward(out)
    return {k: v.grad.double().numpy() for k, v in leaves.items()}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("config,graph_kind", cases(
    {"random_graph", "empty_edge_types", "self_loops_and_duplicates", "typed_random",
     "typed_empty_types_hub"}))
def test_backward_matches_torch(training, libraries, config, variant, graph_kind):
    model, _, heads, _ = config
    graph, h, weights = make_case(config, graph_kind, seed=3)
    expected = reference_gradients(model, graph, h, weights, heads)
    actual = compiled_gradients(libraries(config, variant, training=True), model, graph, h,
                                weights)
    for name, grad in expected.items():
        assert relative_error(actual[name], grad) < GRAD_TOLERANCE, name


@pytest.mark.parametrize("save", ["none", "all"])
@pytest.mark.parametrize("config,graph_kind", cases({"giant_hub", "typed_self_loops"}))
def test_backward_with_recomputation(training, libraries, config, graph_kind, save):
    """With --save=none the backward recomputes the forward maps, which the
    passes then compact and reorder inside the backward function too."""
    model, _, heads, _ = config
    graph, h, weights = make_case(config, graph_kind, seed=4)
    expected = reference_gradients(model, graph, h, weights, heads)
    actual = compiled_gradients(libraries(config, "both", training=True, save=save), model,
                                graph, h, weights)
    for name, grad in expected.items():
        assert relative_error(actual[name], grad) < GRAD_TOLERANCE, name

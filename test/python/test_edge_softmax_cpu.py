"""The edge softmax fused with its aggregation (`--fuse-softmax-aggregate`:
one walk of each destination's CSR row with an online softmax,
htmpl.softmax_aggregate), the stitched one (the default: one reduction walk
for the running max and sum, then α and the aggregation) and the split one
(`hectorc --split-softmax`: a max pass, then a sum pass) compute the
softmax of BRIEF.md §4 on the CPU.

RGAT and HGT, one head and four, on the edge-case graphs (isolated nodes,
edge types without edges, self loops and duplicates, a hub with 4000
in-edges), against the float64 NumPy references; then with attention
vectors scaled so that the scores reach the hundreds, where a softmax that
did not subtract the running maximum would overflow float32, and where the
rescaling of the running sum is exercised at every new maximum.
"""

from __future__ import annotations

import numpy as np
import pytest

from hector import compiled, graph as hgraph, models
from hectorc_support import build
from model_cases import GRAPHS, giant_hub, reference, relative_error
from reference import params

TOLERANCE = 1e-5
# (model, width, heads)
CONFIGS = [("rgat", 16, 1), ("rgat", 32, 4), ("hgt", 16, 1), ("hgt", 32, 4)]
LOWERINGS = {"fused": ("--fuse-softmax-aggregate",), "stitched": (),
             "split": ("--split-softmax",)}


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """(config, lowering) -> the model's entry point, compiled on first use."""
    directory = tmp_path_factory.mktemp("softmax")
    cache = {}

    def get(config, lowering):
        if (config, lowering) not in cache:
            model, width, heads = config
            path = build(directory, models.generate(model, width, heads=heads),
                         "--target=cpu", "--cpu=native", *LOWERINGS[lowering],
                         name=f"lib{model}{width}h{heads}_{lowering}.so")
            cache[config, lowering] = compiled.load(path)[model]
        return cache[config, lowering]

    return get


def run(entry, graph, h, weights):
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    out = np.full(h.shape, np.nan, np.float32)  # every row must be written
    values = dict(pre.arrays(), h=h, result0=out, **weights)
    entry(**{a.name: values[a.name] for a in entry.arguments})
    assert not np.isnan(out).any(), "some output rows were never written"
    return out


def make_case(config, graph, seed):
    model, width, heads = config
    rng = np.random.default_rng([seed, width, heads])
    h = rng.standard_normal((graph["node_type"].shape[0], width)).astype(np.float32)
    return h, params.make_params(model, graph, width, width, heads, seed=seed)


def config_id(config):
    return f"{config[0]}{config[1]}h{config[2]}"


@pytest.mark.parametrize("lowering", LOWERINGS)
@pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_matches_numpy(library, config, graph_kind, lowering):
    graph = GRAPHS[graph_kind](np.random.default_rng(len(graph_kind)))
    h, weights = make_case(config, graph, seed=3)
    out = run(library(config, lowering), graph, h, weights)
    assert relative_error(out, reference(config[0], graph, h, weights, config[2])) < TOLERANCE


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_large_scores(library, config):
    """Scores in the hundreds (exp overflows float32 past 88): the running
    maximum keeps every exponent <= 0."""
    model, _, heads = config
    graph = giant_hub(np.random.default_rng(7))
    h, weights = make_case(config, graph, seed=4)
    for name in ("a", "b") if model == "rgat" else ("mu",):
        weights[name] = (weights[name] * 60).astype(np.float32)
    expected = reference(model, graph, h, weights, heads)
    outs = {lowering: run(library(config, lowering), graph, h, weights)
            for lowering in LOWERINGS}
    for lowering, out in outs.items():
        assert np.isfinite(out).all(), lowering
        assert relative_error(out, expected) < 1e-4, lowering
    assert relative_error(outs["stitched"], outs["split"]) < 1e-4
    assert relative_error(outs["fused"], outs["stitched"]) < 1e-4

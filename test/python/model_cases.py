"""Model configurations, edge-case graphs and references shared by the CPU
tests (test_models_cpu.py) and the GPU validation (test/gpu/test_models_gpu.py).
"""

from __future__ import annotations

import numpy as np

from reference import models_numpy, params

WIDTHS = (16, 32, 64, 128)
CONFIGS = ([("rgcn", w, 1) for w in WIDTHS]
           + [("rgat", w, h) for w in WIDTHS for h in (1, 4)]
           + [("hgt", w, h) for w in WIDTHS for h in (1, 4)])


# The training tests' matrix (test_training_cpu.py, test/gpu/training_gpu.py):
# each model at a narrow and the benchmark width, with one and four heads.
TRAINING_CONFIGS = ([("rgcn", w, 1) for w in (16, 64)]
                    + [(m, w, h) for m in ("rgat", "hgt") for w in (16, 64) for h in (1, 4)])


def library_name(model, width, heads):
    return f"lib{model}_{width}_{heads}.so"


def _graph(node_type, src, dst, etype, t, r):
    return {"node_type": np.asarray(node_type), "src": np.asarray(src),
            "dst": np.asarray(dst), "etype": np.asarray(etype),
            "num_node_types": t, "num_edge_types": r}


def random_graph(rng):
    n, e, t, r = 60, 500, 3, 6
    return _graph(rng.integers(0, t, n), rng.integers(0, n, e), rng.integers(0, n, e),
                  rng.integers(0, r, e), t, r)


def isolated_nodes(rng):
    # Nodes 30..59 have no edges at all; 20..29 only send.
    n, e, t, r = 60, 300, 2, 4
    return _graph(rng.integers(0, t, n), rng.integers(0, 30, e), rng.integers(0, 20, e),
                  rng.integers(0, r, e), t, r)


def empty_edge_types(rng):
    # 8 edge types and 4 node types declared; only edge types 0, 3, 5 and
    # node types 0, 2 occur.
    n, e = 40, 300
    return _graph(rng.choice([0, 2], n), rng.integers(0, n, e), rng.integers(0, n, e),
                  rng.choice([0, 3, 5], e), 4, 8)


def self_loops_and_duplicates(rng):
    n, t, r = 30, 2, 3
    src = rng.integers(0, n, 100)
    dst = rng.integers(0, n, 100)
    etype = rng.integers(0, r, 100)
    loops = np.arange(n)
    src = np.concatenate([src, src[:50], loops])      # 50 duplicated edges
    dst = np.concatenate([dst, dst[:50], loops])      # and a self-loop per node
    etype = np.concatenate([etype, etype[:50], rng.integers(0, r, n)])
    return _graph(rng.integers(0, t, n), src, dst, etype, t, r)


def giant_hub(rng):
    # Node 0 receives 4000 of the 4300 edges.
    n, t, r = 50, 3, 4
    src = rng.integers(0, n, 4300)
    dst = np.concatenate([np.zeros(4000, np.int64), rng.integers(1, n, 300)])
    return _graph(rng.integers(0, t, n), src, dst, rng.integers(0, r, 4300), t, r)


GRAPHS = {f.__name__: f for f in (random_graph, isolated_nodes, empty_edge_types,
                                   self_loops_and_duplicates, giant_hub)}


def many_types_power_law(rng):
    # GPU scale: 600K edges over 237 edge types (fb15k's count), destinations
    # drawn from a Zipf law (hubs with tens of thousands of in-edges).
    n, e, t, r = 20000, 600000, 4, 237
    dst = np.minimum(rng.zipf(1.5, e) - 1, n - 1)
    return _graph(rng.integers(0, t, n), rng.integers(0, n, e), dst,
                  rng.integers(0, r, e), t, r)


def wide_random(rng):
    # GPU scale: 2M uniform edges, 12 edge types.
    n, e, t, r = 100000, 2000000, 3, 12
    return _graph(rng.integers(0, t, n), rng.integers(0, n, e), rng.integers(0, n, e),
                  rng.integers(0, r, e), t, r)


# Graphs large enough to exercise many thread blocks per segment and
# contended atomics; for the GPU scripts (too slow for CI on the CPU).
LARGE_GRAPHS = {f.__name__: f for f in (many_types_power_law, wide_random)}


def reference(model, graph, h, weights, heads):
    g = {k: graph[k] for k in ("node_type", "src", "dst", "etype")}
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    if model == "rgcn":
        return models_numpy.rgcn(g, h, w["W"], w["W0"])
    if model == "rgat":
        return models_numpy.rgat(g, h, w["W"], w["a"], w["b"], heads)
    return models_numpy.hgt(g, h, *(w[k] for k in params.PARAM_NAMES["hgt"]))


def relative_error(actual, expected):
    scale = max(np.abs(expected).max(), 1e-30)
    return float(np.abs(actual.astype(np.float64) - expected).max() / scale)

"""Graph unpacking and weight initialisation shared by the references, tests and benchmarks.

Parameter names and shapes (row-vector convention, weights stored [in, out]):
  rgcn: W [R, din, dout], W0 [din, dout]
  rgat: W [R, din, dout], a [R, dout], b [R, dout]           (heads divide dout)
  hgt:  K, Q, V, A [T, d, d], Watt, Wmsg [R, H, d/H, d/H], mu [R, H]   (din = dout = d)
"""

from __future__ import annotations

import numpy as np

PARAM_NAMES = {
    "rgcn": ("W", "W0"),
    "rgat": ("W", "a", "b"),
    "hgt": ("K", "Q", "V", "A", "Watt", "Wmsg", "mu"),
}


def graph_arrays(graph):
    """(node_type, src, dst, etype) as int64 numpy arrays, from an object, a dict or a tuple."""
    if isinstance(graph, (tuple, list)):
        if len(graph) != 4:
            raise ValueError("a graph tuple must be (node_type, src, dst, etype)")
        arrays = graph
    elif isinstance(graph, dict):
        arrays = [graph[k] for k in ("node_type", "src", "dst", "etype")]
    else:
        arrays = [getattr(graph, k) for k in ("node_type", "src", "dst", "etype")]
    node_type, src, dst, etype = (_np_index(x) for x in arrays)
    n = node_type.shape[0]
    if node_type.ndim != 1 or src.ndim != 1 or src.shape != dst.shape or src.shape != etype.shape:
        raise ValueError("node_type must be [N] and src, dst, etype [E] of one length")
    for what, x in (("src", src), ("dst", dst)):
        if x.size and (x.min() < 0 or x.max() >= n):
            raise ValueError(f"{what} holds node ids outside [0, {n})")
    if (etype.size and etype.min() < 0) or (node_type.size and node_type.min() < 0):
        raise ValueError("node and edge types must be non-negative")
    return node_type, src, dst, etype


def type_counts(graph):
    """(number of node types, number of edge types): the graph's own fields when it has them."""
    node_type, _, _, etype = graph_arrays(graph)
    get = graph.get if isinstance(graph, dict) else (lambda k: getattr(graph, k, None))
    t = get("num_node_types") if not isinstance(graph, (tuple, list)) else None
    r = get("num_edge_types") if not isinstance(graph, (tuple, list)) else None
    t = int(t) if t is not None else int(node_type.max()) + 1 if node_type.size else 1
    r = int(r) if r is not None else int(etype.max()) + 1 if etype.size else 1
    return t, r


def make_params(model, graph, din, dout, heads=1, seed=0, dtype=np.float32):
    """Named numpy weights for one layer of `model`, drawn from numpy Generator(seed).

    Weight matrices are Glorot-uniform; attention vectors and mu are drawn so that
    they matter (mu around 1, never 0), which makes the tests sensitive to them.
    """
    if model not in PARAM_NAMES:
        raise ValueError(f"unknown model {model!r}; known: {', '.join(PARAM_NAMES)}")
    if din < 1 or dout < 1:
        raise ValueError(f"feature sizes must be positive, got din={din}, dout={dout}")
    if heads < 1 or dout % heads:
        raise ValueError(f"dout={dout} must be a multiple of heads={heads}")
    if model == "hgt" and din != dout:
        raise ValueError(f"hgt adds h to its output, so din must equal dout (got {din} and {dout})")
    t, r = type_counts(graph)
    rng = np.random.default_rng(seed)

    def glorot(*shape):
        fan_in, fan_out = shape[-2], shape[-1]
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-bound, bound, size=shape)

    if model == "rgcn":
        p = {"W": glorot(r, din, dout), "W0": glorot(din, dout)}
    elif model == "rgat":
        bound = 1.0 / np.sqrt(dout // heads)
        p = {"W": glorot(r, din, dout), "a": rng.uniform(-bound, bound, (r, dout)),
             "b": rng.uniform(-bound, bound, (r, dout))}
    else:
        dh = dout // heads
        p = {name: glorot(t, dout, dout) for name in ("K", "Q", "V", "A")}
        p["Watt"] = glorot(r, heads, dh, dh)
        p["Wmsg"] = glorot(r, heads, dh, dh)
        p["mu"] = rng.uniform(0.5, 1.5, (r, heads))
    return {k: v.astype(dtype) for k, v in p.items()}


def _np_index(x):
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        raise ValueError(f"graph index arrays must be integers, got dtype {x.dtype}")
    return x.astype(np.int64, copy=False)

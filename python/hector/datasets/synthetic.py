"""Synthetic heterogeneous graphs with the published shapes of the benchmark datasets.

No machine here reaches the internet, so the public datasets are replaced by
graphs with their counts (shapes.py) and controlled structure:

* Node ids are grouped by node type (type 0 first), like DGL's homogeneous view.
  Node-type sizes are skewed (Zipf over types) and every type is non-empty.
* Every edge type has one fixed (source type, destination type).
* Edge-type sizes are skewed (Zipf over edge types, exponent `relation_skew`).
* Degrees follow a power law P(deg = k) ~ k^-gamma, gamma = `degree_exponent`
  (default 2.5). We draw node "ranks" with weight (rank+1)^-s, s = 1/(gamma-1),
  which is Zipf's law and gives that degree distribution. It shapes the
  in-degrees, the choice of source nodes and how many edges share one
  (source, edge type) pair; every node that takes part gets at least one
  in-edge when its type receives enough edges.
* `compaction` sets the entity compaction ratio = unique (source, edge type)
  pairs / edges exactly (up to rounding): we first pick that many distinct
  pairs, then spread the remaining edges over them.
* Edges come out in random order; duplicates and self-loops may occur, as in
  the real multigraphs. Everything is drawn from one numpy Generator(seed), so a
  seed gives identical arrays (on one numpy version).

Run `python3 -m hector.datasets.synthetic NAME --stats` for a report.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Optional, Union

import numpy as np

from .heterograph import HeteroGraph, format_stats
from .shapes import DATASETS, GraphSpec, get_spec

DEFAULT_DEGREE_EXPONENT = 2.5
_CHUNK = 1 << 22  # edges per vectorised step: bounds the float64 temporaries to ~32 MB each


def generate(
    dataset: Union[str, GraphSpec],
    *,
    scale: float = 1.0,
    seed: int = 0,
    compaction: Optional[float] = None,
    degree_exponent: float = DEFAULT_DEGREE_EXPONENT,
    relation_skew: float = 1.0,
    node_type_skew: float = 1.0,
    empty_edge_types: int = 0,
    isolated_fraction: float = 0.0,
) -> HeteroGraph:
    """Generate a graph shaped like `dataset` (a name from DATASETS or a GraphSpec).

    scale multiplies the node and edge counts (types stay as they are);
    compaction overrides the spec's target ratio; empty_edge_types edge types
    get no edges; isolated_fraction of each node type's nodes get no edges.
    """
    spec = get_spec(dataset) if isinstance(dataset, str) else dataset
    if not isinstance(spec, GraphSpec):
        raise ValueError(f"dataset must be a name or a GraphSpec, got {type(dataset).__name__}")
    if not (isinstance(scale, (int, float)) and scale > 0 and np.isfinite(scale)):
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    if not (isinstance(degree_exponent, (int, float)) and degree_exponent > 1.0):
        raise ValueError(f"degree_exponent must be > 1 (power law P(k) ~ k^-exponent), got {degree_exponent!r}")
    for what, value in (("relation_skew", relation_skew), ("node_type_skew", node_type_skew)):
        if not (isinstance(value, (int, float)) and value >= 0):
            raise ValueError(f"{what} must be >= 0, got {value!r}")
    if not (0.0 <= isolated_fraction < 1.0):
        raise ValueError(f"isolated_fraction must lie in [0, 1), got {isolated_fraction!r}")
    if not (isinstance(empty_edge_types, (int, np.integer)) and 0 <= empty_edge_types < spec.num_edge_types):
        raise ValueError(
            f"empty_edge_types must lie in [0, {spec.num_edge_types - 1}] (at least one edge type keeps edges), "
            f"got {empty_edge_types!r}"
        )
    rho = spec.compaction if compaction is None else compaction
    if not (isinstance(rho, (int, float)) and 0.0 < rho <= 1.0):
        raise ValueError(f"compaction ratio must lie in (0, 1], got {rho!r}")

    spec = scale_spec(spec, scale)
    s = 1.0 / (degree_exponent - 1.0)
    rng = np.random.default_rng(seed)
    n, e, t, r = spec.num_nodes, spec.num_edges, spec.num_node_types, spec.num_edge_types

    # 1. Node types: contiguous id ranges, skewed sizes, none empty.
    if spec.node_type_sizes is not None:
        sizes = np.asarray(spec.node_type_sizes, dtype=np.int64)
    else:
        sizes = _apportion(n, _zipf(t, node_type_skew)[rng.permutation(t)], minimum=1)
    node_type = np.repeat(np.arange(t, dtype=np.int32), sizes)
    type_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])

    # 2. The nodes that take part in edges, in two independent popularity orders
    #    (rank 0 = most popular): one for in-degree, one for out-degree.
    active = sizes - np.minimum(np.floor(isolated_fraction * sizes).astype(np.int64), sizes - 1)
    by_type_random = np.lexsort((rng.random(n), node_type)).astype(np.int32)
    local = np.arange(n) - type_start[node_type]
    in_rank_ids = by_type_random[local < active[node_type]]  # grouped by type, random within
    act_type = np.repeat(np.arange(t), active)
    out_rank_ids = in_rank_ids[np.lexsort((rng.random(in_rank_ids.size), act_type))]
    act_start = np.concatenate([[0], np.cumsum(active)[:-1]])

    # 3. (source type, destination type) of each edge type.
    if spec.edge_type_endpoints is not None:
        ends = np.asarray(spec.edge_type_endpoints, dtype=np.int32)
    else:
        ends = _draw_endpoints(rng, sizes, r)

    # 4. Edges per edge type: skewed, >= 1 except for the requested empty ones.
    weights = (np.asarray(spec.edge_type_sizes, dtype=np.float64) if spec.edge_type_sizes is not None
               else _zipf(r, relation_skew)[rng.permutation(r)])
    if empty_edge_types:
        weights[rng.choice(r, empty_edge_types, replace=False)] = 0.0
    nonempty = weights > 0
    if e < nonempty.sum():
        raise ValueError(f"{spec.name}: {e} edges cannot fill {int(nonempty.sum())} non-empty edge types")
    edges_per_type = np.zeros(r, dtype=np.int64)
    edges_per_type[nonempty] = _apportion(e, weights[nonempty], minimum=1)

    # 5. Unique (source, edge type) pairs per edge type, summing to rho * edges.
    pairs_per_type = _pairs_per_type(spec.name, rho, edges_per_type, active[ends[:, 0]])

    # 6. The distinct sources of each edge type's pairs (sorted by popularity rank).
    num_pairs = int(pairs_per_type.sum())
    pair_src = np.empty(num_pairs, dtype=np.int32)
    pair_start = np.concatenate([[0], np.cumsum(pairs_per_type)[:-1]])
    for rel in np.flatnonzero(pairs_per_type):
        st, k = int(ends[rel, 0]), int(pairs_per_type[rel])
        ranks = _distinct_powerlaw(rng, int(active[st]), k, s)
        pair_src[pair_start[rel]:pair_start[rel] + k] = out_rank_ids[act_start[st] + ranks]
    pair_type = np.repeat(np.arange(r, dtype=np.int32), pairs_per_type)

    # 7. Edges per pair: 1 each, plus the rest spread by the power law (popular pairs get more).
    extra_type = np.repeat(np.arange(r, dtype=np.int32), edges_per_type - pairs_per_type)
    counts = np.ones(num_pairs, dtype=np.int64)
    for lo in range(0, extra_type.size, _CHUNK):
        rel = extra_type[lo:lo + _CHUNK]
        which = pair_start[rel] + _powerlaw_ranks(rng, pairs_per_type[rel], s)
        counts += np.bincount(which, minlength=num_pairs)
    del extra_type
    src = np.repeat(pair_src, counts)
    etype = np.repeat(pair_type, counts)
    del pair_src, pair_type, counts

    # 8. Destinations: power-law ranks within the edge type's destination type; then
    #    give every active node of a type one in-edge where that type has enough edges.
    dst_type = ends[etype, 1]
    dst = np.empty(e, dtype=np.int32)
    for lo in range(0, e, _CHUNK):
        dt = dst_type[lo:lo + _CHUNK]
        dst[lo:lo + _CHUNK] = in_rank_ids[act_start[dt] + _powerlaw_ranks(rng, active[dt], s)]
    for ty in range(t):
        into = np.flatnonzero(dst_type == ty)
        if into.size >= active[ty]:
            chosen = into[rng.choice(into.size, int(active[ty]), replace=False)]
            dst[chosen] = in_rank_ids[act_start[ty]:act_start[ty] + active[ty]]
    del dst_type

    # 9. Random edge order: consumers must not rely on any sortedness.
    perm = rng.permutation(e)
    g = HeteroGraph(
        num_nodes=n,
        node_type=node_type,
        src=src[perm],
        dst=dst[perm],
        etype=etype[perm],
        num_node_types=t,
        num_edge_types=r,
        edge_type_endpoints=ends,
        name=spec.name,
    )
    return g.validate()


def custom_spec(num_nodes: int, num_edges: int, num_node_types: int, num_edge_types: int,
                compaction: float = 0.5, name: str = "custom") -> GraphSpec:
    """A spec for an arbitrary shape (validated by GraphSpec)."""
    return GraphSpec(name, int(num_nodes), int(num_edges), int(num_node_types), int(num_edge_types), compaction)


def scale_spec(spec: GraphSpec, scale: float) -> GraphSpec:
    """The spec with node and edge counts multiplied by scale; explicit schemas scale along."""
    if scale == 1.0:
        return spec
    n = max(spec.num_node_types, int(round(spec.num_nodes * scale)))
    e = max(spec.num_edge_types, int(round(spec.num_edges * scale))) if spec.num_edges else 0
    nts = ets = None
    if spec.node_type_sizes is not None:
        nts = tuple(int(x) for x in _apportion(n, np.asarray(spec.node_type_sizes, float), minimum=1))
    if spec.edge_type_sizes is not None and e:
        ets = tuple(int(x) for x in _apportion(e, np.asarray(spec.edge_type_sizes, float), minimum=1))
    return GraphSpec(spec.name, n, e, spec.num_node_types, spec.num_edge_types, spec.compaction,
                     node_type_sizes=nts, edge_type_sizes=ets, edge_type_endpoints=spec.edge_type_endpoints)


# ---------------------------------------------------------------------- helpers
def _zipf(k: int, exponent: float) -> np.ndarray:
    return np.arange(1, k + 1, dtype=np.float64) ** -exponent


def _apportion(total: int, weights: np.ndarray, minimum: int = 0) -> np.ndarray:
    """Integers proportional to weights that sum to total (largest remainder), each >= minimum."""
    w = np.asarray(weights, dtype=np.float64)
    if total < minimum * w.size:
        raise ValueError(f"cannot split {total} into {w.size} parts of at least {minimum}")
    if w.size == 0:
        return np.zeros(0, dtype=np.int64)
    if w.sum() <= 0:
        w = np.ones_like(w)
    share = total * w / w.sum()
    out = np.floor(share).astype(np.int64)
    rest = int(total - out.sum())
    if rest > 0:
        out[np.argsort(-(share - out), kind="stable")[:rest]] += 1
    # Raise parts below the minimum, one unit at a time from the largest parts.
    deficit = int(np.maximum(minimum - out, 0).sum())
    out = np.maximum(out, minimum)
    while deficit > 0:
        donors = np.argsort(-out, kind="stable")[:deficit]
        donors = donors[out[donors] > minimum]
        out[donors] -= 1
        deficit -= donors.size
    return out


def _draw_endpoints(rng: np.random.Generator, sizes: np.ndarray, r: int) -> np.ndarray:
    """Endpoint types of each edge type: big node types take part in more edge types.

    The first min(r, T) edge types cover every node type once as source and once
    as destination, so no type is left out of the graph by chance.
    """
    t = sizes.size
    p = sizes / sizes.sum()
    ends = np.stack([rng.choice(t, r, p=p), rng.choice(t, r, p=p)], axis=1)
    k = min(r, t)
    ends[:k, 0] = rng.permutation(t)[:k]
    ends[:k, 1] = rng.permutation(t)[:k]
    return ends.astype(np.int32)


def _pairs_per_type(name: str, rho: float, edges: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Unique (source, edge type) pairs per edge type: about rho * edges each, summing to rho * total.

    Each non-empty edge type needs at least 1 pair and at most min(edges, source nodes).
    """
    total = int(edges.sum())
    target = int(round(rho * total))
    lower = (edges > 0).astype(np.int64)
    caps = np.minimum(edges, sources)
    if not lower.sum() <= target <= caps.sum():
        raise ValueError(
            f"{name}: compaction ratio {rho} is out of reach for this shape; it must lie in "
            f"[{lower.sum() / total:.4f}, {caps.sum() / total:.4f}] (one pair per non-empty edge type at least, "
            f"at most one pair per source node and edge type)"
        )
    x = np.clip(_apportion(target, edges.astype(np.float64)), lower, caps)
    diff = target - int(x.sum())
    if diff > 0:
        x += _apportion(diff, (caps - x).astype(np.float64))
    elif diff < 0:
        x -= _apportion(-diff, (x - lower).astype(np.float64))
    return x


def _powerlaw_ranks(rng: np.random.Generator, n, s: float, size=None) -> np.ndarray:
    """Ranks in [0, n) drawn with weight ~ (rank + 1)^-s (inverse CDF of the continuous law).

    n may be an array (one range per draw); size defaults to n's shape.
    """
    n = np.asarray(n, dtype=np.float64)
    u = rng.random(n.shape if size is None else size)
    if s < 1e-9:
        ranks = np.floor(u * n)
    else:
        if abs(s - 1.0) < 1e-9:
            x = np.exp(u * np.log1p(n))
        else:
            a = 1.0 - s
            x = (1.0 + u * ((n + 1.0) ** a - 1.0)) ** (1.0 / a)
        ranks = np.floor(x) - 1.0
    return np.clip(ranks, 0, n - 1).astype(np.int64)


def _distinct_powerlaw(rng: np.random.Generator, n: int, k: int, s: float) -> np.ndarray:
    """k distinct sorted ranks in [0, n), favouring popular (low) ranks."""
    if k >= n:
        return np.arange(n)
    if 2 * k > n:  # most ranks are taken anyway: skew cannot show
        return np.sort(rng.choice(n, k, replace=False))
    chosen = np.unique(_powerlaw_ranks(rng, n, s, k))
    for _ in range(2):
        if chosen.size >= k:
            break
        chosen = np.union1d(chosen, _powerlaw_ranks(rng, n, s, 2 * (k - chosen.size)))
    while chosen.size < k:  # uniform top-up: each draw hits a new rank with probability >= 1/2
        chosen = np.union1d(chosen, rng.integers(0, n, 2 * (k - chosen.size)))
    if chosen.size > k:
        chosen = np.sort(rng.choice(chosen, k, replace=False))
    return chosen


# -------------------------------------------------------------------------- CLI
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m hector.datasets.synthetic",
        description="Generate a synthetic heterogeneous graph with a benchmark dataset's shape.",
    )
    ap.add_argument("name", help=f"one of {', '.join(DATASETS)}, or 'custom' (with --nodes/--edges/...)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply node and edge counts (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", action="store_true", help="print the full stats report")
    ap.add_argument("--json", action="store_true", help="print the stats as JSON")
    ap.add_argument("--out", help="write the graph to this .npz file")
    ap.add_argument("--compaction", type=float, help="target unique (src, etype) pairs / edges")
    ap.add_argument("--degree-exponent", type=float, default=DEFAULT_DEGREE_EXPONENT)
    ap.add_argument("--relation-skew", type=float, default=1.0)
    ap.add_argument("--node-type-skew", type=float, default=1.0)
    ap.add_argument("--empty-edge-types", type=int, default=0)
    ap.add_argument("--isolated-fraction", type=float, default=0.0)
    for flag in ("nodes", "edges", "node-types", "edge-types"):
        ap.add_argument(f"--{flag}", type=int, help="for 'custom'")
    args = ap.parse_args(argv)

    try:
        if args.name == "custom":
            missing = [f for f in ("nodes", "edges", "node_types", "edge_types") if getattr(args, f) is None]
            if missing:
                ap.error("custom needs " + ", ".join("--" + m.replace("_", "-") for m in missing))
            spec = custom_spec(args.nodes, args.edges, args.node_types, args.edge_types,
                               compaction=args.compaction if args.compaction is not None else 0.5)
        else:
            spec = get_spec(args.name)
        t0 = time.perf_counter()
        g = generate(spec, scale=args.scale, seed=args.seed, compaction=args.compaction,
                     degree_exponent=args.degree_exponent, relation_skew=args.relation_skew,
                     node_type_skew=args.node_type_skew, empty_edge_types=args.empty_edge_types,
                     isolated_fraction=args.isolated_fraction)
        took = time.perf_counter() - t0
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    if args.json or args.stats:
        st = g.stats()
        print(json.dumps(st, indent=1) if args.json else format_stats(st))
    else:
        print(f"{g.name}: {g.num_nodes} nodes, {g.num_edges} edges, {g.num_node_types} node types, "
              f"{g.num_edge_types} edge types")
    print(f"generated in {took:.2f} s (seed {args.seed}, scale {args.scale})", file=sys.stderr)
    if args.out:
        g.save(args.out)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A heterogeneous graph as flat numpy arrays, with checks, statistics and .npz I/O.

Edge e goes from src[e] to dst[e] and has type etype[e]. Every edge type r
connects one fixed pair of node types, edge_type_endpoints[r] = (source type,
destination type). This is the layout the references, the benchmarks and the
compiler's preprocessing all read.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict

import numpy as np

# Bumped when the .npz layout changes, so an old file is refused instead of misread.
NPZ_FORMAT_VERSION = 1


@dataclasses.dataclass
class HeteroGraph:
    num_nodes: int
    node_type: np.ndarray  # int32 [N]
    src: np.ndarray  # int32 [E]
    dst: np.ndarray  # int32 [E]
    etype: np.ndarray  # int32 [E]
    num_node_types: int
    num_edge_types: int
    edge_type_endpoints: np.ndarray  # int32 [R, 2]: (source node type, destination node type)
    name: str = "graph"

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])

    # ------------------------------------------------------------------ checks
    def validate(self) -> "HeteroGraph":
        """Raise ValueError naming the first broken invariant; return self when all hold."""
        n, t, r = self.num_nodes, self.num_node_types, self.num_edge_types
        for what, value in (("num_nodes", n), ("num_node_types", t), ("num_edge_types", r)):
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
        if n > 0 and t < 1:
            raise ValueError(f"a graph with {n} nodes needs at least one node type")

        expected = {
            "node_type": (self.node_type, (n,)),
            "src": (self.src, None),
            "dst": (self.dst, None),
            "etype": (self.etype, None),
            "edge_type_endpoints": (self.edge_type_endpoints, (r, 2)),
        }
        for what, (arr, shape) in expected.items():
            if not isinstance(arr, np.ndarray):
                raise ValueError(f"{what} must be a numpy array, got {type(arr).__name__}")
            if arr.dtype != np.int32:
                raise ValueError(f"{what} must have dtype int32, got {arr.dtype}")
            if shape is not None and arr.shape != shape:
                raise ValueError(f"{what} must have shape {shape}, got {arr.shape}")
        e = self.src.shape
        if len(e) != 1 or self.dst.shape != e or self.etype.shape != e:
            raise ValueError(
                f"src, dst and etype must be 1-D arrays of one length, got shapes "
                f"{self.src.shape}, {self.dst.shape}, {self.etype.shape}"
            )

        _check_range("node_type", self.node_type, t)
        _check_range("src", self.src, n)
        _check_range("dst", self.dst, n)
        _check_range("etype", self.etype, r)
        _check_range("edge_type_endpoints", self.edge_type_endpoints, t)

        # Each edge's endpoint types must be the ones its edge type declares.
        if self.num_edges:
            ends = self.edge_type_endpoints[self.etype]
            bad_src = np.flatnonzero(self.node_type[self.src] != ends[:, 0])
            if bad_src.size:
                i = int(bad_src[0])
                raise ValueError(
                    f"edge {i} (type {int(self.etype[i])}) starts at node {int(self.src[i])} of type "
                    f"{int(self.node_type[self.src[i]])}, but its edge type's source type is "
                    f"{int(ends[i, 0])} ({bad_src.size} such edges)"
                )
            bad_dst = np.flatnonzero(self.node_type[self.dst] != ends[:, 1])
            if bad_dst.size:
                i = int(bad_dst[0])
                raise ValueError(
                    f"edge {i} (type {int(self.etype[i])}) ends at node {int(self.dst[i])} of type "
                    f"{int(self.node_type[self.dst[i]])}, but its edge type's destination type is "
                    f"{int(ends[i, 1])} ({bad_dst.size} such edges)"
                )
        return self

    def metadata(self):
        """PyG-style metadata, (node type names, [(source, relation,
        destination)]), with node types named t<i> and edge types r<j>: what
        HGTConv and HeteroData-style dicts of this graph take."""
        names = [f"t{t}" for t in range(self.num_node_types)]
        return names, [(names[s], f"r{r}", names[d])
                       for r, (s, d) in enumerate(np.asarray(self.edge_type_endpoints).tolist())]

    # -------------------------------------------------------------- statistics
    def stats(self) -> Dict[str, Any]:
        """Summary numbers: sizes, entity compaction ratio and degree skew."""
        n, e, r = self.num_nodes, self.num_edges, self.num_edge_types
        src = self.src.astype(np.int64)
        in_deg = np.bincount(self.dst, minlength=n)
        out_deg = np.bincount(self.src, minlength=n)
        edges_per_type = np.bincount(self.etype, minlength=r)
        mean_in = e / n if n else 0.0
        out: Dict[str, Any] = {
            "name": self.name,
            "nodes": n,
            "edges": e,
            "node_types": self.num_node_types,
            "edge_types": r,
            "compaction_ratio": compaction_ratio(self),
            "max_in_degree": int(in_deg.max()) if n else 0,
            "mean_in_degree": mean_in,
            "in_degree_skew": (float(in_deg.max()) / mean_in) if e else 0.0,
            "in_degree_gini": gini(in_deg),
            "max_out_degree": int(out_deg.max()) if n else 0,
            "isolated_nodes": int(np.count_nonzero((in_deg == 0) & (out_deg == 0))),
            "nodes_without_in_edges": int(np.count_nonzero(in_deg == 0)),
            "empty_edge_types": int(np.count_nonzero(edges_per_type == 0)),
            "self_loops": int(np.count_nonzero(self.src == self.dst)),
            "duplicate_edges": None,
            "nodes_per_type": np.bincount(self.node_type, minlength=self.num_node_types).tolist(),
        }
        # (src, etype, dst) packed in one int64 key when it fits; else left as None.
        if e and n * n * max(r, 1) < 2**63:
            key = (src * r + self.etype) * n + self.dst
            out["duplicate_edges"] = int(e - np.unique(key).size)
        return out

    # ---------------------------------------------------------------------- I/O
    def save(self, path: str) -> None:
        """Write the arrays to an uncompressed .npz (compression is slow on 20 M edges)."""
        np.savez(
            path,
            format_version=np.int64(NPZ_FORMAT_VERSION),
            name=np.array(self.name),
            num_nodes=np.int64(self.num_nodes),
            num_node_types=np.int64(self.num_node_types),
            num_edge_types=np.int64(self.num_edge_types),
            node_type=self.node_type,
            src=self.src,
            dst=self.dst,
            etype=self.etype,
            edge_type_endpoints=self.edge_type_endpoints,
        )

    @classmethod
    def load(cls, path: str) -> "HeteroGraph":
        with np.load(path, allow_pickle=False) as f:
            missing = {"format_version", "num_nodes", "node_type", "src", "dst", "etype",
                       "num_node_types", "num_edge_types", "edge_type_endpoints"} - set(f.files)
            if missing:
                raise ValueError(f"{path} is not a HeteroGraph file: missing {sorted(missing)}")
            version = int(f["format_version"])
            if version != NPZ_FORMAT_VERSION:
                raise ValueError(
                    f"{path} has HeteroGraph format version {version}, this code reads {NPZ_FORMAT_VERSION}"
                )
            g = cls(
                num_nodes=int(f["num_nodes"]),
                node_type=f["node_type"],
                src=f["src"],
                dst=f["dst"],
                etype=f["etype"],
                num_node_types=int(f["num_node_types"]),
                num_edge_types=int(f["num_edge_types"]),
                edge_type_endpoints=f["edge_type_endpoints"],
                name=str(f["name"]) if "name" in f.files else "graph",
            )
        return g.validate()


def _check_range(what: str, arr: np.ndarray, upper: int) -> None:
    if arr.size == 0:
        return
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= upper:
        raise ValueError(f"{what} values must lie in [0, {upper}), found range [{lo}, {hi}]")


def compaction_ratio(g: HeteroGraph) -> float:
    """Entity compaction ratio: unique (source node, edge type) pairs / edges (1.0 when no edges)."""
    if g.num_edges == 0:
        return 1.0
    key = g.src.astype(np.int64) * max(g.num_edge_types, 1) + g.etype
    return float(np.unique(key).size) / g.num_edges


def gini(values: np.ndarray) -> float:
    """Gini coefficient of non-negative counts: 0 when all equal, near 1 when one holds everything."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n, total = x.size, x.sum()
    if n == 0 or total == 0:
        return 0.0
    ranks = np.arange(1, n + 1, dtype=np.float64)
    return float(2.0 * np.dot(ranks, x) / (n * total) - (n + 1.0) / n)


def format_stats(stats: Dict[str, Any]) -> str:
    """The stats dict as aligned 'key: value' lines, for the CLI and the docs."""
    lines = []
    for key, value in stats.items():
        if isinstance(value, float):
            value = f"{value:.4f}"
        elif key == "nodes_per_type" and len(value) > 12:
            value = f"{value[:12]} ... ({len(value)} types)"
        lines.append(f"{key:>24}: {value}")
    return "\n".join(lines)

"""The bundled real heterogeneous graph: Debian's package index (numpy only).

    from hector.datasets.debian import load_debian_graph
    g = load_debian_graph()          # examples/data/debian-packages.npz
    print(g.majority_baseline())
    print(format_stats(g.stats()))

Node types: binary packages, source packages, maintainers, debtags. 26 edge
types: 13 relations (Depends, ..., tagged) and their reverses; edge type
r + 13 is the reverse of r. Labels are the binary packages' sections; every
other node has label -1. Features are a signed hashed bag of words, rebuilt
here from the token counts stored in the snapshot (so the width is a
parameter). How the snapshot is built: docs/debian-graph.md and
scripts/build-debian-graph.py.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

__all__ = [
    "DebianGraph",
    "DebianGraphError",
    "DEFAULT_PATH",
    "load_debian_graph",
    "hash_token",
    "hashed_features",
    "majority_baseline",
    "stats",
    "format_stats",
]

DEFAULT_PATH = Path(__file__).resolve().parents[3] / "examples" / "data" / "debian-packages.npz"
BUILD_COMMAND = "python3 scripts/build-debian-graph.py --fetch --out examples/data/debian-packages.npz"
FORMAT_VERSION = 1
_REQUIRED = (
    "meta_json", "node_type_offsets", "node_names", "edge_type_ptr", "edge_src", "edge_dst",
    "labels", "vocab", "feat_indptr", "feat_token_delta", "feat_count",
    "train_idx", "val_idx", "test_idx",
)  # fmt: skip


class DebianGraphError(ValueError):
    """The snapshot file is missing pieces or its arrays contradict each other."""


@dataclasses.dataclass
class DebianGraph:
    """A heterogeneous graph; the field names match the synthetic benchmark graphs'."""

    num_nodes: int
    node_type: np.ndarray  # int32 [N]; nodes come in contiguous blocks by type
    src: np.ndarray  # int32 [E]
    dst: np.ndarray  # int32 [E]
    etype: np.ndarray  # int32 [E], sorted; inside a type, edges are sorted by (src, dst)
    num_node_types: int
    num_edge_types: int
    edge_type_endpoints: np.ndarray  # int32 [R, 2]: (source node type, destination node type)
    features: np.ndarray  # float32 [N, F], rows L2-normalised (all-zero when a node has no token)
    labels: np.ndarray  # int64 [N], -1 = unlabelled
    train_idx: np.ndarray  # int64, sorted
    val_idx: np.ndarray
    test_idx: np.ndarray
    node_type_names: list[str]
    edge_type_names: list[str]
    label_names: list[str]
    node_names: list[str]
    meta: dict
    name: str = "debian-packages"

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    def reverse_edge_type(self, r: int) -> int:
        half = self.num_edge_types // 2
        return (r + half) % self.num_edge_types

    def majority_baseline(self, split: str = "test") -> float:
        return majority_baseline(self, split)

    def stats(self) -> dict:
        return stats(self)


# ---------------------------------------------------------------------------
# Feature hashing


def hash_token(token: str, dim: int) -> tuple[int, int]:
    """(bucket, sign) of a token: a 64-bit BLAKE2b hash, stable across runs and machines
    (Python's own hash() is salted per process). The bucket uses the low bits, the sign the top bit."""
    h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return h % dim, (1 if h >> 63 == 0 else -1)


def hashed_features(
    indptr: np.ndarray, token_ids: np.ndarray, counts: np.ndarray, vocab: list[str], dim: int,
    chunk_rows: int = 8192,
) -> np.ndarray:  # fmt: skip
    """Dense float32 [rows, dim]: sum of sign(t) * count(t) into bucket(t) per row, L2-normalised.

    Rows are built in chunks so the float64 temporaries of np.bincount stay small."""
    if dim < 1:
        raise ValueError(f"feature dim must be positive, got {dim}")
    hashed = [hash_token(t, dim) for t in vocab]
    bucket = np.array([b for b, _ in hashed], dtype=np.int64)
    sign = np.array([s for _, s in hashed], dtype=np.float64)
    n = len(indptr) - 1
    out = np.zeros((n, dim), dtype=np.float32)
    for r0 in range(0, n, chunk_rows):
        r1 = min(n, r0 + chunk_rows)
        lo, hi = indptr[r0], indptr[r1]
        rows = np.repeat(np.arange(r1 - r0), np.diff(indptr[r0 : r1 + 1]))
        tok = token_ids[lo:hi]
        flat = rows * dim + bucket[tok]
        block = np.bincount(flat, weights=sign[tok] * counts[lo:hi], minlength=(r1 - r0) * dim)
        block = block.reshape(r1 - r0, dim)
        norm = np.linalg.norm(block, axis=1, keepdims=True)
        out[r0:r1] = block / np.where(norm > 0, norm, 1.0)
    return out


# ---------------------------------------------------------------------------
# Loading


def _split_names(buf: np.ndarray) -> list[str]:
    text = buf.tobytes().decode("utf-8")
    return text.split("\n") if text else []


def _check(cond: bool, path, what: str) -> None:
    if not cond:
        raise DebianGraphError(f"{path}: corrupt Debian graph snapshot: {what}")


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise FileNotFoundError(f"no Debian graph snapshot at {path}; build it with: {BUILD_COMMAND}")
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in _REQUIRED if k not in z.files]
            if missing:
                raise DebianGraphError(f"{path}: not a Debian graph snapshot, missing arrays {missing}")
            return {k: z[k] for k in _REQUIRED}
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError) as exc:
        if isinstance(exc, DebianGraphError):
            raise
        raise DebianGraphError(f"{path}: cannot read Debian graph snapshot ({exc})") from exc


def _undo_row_gaps(gaps: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """Token ids from their per-row gap encoding (each row restarts from its first id)."""
    total = np.cumsum(gaps.astype(np.int64))
    row_start = np.repeat(indptr[:-1], np.diff(indptr))
    base = np.where(row_start > 0, total[np.maximum(row_start - 1, 0)], 0) if total.size else total
    return total - base


def load_debian_graph(path=None, feature_dim: int = 256) -> DebianGraph:
    """Load the snapshot, add the reverse edge types, rebuild the hashed features."""
    path = Path(path) if path is not None else DEFAULT_PATH
    a = _read_arrays(path)
    try:
        meta = json.loads(a["meta_json"].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DebianGraphError(f"{path}: corrupt metadata ({exc})") from exc
    _check(meta.get("format_version") == FORMAT_VERSION, path, f"format version {meta.get('format_version')}")

    node_type_names = meta["node_type_names"]
    fwd_names = meta["forward_edge_type_names"]
    fwd_ends = np.array(meta["forward_edge_type_endpoints"], dtype=np.int32).reshape(-1, 2)
    label_names = meta["label_names"]
    T, R = len(node_type_names), len(fwd_names)

    offsets = a["node_type_offsets"].astype(np.int64)
    _check(offsets.shape == (T + 1,) and offsets[0] == 0 and np.all(np.diff(offsets) >= 0), path, "node_type_offsets")
    n = int(offsets[-1])
    node_names = _split_names(a["node_names"])
    _check(len(node_names) == n, path, f"{len(node_names)} node names for {n} nodes")
    node_type = np.repeat(np.arange(T, dtype=np.int32), np.diff(offsets))

    # Forward edges, checked against their declared endpoint types, then the reverses.
    ptr = a["edge_type_ptr"].astype(np.int64)
    fsrc, fdst = a["edge_src"].astype(np.int64), a["edge_dst"].astype(np.int64)
    _check(ptr.shape == (R + 1,) and ptr[0] == 0 and np.all(np.diff(ptr) >= 0), path, "edge_type_ptr")
    _check(fsrc.shape == fdst.shape == (ptr[-1],), path, "edge array lengths")
    _check(fsrc.size == 0 or (min(fsrc.min(), fdst.min()) >= 0 and max(fsrc.max(), fdst.max()) < n), path, "edge endpoint out of range")
    _check(fwd_ends.shape == (R, 2) and np.all((fwd_ends >= 0) & (fwd_ends < T)), path, "edge type endpoints")
    fcounts = np.diff(ptr)
    fetype = np.repeat(np.arange(R), fcounts)
    _check(np.array_equal(node_type[fsrc], fwd_ends[fetype, 0]) and np.array_equal(node_type[fdst], fwd_ends[fetype, 1]), path, "edge endpoint of the wrong node type")
    rsrc, rdst = np.empty_like(fdst), np.empty_like(fsrc)
    for r in range(R):
        s, d = fsrc[ptr[r] : ptr[r + 1]], fdst[ptr[r] : ptr[r + 1]]
        order = np.lexsort((s, d))  # reverse edges sorted by (new src, new dst)
        rsrc[ptr[r] : ptr[r + 1]], rdst[ptr[r] : ptr[r + 1]] = d[order], s[order]
    src = np.concatenate([fsrc, rsrc]).astype(np.int32)
    dst = np.concatenate([fdst, rdst]).astype(np.int32)
    etype = np.concatenate([fetype, fetype + R]).astype(np.int32)

    labels = a["labels"].astype(np.int64)
    _check(labels.shape == (n,) and labels.min(initial=-1) >= -1 and labels.max(initial=-1) < len(label_names), path, "labels")
    _check(np.all(labels[node_type != 0] == -1), path, "labels on nodes that are not binary packages")

    vocab = _split_names(a["vocab"])
    indptr = a["feat_indptr"].astype(np.int64)
    _check(indptr.shape == (n + 1,) and indptr[0] == 0 and np.all(np.diff(indptr) >= 0), path, "feat_indptr")
    _check(a["feat_token_delta"].shape == (indptr[-1],) == a["feat_count"].shape, path, "feature array lengths")
    tok = _undo_row_gaps(a["feat_token_delta"], indptr)
    _check(tok.size == 0 or (tok.min() >= 0 and tok.max() < len(vocab)), path, "token id out of range")
    features = hashed_features(indptr, tok, a["feat_count"].astype(np.float64), vocab, feature_dim)

    splits = [a[k].astype(np.int64) for k in ("train_idx", "val_idx", "test_idx")]
    for k, idx in zip(("train_idx", "val_idx", "test_idx"), splits):
        _check(idx.ndim == 1 and (idx.size == 0 or (idx.min() >= 0 and idx.max() < n)), path, k)
        _check(np.all(labels[idx] >= 0), path, f"{k} holds unlabelled nodes")

    return DebianGraph(
        num_nodes=n,
        node_type=node_type,
        src=src,
        dst=dst,
        etype=etype,
        num_node_types=T,
        num_edge_types=2 * R,
        edge_type_endpoints=np.concatenate([fwd_ends, fwd_ends[:, ::-1]]).astype(np.int32),
        features=features,
        labels=labels,
        train_idx=splits[0],
        val_idx=splits[1],
        test_idx=splits[2],
        node_type_names=list(node_type_names),
        edge_type_names=list(fwd_names) + [f"rev-{x}" for x in fwd_names],
        label_names=list(label_names),
        node_names=node_names,
        meta=meta,
    )


# ---------------------------------------------------------------------------
# Reports


def majority_baseline(graph: DebianGraph, split: str = "test") -> float:
    """Accuracy on `split` of always predicting the most common training label."""
    idx = {"train": graph.train_idx, "val": graph.val_idx, "test": graph.test_idx}.get(split)
    if idx is None:
        raise ValueError(f"split must be train, val or test, not {split!r}")
    train_labels = graph.labels[graph.train_idx]
    if train_labels.size == 0 or idx.size == 0:
        raise ValueError("majority baseline needs non-empty train and evaluation splits")
    majority = np.bincount(train_labels).argmax()  # ties go to the smallest label id
    return float(np.mean(graph.labels[idx] == majority))


def stats(graph: DebianGraph) -> dict:
    """Counts per node type, edge type and label; feature sparsity; splits; the baseline."""
    nodes = np.bincount(graph.node_type, minlength=graph.num_node_types)
    edges = np.bincount(graph.etype, minlength=graph.num_edge_types)
    labelled = graph.labels[graph.labels >= 0]
    per_label = np.bincount(labelled, minlength=graph.num_classes)
    zero_rows = np.flatnonzero(~graph.features.any(axis=1))
    # Entity compaction ratio: unique (source, edge type) pairs per edge (what RGAT's z_e needs).
    pairs = np.unique(graph.src.astype(np.int64) * graph.num_edge_types + graph.etype).size
    in_degree = np.bincount(graph.dst, minlength=graph.num_nodes)
    out_degree = np.bincount(graph.src, minlength=graph.num_nodes)
    return {
        "release": graph.meta.get("release", {}),
        "num_nodes": graph.num_nodes,
        "num_edges": int(graph.src.size),
        "compaction_ratio": pairs / max(graph.src.size, 1),
        "max_in_degree": int(in_degree.max(initial=0)),
        "isolated_nodes": int(np.sum((in_degree == 0) & (out_degree == 0))),
        "nodes": {name: int(c) for name, c in zip(graph.node_type_names, nodes)},
        "edges": {
            name: {"count": int(c), "endpoints": [graph.node_type_names[t] for t in graph.edge_type_endpoints[r]]}
            for r, (name, c) in enumerate(zip(graph.edge_type_names, edges))
        },
        "labels": {name: int(c) for name, c in zip(graph.label_names, per_label)},
        "feature_dim": int(graph.features.shape[1]),
        "nodes_without_features": {
            name: int(np.sum(graph.node_type[zero_rows] == t)) for t, name in enumerate(graph.node_type_names)
        },
        "splits": {"train": int(graph.train_idx.size), "val": int(graph.val_idx.size), "test": int(graph.test_idx.size)},
        "majority_baseline_test": majority_baseline(graph, "test"),
    }


def format_stats(s: dict) -> str:
    """A readable report of stats()."""
    rel = s["release"]
    lines = [
        f"Debian {rel.get('Version', '?')} ({rel.get('Codename', '?')}), index of {rel.get('Date', '?')}",
        f"{s['num_nodes']} nodes, {s['num_edges']} edges, feature dim {s['feature_dim']}",
        f"entity compaction ratio {s['compaction_ratio']:.3f}, max in-degree {s['max_in_degree']}, "
        f"isolated nodes {s['isolated_nodes']}",
        "nodes:",
    ]
    lines += [f"  {k:16s} {v:8d}" for k, v in s["nodes"].items()]
    lines.append("edges:")
    lines += [f"  {k:22s} {v['count']:8d}  {v['endpoints'][0]} -> {v['endpoints'][1]}" for k, v in s["edges"].items()]
    lines.append("nodes with an all-zero feature row: " + ", ".join(f"{k} {v}" for k, v in s["nodes_without_features"].items()))
    lines.append("labels (binary package sections):")
    lines += [f"  {k:16s} {v:8d}" for k, v in sorted(s["labels"].items(), key=lambda kv: (-kv[1], kv[0]))]
    sp = s["splits"]
    lines.append(f"splits: train {sp['train']}, val {sp['val']}, test {sp['test']}")
    lines.append(f"majority baseline (test accuracy): {s['majority_baseline_test']:.4f}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(format_stats(load_debian_graph(sys.argv[1] if len(sys.argv) > 1 else None).stats()))

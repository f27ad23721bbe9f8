"""Node partitioning for full-graph training: node -> rank.

Two methods, both deterministic (the same inputs give the same parts on
every rank, so each rank may partition the graph itself):

- "metis": METIS_PartGraphKway (METIS 5, Debian's `libmetis-dev`) on the
  symmetrized graph (edge directions and types dropped, self-loops and
  duplicates removed), each node weighted 1 + its in-degree, because a rank
  stores its nodes and all their incoming edges. Fixed seed. Minimizes the
  edges cut, hence the halo.
- "ranges": the documented fallback where libmetis is absent (the GPU
  machines have none): contiguous ranges of node ids balanced by the same
  weight, 1 + in-degree. No edge-cut optimization, but the parts are
  balanced to within one node's weight and partitioning is O(N + E).

"auto" (default) is "metis" when libmetis loads, else "ranges". Where libmetis
is found: $HECTOR_METIS_LIB, else ctypes' search for "metis"
(libmetis.so.5 on Debian).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import NamedTuple, Optional

import numpy as np

__all__ = ["partition_nodes", "metis_available", "PartitionStats", "partition_stats",
           "METHODS"]

METHODS = ("auto", "metis", "ranges")

_METIS_NOPTIONS = 40   # metis.h
_METIS_OPTION_SEED = 8  # index of METIS_OPTION_SEED in metis.h's moptions_et
_METIS_OPTION_NUMBERING = 17
_METIS_OK = 1
_METIS_ERRORS = {-2: "METIS_ERROR_INPUT", -3: "METIS_ERROR_MEMORY", -4: "METIS_ERROR"}
_IDX_MAX = 2**31 - 1   # Debian's METIS has 32-bit idx_t (IDXTYPEWIDTH 32)

_metis = None
_metis_tried = False


def _load_metis():
    """The METIS library (ctypes.CDLL), or None where it is not installed."""
    global _metis, _metis_tried
    if _metis_tried:
        return _metis
    _metis_tried = True
    names = [os.environ["HECTOR_METIS_LIB"]] if os.environ.get("HECTOR_METIS_LIB") else \
        [n for n in (ctypes.util.find_library("metis"), "libmetis.so.5", "libmetis.so") if n]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            fn = lib.METIS_PartGraphKway
        except (OSError, AttributeError):
            continue
        idx_p = ctypes.POINTER(ctypes.c_int32)
        fn.argtypes = [idx_p, idx_p, idx_p, idx_p, idx_p, idx_p, idx_p, idx_p,
                       ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float), idx_p,
                       idx_p, idx_p]
        fn.restype = ctypes.c_int
        lib.METIS_SetDefaultOptions.argtypes = [idx_p]
        lib.METIS_SetDefaultOptions.restype = ctypes.c_int
        _metis = lib
        break
    return _metis


def metis_available() -> bool:
    """Whether libmetis loads (method "metis" works)."""
    return _load_metis() is not None


def _edges_numpy(edge_index, num_nodes: int):
    """(src, dst) int64 numpy arrays of an edge_index [2, E] (tensor or array), checked."""
    if hasattr(edge_index, "detach"):
        edge_index = edge_index.detach().cpu().numpy()
    edge_index = np.asarray(edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {edge_index.shape}")
    if edge_index.dtype.kind not in "iu":
        raise TypeError(f"edge_index must hold integer node ids, got dtype {edge_index.dtype}")
    src, dst = (edge_index[i].astype(np.int64) for i in (0, 1))
    for ids, which in ((src, "source"), (dst, "destination")):
        if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
            bad = ids[(ids < 0) | (ids >= num_nodes)][0]
            raise ValueError(f"edge_index holds {which} node {int(bad)}, but there are "
                             f"{num_nodes} nodes")
    return src, dst


def _node_weights(dst: np.ndarray, num_nodes: int) -> np.ndarray:
    """1 + in-degree: what a rank stores per owned node (the node, its in-edges)."""
    return 1 + np.bincount(dst, minlength=num_nodes)


def _ranges(weights: np.ndarray, num_parts: int) -> np.ndarray:
    """Contiguous ranges balanced by weight: node v goes to the part whose
    share of the total weight holds the midpoint of v's weight interval."""
    total = int(weights.sum())
    if total == 0:
        return np.zeros(weights.size, np.int64)
    before = np.cumsum(weights) - weights  # exclusive prefix sums
    # 2*before + w < 2*total, so the part is at most num_parts - 1.
    return ((2 * before + weights) * num_parts // (2 * total)).astype(np.int64)


def _metis_parts(src, dst, weights, num_nodes: int, num_parts: int, seed: int) -> np.ndarray:
    lib = _load_metis()
    # Symmetrized simple graph: both directions, no self-loops, no duplicates.
    keep = src != dst
    a = np.concatenate([src[keep], dst[keep]])
    b = np.concatenate([dst[keep], src[keep]])
    if a.size > _IDX_MAX or num_nodes > _IDX_MAX or int(weights.sum()) > _IDX_MAX:
        raise ValueError(f"the graph ({num_nodes} nodes, {a.size} symmetrized edges) is too "
                         "large for METIS with 32-bit indices; use method='ranges'")
    pairs = np.unique(a * num_nodes + b)
    rows, cols = pairs // num_nodes, pairs % num_nodes
    xadj = np.zeros(num_nodes + 1, np.int32)
    np.cumsum(np.bincount(rows, minlength=num_nodes), out=xadj[1:])
    adjncy = np.ascontiguousarray(cols, dtype=np.int32)
    vwgt = np.ascontiguousarray(weights, dtype=np.int32)
    options = np.zeros(_METIS_NOPTIONS, np.int32)
    lib.METIS_SetDefaultOptions(options.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
    options[_METIS_OPTION_SEED] = seed
    options[_METIS_OPTION_NUMBERING] = 0
    part = np.zeros(num_nodes, np.int32)
    nvtxs, ncon, nparts, objval = (ctypes.c_int32(v) for v in (num_nodes, 1, num_parts, 0))
    idx = (lambda arr: arr.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))  # noqa: E731
    status = lib.METIS_PartGraphKway(
        ctypes.byref(nvtxs), ctypes.byref(ncon), idx(xadj), idx(adjncy), idx(vwgt), None, None,
        ctypes.byref(nparts), None, None, idx(options), ctypes.byref(objval), idx(part))
    if status != _METIS_OK:
        raise RuntimeError(f"METIS_PartGraphKway failed with {_METIS_ERRORS.get(status, status)} "
                           f"({num_nodes} nodes, {adjncy.size} symmetrized edges, "
                           f"{num_parts} parts)")
    return part.astype(np.int64)


def partition_nodes(num_nodes: int, edge_index, num_parts: int, *, method: str = "auto",
                    seed: int = 0) -> np.ndarray:
    """The rank that owns each node: int64 numpy array [num_nodes] with values
    in [0, num_parts). `edge_index` [2, E] (a tensor or an array) holds the
    edges s -> t. A part may come out empty (METIS may leave one empty; with
    more parts than nodes some must be). With one part, or a graph without
    edges (nothing to cut), METIS is not called and "ranges" is used."""
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) \
            or num_nodes < 0:
        raise ValueError(f"num_nodes must be a non-negative int, got {num_nodes!r}")
    if isinstance(num_parts, bool) or not isinstance(num_parts, (int, np.integer)) \
            or num_parts < 1:
        raise ValueError(f"num_parts must be a positive int, got {num_parts!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, "
                         f"got {method!r}")
    if method == "metis" and not metis_available():
        raise RuntimeError("method='metis' needs libmetis (Debian: apt install libmetis-dev, "
                           "or set HECTOR_METIS_LIB); method='ranges' needs nothing")
    num_nodes, num_parts = int(num_nodes), int(num_parts)
    src, dst = _edges_numpy(edge_index, num_nodes)
    weights = _node_weights(dst, num_nodes)
    use_metis = method == "metis" or (method == "auto" and metis_available())
    if use_metis and num_parts > 1 and num_nodes > num_parts and np.any(src != dst):
        return _metis_parts(src, dst, weights, num_nodes, num_parts, seed)
    return _ranges(weights, num_parts)


class PartitionStats(NamedTuple):
    """Per part (rank): owned nodes, owned in-edges, halo nodes (sources of
    those edges owned elsewhere); and the edges whose endpoints lie in
    different parts."""
    nodes: np.ndarray
    edges: np.ndarray
    halo: np.ndarray
    cut_edges: int

    def imbalance(self, what: str = "edges") -> float:
        """max / mean of `what` ("nodes", "edges", "halo") over the parts; 1 is perfect."""
        values = getattr(self, what)
        mean = values.mean() if values.size else 0.0
        return float(values.max() / mean) if mean else 1.0


def partition_stats(parts, edge_index, num_parts: Optional[int] = None) -> PartitionStats:
    """PartitionStats of `parts` (node -> rank) on the graph `edge_index`."""
    parts = np.asarray(parts, dtype=np.int64)
    num_parts = int(parts.max()) + 1 if num_parts is None and parts.size else (num_parts or 1)
    src, dst = _edges_numpy(edge_index, parts.size)
    owner_src, owner_dst = parts[src], parts[dst]
    cross = owner_src != owner_dst
    halo_pairs = np.unique(owner_dst[cross] * max(parts.size, 1) + src[cross])
    return PartitionStats(
        nodes=np.bincount(parts, minlength=num_parts),
        edges=np.bincount(owner_dst, minlength=num_parts),
        halo=np.bincount(halo_pairs // max(parts.size, 1), minlength=num_parts),
        cut_edges=int(cross.sum()))

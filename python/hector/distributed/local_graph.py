"""One rank's part of a partitioned graph, and its halo plan.

Rank r owns the nodes v with parts[v] == r and every edge s -> t whose
destination t it owns, so that aggregation over incoming edges and edge
softmax see all of a node's edges on one rank. The sources of those edges
that other ranks own are r's *halo*: their feature rows come from their
owners before every layer (hector.distributed.halo).

Local node ids: the owned nodes first, in increasing global id (local id i is
the i-th owned node), then the halo nodes grouped by owner rank and, within
an owner, in increasing global id. That order is what the halo exchange
receives, so the features of the local graph are cat([owned rows, received
rows]) with no permutation. Local edges keep the global edge order.

Everything here is plain numpy, computed by each rank from the full graph
structure (which every rank holds; only features are partitioned), with no
communication: rank r's send list to rank q is computed by r exactly as q
computes its receive list from r (the halo nodes q needs from r, in
increasing global id).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
import torch

from .partition import _edges_numpy

__all__ = ["LocalGraph", "local_graph"]


@dataclasses.dataclass
class LocalGraph:
    rank: int
    num_parts: int
    owned: np.ndarray        # [num_owned] global ids of the owned nodes, increasing
    halo: np.ndarray         # [num_halo] global ids of the halo nodes (by owner, then id)
    edge_ids: np.ndarray     # [E_local] global ids of the local edges, increasing
    edge_index: torch.Tensor  # [2, E_local] int64 local ids; destinations < num_owned
    edge_type: Optional[torch.Tensor]  # [E_local] int64, or None
    node_type: Optional[torch.Tensor]  # [num_owned + num_halo] int64, or None
    send_index: torch.Tensor  # [num_send] int64 local (owned) rows to send, by destination rank
    send_counts: list        # [num_parts] rows sent to each rank
    recv_counts: list        # [num_parts] halo rows received from each rank

    @property
    def num_owned(self) -> int:
        return int(self.owned.size)

    @property
    def num_halo(self) -> int:
        return int(self.halo.size)

    @property
    def num_nodes(self) -> int:
        """Local nodes: owned + halo."""
        return self.num_owned + self.num_halo

    def owned_rows(self, x: torch.Tensor) -> torch.Tensor:
        """The rows of a global [N, ...] tensor that this rank owns, in local order."""
        return x[torch.from_numpy(self.owned).to(x.device)]

    def to(self, device) -> "LocalGraph":
        """A copy whose tensors live on `device`."""
        move = (lambda t: None if t is None else t.to(device))  # noqa: E731
        return dataclasses.replace(self, edge_index=move(self.edge_index),
                                   edge_type=move(self.edge_type),
                                   node_type=move(self.node_type),
                                   send_index=move(self.send_index))


def _ids_array(what: str, t, size: int) -> np.ndarray:
    if hasattr(t, "detach"):
        t = t.detach().cpu().numpy()
    t = np.asarray(t)
    if t.ndim != 1 or t.size != size:
        raise ValueError(f"{what} must be one-dimensional with {size} entries, got shape "
                         f"{t.shape}")
    if t.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integer ids, got dtype {t.dtype}")
    return t.astype(np.int64)


def local_graph(rank: int, parts, edge_index, *, edge_type=None, node_type=None,
                num_parts: Optional[int] = None) -> LocalGraph:
    """Rank `rank`'s LocalGraph of the graph `edge_index` [2, E] (global node
    ids; with `edge_type` [E] and `node_type` [N] when the layer needs them),
    partitioned by `parts` [N] (node -> rank, e.g. partition_nodes)."""
    parts = np.asarray(parts.detach().cpu().numpy() if hasattr(parts, "detach") else parts)
    if parts.ndim != 1 or parts.dtype.kind not in "iu":
        raise ValueError(f"parts must be a one-dimensional integer array (node -> rank), "
                         f"got shape {parts.shape} and dtype {parts.dtype}")
    parts = parts.astype(np.int64)
    n = parts.size
    num_parts = int(parts.max()) + 1 if num_parts is None and n else (num_parts or 1)
    if n and (parts.min() < 0 or parts.max() >= num_parts):
        raise ValueError(f"parts holds rank {int(parts.max() if parts.max() >= num_parts else parts.min())}, "
                         f"but there are {num_parts} ranks")
    if not 0 <= rank < num_parts:
        raise ValueError(f"rank {rank} is not in [0, {num_parts})")
    src, dst = _edges_numpy(edge_index, n)
    etype = None if edge_type is None else _ids_array("edge_type", edge_type, src.size)
    ntype = None if node_type is None else _ids_array("node_type", node_type, n)

    owner_src, owner_dst = parts[src], parts[dst]
    owned = np.flatnonzero(parts == rank)
    edge_ids = np.flatnonzero(owner_dst == rank)
    e_src, e_dst = src[edge_ids], dst[edge_ids]
    # Halo: sources of local edges owned elsewhere, by owner rank then id.
    foreign = np.unique(e_src[owner_src[edge_ids] != rank])
    halo = foreign[np.argsort(parts[foreign], kind="stable")]
    recv_counts = np.bincount(parts[halo], minlength=num_parts)

    local_of = np.full(n, -1, np.int64)
    local_of[owned] = np.arange(owned.size)
    local_of[halo] = owned.size + np.arange(halo.size)
    index = np.stack([local_of[e_src], local_of[e_dst]]) if edge_ids.size else \
        np.zeros((2, 0), np.int64)

    # Sends: every (destination rank q, owned source s) of an edge s -> t
    # with t owned by q != rank; unique pairs sorted by q, then s.
    out = (owner_src == rank) & (owner_dst != rank)
    pairs = np.unique(owner_dst[out] * max(n, 1) + src[out])
    send_counts = np.bincount(pairs // max(n, 1), minlength=num_parts)
    send_index = local_of[pairs % max(n, 1)]

    as_tensor = (lambda a: None if a is None else torch.from_numpy(  # noqa: E731
        np.ascontiguousarray(a, np.int64)))
    return LocalGraph(
        rank=rank, num_parts=num_parts, owned=owned, halo=halo, edge_ids=edge_ids,
        edge_index=as_tensor(index),
        edge_type=None if etype is None else as_tensor(etype[edge_ids]),
        node_type=None if ntype is None else as_tensor(np.concatenate([ntype[owned],
                                                                        ntype[halo]])),
        send_index=as_tensor(send_index),
        send_counts=[int(c) for c in send_counts],
        recv_counts=[int(c) for c in recv_counts])

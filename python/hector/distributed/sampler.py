"""Neighbour-sampled mini-batches for data-parallel training, on the CPU.

PyG's NeighborLoader does this where torch_geometric is installed
(hector.distributed.data_parallel.pyg_loader wraps it with the same seed
split); this module is the dependency-free path:

    split = SeedSplit(train_idx, rank, world_size, seed=0)
    sampler = NeighborSampler(src, dst, num_nodes, fanouts=[10, 10], edge_type=etype)
    for step, seeds in enumerate(split.batches(epoch, batch_size=512)):
        sub = sampler.sample(seeds, seed=split.sample_seed(epoch, step))
        out = model(x[sub.node_ids], sub.edge_index, sub.edge_type)[:sub.num_seeds]

What it guarantees (test_distributed_data_parallel.py checks each):
- SeedSplit: every epoch a permutation of the seeds drawn from (seed,
  epoch) only, so every rank computes the same one; rank r takes positions
  r, r + W, r + 2W, ... of it; the shares are disjoint, of equal size (the
  last len % W seeds of the permutation are dropped, so that every rank
  runs the same number of steps: DDP needs that, a rank with one step
  more would wait forever in its all-reduce), and together they are all the
  other seeds.
- NeighborSampler: hop 1 samples, for every seed, at most fanouts[0] of
  its incoming edges (all of them when it has no more), uniformly without
  replacement; hop k samples the incoming edges of the nodes that hop k-1
  reached for the first time. The subgraph holds every sampled edge (real
  edges of the graph, with their edge types and ids), renumbered: the seeds
  are local nodes 0 .. B-1 in the order given, then the nodes in the order
  the hops first reach them. A node reached again is not expanded again,
  so every node's sampled in-edges come from one hop (PyG's NeighborLoader
  does the same; its subgraph is "directional").
- Deterministic: the same seeds and `seed` give the same subgraph.
- Heterogeneous graphs (HGT) are sampled in their homogeneous form (node
  ids grouped by type, an edge type per edge, each edge type joining one
  (source type, destination type)); hetero() turns the subgraph into the
  x_dict indices and edge_index_dict that HGTConv takes.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch

__all__ = ["SeedSplit", "NeighborSampler", "Subgraph", "HeteroBatch", "hetero", "union",
           "seed_positions"]


def _ids(what: str, values, *, bound: Optional[int] = None) -> torch.Tensor:
    t = torch.as_tensor(values)
    if t.dim() != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {tuple(t.shape)}")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{what} must hold integer ids, got dtype {t.dtype}")
    t = t.to(torch.int64).cpu()
    if bound is not None and t.numel() and (int(t.min()) < 0 or int(t.max()) >= bound):
        bad = t[(t < 0) | (t >= bound)][0]
        raise ValueError(f"{what} holds {int(bad)}, outside [0, {bound})")
    return t


class SeedSplit:
    """The seeds (training nodes) of one rank, per epoch: DistributedSampler's
    split without its padding (see the module doc)."""

    def __init__(self, seeds, rank: int, world_size: int, seed: int = 0,
                 shuffle: bool = True):
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise ValueError(f"world_size must be a positive integer, got {world_size!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}), got {rank!r}")
        self.seeds = _ids("seeds", seeds)
        if self.seeds.unique().numel() != self.seeds.numel():
            raise ValueError("seeds must be distinct node ids")
        self.rank, self.world_size = rank, world_size
        self.seed, self.shuffle = int(seed), shuffle

    def __len__(self) -> int:
        """Seeds per rank and epoch."""
        return self.seeds.numel() // self.world_size

    def permutation(self, epoch: int) -> torch.Tensor:
        """The order of all seeds in `epoch`, the same on every rank."""
        if not self.shuffle:
            return self.seeds.clone()
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + int(epoch))
        return self.seeds[torch.randperm(self.seeds.numel(), generator=gen)]

    def share(self, epoch: int, rank: Optional[int] = None) -> torch.Tensor:
        """The seeds of `rank` (default: this one) in `epoch`."""
        rank = self.rank if rank is None else rank
        kept = len(self) * self.world_size
        return self.permutation(epoch)[:kept][rank::self.world_size]

    def num_batches(self, batch_size: int) -> int:
        """Steps per epoch (the same on every rank); a last partial batch counts."""
        return -(-len(self) // batch_size)

    def batches(self, epoch: int, batch_size: int, rank: Optional[int] = None):
        """This rank's seeds of `epoch` in batches of `batch_size` (the last
        one shorter when the share is not a multiple)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        mine = self.share(epoch, rank)
        return [mine[i:i + batch_size] for i in range(0, mine.numel(), batch_size)]

    def sample_seed(self, epoch: int, step: int, rank: Optional[int] = None) -> int:
        """A seed for the neighbour sampling of one batch, distinct per
        (seed, epoch, step, rank), so that ranks draw independent samples."""
        rank = self.rank if rank is None else rank
        return ((self.seed * 1_000_003 + int(epoch)) * 1_000_033 + int(step)) * 4099 + rank


class Subgraph(NamedTuple):
    node_ids: torch.Tensor    # [n] global ids of the local nodes; the seeds first
    edge_index: torch.Tensor  # [2, m] local ids: row 0 sources, row 1 destinations
    edge_type: Optional[torch.Tensor]  # [m] relation of every sampled edge (or None)
    edge_ids: torch.Tensor    # [m] the sampled edges' ids in the full graph
    num_seeds: int            # the seeds are local nodes 0 .. num_seeds - 1


class NeighborSampler:
    """k-hop neighbour sampling over the incoming edges (src → dst) of a
    graph on the CPU, with one fan-out per hop (-1: every in-edge)."""

    def __init__(self, src, dst, num_nodes: int, fanouts: Sequence[int], edge_type=None):
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 0:
            raise ValueError(f"num_nodes must be a non-negative integer, got {num_nodes!r}")
        fanouts = list(fanouts)
        if not fanouts or any(isinstance(f, bool) or not isinstance(f, int) or
                              (f < 1 and f != -1) for f in fanouts):
            raise ValueError(f"fanouts must be a non-empty list of positive integers (or -1 "
                             f"for all in-edges), got {fanouts!r}")
        src = _ids("src", src, bound=num_nodes)
        dst = _ids("dst", dst, bound=num_nodes)
        if src.numel() != dst.numel():
            raise ValueError(f"src and dst must have one length, got {src.numel()} and "
                             f"{dst.numel()}")
        self.edge_type = None
        if edge_type is not None:
            self.edge_type = _ids("edge_type", edge_type)
            if self.edge_type.numel() != src.numel():
                raise ValueError(f"edge_type has {self.edge_type.numel()} entries for "
                                 f"{src.numel()} edges")
        self.num_nodes, self.fanouts = num_nodes, fanouts
        self.src, self.dst = src, dst
        # CSC: the in-edges of node v are edge ids in_eid[in_ptr[v]:in_ptr[v+1]],
        # in edge-id order (a stable sort), so the sampling is reproducible.
        self.in_eid = torch.sort(dst, stable=True).indices
        self.in_ptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
        self.in_ptr[1:] = torch.cumsum(torch.bincount(dst, minlength=num_nodes), 0)
        # global -> local ids of the batch being sampled; -1 elsewhere (reset after)
        self._local = torch.full((num_nodes,), -1, dtype=torch.int64)

    def _sample_in_edges(self, nodes: torch.Tensor, fanout: int,
                         gen: torch.Generator) -> torch.Tensor:
        """Edge ids: at most `fanout` in-edges of each node of `nodes`,
        uniformly without replacement, grouped by node in the order of `nodes`."""
        start, degree = self.in_ptr[nodes], self.in_ptr[nodes + 1] - self.in_ptr[nodes]
        total = int(degree.sum())
        if total == 0:
            return torch.zeros(0, dtype=torch.int64)
        owner = torch.repeat_interleave(torch.arange(nodes.numel()), degree)
        first = torch.cumsum(degree, 0) - degree  # position of each node's first slot
        slot = torch.arange(total) - first[owner]
        eids = self.in_eid[start[owner] + slot]
        if fanout == -1 or int(degree.max()) <= fanout:
            return eids
        # A random key per candidate; sorting by (owner, key) shuffles each
        # node's in-edges, and the first `fanout` of each are its sample.
        key = torch.rand(total, generator=gen, dtype=torch.float64)
        order = torch.argsort(owner.to(torch.float64) * 2.0 + key)
        rank = slot  # after the sort, the rank within the owner's run
        keep = rank < fanout
        return eids[order][keep]

    def sample(self, seeds, seed: int = 0) -> Subgraph:
        """The sampled subgraph around `seeds` (distinct node ids)."""
        seeds = _ids("seeds", seeds, bound=self.num_nodes)
        local = self._local
        gen = torch.Generator().manual_seed(int(seed))
        nodes = [seeds]
        try:
            local[seeds] = torch.arange(seeds.numel())
            if bool((local[seeds] != torch.arange(seeds.numel())).any()):
                raise ValueError("seeds must be distinct node ids")
            frontier, count, sampled = seeds, seeds.numel(), []
            for fanout in self.fanouts:
                eids = self._sample_in_edges(frontier, fanout, gen)
                sampled.append(eids)
                src = self.src[eids]
                fresh = _first_appearances(src[local[src] < 0])
                local[fresh] = torch.arange(count, count + fresh.numel())
                count += fresh.numel()
                nodes.append(fresh)
                frontier = fresh
            node_ids = torch.cat(nodes)
            edge_ids = torch.cat(sampled)
            edge_index = torch.stack([local[self.src[edge_ids]], local[self.dst[edge_ids]]])
        finally:
            local[torch.cat(nodes)] = -1  # ready for the next batch, in O(batch)
        edge_type = None if self.edge_type is None else self.edge_type[edge_ids]
        return Subgraph(node_ids, edge_index, edge_type, edge_ids, int(seeds.numel()))


def _first_appearances(ids: torch.Tensor) -> torch.Tensor:
    """The distinct values of `ids`, in the order they first appear."""
    values, inverse, counts = torch.unique(ids, sorted=True, return_inverse=True,
                                           return_counts=True)
    by_value = torch.sort(inverse, stable=True).indices  # positions, grouped by value
    first = by_value[torch.cumsum(counts, 0) - counts]   # each value's first position
    return values[torch.argsort(first)]


class HeteroBatch(NamedTuple):
    node_ids: Dict[str, torch.Tensor]  # per node type: global ids (the seeds of that type first)
    edge_index_dict: Dict[Tuple[str, str, str], torch.Tensor]  # per-type local ids
    seeds: Dict[str, torch.Tensor]  # per node type: ids within the type of its seeds
    local_ids: Dict[str, torch.Tensor]  # per node type: its nodes' ids in the Subgraph


def hetero(sub: Subgraph, node_type, node_type_names: Sequence[str],
           edge_types: Sequence[Tuple[str, str, str]]) -> HeteroBatch:
    """The dict form of a subgraph of a heterogeneous graph in homogeneous
    form, for HGTConv: `node_type` [N] the type of every global node id,
    `edge_types[r]` the (source type, relation, destination type) names of
    edge type r. Node ids per type keep the subgraph's order, so each
    type's seeds come first in its block."""
    if sub.edge_type is None:
        raise ValueError("hetero() needs a subgraph with edge types (NeighborSampler(..., "
                         "edge_type=...))")
    node_type = _ids("node_type", node_type)
    ntype = node_type[sub.node_ids]
    within = torch.empty_like(sub.node_ids)  # local id -> id within its type's block
    node_ids, seeds, local_ids = {}, {}, {}
    is_seed = torch.arange(sub.node_ids.numel()) < sub.num_seeds
    for i, name in enumerate(node_type_names):
        mask = ntype == i
        members = torch.nonzero(mask).flatten()
        within[members] = torch.arange(members.numel())
        node_ids[name] = sub.node_ids[members]
        seeds[name] = torch.nonzero(is_seed[members]).flatten()
        local_ids[name] = members
    edge_index_dict = {}
    for r, et in enumerate(edge_types):
        mask = sub.edge_type == r
        if bool(mask.any()):
            ei = sub.edge_index[:, mask]
            src_t, dst_t = ntype[ei[0]], ntype[ei[1]]
            want = (node_type_names.index(et[0]), node_type_names.index(et[2]))
            if bool((src_t != want[0]).any()) or bool((dst_t != want[1]).any()):
                raise ValueError(f"edge type {r} {et!r} has edges that do not join node types "
                                 f"{et[0]!r} and {et[2]!r}")
            edge_index_dict[tuple(et)] = within[ei]
    return HeteroBatch(node_ids, edge_index_dict, seeds, local_ids)


def union(subgraphs: List[Subgraph]) -> Subgraph:
    """The disjoint union of subgraphs (the ranks' batches), as one graph:
    subgraph i's local nodes follow those of subgraphs 0 .. i-1. Its seeds
    are not first (num_seeds is their total); seed_positions() lists them."""
    offsets, total = [], 0
    for s in subgraphs:
        offsets.append(total)
        total += s.node_ids.numel()
    typed = all(s.edge_type is not None for s in subgraphs)
    return Subgraph(
        torch.cat([s.node_ids for s in subgraphs]),
        torch.cat([s.edge_index + o for s, o in zip(subgraphs, offsets)], 1),
        torch.cat([s.edge_type for s in subgraphs]) if typed else None,
        torch.cat([s.edge_ids for s in subgraphs]),
        sum(s.num_seeds for s in subgraphs))


def seed_positions(subgraphs: List[Subgraph]) -> torch.Tensor:
    """The local ids of the seeds in union(subgraphs), batch by batch."""
    out, total = [], 0
    for s in subgraphs:
        out.append(torch.arange(total, total + s.num_seeds))
        total += s.node_ids.numel()
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.int64)

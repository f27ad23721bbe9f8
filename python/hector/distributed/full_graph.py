"""Full-graph training of a graph partitioned across the ranks of torch.distributed.

    dist.init_process_group("nccl")                      # or "gloo" on CPUs; torchrun
    graph = PartitionedGraph(edge_index, num_nodes, edge_type=edge_type, device=device)
    conv1 = FullGraphLayer(hector.nn.RGATConv(256, 256, R), graph).to(device)
    conv2 = FullGraphLayer(hector.nn.RGATConv(256, 64, R), graph).to(device)
    broadcast_parameters(model)                          # same weights everywhere
    x = graph.owned_rows(x_global)                        # this rank's rows only
    loss = loss_of(conv2(conv1(x).relu()), graph.owned_rows(labels))
    loss.backward()                                       # halo gradients go home
    all_reduce_gradients(model)                           # sum of every rank's part
    optimizer.step()

Each rank holds the graph structure (edge_index, types) and partitions it
the same way (partition_nodes is deterministic; PartitionedGraph checks that
all ranks agree), but keeps only its owned nodes' features and activations
and its local graph: owned nodes, their incoming edges, and the halo sources.
A FullGraphLayer runs an unchanged hector.nn layer on that local graph: the
halo rows come from their owners (hector.distributed.halo) before each
layer, the layer computes on [owned rows; halo rows] with the local
edge_index, and the owned nodes' output rows are its result. The halo
nodes' own output rows (they have no incoming edges locally) are computed by
the layer and dropped.

Weights are replicated. Each rank's loss covers its owned nodes, so the
global loss is the sum over ranks and a weight's gradient is the sum of the
ranks' gradients: all_reduce_gradients sums them explicitly (one flat
all_reduce). DistributedDataParallel around the stack works as well but
averages: its weight gradients are the sum / world size (scale the learning
rate, or use all_reduce_gradients); input gradients are the same either
way. docs/distributed.md has the design.
"""

from __future__ import annotations

import datetime
from typing import Optional

import numpy as np
import torch
import torch.distributed as dist

from ..nn import HGTConv, RGATConv, RGCNConv
from .halo import HaloExchange
from .local_graph import local_graph
from .partition import partition_nodes

__all__ = ["PartitionedGraph", "FullGraphLayer", "all_reduce_gradients",
           "broadcast_parameters"]


def _checksum(parts: np.ndarray) -> int:
    """A position-dependent checksum of a partition, exact in int64."""
    weights = (np.arange(parts.size, dtype=np.int64) % 1000003) + 1
    return int(((parts.astype(np.int64) + 1) * weights % 2147483647).sum() % 2147483647)


class PartitionedGraph:
    """This rank's part of a graph partitioned over the ranks of the default
    process group. A collective: every rank constructs it with the same
    graph, in the same order relative to other collectives.

    - edge_index [2, E] (global node ids, edges s -> t), num_nodes (default:
      1 + the largest id), edge_type [E] (RGCN, RGAT, HGT), node_type [N]
      (HGT: the index of each node's type in the layer's metadata).
    - parts [N] (node -> rank): a given partition; default partition_nodes
      with `method` ("auto": METIS where libmetis loads, else balanced
      ranges) and `seed`. All ranks must agree; checked (ValueError on
      every rank otherwise).
    - device: where the local graph and the exchange's tensors live (a CUDA
      device with NCCL). group: the halo exchange's process group, spanning
      all ranks (default: a new group made here, dist.new_group, so the
      exchange never queues behind other collectives); timeout: its timeout.
    - timed: the exchange measures its own time (HaloStats.seconds).

    owned_rows(x) picks this rank's rows of a per-node tensor [N, ...],
    edge_rows(t) its local edges' rows of a per-edge tensor [E, ...] (the
    edges into its owned nodes, in the whole graph's order; edge_ids are
    their positions there, global_edge_index their endpoints).
    """

    def __init__(self, edge_index, num_nodes: Optional[int] = None, *, edge_type=None,
                 node_type=None, parts=None, method: str = "auto", seed: int = 0,
                 device=None, group=None, timeout: Optional[datetime.timedelta] = None,
                 timed: bool = False):
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("PartitionedGraph needs torch.distributed initialized "
                               "(dist.init_process_group; torchrun sets the environment)")
        if num_nodes is None:
            num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
        if group is None:
            group = dist.new_group(timeout=timeout) if timeout is not None else dist.new_group()
        self.group = group
        self.world_size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        if parts is None:
            parts = partition_nodes(num_nodes, edge_index, self.world_size, method=method,
                                    seed=seed)
        parts = np.asarray(parts.detach().cpu().numpy() if hasattr(parts, "detach") else parts)
        if parts.shape != (num_nodes,):
            raise ValueError(f"parts must have one rank per node, shape ({num_nodes},), got "
                             f"{parts.shape}")
        self.parts = parts.astype(np.int64)
        self.num_nodes = num_nodes
        self.num_edges = int(edge_index.shape[1]) if len(edge_index.shape) == 2 else -1
        self._check_agreement()
        self.local = local_graph(self.rank, self.parts, edge_index, edge_type=edge_type,
                                 node_type=node_type, num_parts=self.world_size
                                 ).to(self.device)
        self._check_plans()
        self.exchange = HaloExchange(self.local, group, timed=timed)
        self._edge_ids = self._global_edge_index = None  # made when first asked for

    def _all_agree(self, flag: bool) -> bool:
        """True on every rank when `flag` is True on every rank."""
        t = torch.tensor([0 if flag else 1], dtype=torch.int64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return int(t.item()) == 0

    def _check_agreement(self) -> None:
        c = _checksum(self.parts)
        t = torch.tensor([c, -c, self.num_nodes, -self.num_nodes, self.num_edges,
                          -self.num_edges], dtype=torch.int64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        if int(t[0]) != -int(t[1]) or int(t[2]) != -int(t[3]) or int(t[4]) != -int(t[5]):
            raise ValueError("the ranks disagree on the partition, the node count or the "
                             "edge count: every rank must build PartitionedGraph from the "
                             "same graph and parts")

    def _check_plans(self) -> None:
        """What each rank plans to send to each other must be what it expects."""
        sent = torch.tensor(self.local.send_counts, dtype=torch.int64, device=self.device)
        expected = torch.empty_like(sent)
        dist.all_to_all_single(expected, sent, group=self.group)
        ok = expected.cpu().tolist() == self.local.recv_counts
        if not self._all_agree(ok):
            raise ValueError("the ranks' halo plans disagree: every rank must build "
                             "PartitionedGraph from the same edge_index")

    @property
    def num_owned(self) -> int:
        return self.local.num_owned

    def owned_rows(self, x: torch.Tensor) -> torch.Tensor:
        """The rows of a global [N, ...] tensor that this rank owns (its local order)."""
        if x.size(0) != self.num_nodes:
            raise ValueError(f"owned_rows takes a tensor of {self.num_nodes} rows (one per "
                             f"node), got {tuple(x.shape)}")
        return self.local.owned_rows(x)

    @property
    def num_local_edges(self) -> int:
        return int(self.local.edge_ids.size)

    @property
    def edge_ids(self) -> torch.Tensor:
        """[num_local_edges] int64 on `device`: each local edge's position in
        the whole graph's edge order (increasing), e.g. to place the α that
        FullGraphLayer returns: alpha_whole[graph.edge_ids] = alpha."""
        if self._edge_ids is None:
            self._edge_ids = torch.from_numpy(self.local.edge_ids.astype(np.int64)
                                              ).to(self.device)
        return self._edge_ids

    @property
    def global_edge_index(self) -> torch.Tensor:
        """[2, num_local_edges] int64 on `device`: the local edges'
        (source, destination) as global node ids (= the whole graph's
        edge_index[:, edge_ids]); local.edge_index has them in local ids."""
        if self._global_edge_index is None:
            ids = np.concatenate([self.local.owned, self.local.halo]).astype(np.int64)
            self._global_edge_index = torch.from_numpy(ids).to(self.device)[
                self.local.edge_index]
        return self._global_edge_index

    def edge_rows(self, t: torch.Tensor) -> torch.Tensor:
        """The rows of a whole-graph per-edge tensor [E, ...] (e.g. RGATConv's
        edge_attr) for this rank's local edges, in their order (increasing
        global edge id, the order of the local edge_index); differentiable."""
        if not isinstance(t, torch.Tensor) or t.dim() == 0 or t.size(0) != self.num_edges:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"edge_rows takes a tensor of {self.num_edges} rows (one per "
                             f"edge of the whole graph), got {shape}")
        return t[self.edge_ids.to(t.device)]


class FullGraphLayer(torch.nn.Module):
    """An unchanged hector.nn layer (RGCNConv, FastRGCNConv, RGATConv,
    HGTConv) on this rank's part of a PartitionedGraph:

        forward(x_owned [num_owned, in]) -> [num_owned, out]

    = the rows of the owned nodes (in graph.owned order) of the layer applied
    to the whole graph, computed from this rank's rows only. RGATConv also
    takes forward(x_owned, edge_attr=, return_attention_weights=): edge_attr
    either the whole graph's [E, edge_dim] (every rank then reads its local
    edges' rows, and the gradient of the whole tensor is nonzero only there:
    the sum over ranks is the whole graph's) or the local edges' rows
    [graph.num_local_edges, edge_dim] (graph.edge_rows); α comes back as
    (edge_index, α) of the local edges, the edges into the owned nodes, in
    increasing global edge id (graph.edge_ids), with global node ids: the
    ranks' results together hold every edge once. A collective
    (the halo exchange, forward and backward): every rank calls it in the
    same order. The layer is the module's `layer`, its parameters the
    wrapped layer's; it takes the graph's edge_type (RGCN, RGAT) or
    node_type and edge_type (HGT: indices into its metadata's node and edge
    types; every node type must be the destination of some edge type, since
    HGTConv returns nothing for the others, and the input width must be one
    for all node types).
    """

    def __init__(self, layer: torch.nn.Module, graph: PartitionedGraph):
        super().__init__()
        if not isinstance(layer, (RGCNConv, RGATConv, HGTConv)):
            raise TypeError(f"FullGraphLayer wraps a hector.nn RGCNConv, FastRGCNConv, "
                            f"RGATConv or HGTConv, got {type(layer).__name__}")
        if not isinstance(graph, PartitionedGraph):
            raise TypeError(f"graph must be a PartitionedGraph, got {type(graph).__name__}")
        self.layer = layer
        self.graph = graph
        local = graph.local
        if local.edge_type is None:
            raise ValueError(f"{type(layer).__name__} needs the edges' types: build the "
                             "PartitionedGraph with edge_type")
        if isinstance(layer, RGCNConv) and layer.in_channels_l != layer.in_channels_r:
            raise ValueError("FullGraphLayer runs RGCNConv on one node set: its in_channels "
                             "must be one int, not (in_src, in_dst)")
        self._hgt = self._hgt_plan(layer, local) if isinstance(layer, HGTConv) else None

    @staticmethod
    def _hgt_plan(layer: HGTConv, local):
        """Per node type: the local nodes of that type; per edge type: its
        local edges in per-type ids; and where each owned node's output row
        lies in the concatenation of HGTConv's output dict."""
        if local.node_type is None:
            raise ValueError("HGTConv needs the nodes' types: build the PartitionedGraph with "
                             "node_type (indices into the metadata's node types)")
        widths = set(layer.in_channels.values())
        if -1 in widths or len(widths) != 1:
            raise ValueError(f"FullGraphLayer needs HGTConv with one input width for all node "
                             f"types, fixed before wrapping (so every rank's weights are the "
                             f"same), got in_channels={layer.in_channels}")
        no_dst = [nt for nt in layer.node_types if nt not in layer.dst_node_types]
        if no_dst:
            raise ValueError(f"node type {no_dst[0]!r} is no edge type's destination, so "
                             "HGTConv gives its nodes no output: add reverse edge types (as "
                             "PyG's ToUndirected) to the metadata and the graph")
        ntype = local.node_type.cpu()
        etype = local.edge_type.cpu()
        index = local.edge_index.cpu()
        num_t, num_r = len(layer.node_types), len(layer.edge_types)
        for what, ids, bound in (("node_type", ntype, num_t), ("edge_type", etype, num_r)):
            if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= bound):
                raise ValueError(f"{what} holds {int(ids.max())}, but the metadata has {bound} "
                                 f"{what.split('_')[0]} types")
        members = [torch.nonzero(ntype == t).view(-1) for t in range(num_t)]
        position = torch.empty_like(ntype)
        offset = torch.zeros(num_t, dtype=torch.int64)
        total = 0
        for t, ids in enumerate(members):
            position[ids] = torch.arange(ids.numel())
            offset[t], total = total, total + ids.numel()
        edges = {}
        for r, (s_type, _, d_type) in enumerate(layer.edge_types):
            mask = etype == r
            src, dst = index[0][mask], index[1][mask]
            want_s, want_d = layer.node_types.index(s_type), layer.node_types.index(d_type)
            if (ntype[src] != want_s).any() or (ntype[dst] != want_d).any():
                raise ValueError(f"edges of type {r} {layer.edge_types[r]!r} join nodes of "
                                 f"other types: node_type and edge_type must follow the "
                                 f"metadata")
            edges[layer.edge_types[r]] = torch.stack([position[src], position[dst]])
        owned = ntype[:local.num_owned]
        rows = offset[owned] + position[:local.num_owned]
        device = local.edge_index.device
        return ([m.to(device) for m in members], {k: v.to(device) for k, v in edges.items()},
                rows.to(device))

    def forward(self, x_owned: torch.Tensor, edge_attr: Optional[torch.Tensor] = None,
                return_attention_weights: Optional[bool] = None):
        local = self.graph.local
        name = type(self.layer).__name__
        # Checked before the exchange, so that ranks given the same bad input
        # all raise before any collective and stay in step.
        if not isinstance(x_owned, torch.Tensor) or x_owned.dim() == 0 \
                or x_owned.size(0) != local.num_owned:
            shape = tuple(x_owned.shape) if isinstance(x_owned, torch.Tensor) else \
                type(x_owned).__name__
            raise ValueError(f"FullGraphLayer takes this rank's owned rows, "
                             f"[{local.num_owned}, in] (graph.owned_rows(x)), got {shape}")
        rgat = isinstance(self.layer, RGATConv)
        if not rgat and (edge_attr is not None or return_attention_weights is not None):
            raise TypeError(f"{name} takes no edge_attr or return_attention_weights (only "
                            "RGATConv does)")
        if edge_attr is not None:
            edge_attr = self._local_edge_attr(edge_attr)
        x = torch.cat([x_owned, self.graph.exchange(x_owned)])
        if rgat:
            out = self.layer(x, local.edge_index, local.edge_type, edge_attr=edge_attr,
                             return_attention_weights=return_attention_weights)
            if not isinstance(out, tuple):
                return out[:local.num_owned]
            # α of the local edges (the edges into owned nodes), their
            # endpoints as global node ids: the ranks' pairs together hold
            # every edge once; graph.edge_ids places α in the global order.
            out, (_, alpha) = out
            return out[:local.num_owned], (self.graph.global_edge_index, alpha)
        if self._hgt is None:
            return self.layer(x, local.edge_index, local.edge_type)[:local.num_owned]
        members, edges, rows = self._hgt
        names = self.layer.node_types
        out = self.layer({names[t]: x[m] for t, m in enumerate(members)}, edges)
        return torch.cat([out[nt] for nt in names])[rows]

    def _local_edge_attr(self, edge_attr) -> torch.Tensor:
        """edge_attr as the rows of this rank's local edges, from either those
        rows or the whole graph's (the same tensor where the rank holds every
        edge: local edges keep the global order)."""
        if self.layer.edge_dim is None:
            raise ValueError("RGATConv got edge_attr but has no edge_dim: construct it with "
                             "edge_dim=edge_attr.size(-1)")
        if not isinstance(edge_attr, torch.Tensor):
            raise TypeError(f"edge_attr must be a tensor, got {type(edge_attr).__name__}")
        if edge_attr.dim() not in (1, 2):
            raise ValueError(f"edge_attr must be [E, edge_dim] (or [E] for edge_dim 1), got "
                             f"shape {tuple(edge_attr.shape)}")
        rows = edge_attr.size(0)
        if rows == self.graph.num_local_edges:
            return edge_attr
        if rows == self.graph.num_edges:
            return self.graph.edge_rows(edge_attr)
        raise ValueError(
            f"edge_attr has {rows} rows: FullGraphLayer takes one per edge of the whole "
            f"graph ({self.graph.num_edges}) or one per local edge of this rank "
            f"({self.graph.num_local_edges}, graph.edge_rows(edge_attr)); for PyG's one row "
            f"per relation pass edge_attr[edge_type]")


def all_reduce_gradients(module: torch.nn.Module, group=None) -> None:
    """Sums every trainable parameter's gradient over the ranks of `group`
    (default: all), in one flat all_reduce. A parameter without a gradient
    on this rank counts as zeros (and gets a gradient), so every rank takes
    part. Call it after backward, before the optimizer step."""
    params = [p for p in module.parameters() if p.requires_grad]
    if not params:
        return
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat, group=group)
    start = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[start:start + n].view_as(p.grad))
        start += n


def broadcast_parameters(module: torch.nn.Module, src: int = 0, group=None) -> None:
    """Copies rank `src`'s parameters and buffers to every rank of `group`
    (what DDP does at construction), so the replicated weights start equal."""
    with torch.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            dist.broadcast(t.data, src=src, group=group)

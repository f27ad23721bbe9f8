"""hector.nn.HGTConv: the heterogeneous graph transformer of BRIEF.md §4 with PyG's arguments."""

from __future__ import annotations

import torch

from .. import autograd
from . import _adjacency
from ._base import (CompiledLayer, check_parameter_memory, glorot_, graph_cache, preprocess,
                    reject_options)


class HGTConv(CompiledLayer):
    r"""The HGT layer of BRIEF.md §4, with PyG 2.8's HGTConv constructor
    (in_channels, out_channels, metadata, heads) and forward
    (x_dict, edge_index_dict -> dict). With d = out_channels, H heads of
    D = d/H features, τ the node type and φ the edge type:

        k_s = x_s · K_τ(s),  q_t = x_t · Q_τ(t),  v_s = x_s · V_τ(s)      ([d])
        score_e = (k_s · k_rel_φ(e)) · q_t · p_rel_φ(e) / √D               (per head)
        α_e = softmax of score_e over all incoming edges of t
        out_t = (Σ_e α_e · v_s · v_rel_φ(e)) · A_τ(t) + x_t

    How it differs from PyG's HGTConv: PyG's K/Q/V and output linears have
    biases (here none); PyG applies GELU before the output linear (here
    none); PyG's residual is gated, σ(skip_τ)·out + (1 - σ(skip_τ))·x_t (here
    a plain + x_t, so there is no `skip` parameter); PyG allows per-type
    input widths different from out_channels (here every node type's
    in_channels must equal out_channels). The attention, its per-relation
    prior p_rel and the per-(relation, head) k_rel / v_rel are PyG's.
    As in PyG, the result holds the node types of x_dict that are the
    destination of some edge type of the metadata. A node with no incoming
    edges gets x_t (PyG: a function of its biases and x_t).

    Parameters, stacked by type in metadata order: k_weight, q_weight,
    v_weight, a_weight [T, d, d]; k_rel, v_rel [R, H, D, D]; p_rel [R, H]
    (a PyG state_dict does not load). Not supported (NotImplementedError):
    in_channels = -1 (lazy), other MessagePassing options.
    An edge_index_dict value may be a sparse adj_t [destinations, sources]
    (torch.sparse COO/CSR/CSC or torch_sparse.SparseTensor; values unread).
    """

    model = "hgt"

    def __init__(self, in_channels, out_channels: int, metadata, heads: int = 1, **kwargs):
        super().__init__()
        reject_options("HGTConv", kwargs)
        if out_channels < 1 or heads < 1 or out_channels % heads:
            raise ValueError(f"'out_channels' (got {out_channels}) must be divisible by the "
                             f"number of heads (got {heads})")
        try:
            node_types, edge_types = list(metadata[0]), [tuple(e) for e in metadata[1]]
        except (TypeError, IndexError):
            raise ValueError("metadata must be (node types, edge types), as "
                             "HeteroData.metadata() returns") from None
        if len(set(node_types)) != len(node_types) or len(set(edge_types)) != len(edge_types):
            raise ValueError("metadata lists a node or edge type twice")
        for et in edge_types:
            if len(et) != 3 or et[0] not in node_types or et[2] not in node_types:
                raise ValueError(f"edge type {et!r} must be (source type, relation, "
                                 "destination type) over the metadata's node types")
        widths = in_channels if isinstance(in_channels, dict) else \
            {t: in_channels for t in node_types}
        for t, width in widths.items():
            if width == -1:
                raise NotImplementedError("hector.nn.HGTConv does not infer in_channels "
                                          "(-1): give the widths")
            if width != out_channels:
                raise NotImplementedError(
                    f"hector.nn.HGTConv needs in_channels == out_channels for every node "
                    f"type (its residual adds x_t), got {width} for {t!r} and "
                    f"out_channels = {out_channels}")
        self.in_channels = dict(widths)
        self.out_channels, self.heads = out_channels, heads
        self.node_types, self.edge_types = node_types, edge_types
        self.dst_node_types = {et[2] for et in edge_types}
        t, r, d, dh = len(node_types), len(edge_types), out_channels, out_channels // heads
        check_parameter_memory(
            "HGTConv", f"out_channels={out_channels}, heads={heads}, {t} node types, "
            f"{r} edge types", *[(t, d, d)] * 4, (r, heads, dh, dh), (r, heads, dh, dh),
            (r, heads))
        for name in ("k_weight", "q_weight", "v_weight", "a_weight"):
            self.register_parameter(name, torch.nn.Parameter(torch.empty(t, d, d)))
        self.k_rel = torch.nn.Parameter(torch.empty(r, heads, dh, dh))
        self.v_rel = torch.nn.Parameter(torch.empty(r, heads, dh, dh))
        self.p_rel = torch.nn.Parameter(torch.empty(r, heads))
        self.reset_parameters()

    def reset_parameters(self):
        for p in (self.k_weight, self.q_weight, self.v_weight, self.a_weight, self.k_rel,
                  self.v_rel):
            glorot_(p)
        torch.nn.init.ones_(self.p_rel)

    def _spec_args(self) -> dict:
        return {"width": self.out_channels, "out_width": self.out_channels,
                "heads": self.heads}

    def _graph(self, sizes: dict, edge_index_dict: dict, device):
        """(preprocessed graph, offsets): node ids are the node types'
        features concatenated in metadata order."""
        keys = [et for et in self.edge_types if et in edge_index_dict]
        tensors = tuple(edge_index_dict[et] for et in keys)
        counts = tuple(sizes.get(nt, 0) for nt in self.node_types)
        offsets, total = {}, 0
        for nt, count in zip(self.node_types, counts):
            offsets[nt], total = total, total + count

        def build():
            node_type = torch.cat([torch.full((c,), i, dtype=torch.int64, device=device)
                                   for i, c in enumerate(counts)]) if counts else \
                torch.zeros(0, dtype=torch.int64, device=device)
            src, dst, etype = [], [], []
            for et, ei in zip(keys, tensors):
                for row, nt in ((0, et[0]), (1, et[2])):
                    ids, which = ei[row], ("source", "destination")[row]
                    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= sizes[nt]):
                        bad = ids[(ids < 0) | (ids >= sizes[nt])][0]
                        raise ValueError(
                            f"edge_index_dict[{et!r}] holds {which} node {int(bad)}, but "
                            f"node type {nt!r} has {sizes[nt]} nodes")
                src.append(ei[0].to(torch.int64) + offsets[et[0]])
                dst.append(ei[1].to(torch.int64) + offsets[et[2]])
                etype.append(torch.full((ei.size(1),), self.edge_types.index(et),
                                        dtype=torch.int64, device=device))
            empty = torch.zeros(0, dtype=torch.int64, device=device)
            cat = (lambda xs: torch.cat(xs) if xs else empty)  # noqa: E731
            return preprocess(device, node_type, cat(src), cat(dst), cat(etype),
                              len(self.node_types), len(self.edge_types))

        # Everything that numbers the ids besides the tensors' values: the
        # metadata's node type order (node ids) and edge type order (edge type
        # ids), which edge types are present, the node counts, the device.
        numbering = (tuple(self.node_types), tuple(self.edge_types), tuple(keys), counts,
                     str(device))
        pre = graph_cache.get(tensors, numbering, build)
        return pre, offsets

    def forward(self, x_dict, edge_index_dict):
        if not isinstance(x_dict, dict) or not isinstance(edge_index_dict, dict):
            raise TypeError("HGTConv takes x_dict and edge_index_dict as dicts, as PyG's")
        unknown = [nt for nt in x_dict if nt not in self.node_types]
        if unknown:
            raise ValueError(f"x_dict has node type {unknown[0]!r}, which the metadata lacks")
        if not x_dict:
            raise ValueError("x_dict is empty")
        d = self.out_channels
        device = next(iter(x_dict.values())).device
        for nt, x in x_dict.items():
            if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.size(1) != d:
                raise ValueError(f"x_dict[{nt!r}] must be a tensor [N, {d}], got "
                                 f"{tuple(x.shape) if isinstance(x, torch.Tensor) else x!r}")
            if x.dtype != torch.float32:
                raise TypeError(f"x_dict[{nt!r}] must be float32 (hector computes in "
                                f"float32), got {x.dtype}")
            if x.device != device:
                raise ValueError(f"x_dict[{nt!r}] is on {x.device}, other features on "
                                 f"{device}")
        for et, ei in edge_index_dict.items():
            if tuple(et) not in self.edge_types:
                raise ValueError(f"edge_index_dict has edge type {et!r}, which the "
                                 "metadata lacks")
            for nt in (et[0], et[2]):
                if nt not in x_dict:
                    raise ValueError(f"edge type {et!r} needs features of node type {nt!r}, "
                                     "which x_dict lacks")
        # A sparse adj_t [destinations, sources] becomes its edge list; its
        # values are not read (as PyG's HGTConv).
        edge_index_dict = {
            tuple(et): _adjacency.edges("HGTConv", ei, device=device, typed=False,
                                        what=f"edge_index_dict[{et!r}]").index
            for et, ei in edge_index_dict.items()}
        sizes = {nt: x.size(0) for nt, x in x_dict.items()}
        pre, offsets = self._graph(sizes, edge_index_dict, device)
        x = torch.cat([x_dict[nt] for nt in self.node_types if nt in x_dict])
        lib = self.library(device, self.needs_grad(*x_dict.values()))
        out, = autograd.run(lib, "hgt", pre, synchronize=self.synchronize,
                            check_indices=False, h=x,
                            K=self.k_weight, Q=self.q_weight, V=self.v_weight,
                            A=self.a_weight, Watt=self.k_rel, Wmsg=self.v_rel, mu=self.p_rel)
        return {nt: out[offsets[nt]:offsets[nt] + sizes[nt]]
                for nt in x_dict if nt in self.dst_node_types}

    def extra_repr(self) -> str:
        return f"-1, {self.out_channels}, heads={self.heads}"

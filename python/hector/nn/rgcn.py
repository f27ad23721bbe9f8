"""hector.nn.RGCNConv: PyG's RGCNConv (aggr='mean' or 'add') computed by a hector library."""

from __future__ import annotations

import torch

from .. import autograd
from . import _adjacency
from ._base import (CompiledLayer, check_features, check_parameter_memory, glorot_,
                    reject_options, relation_parameters, relation_shapes, relation_weight,
                    relational_graph, reset_relation_parameters)


# PyG's aggr names -> the compiled model's (hector.models.rgcn's `aggr`).
AGGREGATIONS = {"mean": "mean", "add": "sum", "sum": "sum"}


class RGCNConv(CompiledLayer):
    r"""The relational graph convolution of BRIEF.md §4, with PyG 2.8's
    constructor and forward arguments:

        out_t = x_t · root + Σ_r Σ_{e=(s→t), φ(e)=r} (1 / |N_r(t)|) x_s · W_r  (+ bias)

    which is PyG's RGCNConv with aggr='mean'; with aggr='add' (or 'sum')
    every message counts once (no 1 / |N_r(t)|). Supported: num_bases and
    num_blocks (the decomposed weights are expanded to [R, in, out] in torch,
    so gradients reach the bases), root_weight, bias, is_sorted (a hint).
    Parameter names and shapes match PyG's (weight, comp, root, bias), so a
    PyG state_dict loads. Not supported (NotImplementedError): aggr other than
    'mean' and 'add'/'sum', bipartite (tuple) in_channels, other MessagePassing options;
    in forward, x=None (featureless). The graph is edge_index [2, E] with
    edge_type, or a sparse adjacency adj_t [N, N] (torch.sparse COO/CSR/CSC,
    torch_sparse.SparseTensor) whose integer values are the edge types when
    edge_type is None (hector.nn._adjacency).
    """

    model = "rgcn"

    def __init__(self, in_channels, out_channels: int, num_relations: int,
                 num_bases=None, num_blocks=None, aggr: str = "mean",
                 root_weight: bool = True, is_sorted: bool = False, bias: bool = True,
                 **kwargs):
        super().__init__()
        reject_options("RGCNConv", kwargs)
        if not isinstance(in_channels, int) or isinstance(in_channels, bool):
            raise NotImplementedError(
                f"hector.nn.RGCNConv needs one int in_channels (bipartite or lazy inputs "
                f"are not supported), got {in_channels!r}")
        if not isinstance(aggr, str) or aggr not in AGGREGATIONS:
            raise NotImplementedError(
                f"hector.nn.RGCNConv computes aggr='mean' (each relation's messages "
                f"divided by that relation's in-degree) or aggr='add' (also 'sum': "
                f"summed), got aggr={aggr!r}")
        if min(in_channels, out_channels, num_relations) < 1:
            raise ValueError("in_channels, out_channels and num_relations must be positive")
        check_parameter_memory(
            "RGCNConv", f"in_channels={in_channels}, out_channels={out_channels}, "
            f"num_relations={num_relations}, num_bases={num_bases}, num_blocks={num_blocks}",
            *relation_shapes(num_relations, in_channels, out_channels, num_bases, num_blocks),
            (in_channels, out_channels), (out_channels,))
        self.in_channels, self.out_channels = in_channels, out_channels
        self.num_relations = num_relations
        self.aggr, self.is_sorted = aggr, is_sorted
        relation_parameters(self, num_relations, in_channels, out_channels, num_bases,
                            num_blocks)
        if root_weight:
            self.root = torch.nn.Parameter(torch.empty(in_channels, out_channels))
        else:
            self.register_parameter("root", None)
        if bias:
            self.bias = torch.nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        reset_relation_parameters(self)
        if self.root is not None:
            glorot_(self.root)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def _spec_args(self) -> dict:
        args = {"width": self.in_channels, "out_width": self.out_channels}
        if AGGREGATIONS[self.aggr] != "mean":
            args["aggr"] = AGGREGATIONS[self.aggr]
        return args

    def forward(self, x, edge_index, edge_type=None):
        x = check_features("RGCNConv", x, self.in_channels)
        edges = _adjacency.edges("RGCNConv", edge_index, edge_type, device=x.device)
        _adjacency.check_size("RGCNConv", edges, x.size(0), x.size(0))
        pre = relational_graph(edges, x.size(0), x.size(0), self.num_relations, x.device)
        weight = relation_weight(self, self.num_relations, self.in_channels,
                                 self.out_channels)
        # Without a root weight the compiled RGCN still adds x · W0: with W0 = 0.
        root = self.root if self.root is not None else x.new_zeros(
            self.in_channels, self.out_channels)
        lib = self.library(x.device, self.needs_grad(x))
        out, = autograd.run(lib, "rgcn", pre, synchronize=self.synchronize,
                            check_indices=False, h=x, W=weight,
                            W0=root)
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, "
                f"num_relations={self.num_relations}")


class FastRGCNConv(RGCNConv):
    """PyG's FastRGCNConv: the same arguments, parameters and function as
    RGCNConv (PyG computes it with one message per edge, trading memory for
    speed; hector compiles both to the same library)."""

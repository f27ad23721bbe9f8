"""hector.nn.RGATConv: relational graph attention (BRIEF.md §4) with PyG's arguments."""

from __future__ import annotations

import math

import torch

from .. import autograd
from . import _adjacency
from ._base import (CompiledLayer, check_features, check_parameter_memory, reject_options,
                    relation_parameters, relation_shapes, relation_weight, relational_graph,
                    reset_relation_parameters)


class RGATConv(CompiledLayer):
    r"""Relational graph attention as BRIEF.md §4 defines it, with PyG 2.8's
    RGATConv constructor and forward arguments. Per head h (C = out_channels
    features each), on every edge e = (s → t) of relation r:

        z_e     = x_s · W_r                                 ([H·C], head blocks of C)
        score_e = LeakyReLU(att_src_r · z_e + att_dst_r · (x_t · W_r))   (per head block)
        α_e     = softmax of score_e over all incoming edges of t (across relations)
        out_t   = Σ_e α_e z_e          concat: [H·C]; concat=False: mean over heads

    plus bias. It differs from PyG's RGATConv (additive self-attention,
    across-relation): PyG scores an edge with q_t + k_s, where
    q = (x_t W_r) Q and k = (x_s W_r) K mix all H·C features into each head's
    score through Q and K ([H·C, H]) shared by all relations; here each
    relation has its own attention vectors att_src, att_dst [R, H·C], and a
    head's score reads only that head's C features. Parameters: weight (or
    basis + att, or blocks, as in PyG), att_src, att_dst, bias; PyG's q and k
    do not exist, so a PyG state_dict does not load.

    Supported: heads, concat, negative_slope (compiled into the library),
    num_bases, num_blocks, bias; in forward, edge_index [2, E] with
    edge_type, or a sparse adjacency adj_t [N, N] (torch.sparse COO/CSR/CSC,
    torch_sparse.SparseTensor) whose integer values are the edge types when
    edge_type is None (hector.nn._adjacency). Not supported
    (NotImplementedError): mod, attention_mechanism other than
    'across-relation', attention_mode other than 'additive-self-attention',
    dim != 1, dropout > 0, edge_dim; in forward, x=None or node ids
    (featureless), edge_attr (also as [E, F] values of a sparse adjacency),
    size and return_attention_weights.
    """

    model = "rgat"

    def __init__(self, in_channels: int, out_channels: int, num_relations: int,
                 num_bases=None, num_blocks=None, mod=None,
                 attention_mechanism: str = "across-relation",
                 attention_mode: str = "additive-self-attention", heads: int = 1,
                 dim: int = 1, concat: bool = True, negative_slope: float = 0.2,
                 dropout: float = 0.0, edge_dim=None, bias: bool = True, **kwargs):
        super().__init__()
        aggr = kwargs.pop("aggr", "add")  # PyG's default: sum the attended messages
        if aggr != "add":
            raise NotImplementedError(f"hector.nn.RGATConv sums the attended messages "
                                      f"(aggr='add'), got aggr={aggr!r}")
        reject_options("RGATConv", kwargs)
        unsupported = {
            "mod": (mod, None), "attention_mechanism": (attention_mechanism, "across-relation"),
            "attention_mode": (attention_mode, "additive-self-attention"), "dim": (dim, 1),
            "dropout": (dropout, 0.0), "edge_dim": (edge_dim, None)}
        for name, (value, supported) in unsupported.items():
            if value != supported:
                raise NotImplementedError(
                    f"hector.nn.RGATConv supports only {name}={supported!r}, got {value!r}")
        if not isinstance(in_channels, int) or isinstance(in_channels, bool):
            raise NotImplementedError(f"hector.nn.RGATConv needs one int in_channels, "
                                      f"got {in_channels!r}")
        if min(in_channels, out_channels, num_relations, heads) < 1:
            raise ValueError("in_channels, out_channels, num_relations and heads must be "
                             "positive")
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)) \
                or not math.isfinite(negative_slope):
            raise ValueError(f"negative_slope must be a finite number, got {negative_slope!r}")
        width = heads * out_channels
        check_parameter_memory(
            "RGATConv", f"in_channels={in_channels}, out_channels={out_channels}, "
            f"num_relations={num_relations}, heads={heads}, num_bases={num_bases}, "
            f"num_blocks={num_blocks}",
            *relation_shapes(num_relations, in_channels, width, num_bases, num_blocks),
            (num_relations, width), (num_relations, width),
            (width if concat else out_channels,))
        self.in_channels, self.out_channels = in_channels, out_channels
        self.num_relations, self.heads = num_relations, heads
        self.concat, self.negative_slope = concat, float(negative_slope)
        relation_parameters(self, num_relations, in_channels, width, num_bases, num_blocks,
                            basis_name="basis", coeff_name="att")
        self.att_src = torch.nn.Parameter(torch.empty(num_relations, width))
        self.att_dst = torch.nn.Parameter(torch.empty(num_relations, width))
        if bias:
            self.bias = torch.nn.Parameter(torch.empty(width if concat else out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        reset_relation_parameters(self)
        # Each head's attention vector is a [C, 1] map: Glorot over (C, 1).
        bound = math.sqrt(6.0 / (self.out_channels + 1))
        with torch.no_grad():
            self.att_src.uniform_(-bound, bound)
            self.att_dst.uniform_(-bound, bound)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def _spec_args(self) -> dict:
        args = {"width": self.in_channels, "out_width": self.heads * self.out_channels,
                "heads": self.heads}
        if self.negative_slope != 0.2:
            args["negative_slope"] = self.negative_slope
        return args

    def forward(self, x, edge_index, edge_type=None, edge_attr=None, size=None,
                return_attention_weights=None):
        for name, value in (("edge_attr", edge_attr), ("size", size),
                            ("return_attention_weights", return_attention_weights)):
            if value is not None:
                raise NotImplementedError(f"hector.nn.RGATConv.forward does not support "
                                          f"{name}")
        if x is None or isinstance(x, (tuple, list)) or (
                isinstance(x, torch.Tensor) and not x.is_floating_point()):
            raise NotImplementedError(
                "hector.nn.RGATConv needs node features x [N, in_channels]: featureless "
                "(x=None or node ids) and bipartite (tuple) x are not supported; pass "
                "embeddings as features (e.g. torch.nn.Embedding(N, in_channels).weight), "
                "or use hector.nn.RGCNConv, which takes them")
        x = check_features("RGATConv", x, self.in_channels)
        edges = _adjacency.edges("RGATConv", edge_index, edge_type, device=x.device)
        if edges.features:
            raise NotImplementedError(
                "hector.nn.RGATConv does not support edge features: the sparse adjacency "
                "holds [E, F] values (PyG reads them as edge_attr); store the relation ids "
                "as its values, or give edge_index [2, E] with edge_type")
        _adjacency.check_size("RGATConv", edges, x.size(0), x.size(0))
        pre = relational_graph(edges, x.size(0), x.size(0), self.num_relations, x.device)
        weight = relation_weight(self, self.num_relations, self.in_channels,
                                 self.heads * self.out_channels)
        lib = self.library(x.device, self.needs_grad(x))
        out, = autograd.run(lib, "rgat", pre, synchronize=self.synchronize,
                            check_indices=False, h=x, W=weight,
                            a=self.att_src, b=self.att_dst)
        if not self.concat:
            out = out.view(x.size(0), self.heads, self.out_channels).mean(dim=1)
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, heads={self.heads}, "
                f"num_relations={self.num_relations}")

"""hector.nn.RGATConv: relational graph attention (BRIEF.md §4) with PyG's arguments."""

# No `from __future__ import annotations`: torch.jit.script reads forward's
# annotations (and those of the ignored _forward) as objects.
import math
from typing import Any, Optional

import torch

from .. import autograd, models
from . import _adjacency
from ._base import (CompiledLayer, check_features, check_parameter_memory, eager_layer,
                    glorot_, reject_options, relation_parameters, relation_shapes, relation_weight,
                    relational_graph, reset_relation_parameters)


_MODS = ("additive", "scaled", "f-additive", "f-scaled")
_MODES = {"additive-self-attention": "additive", "multiplicative-self-attention": "multiplicative"}


def draw_seed(device) -> torch.Tensor:
    """A seed for hgraph.dropout's mask, int64 [1] on `device`, drawn from
    torch's default CPU generator (torch.manual_seed makes a run repeat)."""
    return torch.empty(1, dtype=torch.int64, device="cpu").random_().to(device)


class RGATConv(CompiledLayer):
    r"""Relational graph attention as BRIEF.md §4 defines it, with PyG 2.8's
    RGATConv constructor and forward arguments. Per head h (C = out_channels
    features each), on every edge e = (s → t) of relation r:

        z_e     = x_s · W_r                                 ([H·C], head blocks of C)
        s_src   = att_src_r · z_e,  s_dst = att_dst_r · (x_t · W_r)    (per head block)
        s_edge  = att_edge_r · (edge_attr_e · lin_edge.weightᵀ)        (with edge_dim)
        score_e = LeakyReLU(s_src + s_dst [+ s_edge])   attention_mode='additive-self-attention'
                  s_src · s_dst [· s_edge]              'multiplicative-self-attention'
        α_e     = softmax of score_e over all incoming edges of t (across relations),
                  or over those of relation r ('within-relation')
        out_t   = Σ_e α_e z_e          concat: [H·C]; concat=False: mean over heads

    plus bias, and with PyG's cardinality-preserving `mod` (deg_t: in-degree
    of t over all relations; w, l1, b1, l2, b2 as PyG's, shared by the heads):
    'additive' out_t += w ⊙ Σ_e z_e; 'scaled' out_t ⊙= relu(deg_t·l1 + b1)·l2 + b2;
    'f-additive' α_e + 1 where α_e > 0; 'f-scaled' α_e · deg_t. Every variant is
    a model of its own (hector.models.rgat: mode, mod, edge_dim, alpha, within).
    With dim = D > 1 (multiplicative mode only, as PyG) every head has D
    scores, each with its own attention vectors, and the output has H·D·C
    features ((head, d) blocks of C: α_e,h,d z_e,h), D·C with concat=False;
    it is compiled as H·D heads, W_r's head blocks repeated D times in torch
    (so the typed GEMM does D times the work of z).

    It differs from PyG's RGATConv in its attention parameters: PyG scores
    an edge with q_t + k_s (or q_t · k_s), where q = (x_t W_r) Q and
    k = (x_s W_r) K mix all H·C features into each head's score through Q
    and K ([H·C, H]) shared by all relations (likewise its e for edge
    features); here each relation has its own attention vectors att_src,
    att_dst (and att_edge) [R, H·D·C], and a head's score reads only that
    head's C features. Parameters: weight (or basis + att, or blocks, as in
    PyG), att_src, att_dst, bias; lin_edge (PyG's: a bias-free Linear) and
    att_edge with edge_dim; w with mod='additive'; l1, b1, l2, b2 with
    mod='scaled' (l2 starts at 1/C, which PyG means to do but does not: its
    l2 is left uninitialised). PyG's q, k and e do not exist, so a PyG
    state_dict does not load.

    Supported: heads, concat, negative_slope (compiled into the library),
    num_bases, num_blocks, bias, mod, attention_mechanism, attention_mode,
    dim, edge_dim, dropout (in training mode, as PyG's F.dropout of α after
    the softmax: each coefficient α_e,h is zeroed with probability p and the
    others scaled by 1/(1−p), compiled into the kernels as hgraph.dropout,
    whose mask is a hash of a seed, the caller's edge index and the head,
    the seed drawn per call from torch's CPU generator, so torch.manual_seed
    repeats it; the mask differs from PyG's, whose comes from torch's
    generator directly); in forward, edge_index [2, E] with
    edge_type, or a sparse adjacency adj_t [N, N] (torch.sparse COO/CSR/CSC,
    torch_sparse.SparseTensor) whose integer values are the edge types when
    edge_type is None (hector.nn._adjacency); edge_attr [E, edge_dim] (or
    [E] when edge_dim is 1, or one row per relation, PyG's index_select by
    edge_type) when edge_dim is set, or else a sparse adj_t's [E, F] values
    (PyG's reading; the relations then come from edge_type);
    return_attention_weights (a bool: the result is (out, (edge_index, α))
    with α [E, heads·dim] before `mod` and before dropout (PyG's _alpha), in
    the caller's edge order; for a
    torch.sparse adjacency (out, (adj_t with values α, α)), for a
    SparseTensor (out, adj_t with values α), as PyG); size when it repeats
    x's node count ((N, N), entries may be None: all PyG allows for one x).
    'within-relation' is compiled with the edge softmax grouped by
    (destination, relation), `hgraph.edge_softmax ... by_type`: O(E·H) work
    (hector.models.rgat's `within`). Not supported (NotImplementedError): in forward, x=None or
    node ids (featureless) and bipartite x.
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
        if attention_mechanism not in ("across-relation", "within-relation"):
            raise ValueError(f"attention_mechanism must be 'within-relation' or "
                             f"'across-relation', got {attention_mechanism!r}")
        if attention_mode not in _MODES:
            raise ValueError(f"attention_mode must be 'additive-self-attention' or "
                             f"'multiplicative-self-attention', got {attention_mode!r}")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        if dim > 1 and attention_mode == "additive-self-attention":
            raise ValueError("attention_mode='additive-self-attention' needs dim=1 (PyG: use "
                             "'multiplicative-self-attention' for dim > 1)")
        if mod is not None and mod not in _MODS:
            raise ValueError(f"mod must be None or one of {', '.join(map(repr, _MODS))}, "
                             f"got {mod!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout must be a probability in [0, 1], got {dropout!r}")
        if dropout > 0 and mod is not None:
            raise ValueError("mod must be None when dropout > 0 (as in PyG: dropout samples "
                             "the attention coefficients, mod rescales them)")
        if edge_dim is not None and (isinstance(edge_dim, bool) or not isinstance(edge_dim, int)
                                     or edge_dim < 1):
            raise ValueError(f"edge_dim must be None or a positive integer, got {edge_dim!r}")
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
        att_width = width * dim  # one C-vector per (head, dim) pair and relation
        extra = []
        if edge_dim is not None:
            extra += [(width, edge_dim), (num_relations, att_width)]
        if mod == "additive":
            extra.append((out_channels,))
        elif mod == "scaled":
            extra += [(1, out_channels), (1, out_channels), (out_channels, out_channels),
                      (1, out_channels)]
        check_parameter_memory(
            "RGATConv", f"in_channels={in_channels}, out_channels={out_channels}, "
            f"num_relations={num_relations}, heads={heads}, num_bases={num_bases}, "
            f"num_blocks={num_blocks}, edge_dim={edge_dim}",
            *relation_shapes(num_relations, in_channels, width, num_bases, num_blocks),
            (num_relations, att_width), (num_relations, att_width),
            (att_width if concat else dim * out_channels,), *extra)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.num_relations, self.heads = num_relations, heads
        self.concat, self.negative_slope = concat, float(negative_slope)
        self.mod, self.attention_mechanism, self.attention_mode = mod, attention_mechanism, \
            attention_mode
        self.dim, self.dropout, self.edge_dim = dim, float(dropout), edge_dim
        relation_parameters(self, num_relations, in_channels, width, num_bases, num_blocks,
                            basis_name="basis", coeff_name="att")
        self.att_src = torch.nn.Parameter(torch.empty(num_relations, att_width))
        self.att_dst = torch.nn.Parameter(torch.empty(num_relations, att_width))
        if edge_dim is not None:
            self.lin_edge = torch.nn.Linear(edge_dim, width, bias=False)
            self.att_edge = torch.nn.Parameter(torch.empty(num_relations, att_width))
        else:
            self.lin_edge = None
            self.register_parameter("att_edge", None)
        if mod == "additive":
            self.w = torch.nn.Parameter(torch.empty(out_channels))
        elif mod == "scaled":
            self.l1 = torch.nn.Parameter(torch.empty(1, out_channels))
            self.b1 = torch.nn.Parameter(torch.empty(1, out_channels))
            self.l2 = torch.nn.Parameter(torch.empty(out_channels, out_channels))
            self.b2 = torch.nn.Parameter(torch.empty(1, out_channels))
        if bias:
            self.bias = torch.nn.Parameter(torch.empty(att_width if concat
                                                       else dim * out_channels))
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
            if self.att_edge is not None:
                self.att_edge.uniform_(-bound, bound)
                glorot_(self.lin_edge.weight)
            if self.mod == "additive":
                self.w.fill_(1.0)
            elif self.mod == "scaled":  # PyG's: l1 ones, b1 and b2 zeros, l2 1/C (see above)
                self.l1.fill_(1.0)
                self.b1.zero_()
                self.l2.fill_(1.0 / self.out_channels)
                self.b2.zero_()
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def _spec_args(self, edge_input: bool = True, attention: bool = False,
                   dropout: bool = False) -> dict:
        # dim > 1: each (head, dim) pair is a head of the compiled model
        args = {"width": self.in_channels,
                "out_width": self.heads * self.dim * self.out_channels,
                "heads": self.heads * self.dim}
        if self.negative_slope != 0.2:
            args["negative_slope"] = self.negative_slope
        if _MODES[self.attention_mode] != "additive":
            args["mode"] = _MODES[self.attention_mode]
        if self.mod is not None:
            args["mod"] = self.mod
        if self.edge_dim is not None and edge_input:
            args["edge_dim"] = self.edge_dim
        if attention:
            args["alpha"] = "yes"
        if self.attention_mechanism == "within-relation":
            args["within"] = self.num_relations
        if dropout and self.dropout > 0:
            args["dropout"] = self.dropout
        return args

    def spec_for(self, edge_attr: bool = True, return_attention_weights: bool = False,
                 training: bool = False) -> str:
        """The model spec of the library a forward uses: model_spec when it
        gets edge_attr (if edge_dim is set) and no return_attention_weights;
        a forward without edge_attr compiles the variant without the edge
        term (PyG then adds nothing), return_attention_weights one that
        also returns α, and training mode with dropout > 0 one that drops
        attention coefficients (hgraph.dropout, a seed argument)."""
        return models.spec(self.model, **self._spec_args(edge_attr, return_attention_weights,
                                                         training))

    # Typed for torch.jit.script (CompiledLayer); the result is out, or with
    # return_attention_weights (out, (edge_index, α)) or (out, adj_t).
    def forward(self, x: Any, edge_index: Any, edge_type: Optional[torch.Tensor] = None,
                edge_attr: Optional[torch.Tensor] = None, size: Any = None,
                return_attention_weights: Any = None) -> Any:
        return self._forward(x, edge_index, edge_type, edge_attr, size, return_attention_weights)

    @torch.jit.ignore
    def _forward(self, x: Any, edge_index: Any, edge_type: Optional[torch.Tensor] = None,
                 edge_attr: Optional[torch.Tensor] = None, size: Any = None,
                 return_attention_weights: Any = None) -> Any:
        return eager_layer(self)._run(x, edge_index, edge_type, edge_attr, size,
                                      return_attention_weights)

    def _run(self, x, edge_index, edge_type, edge_attr, size, return_attention_weights):
        if return_attention_weights is not None and not isinstance(return_attention_weights,
                                                                   bool):
            raise TypeError(f"return_attention_weights must be None or a bool (either asks "
                            f"for the weights, as in PyG), got {return_attention_weights!r}")
        if x is None or isinstance(x, (tuple, list)) or (
                isinstance(x, torch.Tensor) and not x.is_floating_point()):
            raise NotImplementedError(
                "hector.nn.RGATConv needs node features x [N, in_channels]: featureless "
                "(x=None or node ids) and bipartite (tuple) x are not supported; pass "
                "embeddings as features (e.g. torch.nn.Embedding(N, in_channels).weight), "
                "or use hector.nn.RGCNConv, which takes them")
        x = check_features("RGATConv", x, self.in_channels)
        edges = _adjacency.edges("RGATConv", edge_index, edge_type, device=x.device)
        if edges.features and edge_attr is None:  # PyG reads [E, F] values as edge_attr
            if self.edge_dim is None:
                raise ValueError(
                    "hector.nn.RGATConv got a sparse adjacency with [E, F] values, which PyG "
                    "reads as edge_attr, but has no edge_dim: construct it with edge_dim=F, "
                    "or store the relation ids as its values")
            edge_attr = edges.values
        _adjacency.check_size("RGATConv", edges, x.size(0), x.size(0))
        if size is not None and (len(size) != 2 or any(
                s is not None and s != x.size(0) for s in size)):
            raise ValueError(f"hector.nn.RGATConv: size={size!r}, but x has {x.size(0)} "
                             f"nodes, which are both the sources and the destinations")
        num_edges = edges.index.size(1)
        if edge_attr is not None:
            edge_attr = self._edge_features(edge_attr, edges.edge_type, num_edges, x.device)
        pre = relational_graph(edges, x.size(0), x.size(0), self.num_relations, x.device)
        weight = relation_weight(self, self.num_relations, self.in_channels,
                                 self.heads * self.out_channels)
        tensors = {"h": x, "W": self._per_dim(weight), "a": self.att_src, "b": self.att_dst}
        perm = None
        if edge_attr is not None or return_attention_weights is not None:
            perm = pre.edge_perm  # int32: numpy (read-only) on the CPU, a tensor on a GPU
            perm = perm.long() if isinstance(perm, torch.Tensor) else \
                torch.from_numpy(perm.astype("int64"))
        if edge_attr is not None:  # the library reads edges in the graph's canonical order
            tensors.update(ea=edge_attr[perm], We=self._per_dim(self.lin_edge.weight.t()),
                           c=self.att_edge)
        heads = self.heads * self.dim
        if self.mod == "additive":
            tensors["w"] = self.w.repeat(heads)
        elif self.mod == "scaled":  # the heads share l2, b2: tiled to [C, H·C], [H·C]
            tensors.update(l1=self.l1, b1=self.b1.view(-1), l2=self.l2.repeat(1, heads),
                           b2=self.b2.view(-1).repeat(heads))
        attention = return_attention_weights is not None
        dropout = self.training and self.dropout > 0
        if dropout:  # PyG's F.dropout(α, p, training): a new mask per call
            tensors["seed"] = draw_seed(x.device)
        spec = self.spec_for(edge_attr is not None, attention, dropout)
        lib = self.library(x.device, self.needs_grad(x, *tensors.values()), spec)
        results = autograd.run(lib, "rgat", pre, synchronize=self.synchronize,
                               check_indices=False, **tensors)
        out = results[0]
        if not self.concat:
            out = out.view(x.size(0), self.heads, self.dim * self.out_channels).mean(dim=1)
        if self.bias is not None:
            out = out + self.bias
        if not attention:
            return out
        # α in the caller's edge order: canonical edge c is the caller's edge perm[c].
        alpha = results[1].new_empty(results[1].shape).index_copy(0, perm, results[1])
        if _adjacency.is_sparse(edge_index):
            return out, _adjacency.with_values(edge_index, alpha)
        return out, (edge_index, alpha)

    def _per_dim(self, matrix: torch.Tensor) -> torch.Tensor:
        """[..., H·C] -> [..., H·dim·C]: head h's C columns repeated dim times
        (layout: PyG's (head, dim) message is head h's z times α of the pair)."""
        if self.dim == 1:
            return matrix
        shape = matrix.shape[:-1]
        return matrix.reshape(*shape, self.heads, 1, self.out_channels).expand(
            *shape, self.heads, self.dim, self.out_channels).reshape(*shape, -1)

    def _edge_features(self, edge_attr, edge_type, num_edges, device) -> torch.Tensor:
        """edge_attr as [E, edge_dim] float32 rows in the caller's edge order."""
        if self.edge_dim is None:
            raise ValueError("hector.nn.RGATConv got edge_attr but has no edge_dim: construct "
                             "it with edge_dim=edge_attr.size(-1)")
        if not isinstance(edge_attr, torch.Tensor):
            raise TypeError(f"edge_attr must be a tensor, got {type(edge_attr).__name__}")
        if edge_attr.dim() == 1:
            edge_attr = edge_attr.view(-1, 1)
        edge_attr = check_features("RGATConv", edge_attr, self.edge_dim, what="edge_attr")
        if edge_attr.device != device:
            raise ValueError(f"edge_attr is on {edge_attr.device} but x is on {device}")
        if edge_attr.size(0) != num_edges:  # PyG: one row per relation, picked by edge_type
            if edge_attr.size(0) != self.num_relations:
                raise ValueError(
                    f"edge_attr has {edge_attr.size(0)} rows: give one per edge ({num_edges}) "
                    f"or one per relation ({self.num_relations})")
            edge_attr = edge_attr[edge_type.long()]
        return edge_attr

    def __repr__(self) -> str:  # PyG's: no num_relations, no submodules (lin_edge)
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"

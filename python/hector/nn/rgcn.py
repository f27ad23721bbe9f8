"""hector.nn.RGCNConv: PyG's RGCNConv (aggr='mean' or 'add') computed by a hector library."""

# No `from __future__ import annotations`: torch.jit.script reads forward's
# annotations (and those of the ignored _forward) as objects.
from typing import Any, Optional

import torch

from .. import autograd, models
from . import _adjacency
from ._base import (CompiledLayer, check_endpoints, check_features, check_parameter_memory,
                    eager_layer, first_out_of_range, glorot_, graph_cache, preprocess,
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
    PyG state_dict loads.

    Inputs, as PyG's:
    - edge_index [2, E] with edge_type [E], or a sparse adjacency adj_t
      [num destinations, num sources] (torch.sparse COO/CSR/CSC, or
      torch_sparse.SparseTensor) whose integer values are the edge types
      when edge_type is None (hector.nn._adjacency).
    - x [N, in]: features.
    - x=None or node ids (featureless; in_channels is the number of nodes):
      the message of s → t under r is row s of W_r (row x[s] for ids) and the
      root term is row t of root. Computed by the compiled layer of
      `featureless_model_spec`, whose source nodes are the distinct
      (relation, row) pairs of the edges with features W_r[row] (a torch
      gather of weight rows) and whose relation and root weights are
      identities; no N × N matrix is built. num_blocks is refused there, as
      in PyG.
    - in_channels=(in_src, in_dst) with x=(x_src, x_dst) (bipartite): messages
      from x_src, root term from x_dst, one output row per x_dst row; or
      x=(None or source ids, destination ids). The compiled layer sees the
      sources and destinations as one node set (destination ids offset by the
      number of sources), features zero-padded to max(in_src, in_dst) columns
      (the weights with zero rows to match); the root product of the source
      rows is computed and dropped.

    Not supported (NotImplementedError): aggr other than 'mean' and
    'add'/'sum', lazy in_channels (-1), other MessagePassing options;
    mixing features and ids in x=(x_src, x_dst).
    """

    model = "rgcn"

    def __init__(self, in_channels, out_channels: int, num_relations: int,
                 num_bases=None, num_blocks=None, aggr: str = "mean",
                 root_weight: bool = True, is_sorted: bool = False, bias: bool = True,
                 **kwargs):
        super().__init__()
        reject_options("RGCNConv", kwargs)
        pair = in_channels if isinstance(in_channels, tuple) else (in_channels, in_channels)
        if len(pair) != 2 or any(not isinstance(c, int) or isinstance(c, bool) or c == -1
                                 for c in pair):
            raise NotImplementedError(
                f"hector.nn.RGCNConv needs in_channels as an int or a pair of ints "
                f"(in_src, in_dst); lazy inputs (-1) are not supported, got {in_channels!r}")
        if not isinstance(aggr, str) or aggr not in AGGREGATIONS:
            raise NotImplementedError(
                f"hector.nn.RGCNConv computes aggr='mean' (each relation's messages "
                f"divided by that relation's in-degree) or aggr='add' (also 'sum': "
                f"summed), got aggr={aggr!r}")
        if min(*pair, out_channels, num_relations) < 1:
            raise ValueError("in_channels, out_channels and num_relations must be positive")
        in_l, in_r = pair
        check_parameter_memory(
            "RGCNConv", f"in_channels={in_channels}, out_channels={out_channels}, "
            f"num_relations={num_relations}, num_bases={num_bases}, num_blocks={num_blocks}",
            *relation_shapes(num_relations, in_l, out_channels, num_bases, num_blocks),
            (in_r, out_channels), (out_channels,))
        self.in_channels, self.out_channels = in_channels, out_channels
        self.in_channels_l, self.in_channels_r = in_l, in_r
        self.num_relations = num_relations
        self.aggr, self.is_sorted = aggr, is_sorted
        relation_parameters(self, num_relations, in_l, out_channels, num_bases, num_blocks)
        if root_weight:
            self.root = torch.nn.Parameter(torch.empty(in_r, out_channels))
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
        # Bipartite inputs are zero-padded to the wider side.
        args = {"width": max(self.in_channels_l, self.in_channels_r),
                "out_width": self.out_channels}
        if AGGREGATIONS[self.aggr] != "mean":
            args["aggr"] = AGGREGATIONS[self.aggr]
        return args

    @property
    def featureless_model_spec(self) -> str:
        """The spec of the library that computes featureless inputs (x=None
        or node ids): width = out_width = out_channels."""
        args = dict(self._spec_args(), width=self.out_channels)
        return models.spec(self.model, **args)

    # Typed for torch.jit.script (CompiledLayer): x is features [N, in], node
    # ids, None, or a pair of those; edge_index a tensor or a SparseTensor.
    def forward(self, x: Any, edge_index: Any,
                edge_type: Optional[torch.Tensor] = None) -> torch.Tensor:
        return self._forward(x, edge_index, edge_type)

    @torch.jit.ignore
    def _forward(self, x: Any, edge_index: Any,
                 edge_type: Optional[torch.Tensor] = None) -> torch.Tensor:
        return eager_layer(self)._run(x, edge_index, edge_type)

    def _run(self, x, edge_index, edge_type):
        pair = isinstance(x, tuple)  # PyG's test for bipartite x
        if pair and len(x) != 2:
            raise ValueError(f"RGCNConv: x as a tuple must be (x_src, x_dst), got {len(x)} items")
        x_src, x_dst = x if pair else (x, x)
        if x_src is None or _ids(x_src):
            return self._featureless(x_src, x_dst, pair, edge_index, edge_type)
        if x_dst is None or _ids(x_dst):
            raise NotImplementedError(
                "hector.nn.RGCNConv does not mix source features with destination node ids "
                "in x=(x_src, x_dst): give both as features, or x_src=None (or source ids) "
                "with destination ids")
        x_src = check_features("RGCNConv", x_src, self.in_channels_l,
                               "x[0]" if pair else "x")
        if pair:
            x_dst = check_features("RGCNConv", x_dst, self.in_channels_r, "x[1]")
            if x_dst.device != x_src.device:
                raise ValueError(f"RGCNConv: x[1] is on {x_dst.device}, x[0] on {x_src.device}")
        elif self.in_channels_l != self.in_channels_r:
            raise ValueError(f"RGCNConv({self.in_channels}) takes x=(x_src, x_dst)")
        device = x_src.device
        edges = _adjacency.edges("RGCNConv", edge_index, edge_type, device=device)
        n_src, n_dst = x_src.size(0), x_dst.size(0)
        _adjacency.check_size("RGCNConv", edges, n_src, n_dst)
        pre = relational_graph(edges, n_src, n_dst, self.num_relations, device,
                               sources_apart=pair)
        weight = relation_weight(self, self.num_relations, self.in_channels_l,
                                 self.out_channels)
        # Without a root weight the compiled RGCN still adds x · W0: with W0 = 0.
        root = self.root if self.root is not None else x_dst.new_zeros(
            self.in_channels_r, self.out_channels)
        h = x_src
        if pair:  # one node set: sources, then destinations, padded to one width
            width = max(self.in_channels_l, self.in_channels_r)
            h = torch.cat([_pad_columns(x_src, width), _pad_columns(x_dst, width)])
            weight = _pad_rows(weight, width)
            root = _pad_rows(root, width)
        lib = self.library(device, self.needs_grad(x_src, x_dst))
        out, = autograd.run(lib, "rgcn", pre, synchronize=self.synchronize,
                            check_indices=False, h=h, W=weight, W0=root)
        if pair:
            out = out[n_src:]
        if self.bias is not None:
            out = out + self.bias
        return out

    def _featureless(self, ids_src, ids_dst, pair, edge_index, edge_type):
        """x=None or node ids: see the class docstring."""
        if self.num_blocks is not None:
            raise ValueError("RGCNConv: block-diagonal decomposition (num_blocks) is not "
                             "supported for featureless inputs (x=None or node ids), as in PyG")
        device = self.weight.device  # the basis with num_bases: PyG's names
        in_l, in_r, r, out_width = (self.in_channels_l, self.in_channels_r,
                                    self.num_relations, self.out_channels)
        if ids_src is not None:
            _check_ids("RGCNConv", "x[0]" if pair else "x", ids_src, in_l, "rows of weight",
                       device)
        if pair:
            if not _ids(ids_dst):
                raise NotImplementedError(
                    "hector.nn.RGCNConv does not mix featureless sources with destination "
                    "features in x=(x_src, x_dst): give destination node ids (rows of root), "
                    "or features on both sides")
            _check_ids("RGCNConv", "x[1]", ids_dst, in_r, "rows of root", device)
        elif self.root is not None and in_l != in_r:  # node t's root term is row t of root
            raise ValueError(f"RGCNConv({self.in_channels}) takes x=(x_src, x_dst) with "
                             "destination ids")
        num_src = in_l if ids_src is None else ids_src.numel()
        num_dst = ids_dst.numel() if pair else num_src
        edges = _adjacency.edges("RGCNConv", edge_index, edge_type, device=device)
        _adjacency.check_size("RGCNConv", edges, num_src, num_dst)
        index, etype = edges.index, edges.edge_type

        def build():
            check_endpoints("edge_index", index, num_src, num_dst)
            types = etype.to(torch.int64)
            if first_out_of_range([(types, r)]) >= 0:
                bad = types[(types < 0) | (types >= r)][0]
                raise ValueError(f"edge_type holds relation {int(bad)}, but num_relations "
                                 f"is {r}")
            src = index[0].to(torch.int64)
            rows = src if ids_src is None else ids_src.to(torch.int64)[src]
            # One source node per distinct (relation, weight row) of the edges.
            pairs, inverse = torch.unique(types * in_l + rows, return_inverse=True)
            n = pairs.numel() + num_dst
            pre = preprocess(device, torch.zeros(n, dtype=torch.int64, device=device),
                             inverse.view(-1), index[1].to(torch.int64) + pairs.numel(),
                             types, 1, r)
            return pre, pairs

        tensors = (index, etype) if ids_src is None else (index, etype, ids_src)
        pre, pairs = graph_cache.get(
            tensors, ("featureless", num_src, num_dst, in_l, r, str(device)), build)
        weight = relation_weight(self, r, in_l, out_width)
        sources = weight.reshape(r * in_l, out_width)[pairs]
        if self.root is None:
            dests = sources.new_zeros(num_dst, out_width)
        elif pair or ids_src is not None:
            dests = self.root[ids_dst if pair else ids_src]
        else:
            dests = self.root[:num_dst]
        eye = torch.eye(out_width, dtype=sources.dtype, device=device)
        lib = self.library(device, self.needs_grad(), spec=self.featureless_model_spec)
        out, = autograd.run(lib, "rgcn", pre, synchronize=self.synchronize,
                            check_indices=False, h=torch.cat([sources, dests]),
                            W=eye.expand(r, out_width, out_width), W0=eye)
        out = out[pairs.numel():]
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, "
                f"num_relations={self.num_relations}")


def _ids(x) -> bool:
    """Node ids (PyG: any x that is not floating point) rather than features."""
    return isinstance(x, torch.Tensor) and not x.is_floating_point() and not x.is_complex()


def _check_ids(layer, what, ids, bound, rows_of, device):
    if ids.dim() != 1:
        raise ValueError(f"{layer}: {what} as node ids must be one-dimensional, got shape "
                         f"{tuple(ids.shape)}")
    if ids.device != device:
        raise ValueError(f"{layer}: {what} is on {ids.device} but the parameters on {device}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= bound):
        bad = ids[(ids < 0) | (ids >= bound)][0]
        raise ValueError(f"{layer}: {what} holds node id {int(bad)}, but there are {bound} "
                         f"{rows_of}")


def _pad_columns(x, width):
    return torch.nn.functional.pad(x, (0, width - x.size(1))) if x.size(1) < width else x


def _pad_rows(w, width):
    """[..., in, out] -> [..., width, out] with zero rows."""
    return torch.nn.functional.pad(w, (0, 0, 0, width - w.size(-2))) \
        if w.size(-2) < width else w


class FastRGCNConv(RGCNConv):
    """PyG's FastRGCNConv: the same arguments, parameters and function as
    RGCNConv (PyG computes it with one message per edge, trading memory for
    speed; hector compiles both to the same library)."""

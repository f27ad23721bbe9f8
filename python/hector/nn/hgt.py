"""hector.nn.HGTConv: PyTorch Geometric 2.8's HGTConv (arguments and function), compiled."""

from __future__ import annotations

import math

import torch

from .. import autograd
from . import _adjacency
from ._base import (CompiledLayer, check_parameter_memory, first_out_of_range, graph_cache,
                    preprocess, reject_options)


def _lazy(p) -> bool:
    return isinstance(p, torch.nn.parameter.UninitializedParameter)


def _uniform_fan_in(tensor: torch.Tensor, fan_in: int) -> None:
    """U(±1/√fan_in): torch.nn.Linear's (and PyG's Linear's) default for
    its weight (kaiming_uniform with a = √5) and its bias alike."""
    bound = 1.0 / math.sqrt(fan_in)
    with torch.no_grad():
        tensor.uniform_(-bound, bound)


class _TypeWeights(torch.nn.ParameterList):
    """One weight [in_τ, d] per node type, in metadata order. A type whose
    in_channels is -1 holds an UninitializedParameter until the first
    forward with features of that type (as PyG's lazy Linear), or until a
    state dict holding its weight is loaded; a state dict taken before that
    holds the uninitialized parameter as is."""

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or _lazy(p) else p.detach()

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for name, p in self._parameters.items():
            given = state_dict.get(prefix + name)
            if _lazy(p) and isinstance(given, torch.Tensor) and not _lazy(given):
                with torch.no_grad():
                    p.materialize(given.shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class HGTConv(CompiledLayer):
    r"""PyTorch Geometric 2.8's HGTConv: its constructor (in_channels,
    out_channels, metadata, heads), forward (x_dict, edge_index_dict -> dict)
    and function. With d = out_channels, H heads of D = d/H features, τ the
    node type and φ the edge type:

        k_s = x_s · K_τ(s) + bK_τ(s),  q_t = x_t · Q_τ(t) + bQ_τ(t),
        v_s = x_s · V_τ(s) + bV_τ(s)                                       ([d])
        score_e = (k_s · k_rel_φ(e)) · q_t · p_rel_φ(e) / √D               (per head)
        α_e = softmax of score_e over all incoming edges of t
        a_t = GELU(Σ_e α_e · v_s · v_rel_φ(e)) · A_τ(t) + bA_τ(t)          (exact GELU)
        out_t = σ(skip_τ(t)) · a_t + (1 − σ(skip_τ(t))) · x_t

    where the gated residual applies, as in PyG, only to the node types
    whose input width equals out_channels (the others: out_t = a_t). A node
    with no incoming edges gets GELU(0)·A + bA = bA, gated with x_t where
    the widths match. As in PyG, the result holds the node types of x_dict
    that are the destination of some edge type of the metadata, and edge
    types of the metadata missing from edge_index_dict contribute nothing.

    in_channels is one width for every node type, a dict {node type: width}
    (every type of the metadata), or -1 (in the dict too) to take a type's
    width from its features in the first forward that has them; its K/Q/V
    weights materialize then, as PyG's lazy linears do. Initialization is
    PyG's (reset_parameters).

    Parameters (PyG's names in docs/python.md; a PyG state_dict maps onto
    them, it does not load as is): k_weight, q_weight, v_weight [T, in, d]
    stacked by node type in metadata order when in_channels is one int, else
    one [in_τ, d] per node type (k_weight.0, k_weight.1, ...); k_bias,
    q_bias, v_bias, a_bias [T, d]; a_weight [T, d, d]; k_rel, v_rel
    [R, H, D, D]; p_rel [R, H]; skip [T]. All of the math goes through the
    compiled function (hector.models' hgt with form="pyg": the biases, the
    GELU and the gate are IR): where the node types' widths differ, their
    features and K/Q/V weights are zero-padded to the widest in torch
    (layout only: the padding adds zeros to the typed GEMMs) and the
    residual is the function's argument r (x_t or zeros by type) with a 0/1
    `keep` per type. An edge_index_dict value may be a sparse adj_t
    [destinations, sources] (torch.sparse COO/CSR/CSC or
    torch_sparse.SparseTensor; values unread). Not supported
    (NotImplementedError): other MessagePassing options.
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
        per_type = isinstance(in_channels, dict) or in_channels == -1
        if isinstance(in_channels, dict):
            if set(in_channels) != set(node_types):
                odd = [t for t in in_channels if t not in node_types]
                raise ValueError(
                    f"in_channels has node type {odd[0]!r}, which the metadata lacks" if odd
                    else f"in_channels lacks node type "
                    f"{[t for t in node_types if t not in in_channels][0]!r} of the metadata")
            widths = {t: in_channels[t] for t in node_types}
        else:
            widths = {t: in_channels for t in node_types}
        for t, width in widths.items():
            if isinstance(width, bool) or not isinstance(width, int) or \
                    (width < 1 and width != -1):
                raise ValueError(f"in_channels must be a positive int or -1 (lazy), per node "
                                 f"type or for all, got {width!r} for {t!r}")
        self.in_channels = dict(widths)  # as given (-1: lazy), like PyG's
        self.out_channels, self.heads = out_channels, heads
        self.node_types, self.edge_types = node_types, edge_types
        self.dst_node_types = {et[2] for et in edge_types}
        t, r, d, dh = len(node_types), len(edge_types), out_channels, out_channels // heads
        kqv = [(w, d) for w in widths.values() if w != -1] if per_type else \
            [(t, in_channels, d)]
        check_parameter_memory(
            "HGTConv", f"in_channels={in_channels}, out_channels={out_channels}, "
            f"heads={heads}, {t} node types, {r} edge types", *kqv * 3, (t, d, d),
            (r, heads, dh, dh), (r, heads, dh, dh), (r, heads), *[(t, d)] * 4, (t,))
        for name in ("k_weight", "q_weight", "v_weight"):
            if per_type:
                self.add_module(name, _TypeWeights([
                    torch.nn.parameter.UninitializedParameter() if w == -1
                    else torch.nn.Parameter(torch.empty(w, d)) for w in widths.values()]))
            else:
                self.register_parameter(name, torch.nn.Parameter(
                    torch.empty(t, in_channels, d)))
        self.a_weight = torch.nn.Parameter(torch.empty(t, d, d))
        self.k_rel = torch.nn.Parameter(torch.empty(r, heads, dh, dh))
        self.v_rel = torch.nn.Parameter(torch.empty(r, heads, dh, dh))
        self.p_rel = torch.nn.Parameter(torch.empty(r, heads))
        # PyG's biases of kqv_lin (split in thirds) and out_lin, and its skip.
        for name in ("k_bias", "q_bias", "v_bias", "a_bias"):
            self.register_parameter(name, torch.nn.Parameter(torch.empty(t, d)))
        self.skip = torch.nn.Parameter(torch.empty(t))
        self.reset_parameters()

    def reset_parameters(self):
        """PyG's initialization: every linear as torch.nn.Linear (weight and
        bias U(±1/√fan_in), fan_in the type's input width for K/Q/V, d for
        A, d/H for k_rel and v_rel), p_rel and skip ones. A lazy type's
        K/Q/V are initialized when they materialize; its biases are zero
        until then."""
        for i, width in enumerate(self._widths().values()):
            self._reset_projection(i, width)
        for p, fan_in in ((self.a_weight, self.out_channels), (self.a_bias, self.out_channels),
                          (self.k_rel, self.k_rel.size(-2)), (self.v_rel, self.v_rel.size(-2))):
            _uniform_fan_in(p, fan_in)
        torch.nn.init.ones_(self.p_rel)
        torch.nn.init.ones_(self.skip)

    def _reset_projection(self, i: int, width: int) -> None:
        """Node type i's K/Q/V weights and biases as PyG's kqv_lin.lins[τ]
        (a lazy type, width -1: zero biases, weights left to materialize)."""
        for weight, bias in (("k_weight", "k_bias"), ("q_weight", "q_bias"),
                             ("v_weight", "v_bias")):
            if width == -1:
                with torch.no_grad():
                    getattr(self, bias)[i].zero_()
                continue
            _uniform_fan_in(getattr(self, weight)[i], width)
            _uniform_fan_in(getattr(self, bias)[i], width)

    def _widths(self) -> dict:
        """{node type: input width} now: -1 for a lazy type not materialized yet."""
        if isinstance(self.k_weight, torch.nn.Parameter):
            return {t: self.k_weight.size(1) for t in self.node_types}
        return {t: -1 if _lazy(p) else p.size(0)
                for t, p in zip(self.node_types, self.k_weight)}

    def _materialize(self, x_dict) -> None:
        """PyG's lazy initialization: the K/Q/V weights of a lazy node type
        take the width of its features, Glorot-initialised."""
        for i, t in enumerate(self.node_types):
            if t in x_dict and _lazy(self.k_weight[i]):
                for name in ("k_weight", "q_weight", "v_weight"):
                    p = getattr(self, name)[i]
                    with torch.no_grad():
                        p.materialize((x_dict[t].size(1), self.out_channels),
                                      device=x_dict[t].device)
                self._reset_projection(i, x_dict[t].size(1))

    def _spec_args(self) -> dict:
        """The widest input (the width the compiled function reads), and
        residual='separate' where the widths differ but some type keeps its
        residual (its width is out_channels): the function then takes the
        residual as its argument r (models.hgt)."""
        widths = {w for w in self._widths().values() if w != -1}
        if not widths:
            raise ValueError("HGTConv(-1, ...) knows its input widths only after its first "
                             "forward (lazy in_channels)")
        args = {"width": max(widths), "out_width": self.out_channels, "heads": self.heads,
                "form": "pyg"}
        if len(widths) > 1 and self.out_channels in widths:
            args["residual"] = "separate"
        return args

    def _node_inputs(self, x_dict, device) -> dict:
        """The compiled function's h, K, Q, V (and r): node types' features
        and weights in metadata order, zero-padded to the widest input where
        the widths differ; r holds x_t for the node types whose width is
        out_channels and zeros for the others."""
        spec, d = self._spec_args(), self.out_channels
        t = len(self.node_types)
        inputs = {"bK": self.k_bias, "bQ": self.q_bias, "bV": self.v_bias, "bA": self.a_bias}
        if spec["width"] == d or spec.get("residual") == "separate":
            inputs["skip"] = self.skip.view(t, 1)
        if isinstance(self.k_weight, torch.nn.Parameter):
            x = torch.cat([x_dict[nt] for nt in self.node_types if nt in x_dict])
            return {"h": x, "K": self.k_weight, "Q": self.q_weight, "V": self.v_weight, **inputs}
        width = spec["width"]

        pad = torch.nn.functional.pad
        present = [nt for nt in self.node_types if nt in x_dict]
        inputs["h"] = torch.cat([pad(x_dict[nt], (0, width - x_dict[nt].size(1)))
                                 for nt in present])
        for arg, name in (("K", "k_weight"), ("Q", "q_weight"), ("V", "v_weight")):
            inputs[arg] = torch.stack([  # a lazy type not seen yet has no nodes here
                torch.zeros(width, d, device=device, dtype=torch.float32) if _lazy(p) else
                pad(p, (0, 0, 0, width - p.size(0))) for p in getattr(self, name)])
        if spec.get("residual") == "separate":
            inputs["r"] = torch.cat([
                x_dict[nt] if x_dict[nt].size(1) == d else
                x_dict[nt].new_zeros(x_dict[nt].size(0), d) for nt in present])
            # Which node types have the gated residual at all (width d).
            inputs["keep"] = torch.tensor([[float(w == d)] for w in self._widths().values()],
                                          device=device)
        return inputs

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
            rows = [(et, ei, row, nt) for et, ei in zip(keys, tensors)
                    for row, nt in ((0, et[0]), (1, et[2]))]
            i = first_out_of_range([(ei[row], sizes[nt]) for _, ei, row, nt in rows])
            if i >= 0:
                et, ei, row, nt = rows[i]
                ids, which = ei[row], ("source", "destination")[row]
                bad = ids[(ids < 0) | (ids >= sizes[nt])][0]
                raise ValueError(
                    f"edge_index_dict[{et!r}] holds {which} node {int(bad)}, but "
                    f"node type {nt!r} has {sizes[nt]} nodes")
            for et, ei in zip(keys, tensors):
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
        widths = self._widths()
        device = next(iter(x_dict.values())).device
        for nt, x in x_dict.items():
            d = widths[nt]  # -1: lazy, any width
            if not isinstance(x, torch.Tensor) or x.dim() != 2 or \
                    (x.size(1) != d if d != -1 else x.size(1) < 1):
                raise ValueError(f"x_dict[{nt!r}] must be a tensor [N, "
                                 f"{d if d != -1 else 'in_channels > 0'}], got "
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
        self._materialize(x_dict)
        lib = self.library(device, self.needs_grad(*x_dict.values()))
        out, = autograd.run(lib, "hgt", pre, synchronize=self.synchronize,
                            check_indices=False, **self._node_inputs(x_dict, device),
                            A=self.a_weight, Watt=self.k_rel, Wmsg=self.v_rel, mu=self.p_rel)
        return {nt: out[offsets[nt]:offsets[nt] + sizes[nt]]
                for nt in x_dict if nt in self.dst_node_types}

    def __repr__(self) -> str:  # PyG's, whatever in_channels is
        return f"{type(self).__name__}(-1, {self.out_channels}, heads={self.heads})"

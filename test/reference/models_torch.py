"""Differentiable PyTorch references of one RGCN, RGAT and HGT layer (BRIEF.md section 4).

The same math as models_numpy.py, written to be fast enough to serve as the
"PyTorch eager" benchmark contender and to compile under torch.compile:

* Typed linear layers never replicate a weight per edge and never loop over
  types in Python. Edges (and, for HGT, nodes) are sorted by type once, in
  TorchGraph, and each type's rows are padded to whole tiles of `tile` rows.
  Then one batched matmul multiplies every tile by its type's weight:
  a fixed number of operators whatever the number of types, with static shapes.
* Pad rows gather node 0 and scatter into a dummy node N that is dropped, so
  they never touch a result.
* Reductions over incoming edges use index_add / scatter_reduce (torch 1.13 and 2.x);
  gathers use index_select, whose backward is index_add.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from .params import PARAM_NAMES, graph_arrays, type_counts

# torch 1.13 flags scatter_reduce as beta on every call; the API we use is the stable 2.x one.
warnings.filterwarnings("ignore", message=r"scatter_reduce\(\) is in beta")


class TorchGraph:
    """A graph preprocessed for the torch references (done once, outside any timed region).

    float_dtype is the dtype of the stored RGCN norms: match it to the features.
    """

    def __init__(self, graph, device="cpu", tile=None, float_dtype=torch.float64):
        node_type, src, dst, etype = graph_arrays(graph)
        self.num_node_types, self.num_edge_types = type_counts(graph)
        if node_type.size and node_type.max() >= self.num_node_types:
            raise ValueError("node_type holds a type >= num_node_types")
        if etype.size and etype.max() >= self.num_edge_types:
            raise ValueError("etype holds a type >= num_edge_types")
        self.num_nodes, self.num_edges = int(node_type.shape[0]), int(src.shape[0])
        self.device = torch.device(device)
        self.edge_tile = tile or _pick_tile(self.num_edges, self.num_edge_types)
        self.node_tile = tile or _pick_tile(self.num_nodes, self.num_node_types)
        n = self.num_nodes

        # Edge rows: sorted by type, padded per type to whole tiles.
        order, rows, tile_type, num_rows = _tile_layout(etype, self.num_edge_types, self.edge_tile)
        src_p = np.zeros(num_rows, np.int64)
        dst_p = np.zeros(num_rows, np.int64)
        dst_scatter = np.full(num_rows, n, np.int64)  # pad rows land in the dummy node n
        src_p[rows], dst_p[rows], dst_scatter[rows] = src[order], dst[order], dst[order]
        # RGCN norm c_e = 1 / #edges sharing e's (destination, edge type); 0 on pad rows.
        norm = np.zeros(num_rows)
        if self.num_edges:
            _, which, count = np.unique(dst * self.num_edge_types + etype, return_inverse=True, return_counts=True)
            norm[rows] = 1.0 / count[which.reshape(-1)][order]
        # Node rows for node-typed linear layers (HGT).
        n_order, n_rows, n_tile_type, n_num_rows = _tile_layout(node_type, self.num_node_types, self.node_tile)
        node_p = np.zeros(n_num_rows, np.int64)
        node_p[n_rows] = n_order
        row_of_node = np.empty(n, np.int64)
        row_of_node[n_order] = n_rows

        to = lambda x: torch.as_tensor(x, device=self.device)  # noqa: E731
        self.src_p, self.dst_p, self.dst_scatter = to(src_p), to(dst_p), to(dst_scatter)
        self.edge_tile_type = to(tile_type)
        self.edge_row_type = to(np.repeat(tile_type, self.edge_tile))
        self.norm = torch.as_tensor(norm, dtype=float_dtype, device=self.device)
        self.node_p, self.node_tile_type, self.row_of_node = to(node_p), to(n_tile_type), to(row_of_node)

    # Bytes of the index arrays above: what a layer reads of the graph (for the benchmark's byte count).
    def index_bytes(self):
        return sum(t.numel() * t.element_size() for t in
                   (self.src_p, self.dst_p, self.dst_scatter, self.edge_tile_type))


def rgcn(g: TorchGraph, h, W, W0):
    """out[t] = h[t] @ W0 + sum_{e: dst=t} c_e (h[src e] @ W[etype e])."""
    _check(g, h, W.shape[1])
    msg = _edge_linear(g, _rows(h, g.src_p), W) * g.norm.to(h.dtype)[:, None]
    return h @ W0 + _scatter_sum(g, msg)


def rgat(g: TorchGraph, h, W, a, b, heads: int):
    """Per head: alpha = softmax_dst(leaky_relu(a.z_e + b.(h[dst] @ W))), out = sum alpha z_e."""
    _check(g, h, W.shape[1])
    dout = W.shape[2]
    dh = _head_size(dout, heads)
    z = _edge_linear(g, _rows(h, g.src_p), W)
    zt = _edge_linear(g, _rows(h, g.dst_p), W)
    tiles, rows = g.edge_tile_type.shape[0], z.shape[0]
    a_t, b_t = _rows(a, g.edge_tile_type)[:, None, :], _rows(b, g.edge_tile_type)[:, None, :]  # one per tile, not per edge
    score = (z.view(tiles, -1, dout) * a_t + zt.view(tiles, -1, dout) * b_t).view(rows, heads, dh).sum(2)
    alpha = edge_softmax(g, F.leaky_relu(score, 0.2))
    return _scatter_sum(g, (alpha[:, :, None] * z.view(rows, heads, dh)).view(rows, dout))


def hgt(g: TorchGraph, h, K, Q, V, A, Watt, Wmsg, mu):
    """score = (k_s Watt . q_t) mu / sqrt(d/H); alpha = softmax_dst; out = (sum alpha v_s Wmsg) @ A + h."""
    _check(g, h, K.shape[1])
    n, d = h.shape
    heads = Watt.shape[1]
    dh = _head_size(d, heads)
    k = _node_linear(g, h, K)
    q = _node_linear(g, h, Q)
    v = _node_linear(g, h, V)
    rows = g.src_p.shape[0]
    k_att = _edge_head_linear(g, _rows(k, g.src_p).view(rows, heads, dh), Watt)
    score = (k_att * _rows(q, g.dst_p).view(rows, heads, dh)).sum(2) * _rows(mu, g.edge_row_type) / math.sqrt(dh)
    alpha = edge_softmax(g, score)
    m = _edge_head_linear(g, _rows(v, g.src_p).view(rows, heads, dh), Wmsg)
    agg = _scatter_sum(g, (alpha[:, :, None] * m).view(rows, d))
    return _node_linear(g, agg, A) + h


def edge_softmax(g: TorchGraph, score):
    """Softmax of score [rows, H] over each destination's incoming edges, the max subtracted first."""
    idx = g.dst_scatter[:, None].expand_as(score)
    peak = torch.full((g.num_nodes + 1, score.shape[1]), -math.inf, dtype=score.dtype, device=score.device)
    # The shift cancels in the softmax, so it needs no gradient.
    peak = peak.scatter_reduce(0, idx, score.detach(), reduce="amax", include_self=True)
    ex = torch.exp(score - _rows(peak, g.dst_scatter))
    total = torch.zeros_like(peak).index_add(0, g.dst_scatter, ex)
    return ex / _rows(total, g.dst_scatter)


def nll_loss(out, labels):
    """The training-step loss: mean NLL of log_softmax(out) against labels."""
    return F.nll_loss(F.log_softmax(out, dim=1), labels)


MODELS = {"rgcn": rgcn, "rgat": rgat, "hgt": hgt}


def forward(model: str, g: TorchGraph, h, params: dict, heads: int = 1):
    """Run `model` with the named params (as made by params.make_params)."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    args = [params[k] for k in PARAM_NAMES[model]]
    if model == "rgat":
        return rgat(g, h, *args, heads=heads)
    return MODELS[model](g, h, *args)


def to_torch(params: dict, device="cpu", dtype=torch.float32, requires_grad=False):
    """numpy params -> torch leaves."""
    return {k: torch.tensor(np.asarray(v), dtype=dtype, device=device, requires_grad=requires_grad)
            for k, v in params.items()}


# ---------------------------------------------------------------------- helpers
def _rows(x, idx):
    """x[idx] along dim 0. index_select's backward is an atomic index_add; x[idx]'s is
    index_put(accumulate=True), which sorts the indices on CUDA and is much slower."""
    return torch.index_select(x, 0, idx)


def _edge_linear(g, x, W):
    """Row i of x (padded edge rows) times W[type of row i], one bmm over tiles."""
    tiles = g.edge_tile_type.shape[0]
    y = torch.bmm(x.view(tiles, g.edge_tile, x.shape[1]), _rows(W, g.edge_tile_type))
    return y.view(-1, W.shape[2])


def _edge_head_linear(g, x, W):
    """x [rows, H, dh] times W[type of row, head] [dh, dh]."""
    tiles = g.edge_tile_type.shape[0]
    y = torch.einsum("tbhi,thio->tbho", x.view(tiles, g.edge_tile, x.shape[1], x.shape[2]), _rows(W, g.edge_tile_type))
    return y.reshape(x.shape[0], x.shape[1], W.shape[3])


def _node_linear(g, x, W):
    """Row v of x times W[node type of v], through the node tiles, back in node order."""
    tiles = g.node_tile_type.shape[0]
    y = torch.bmm(_rows(x, g.node_p).view(tiles, g.node_tile, x.shape[1]), _rows(W, g.node_tile_type))
    return _rows(y.view(-1, W.shape[2]), g.row_of_node)


def _scatter_sum(g, msg):
    """Sum rows of msg into their destination nodes (pad rows go to the dropped node N)."""
    out = msg.new_zeros((g.num_nodes + 1,) + tuple(msg.shape[1:]))
    return out.index_add(0, g.dst_scatter, msg)[: g.num_nodes]


def _tile_layout(types, num_types, tile):
    """Sort items by type and pad each type to whole tiles.

    Returns (order, rows, tile_type, num_rows): item order[i] goes to padded row
    rows[i]; tile j holds only type tile_type[j].
    """
    order = np.argsort(types, kind="stable")
    counts = np.bincount(types, minlength=num_types)
    tiles_per_type = -(-counts // tile)
    first_row = np.concatenate([[0], np.cumsum(tiles_per_type * tile)[:-1]])
    first_item = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sorted_types = types[order]
    rows = first_row[sorted_types] + np.arange(types.size) - first_item[sorted_types]
    tile_type = np.repeat(np.arange(num_types), tiles_per_type)
    if tile_type.size == 0:  # no items: one dummy tile keeps every shape valid
        tile_type = np.zeros(1, np.int64)
    return order, rows, tile_type, tile_type.size * tile


def _pick_tile(count, groups):
    """Rows per tile: about a quarter of the mean group size, a power of two in [16, 1024].

    Each group pads less than one tile, so padding adds at most about a third
    more rows (plus the 16-row floor on tiny graphs) while big graphs get big matmuls."""
    mean = count / max(groups, 1)
    return int(min(1024, max(16, 2 ** round(math.log2(max(mean / 4, 1))))))


def _head_size(d, heads):
    if heads < 1 or d % heads:
        raise ValueError(f"the feature size {d} must be a multiple of the number of heads {heads}")
    return d // heads


def _check(g, h, din):
    if h.dim() != 2 or h.shape[0] != g.num_nodes or h.shape[1] != din:
        raise ValueError(f"h must be [{g.num_nodes}, {din}], got {tuple(h.shape)}")

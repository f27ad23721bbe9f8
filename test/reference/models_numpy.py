"""Float64 numpy references of one RGCN, RGAT and HGT layer (BRIEF.md section 4).

Written for clarity: the typed linear layers loop over edge or node types, the
reductions over incoming edges use np.add.at / np.maximum.at. Conventions:
row vectors, y = x @ W with W stored [in, out]; edge e goes src[e] -> dst[e].

`graph` is anything with node_type, src, dst, etype (numpy arrays or torch
tensors): a HeteroGraph, a dict, a namespace, or a tuple in that order.
"""

from __future__ import annotations

import numpy as np

from .params import graph_arrays


def rgcn(graph, h, W, W0):
    """out[t] = h[t] @ W0 + sum_{e: dst=t} c_e * (h[src e] @ W[etype e]), c_e = 1/|in-edges of t of type etype e|."""
    node_type, src, dst, etype = graph_arrays(graph)
    h, W, W0 = _f64(h), _f64(W), _f64(W0)
    r = W.shape[0]
    _check_rows(h, node_type, "h")
    _check_types(etype, r, "W")
    msg = _typed_rows(h[src], W, etype)
    # c_e: how many edges share e's (destination, edge type).
    _, which, count = np.unique(dst.astype(np.int64) * r + etype, return_inverse=True, return_counts=True)
    msg /= count[which.reshape(-1)][:, None]
    out = h @ W0
    np.add.at(out, dst, msg)
    return out


def rgat(graph, h, W, a, b, heads):
    """z_e = h[src] @ W[etype]; per head, score = leaky_relu(a.z_e + b.(h[dst] @ W[etype])); softmax per dst."""
    node_type, src, dst, etype = graph_arrays(graph)
    h, W, a, b = _f64(h), _f64(W), _f64(a), _f64(b)
    n, e, dout = h.shape[0], src.shape[0], W.shape[2]
    _check_rows(h, node_type, "h")
    _check_types(etype, W.shape[0], "W")
    dh = _head_size(dout, heads)
    z = _typed_rows(h[src], W, etype)
    zt = _typed_rows(h[dst], W, etype)
    score = (a[etype] * z + b[etype] * zt).reshape(e, heads, dh).sum(axis=2)
    score = np.where(score > 0, score, 0.2 * score)
    alpha = edge_softmax(score, dst, n)
    out = np.zeros((n, dout))
    np.add.at(out, dst, (alpha[:, :, None] * z.reshape(e, heads, dh)).reshape(e, dout))
    return out


def hgt(graph, h, K, Q, V, A, Watt, Wmsg, mu):
    """HGT: k, q, v typed by node type; per head score = (k_s Watt . q_t) mu / sqrt(d/H); out = agg @ A + h."""
    node_type, src, dst, etype = graph_arrays(graph)
    h, K, Q, V, A, Watt, Wmsg, mu = (_f64(x) for x in (h, K, Q, V, A, Watt, Wmsg, mu))
    n, d = h.shape
    e, heads = src.shape[0], Watt.shape[1]
    _check_rows(h, node_type, "h")
    _check_types(node_type, K.shape[0], "K")
    _check_types(etype, Watt.shape[0], "Watt")
    dh = _head_size(d, heads)
    k = _typed_rows(h, K, node_type)
    q = _typed_rows(h, Q, node_type)
    v = _typed_rows(h, V, node_type)
    k_att = _typed_heads(k[src].reshape(e, heads, dh), Watt, etype)
    score = (k_att * q[dst].reshape(e, heads, dh)).sum(axis=2) * mu[etype] / np.sqrt(dh)
    alpha = edge_softmax(score, dst, n)
    m = _typed_heads(v[src].reshape(e, heads, dh), Wmsg, etype)
    agg = np.zeros((n, heads, dh))
    np.add.at(agg, dst, alpha[:, :, None] * m)
    return _typed_rows(agg.reshape(n, d), A, node_type) + h


def edge_softmax(score, dst, num_nodes):
    """Softmax of score [E, H] over the incoming edges of each destination (max subtracted first)."""
    peak = np.full((num_nodes,) + score.shape[1:], -np.inf)
    np.maximum.at(peak, dst, score)
    ex = np.exp(score - peak[dst])
    total = np.zeros_like(peak)
    np.add.at(total, dst, ex)
    return ex / total[dst]


def nll_loss(out, labels):
    """mean over nodes of -log_softmax(out)[i, labels[i]]."""
    out = _f64(out)
    shifted = out - out.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(out.shape[0]), np.asarray(labels)].mean())


# ---------------------------------------------------------------------- helpers
def _typed_rows(x, W, types):
    """Row i times W[types[i]]: one matmul per type present."""
    out = np.zeros((x.shape[0], W.shape[2]))
    for t in np.unique(types):
        rows = types == t
        out[rows] = x[rows] @ W[t]
    return out


def _typed_heads(x, W, types):
    """x [E, H, dh] times W[types[e], head] [dh, dh], per head."""
    out = np.zeros((x.shape[0], x.shape[1], W.shape[3]))
    for t in np.unique(types):
        rows = types == t
        out[rows] = np.einsum("ehi,hio->eho", x[rows], W[t])
    return out


def _f64(x):
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _head_size(d, heads):
    if heads < 1 or d % heads:
        raise ValueError(f"the feature size {d} must be a multiple of the number of heads {heads}")
    return d // heads


def _check_rows(h, node_type, what):
    if h.ndim != 2 or h.shape[0] != node_type.shape[0]:
        raise ValueError(f"{what} must be [num_nodes={node_type.shape[0]}, features], got {h.shape}")


def _check_types(types, count, what):
    if types.size and (types.min() < 0 or types.max() >= count):
        raise ValueError(f"{what} has {count} types but the graph uses types up to {int(types.max())}")

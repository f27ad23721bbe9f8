"""Edges at RGAT's LeakyReLU kink, where the layer is not differentiable.

An edge whose attention pre-activation (per head) is within `rtol` of zero,
relative to the largest one, has no defined gradient: float32 codes round it
to either side of the kink, and the two sides' gradients differ by the
negative slope. Gradient checks on large graphs (millions of edges) always
meet a few, so they run on the graph without them (the other edges' scores
do not change: a score depends only on its edge's endpoints and type).
"""

from __future__ import annotations

import numpy as np
import torch


def rgat_scores(graph, h, W, a, b, heads):
    """score[e, k] = a_r·z_e + b_r·(W_r h_t) per head block, in float64, on h's device."""
    dev = h.device
    src, dst, et = (torch.as_tensor(np.asarray(graph[k]), device=dev).long()
                    for k in ("src", "dst", "etype"))
    h, W, a, b = (torch.as_tensor(x, device=dev).double() for x in (h, W, a, b))
    scores = torch.empty(len(src), heads, dtype=torch.float64, device=dev)
    for r in range(W.shape[0]):  # per type: no per-edge weight copies
        m = torch.nonzero(et == r).flatten()
        if len(m):
            z, zt = h[src[m]] @ W[r], h[dst[m]] @ W[r]
            scores[m] = (z * a[r] + zt * b[r]).view(len(m), heads, -1).sum(2)
    return scores


def without_kink_edges(graph, h, W, a, b, heads, rtol=1e-5):
    """(graph without the edges at the kink, how many were removed)."""
    scores = rgat_scores(graph, h, W, a, b, heads)
    scale = float(scores.abs().max()) if scores.numel() else 0.0
    keep = (scores.abs() > rtol * scale).all(1).cpu().numpy()
    kept = dict(graph)
    for k in ("src", "dst", "etype"):
        kept[k] = np.asarray(graph[k])[keep]
    return kept, int((~keep).sum())

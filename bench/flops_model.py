"""The minimum GEMM FLOPs of one layer: the compute side of the roofline bound.

bench/layers.py reports, per case, bound = max(minimum bytes / copy bandwidth,
minimum FLOPs / GEMM peak) (bytes: bench/bytes_model.py; both peaks measured
in the same run: bench/measure.py). This module counts the FLOPs.

What is counted
---------------
The multiply-adds (MACs) of the *typed GEMMs*: every product of a feature
matrix with a weight *matrix* (one d x d, or dh x dh per head, slice per type),
and the weight-only products of two weight matrices that linear reordering
introduces. FLOPs = 2 x MACs, as GEMM peaks count them. Not counted (they are
edge- or node-wise, a few percent of the total, and bound by memory, not by
the GEMM pipes): products with weight *vectors* (RGAT's a, b and the reordered
W_r a_r, W_r b_r; HGT's mu), products of two feature rows (scores, the
attention-weighted sums, RGCN's c_e), softmax, LeakyReLU, residual add. Left
out of a lower bound, they keep it a lower bound.

Symbols: N nodes, E edges, P unique (source node, edge type) pairs, R edge
types, d = width (din = dout), H heads, dh = d / H.

Variants
--------
A model's GEMMs depend on which of Hector's hgraph optimisations apply
(docs/optimizations.md; `hectorc --variant`): U (none), C (compact
materialization: an edge-typed map of the *source* row runs over the P pairs
instead of the E edges), R (linear operator reordering, where it is legal
*in Hector*), C+R (both). `variant_macs` counts each, with R applied to
every legal candidate. (Hector fires a candidate only where it saves MACs
at the sizes the library is built for; a model's candidates are alone
(RGAT) or cost the same (HGT's two chains), so a library that fires some
and not others is no cheaper than the best of the four.) The bound uses
the smallest: `min_macs`.

Forward (inference), per model (BRIEF.md section 4):

* RGCN. h'_t = h_t W0 + sum_e c_e h_s W_phi(e). The message h_s W_phi depends
  on (s, phi) only, so C runs it once per pair: X d^2 with X = E (U, R) or
  P (C, C+R); the root term runs over the nodes: N d^2. No reordering
  candidate (R = U).
      F_rgcn = X d^2 + N d^2.
* RGAT. z = h_s W_phi (the message and the source score a.z): X d^2, X as
  above. The destination score b.(h_t W_phi) is a per-edge GEMM E d^2 unless
  reordered into h_t.(W_phi b_phi) (a weight vector: not counted). With
  H > 1 heads the reordered weight is [d, H], column k = W_phi[:, block k]
  b_phi[block k] (`hgraph.weight_product ... heads H`): weight-vector
  products, not counted either.
      F_rgat = X d^2 + (0 if reordered else E d^2).
* HGT. q = h Q_tau (N d^2) and the output h' = agg A_tau + h (N d^2) are
  node-typed. The key chain k_s W^att_phi and the message chain v_s W^msg_phi
  each cost, unreordered, N d^2 (k = h K_tau over the nodes) + X d^2 / H (the
  per-head dh x dh map over X = E or P rows); reordered (needs typed
  endpoints, every edge type joining one source type: `--typed-endpoints`)
  they become a weight-only product K_tau(phi) W^att_phi per edge type,
  R d dh dh per head = R d^3 / H, then h_s (K W^att)_phi, a full d x d map
  over X rows: X d^2.
      F_hgt = 2 N d^2 + 2 chain,  chain = N d^2 + X d^2 / H   (U, C)
                                  chain = R d^3 / H + X d^2   (R, C+R)

Training step = forward + backward. Every counted GEMM Y = X W has both
operands needing a gradient: the input h and every weight are differentiated
(BRIEF.md section 4), and each X is h or a value computed from h. Its
backward is two GEMMs of the same size, dX = dY W^T (M x n x k) and
dW = X^T dY (k x M x n), whatever the row set M (pairs, edges or nodes; for
a map over the P pairs the edge gradients are first summed per pair, an
edge-wise sum, not counted). The weight-only product of HGT's reordered
chain, C = K W^att, has dK = dC W^att^T and dW^att = K^T dC, again two of
its size. The uncounted ops have uncounted gradients (weight-vector and
feature-feature products stay such in the backward). So for every model
and variant:
      T = 3 F    (forward, input gradient, weight gradient)
and the training minimum is 3 x the inference minimum.
"""

from __future__ import annotations

import numpy as np

VARIANTS = ("U", "C", "R", "C+R")
MODES = ("inference", "training")


def graph_counts(g) -> dict:
    """N, E, P, R, T and typed_endpoints of a graph with node_type, src, dst, etype arrays
    (hector.datasets HeteroGraph, or anything with those attributes)."""
    src = np.asarray(g.src, dtype=np.int64)
    etype = np.asarray(g.etype, dtype=np.int64)
    node_type = np.asarray(g.node_type, dtype=np.int64)
    r = int(getattr(g, "num_edge_types", None) or (int(etype.max()) + 1 if etype.size else 1))
    t = int(getattr(g, "num_node_types", None) or (int(node_type.max()) + 1 if node_type.size else 1))
    pairs = int(np.unique(src * max(r, 1) + etype).size) if src.size else 0
    # Typed endpoints (for HGT's reordering): each edge type has one source node type.
    if src.size:
        st = np.unique(etype * max(t, 1) + node_type[src])
        typed = bool(np.unique(st // max(t, 1)).size == st.size)
    else:
        typed = True
    return {"N": int(node_type.size), "E": int(src.size), "P": pairs, "R": r, "T": t,
            "typed_endpoints": typed}


def _check(model, width, heads):
    if model not in ("rgcn", "rgat", "hgt"):
        raise ValueError(f"unknown model {model!r}")
    if heads < 1 or width % heads:
        raise ValueError(f"width {width} must be a positive multiple of heads {heads}")


def terms(model: str, variant: str, *, N: int, E: int, P: int, R: int, width: int, heads: int = 1,
          typed_endpoints: bool = True, **_ignored) -> dict:
    """The forward typed-GEMM MACs of one variant, term by term (see the module docstring)."""
    _check(model, width, heads)
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    d, dh = width, width // heads
    compact, reorder = "C" in variant, "R" in variant
    X = P if compact else E  # rows of an edge-typed map of the source row
    if model == "rgcn":
        return {"message h_s W_phi": X * d * d, "root h_t W0": N * d * d}
    if model == "rgat":
        out = {"z = h_s W_phi": X * d * d}
        if not reorder:
            out["h_t W_phi (destination score)"] = E * d * d
        return out
    out = {"q = h Q_tau": N * d * d, "out = agg A_tau": N * d * d}
    for chain, (node_w, edge_w) in (("key", ("K", "W_att")), ("message", ("V", "W_msg"))):
        if reorder and typed_endpoints:
            out[f"{chain}: {node_w}_tau {edge_w}_phi (weights only)"] = R * d * dh * dh * heads
            out[f"{chain}: h_s ({node_w} {edge_w})_phi"] = X * d * d
        else:
            out[f"{chain}: h {node_w}_tau"] = N * d * d
            out[f"{chain}: per-head {edge_w}_phi"] = X * dh * dh * heads
    return out


def variant_macs(model: str, variant: str, mode: str = "inference", **counts) -> int:
    """Typed-GEMM MACs of one variant: the forward, or 3x it for a training step."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    forward = sum(terms(model, variant, **counts).values())
    return forward if mode == "inference" else 3 * forward


def min_macs(model: str, mode: str, **counts) -> tuple:
    """(MACs, variant): the smallest typed-GEMM count over Hector's four variants."""
    best = min(VARIANTS, key=lambda v: (variant_macs(model, v, mode, **counts), VARIANTS.index(v)))
    return variant_macs(model, best, mode, **counts), best


def min_flops(model: str, mode: str, **counts) -> tuple:
    """(FLOPs, variant) of min_macs: 2 FLOPs per multiply-add."""
    macs, variant = min_macs(model, mode, **counts)
    return 2 * macs, variant

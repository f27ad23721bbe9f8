"""HGT (BRIEF.md §4) in the Hector DSL, H heads of D/H features:

    k_s = K_τ(s) h_s,  q_t = Q_τ(t) h_t,  v_s = V_τ(s) h_s
    score_e = (k_s W^att_φ(e) · q_t) · μ_φ(e) / √(D/H)        (per head)
    α = softmax over the incoming edges of t
    m_e = v_s W^msg_φ(e)
    h'_t = A_τ(t) Σ_e α_e m_e + h_t

    python3 -m hector.frontend examples/models/hgt.py D=128 H=4 | build/bin/hectorc -
"""

from __future__ import annotations

from math import sqrt

from hector.frontend import EdgeWeight, Graph, NodeFeature, NodeWeight, dot, edge_softmax, \
    model, typed_linear, typed_vector


@model
def hgt(g: Graph, h: NodeFeature[D],
        K: NodeWeight[D, D], Q: NodeWeight[D, D], V: NodeWeight[D, D], A: NodeWeight[D, D],
        Watt: EdgeWeight[H, D // H, D // H], Wmsg: EdgeWeight[H, D // H, D // H],
        mu: EdgeWeight[H], *, D: int = 64, H: int = 1) -> NodeFeature[D]:
    assert D % H == 0, "the heads must divide D"
    for n in g.nodes():
        n["k"] = typed_linear(K, n["h"], n.ntype, heads=H)
        n["q"] = typed_linear(Q, n["h"], n.ntype, heads=H)
        n["v"] = typed_linear(V, n["h"], n.ntype, heads=H)
    for e in g.edges():
        att = dot(typed_linear(Watt, e.src["k"], e.etype), e.dst["q"])
        e["alpha"] = edge_softmax(att * typed_vector(mu, e.etype) / sqrt(D // H))
        e["m"] = typed_linear(Wmsg, e.src["v"], e.etype)
    for n in g.dst_nodes():
        agg = sum(e["alpha"] * e["m"] for e in n.incoming_edges())
        n["out"] = typed_linear(A, agg, n.ntype) + n["h"]
    return g.ndata["out"]

"""RGAT (BRIEF.md §4) in the Hector DSL, H heads of OUT/H features:

    z_e     = W_φ(e)ᵀ h_s
    score_e = LeakyReLU_0.2(a_φ(e)·z_e + b_φ(e)·(W_φ(e)ᵀ h_t))   (per head)
    α_e     = softmax of score over the incoming edges of t
    h'_t    = Σ_e α_e z_e

    python3 -m hector.frontend examples/models/rgat.py H=4 | build/bin/hectorc -
"""

from __future__ import annotations

from hector.frontend import EdgeWeight, Graph, NodeFeature, dot, edge_softmax, leaky_relu, \
    model, typed_linear, typed_vector


@model
def rgat(g: Graph, h: NodeFeature[IN], W: EdgeWeight[IN, OUT], a: EdgeWeight[OUT],
         b: EdgeWeight[OUT], *, IN: int = 64, OUT: int = 64, H: int = 1) -> NodeFeature[OUT, H]:
    assert OUT % H == 0, "the heads must divide OUT"
    for e in g.edges():
        e["z"] = typed_linear(W, e.src["h"], e.etype, heads=H)
        zt = typed_linear(W, e.dst["h"], e.etype, heads=H)
        score = dot(e["z"], typed_vector(a, e.etype)) + dot(zt, typed_vector(b, e.etype))
        e["alpha"] = edge_softmax(leaky_relu(score, alpha=0.2))
    for n in g.dst_nodes():
        for e in n.incoming_edges():
            n["out"] += e["alpha"] * e["z"]
    return g.ndata["out"]

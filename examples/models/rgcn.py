"""RGCN (BRIEF.md §4) in the Hector DSL:

    h'_t = W_0ᵀ h_t + Σ_{e=(s→t)} c_e · W_φ(e)ᵀ h_s,
    c_e  = 1 / |{e' = (s'→t) : φ(e') = φ(e)}|

    python3 -m hector.frontend examples/models/rgcn.py IN=64 OUT=64 | build/bin/hectorc -
"""

from __future__ import annotations

from hector.frontend import EdgeWeight, Graph, NodeFeature, Weight, model, relation_norm, \
    typed_linear


@model
def rgcn(g: Graph, h: NodeFeature[IN], W: EdgeWeight[IN, OUT], W0: Weight[IN, OUT],
         *, IN: int = 64, OUT: int = 64) -> NodeFeature[OUT]:
    for e in g.edges():
        e["msg"] = relation_norm(e) * typed_linear(W, e.src["h"], e.etype)
    for n in g.dst_nodes():
        n["out"] = typed_linear(W0, n["h"]) + sum(e["msg"] for e in n.incoming_edges())
    return g.ndata["out"]

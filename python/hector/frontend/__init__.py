"""The Hector model DSL: Python-grammar models → hgraph inter-operator IR.

    from __future__ import annotations
    from hector.frontend import model, Graph, NodeFeature, EdgeWeight, typed_linear

    @model
    def layer(g: Graph, h: NodeFeature[D], W: EdgeWeight[D, D], *, D: int = 64):
        for e in g.edges():
            e["m"] = typed_linear(W, e.src["h"], e.etype)
        for n in g.dst_nodes():
            n["out"] = sum(e["m"] for e in n.incoming_edges())
        return g.ndata["out"]

    ir = hector.frontend.emit(layer, D=128)      # text for hectorc / hector-opt

The frontend reads the function's source (the `ast` module; nothing is traced
or run) and needs only the standard library. Errors are FrontendError, whose
message starts with `path:line:col:`. docs/frontend.md is the reference.
"""

from .api import Model, emit, emit_source, model
from .dsl import (EdgeFeature, EdgeWeight, Graph, NodeFeature, NodeWeight, Weight, concat,
                  dot, edge_softmax, exp, gelu, leaky_relu, mean, neg, relation_norm, relu,
                  scale, sigmoid, tanh, typed_linear, typed_vector, weight_product)
from .errors import FrontendError

__all__ = [
    "FrontendError", "Model", "emit", "emit_source", "model",
    "Graph", "NodeFeature", "EdgeFeature", "Weight", "NodeWeight", "EdgeWeight",
    "typed_linear", "typed_vector", "dot", "scale", "concat", "edge_softmax",
    "relation_norm", "exp", "relu", "tanh", "sigmoid", "gelu", "neg", "leaky_relu", "mean",
    "weight_product",
]

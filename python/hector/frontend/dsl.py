"""Names a model module imports, so that it reads (and lints) as Python.

The frontend never runs a model: it reads its source. These objects only
exist so that `from hector.frontend import typed_linear, NodeFeature, ...`
works; calling a DSL function outside the frontend raises RuntimeError.
Annotations such as `NodeFeature[D]` name sizes that are parameters of the
model, so model modules start with `from __future__ import annotations`
(annotations are then never evaluated by Python).
"""

from __future__ import annotations


class _Annotation:
    """Graph, NodeFeature[...], EdgeFeature[...], Weight[...], NodeWeight[...], EdgeWeight[...]."""

    def __init__(self, name: str, doc: str):
        self._name = name
        self.__doc__ = doc

    def __getitem__(self, sizes):
        return self

    def __repr__(self) -> str:
        return self._name


Graph = _Annotation("Graph", "The graph a model runs on (exactly one parameter).")
NodeFeature = _Annotation("NodeFeature", "NodeFeature[width] or NodeFeature[width, heads]: "
                          "one row per node.")
EdgeFeature = _Annotation("EdgeFeature", "EdgeFeature[width] or EdgeFeature[width, heads]: "
                          "one row per edge.")
Weight = _Annotation("Weight", "Weight[n], Weight[in, out] or Weight[H, in/H, out/H]: one "
                     "slice.")
NodeWeight = _Annotation("NodeWeight", "NodeWeight[...]: one slice per node type.")
EdgeWeight = _Annotation("EdgeWeight", "EdgeWeight[...]: one slice per edge type.")


def _dsl_function(name: str, signature: str, doc: str):
    def function(*args, **kwargs):
        raise RuntimeError(f"{name}() is part of the Hector model DSL: models are translated "
                           "by hector.frontend.emit(model, **sizes), not called")
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{name}{signature}: {doc}"
    return function


typed_linear = _dsl_function(
    "typed_linear", "(W, x, type=None, *, heads=None)",
    "x · W[type] (hgraph.typed_linear); x is n[...], e[...], e.src[...] or e.dst[...]")
typed_vector = _dsl_function(
    "typed_vector", "(w, type=None, *, heads=None)",
    "the slice w[type] on every row (hgraph.typed_vector)")
dot = _dsl_function("dot", "(x, y)", "per-head inner product (hgraph.dot)")
scale = _dsl_function("scale", "(s, x)", "one scalar per head times x (hgraph.scale)")
concat = _dsl_function("concat", "(x, y, ...)", "head-wise concatenation (hgraph.concat)")
edge_softmax = _dsl_function("edge_softmax", "(x, *, by_type=False)",
                             "softmax over the incoming edges of each node (by_type=True: "
                             "of each node and edge type)")
relation_norm = _dsl_function("relation_norm", "(e)",
                              "RGCN's 1 / (number of same-type edges into e's destination)")
exp = _dsl_function("exp", "(x)", "element-wise exponential")
relu = _dsl_function("relu", "(x)", "element-wise max(x, 0)")
tanh = _dsl_function("tanh", "(x)", "element-wise tanh")
sigmoid = _dsl_function("sigmoid", "(x)", "element-wise logistic sigmoid")
gelu = _dsl_function("gelu", "(x)", "element-wise exact GELU, x·Φ(x) (torch's gelu)")
neg = _dsl_function("neg", "(x)", "element-wise negation (also -x)")
leaky_relu = _dsl_function("leaky_relu", "(x, alpha=0.01)", "x if x > 0 else alpha·x")
mean = _dsl_function("mean", "(x for e in n.incoming_edges())",
                     "mean over the incoming edges (0 without any)")
weight_product = _dsl_function("weight_product", "(A, B, *, node_of=None)",
                               "A · B per type, a new weight (hgraph.weight_product)")

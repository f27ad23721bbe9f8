"""The DSL functions (typed_linear, dot, sum(... for e in n.incoming_edges()), ...):
the call half of the Translator (translate.py), one method per function."""

from __future__ import annotations

import ast
import math
from typing import Dict, List, Optional

from .ir import Slot, float_literal
from .terms import (Const, NodeRead, Ref, Scope, Selector, Term, Value, VectorRead, Weight)
from .types import EDGE, GRAPH_IR, MAX_DIMENSION, NODE, SINGLE, FeatureType, WeightType

ELEMENTWISE = ("exp", "relu", "tanh", "sigmoid", "gelu", "neg")
AGGREGATES = {"sum": "sum", "mean": "mean", "max": "max"}
FUNCTIONS = sorted(("typed_linear", "typed_vector", "dot", "scale", "concat", "edge_softmax",
                    "relation_norm", "leaky_relu", "weight_product", "sqrt")
                   + ELEMENTWISE + tuple(AGGREGATES))
CONST_MATH = {"sqrt": math.sqrt, "exp": math.exp, "tanh": math.tanh,
              "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
              "gelu": lambda x: 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))),
              "relu": lambda x: max(x, 0), "neg": lambda x: -x}


class Functions:
    """Mixin of Translator: calls of DSL functions. Uses the Translator's
    state (src, out, graph_value) and its helpers (_expr, _value, _emit, ...)."""

    # ---- calls ---------------------------------------------------------------

    def _call(self, node: ast.Call, scope: Scope) -> Term:
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
            if name in self.locals or name in self.param_kinds:
                raise self.src.error(func, f"'{name}' is not a function")
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id not in self.locals and func.value.id not in self.param_kinds \
                and func.value.id not in (scope.node, scope.edge):
            name = func.attr  # a module-qualified DSL function: hf.dot(...), math.sqrt(...)
        else:
            if isinstance(func, ast.Attribute) and func.attr in ("edges", "nodes", "dst_nodes",
                                                                 "incoming_edges"):
                raise self.src.error(node, f"{func.attr}() is iterated by a for loop (or, for "
                                     "incoming_edges(), a sum/mean/max generator)")
            raise self.src.error(node, "only DSL functions can be called (e.g. "
                                 "typed_linear(...), dot(...))")
        if name in ELEMENTWISE:
            return self._fn_elementwise(name, node, scope)
        if name in AGGREGATES:
            return self._fn_aggregate(name, node, scope)
        handler = {"typed_linear": self._fn_typed_linear, "typed_vector": self._fn_typed_vector,
                   "dot": self._fn_dot, "scale": self._fn_scale, "concat": self._fn_concat,
                   "edge_softmax": self._fn_edge_softmax,
                   "relation_norm": self._fn_relation_norm, "leaky_relu": self._fn_leaky_relu,
                   "sqrt": self._fn_sqrt, "weight_product": self._fn_weight_product}.get(name)
        if handler is None:
            raise self.src.error(func, f"unknown function '{name}' (a model calls only the "
                                 f"DSL functions: {', '.join(FUNCTIONS)})")
        return handler(node, scope)

    def _arguments(self, node: ast.Call, name: str, positional: List[str],
                   keywords: List[str] = (), required: int = None) -> Dict[str, ast.expr]:
        """Maps a call's arguments onto the parameter names of a DSL function."""
        required = len(positional) if required is None else required
        if any(isinstance(a, ast.Starred) for a in node.args) \
                or any(k.arg is None for k in node.keywords):
            raise self.src.error(node, f"{name}(): *args and **kwargs are not supported")
        if len(node.args) > len(positional):
            raise self.src.error(node, f"{name}() takes at most {len(positional)} positional "
                                 f"arguments, got {len(node.args)}")
        args = dict(zip(positional, node.args))
        for kw in node.keywords:
            if kw.arg not in positional and kw.arg not in keywords:
                raise self.src.error(kw.value, f"{name}() has no argument '{kw.arg}'")
            if kw.arg in args:
                raise self.src.error(kw.value, f"{name}() got '{kw.arg}' twice")
            args[kw.arg] = kw.value
        missing = [p for p in positional[:required] if p not in args]
        if missing:
            raise self.src.error(node, f"{name}() is missing its argument "
                                 f"{', '.join(map(repr, missing))}")
        return args

    def _weight_arg(self, node: ast.expr, scope: Scope, fn: str) -> Weight:
        term = self._expr(node, scope)
        if not isinstance(term, Weight):
            raise self.src.error(node, f"the first argument of {fn}() must be a weight "
                                 "parameter (or a weight_product)")
        return term

    def _heads_arg(self, node: Optional[ast.expr], scope: Scope) -> Optional[int]:
        if node is None:
            return None
        heads = self._const(node, scope, "heads")
        if type(heads) is not int or heads < 1:
            raise self.src.error(node, f"heads must be a positive integer, got {heads!r}")
        return heads

    def _selector_arg(self, node: Optional[ast.expr], scope: Scope, fn: str) -> Optional[Selector]:
        if node is None:
            return None
        term = self._expr(node, scope)
        if not isinstance(term, Selector):
            raise self.src.error(node, f"the type argument of {fn}() is e.etype, n.ntype, "
                                 "e.src.ntype or e.dst.ntype")
        return term

    def _fn_typed_linear(self, node: ast.Call, scope: Scope) -> Value:
        args = self._arguments(node, "typed_linear", ["weight", "x", "type"], ["heads"], 2)
        w = self._weight_arg(args["weight"], scope, "typed_linear")
        x = self._expr(args["x"], scope)
        sel = self._selector_arg(args.get("type"), scope, "typed_linear")
        heads = self._heads_arg(args.get("heads"), scope)
        wt = w.type
        if scope.kind == "top":
            raise self.src.error(node, "typed_linear() runs inside a node or edge loop")
        if wt.is_vector:
            raise self.src.error(args["weight"], f"typed_linear() needs a matrix or per-head "
                                 f"weight; '{w.name}' is a {wt}: use typed_vector({w.name}) with "
                                 "dot(...) or *")
        # Where the input rows come from.
        if isinstance(x, NodeRead):
            source, endpoint = x.value, x.endpoint
        else:
            if isinstance(x, VectorRead):
                x = self._vector(x, wt.shape[0] if wt.is_per_head else 1, args["x"])
            source = self._value(x, scope, args["x"])
            endpoint = "node" if source.type.domain == NODE else "edge"
            if source.type.domain != scope.domain:
                raise self.src.error(args["x"], f"typed_linear(): the input is {source.type} "
                                     f"in a {scope.domain} loop")
        # Which rows have a type that selects the slice.
        if wt.index == EDGE and endpoint == "node":
            raise self.src.error(node, f"'{w.name}' is edge-typed and cannot be applied in a "
                                 "node loop (a node has no edge type)")
        if wt.index == NODE and endpoint == "edge":
            raise self.src.error(node, f"'{w.name}' is node-typed but the input is edge-wise: "
                                 "apply it to e.src[...] or e.dst[...] so that the node type "
                                 "is known")
        if sel is not None:
            want = ("etype" if wt.index == EDGE else "ntype" if wt.index == NODE else None)
            if want is None:
                raise self.src.error(args["type"], f"'{w.name}' is a single weight: it takes no "
                                     "type argument")
            if sel.kind != want or (want == "ntype" and sel.endpoint != endpoint):
                expected = ("e.etype" if want == "etype"
                            else "n.ntype" if endpoint == "node" else f"e.{endpoint}.ntype")
                raise self.src.error(args["type"], f"'{w.name}' is a {wt} applied to "
                                     f"{'node rows' if endpoint == 'node' else endpoint + ' rows'}"
                                     f": its slice is chosen by {expected}, not {sel.text}")
        it = source.type
        if it.width != wt.in_width:
            raise self.src.error(node, f"typed_linear(): the input has width {it.width} but "
                                 f"'{w.name}' ({wt}) takes {wt.in_width}")
        if wt.is_per_head:
            h = wt.shape[0]
            if it.heads != h:
                raise self.src.error(node, f"typed_linear(): the per-head weight '{w.name}' "
                                     f"has {h} heads, the input {it.heads}")
            if heads is not None and heads != h:
                raise self.src.error(args["heads"], f"the per-head weight '{w.name}' gives {h} "
                                     f"heads, not {heads}")
            heads = h
        heads = heads or 1
        if wt.out_width % heads:
            raise self.src.error(node, f"typed_linear(): {heads} heads do not divide the output "
                                 f"width {wt.out_width}")
        domain = NODE if endpoint == "node" else EDGE
        rt = FeatureType(domain, wt.out_width, heads)
        return self._emit(None, "typed_linear ", [w, ", ", source],
                          f" from {endpoint} : {wt.ir()}, {it.ir()} -> ", rt, node)

    def _fn_typed_vector(self, node: ast.Call, scope: Scope) -> VectorRead:
        args = self._arguments(node, "typed_vector", ["weight", "type"], ["heads"], 1)
        w = self._weight_arg(args["weight"], scope, "typed_vector")
        sel = self._selector_arg(args.get("type"), scope, "typed_vector")
        heads = self._heads_arg(args.get("heads"), scope)
        if scope.kind == "top":
            raise self.src.error(node, "typed_vector() runs inside a node or edge loop")
        if not w.type.is_vector:
            raise self.src.error(args["weight"], f"typed_vector() needs a vector weight; "
                                 f"'{w.name}' is a {w.type}: apply it with typed_linear()")
        index = w.type.index
        domain = scope.domain if index == SINGLE else index
        if domain != scope.domain:
            raise self.src.error(node, f"'{w.name}' is {index}-typed and gives a {index}-wise "
                                 f"value, but this is a {scope.domain} loop"
                                 + ("; read it in a node loop and use e.src[...]/e.dst[...]"
                                    if index == NODE else ""))
        if sel is not None:
            if index == SINGLE:
                raise self.src.error(args["type"], f"'{w.name}' is a single weight: it takes no "
                                     "type argument")
            want = "e.etype" if index == EDGE else "n.ntype"
            ok = sel.kind == "etype" if index == EDGE else (sel.kind == "ntype"
                                                            and sel.endpoint == "node")
            if not ok:
                raise self.src.error(args["type"], f"the slice of '{w.name}' is chosen by "
                                     f"{want}, not {sel.text}")
        if heads is not None and w.type.shape[0] % heads:
            raise self.src.error(args["heads"], f"{heads} heads do not divide the length "
                                 f"{w.type.shape[0]} of '{w.name}'")
        return VectorRead(w, domain, heads)

    def _fn_dot(self, node: ast.Call, scope: Scope) -> Value:
        args = self._arguments(node, "dot", ["x", "y"])
        a, b = self._pair(self._expr(args["x"], scope), self._expr(args["y"], scope), scope, node)
        if a.type != b.type:
            raise self.src.error(node, f"dot(): operands differ: {a.type} and {b.type}")
        t = a.type
        return self._emit(None, "dot ", [a, ", ", b], f" : {t.ir()} -> ",
                          FeatureType(t.domain, t.heads, t.heads), node)

    def _fn_scale(self, node: ast.Call, scope: Scope) -> Value:
        args = self._arguments(node, "scale", ["s", "x"])
        s, x = self._pair(self._expr(args["s"], scope), self._expr(args["x"], scope), scope, node)
        return self._scale(s, x, node)

    def _fn_concat(self, node: ast.Call, scope: Scope) -> Value:
        if node.keywords or len(node.args) < 2 \
                or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.src.error(node, "concat() takes two or more values, positionally")
        terms = [self._expr(a, scope) for a in node.args]
        concrete = [t for t in terms if not isinstance(t, VectorRead)]
        first = self._value(concrete[0], scope, node) if concrete else None
        values = []
        for term, arg in zip(terms, node.args):
            if isinstance(term, VectorRead) and first is not None:
                values.append(self._vector(term, self._heads_for(term, first), arg))
            else:
                values.append(self._value(term, scope, arg))
        t0 = values[0].type
        for v, arg in zip(values, node.args):
            if v.type.domain != t0.domain or v.type.heads != t0.heads:
                raise self.src.error(arg, f"concat(): {v.type} does not match {t0} (operands "
                                     "share their domain and head count)")
        width = sum(v.type.width for v in values)
        if width > MAX_DIMENSION:
            raise self.src.error(node, f"concat(): width {width} is too large")
        operands: List = []
        for i, v in enumerate(values):
            operands += ([", "] if i else []) + [v]
        rt = FeatureType(t0.domain, width, t0.heads)
        return self._emit(None, "concat ", operands,
                          " : " + ", ".join(v.type.ir() for v in values) + " -> ", rt, node)

    def _fn_edge_softmax(self, node: ast.Call, scope: Scope) -> Value:
        args = self._arguments(node, "edge_softmax", ["x"], ["by_type"])
        by_type = False
        if "by_type" in args:
            flag = args["by_type"]
            if not (isinstance(flag, ast.Constant) and isinstance(flag.value, bool)):
                raise self.src.error(flag, "edge_softmax(by_type=...) takes True or False")
            by_type = flag.value
        x = self._value(self._expr(args["x"], scope), scope, args["x"])
        if x.type.domain != EDGE:
            raise self.src.error(node, f"edge_softmax() normalizes edge-wise values over the "
                                 f"incoming edges of each node; got {x.type}")
        suffix = " by_type" if by_type else ""
        return self._emit(None, "edge_softmax ", [x], f"{suffix} : {x.type.ir()}", x.type, node)

    def _fn_relation_norm(self, node: ast.Call, scope: Scope) -> Value:
        args = self._arguments(node, "relation_norm", ["e"])
        e = self._expr(args["e"], scope)
        if not (isinstance(e, Ref) and e.kind == "edge"):
            raise self.src.error(args["e"], "relation_norm(e) takes the edge loop variable")
        return self._emit("norm", "relation_norm ", [self.graph_value],
                          f" : {GRAPH_IR} -> ", FeatureType(EDGE, 1, 1), node)

    def _fn_elementwise(self, name: str, node: ast.Call, scope: Scope) -> Term:
        args = self._arguments(node, name, ["x"])
        term = self._expr(args["x"], scope)
        if isinstance(term, Const):
            try:
                return Const(CONST_MATH[name](self._number(term.value, node)))
            except (OverflowError, ValueError) as err:
                raise self.src.error(node, f"constant expression fails: {err}") from None
        x = self._value(term, scope, args["x"])
        return self._emit(None, f"{name} ", [x], f" : {x.type.ir()}", x.type, node)

    def _fn_leaky_relu(self, node: ast.Call, scope: Scope) -> Value:
        args = self._arguments(node, "leaky_relu", ["x", "alpha"], [], 1)
        alpha = 0.01
        if "alpha" in args:
            alpha = self._number(self._const(args["alpha"], scope, "the slope of leaky_relu"),
                                 args["alpha"])
        x = self._value(self._expr(args["x"], scope), scope, args["x"])
        return self._emit(None, "leaky_relu ", [x],
                          f" alpha {float_literal(float(alpha))} : {x.type.ir()}", x.type, node)

    def _fn_sqrt(self, node: ast.Call, scope: Scope) -> Const:
        args = self._arguments(node, "sqrt", ["x"])
        value = self._number(self._const(args["x"], scope, "the argument of sqrt (hgraph has "
                                         "no sqrt op)"), node)
        if value < 0:
            raise self.src.error(node, f"sqrt of {value!r}")
        return Const(math.sqrt(value))

    def _fn_aggregate(self, name: str, node: ast.Call, scope: Scope) -> Value:
        gen = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if not isinstance(gen, ast.GeneratorExp):
            raise self.src.error(node, f"{name}() takes one generator over incoming edges: "
                                 f"{name}(e[\"m\"] for e in n.incoming_edges())")
        if scope.kind != "node":
            raise self.src.error(node, f"{name}(... for e in n.incoming_edges()) belongs in a "
                                 "node loop")
        if len(gen.generators) != 1 or gen.generators[0].ifs or gen.generators[0].is_async:
            raise self.src.error(gen, "one `for e in n.incoming_edges()` clause, without if")
        comp = gen.generators[0]
        if not isinstance(comp.target, ast.Name):
            raise self.src.error(comp.target, "the generator binds one edge variable")
        self._iteration(comp.iter, scope)  # in a node loop, only incoming_edges() passes
        self._check_new_name(comp.target, comp.target.id, "loop variable")
        inner = Scope("edge", node=scope.node, edge=comp.target.id, nested=True)
        value = self._value(self._expr(gen.elt, inner), inner, gen.elt)
        if value.type.domain != EDGE:
            raise self.src.error(gen.elt, f"{name}() reduces edge-wise values, got {value.type}")
        rt = FeatureType(NODE, value.type.width, value.type.heads)
        return self._emit(None, f"aggregate {AGGREGATES[name]} ", [value],
                          f" : {value.type.ir()} -> ", rt, node)

    def _fn_weight_product(self, node: ast.Call, scope: Scope) -> Weight:
        args = self._arguments(node, "weight_product", ["a", "b"], ["node_of"])
        a = self._weight_arg(args["a"], scope, "weight_product")
        b = self._expr(args["b"], scope)
        if not isinstance(b, Weight):
            raise self.src.error(args["b"], "both arguments of weight_product() are weights")
        node_of = None
        if "node_of" in args:
            node_of = self._const(args["node_of"], scope, "node_of")
            if node_of not in ("src", "dst"):
                raise self.src.error(args["node_of"], "node_of is \"src\" or \"dst\"")
        ia, ib = a.type.index, b.type.index
        mixed = {ia, ib} == {NODE, EDGE}
        if mixed and node_of is None:
            raise self.src.error(node, f"weight_product({a.name}, {b.name}) of a node-typed and "
                                 "an edge-typed weight needs node_of=\"src\" or \"dst\": whose "
                                 "node type of each edge type selects the node-typed slice")
        if not mixed and node_of is not None:
            raise self.src.error(args["node_of"], "node_of is only meaningful for a node-typed "
                                 "times an edge-typed weight")
        index = ib if ia == SINGLE else EDGE if mixed else ia  # as the verifier combines them
        sa, sb = a.type.shape, b.type.shape
        if a.type.is_vector and b.type.is_vector:
            raise self.src.error(node, "the product of two vectors is a dot product; use "
                                 "dot(...) on values")
        if a.type.is_per_head and b.type.is_per_head:
            if sa[0] != sb[0] or sa[2] != sb[1]:
                raise self.src.error(node, f"weight_product(): per-head shapes {list(sa)} and "
                                     f"{list(sb)} do not chain")
            shape = (sa[0], sa[1], sb[2])
        else:
            rows_a, cols_a = (1, sa[0]) if a.type.is_vector else (a.type.in_width,
                                                                  a.type.out_width)
            rows_b, cols_b = (sb[0], 1) if b.type.is_vector else (b.type.in_width,
                                                                  b.type.out_width)
            if cols_a != rows_b:
                raise self.src.error(node, f"weight_product(): inner dimensions do not match "
                                     f"({cols_a} vs {rows_b})")
            shape = ((cols_b,) if a.type.is_vector else (rows_a,) if b.type.is_vector
                     else (rows_a, cols_b))
        rt = WeightType(index, shape)
        slot = Slot(None)
        parts = ["%", slot, " = hgraph.weight_product %", a.slot, ", %", b.slot,
                 (f" node_of {node_of}" if node_of else "")
                 + f" : {a.type.ir()}, {b.type.ir()} -> {rt.ir()}"]
        self.out.op(parts, self.src.location(node) if self.locations else None)
        return Weight(slot, rt, f"weight_product({a.name}, {b.name})")

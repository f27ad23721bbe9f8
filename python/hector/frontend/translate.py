"""Translates the AST of one model function into an `hgraph.func`.

The translation is a single walk over the statements. Each statement is
evaluated for every node or edge of its loop before the next one runs
(bulk semantics), so every expression becomes one or a few hgraph ops over
whole node-wise or edge-wise values. Types (domain, width, heads) are
inferred on the way and every mismatch is reported at its Python position.
docs/frontend.md is the language reference.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Union

from .errors import FrontendError
from .ir import FunctionWriter, Slot, float_literal, string_literal, symbol
from .types import (EDGE, GRAPH_IR, MAX_DIMENSION, NODE, SINGLE, FeatureType,
                    WeightType)

# ---- terms: what an expression evaluates to ---------------------------------


@dataclass
class Value:
    """A node-wise or edge-wise SSA value."""

    slot: Slot
    type: FeatureType


@dataclass
class Weight:
    """A typed weight: a parameter or a weight_product."""

    slot: Slot
    type: WeightType
    name: str


@dataclass
class NodeRead:
    """`e.src["x"]` / `e.dst["x"]`: a node-wise value read at an edge endpoint.

    Kept symbolic so that `typed_linear` can read the endpoint itself
    (`from src`); anything else reads it through `hgraph.gather`.
    """

    value: Value
    endpoint: str  # "src" or "dst"
    hint: str


@dataclass
class VectorRead:
    """`typed_vector(a, ...)`: its head count is taken from the first operand it meets."""

    weight: Weight
    domain: str
    heads: Optional[int] = None  # fixed by `heads=`, else inferred


@dataclass
class Const:
    value: Union[int, float, bool, str]


@dataclass
class Selector:
    """`e.etype`, `n.ntype`, `e.src.ntype`, `e.dst.ntype`: what selects a weight slice."""

    kind: str  # "etype" or "ntype"
    endpoint: Optional[str]  # for ntype: "node", "src" or "dst"
    text: str


@dataclass
class Ref:
    """A loop variable or the graph: `e`, `n`, `e.src`, `g`, `g.ndata`."""

    kind: str  # "edge", "node", "src", "dst", "graph", "ndata", "edata"
    text: str


Term = Union[Value, Weight, NodeRead, VectorRead, Const, Selector, Ref]

FEATURE_ANNOTATIONS = {"NodeFeature": NODE, "EdgeFeature": EDGE}
WEIGHT_ANNOTATIONS = {"Weight": SINGLE, "NodeWeight": NODE, "EdgeWeight": EDGE}
ELEMENTWISE = ("exp", "relu", "tanh", "sigmoid", "neg")
AGGREGATES = {"sum": "sum", "mean": "mean", "max": "max"}
FUNCTIONS = sorted(("typed_linear", "typed_vector", "dot", "scale", "concat", "edge_softmax",
                    "relation_norm", "leaky_relu", "weight_product", "sqrt")
                   + ELEMENTWISE + tuple(AGGREGATES))
BINARY_OPS = {ast.Add: ("add", "+"), ast.Sub: ("sub", "-"), ast.Mult: ("mul", "*"),
              ast.Div: ("div", "/")}
CONST_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
                ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
                ast.Pow: lambda a, b: a ** b}
CONST_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
                 ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
                 ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
CONST_MATH = {"sqrt": math.sqrt, "exp": math.exp, "tanh": math.tanh,
              "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
              "relu": lambda x: max(x, 0), "neg": lambda x: -x}
RESERVED_SIZES = ("locations", "filename", "function")


@dataclass
class Scope:
    """Where a statement runs: the function body, a node loop or an edge loop."""

    kind: str  # "top", "node", "edge"
    node: Optional[str] = None  # the node loop variable (the destination, when nested)
    edge: Optional[str] = None  # the edge loop variable
    nested: bool = False  # an edge loop over n.incoming_edges()
    summing: Set[str] = field(default_factory=set)  # n["k"] += ... keys of this loop
    sums: Dict[str, List[Value]] = field(default_factory=dict)

    @property
    def domain(self) -> Optional[str]:
        return {"node": NODE, "edge": EDGE}.get(self.kind)


def _kind_name(node: ast.AST) -> str:
    return type(node).__name__


@dataclass
class Source:
    """Maps positions of the parsed (dedented) function back to its file."""

    filename: str
    line_offset: int = 0
    col_offset: int = 0

    def error(self, node: Optional[ast.AST], message: str) -> FrontendError:
        line = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", 0) + self.col_offset + 1
        return FrontendError(message, self.filename, line, col)

    def location(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", 0) + self.col_offset + 1
        return f"loc({string_literal(self.filename)}:{line}:{col})"


class Translator:
    """One model function with one assignment of its sizes → hgraph IR text."""

    def __init__(self, fdef: ast.FunctionDef, source: Source, sizes: Dict[str, int],
                 locations: bool = False):
        self.fdef = fdef
        self.src = source
        self.given_sizes = dict(sizes)
        self.locations = locations
        self.out = FunctionWriter()
        self.sizes: Dict[str, int] = {}
        self.params: Dict[str, Term] = {}  # name -> Weight, or the node/edge Value of a feature
        self.param_kinds: Dict[str, str] = {}  # name -> "graph", "node", "edge", "weight"
        self.graph: Optional[str] = None
        self.graph_value: Optional[Value] = None
        self.arg_slots: List[Slot] = []
        self.arg_text: List[str] = []
        self.nodes: Dict[str, Term] = {}  # n["k"]
        self.edges: Dict[str, Term] = {}  # e["k"]
        self.locals: Dict[str, Term] = {}
        self.ended_loop_vars: Set[str] = set()
        self.gathers: Dict[tuple, Value] = {}
        self.vectors: Dict[tuple, Value] = {}
        self.results: Optional[List[Term]] = None

    # ---- entry -------------------------------------------------------------

    def translate(self) -> str:
        self._signature()
        body = self.fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        if not body or not isinstance(body[-1], ast.Return):
            raise self.src.error(body[-1] if body else self.fdef,
                                 "a model ends with `return g.ndata[\"name\"]` (or several "
                                 "values, comma-separated)")
        self._block(body[:-1], Scope("top"))
        results = self._return(body[-1])
        return self._render(results)

    def _render(self, results: List[Value]) -> str:
        types = [r.type.ir() for r in results]
        result_text = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
        header: List = [f"hgraph.func {symbol(self.fdef.name)}("]
        for i, (slot, text) in enumerate(zip(self.arg_slots, self.arg_text)):
            header += [", " if i else "", "%", slot, text]
        header.append(f") -> {result_text}")
        ret: List = ["hgraph.return "]
        for i, r in enumerate(results):
            ret += [", " if i else "", "%", r.slot]
        ret.append(" : " + ", ".join(types))
        self.out.op(ret)
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        comment = (f"// {self.fdef.name}"
                   + (f" ({sizes})" if sizes else "")
                   + f": generated by hector.frontend from {self.src.filename}\n")
        return self.out.render(header, self.arg_slots, comment)

    # ---- signature ---------------------------------------------------------

    def _signature(self) -> None:
        args = self.fdef.args
        if args.vararg or args.kwarg:
            bad = args.vararg or args.kwarg
            raise self.src.error(bad, "a model takes no *args or **kwargs")
        if args.defaults:
            raise self.src.error(args.defaults[0],
                                 "graph, feature and weight parameters take no default; "
                                 "sizes are keyword-only parameters after `*`")
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            self._size(arg, default)
        unknown = sorted(set(self.given_sizes) - set(self.sizes))
        if unknown:
            declared = ", ".join(self.sizes) or "none"
            raise self.src.error(self.fdef, f"{self.fdef.name} has no size parameter "
                                 f"{', '.join(map(repr, unknown))} (its sizes: {declared})")
        for arg in args.posonlyargs + args.args:
            self._parameter(arg)
        if self.graph is None:
            raise self.src.error(self.fdef, "a model takes exactly one parameter annotated "
                                 "`Graph` (the graph it runs on)")

    def _size(self, arg: ast.arg, default: Optional[ast.expr]) -> None:
        name = arg.arg
        if name in RESERVED_SIZES:
            raise self.src.error(arg, f"'{name}' is reserved by hector.frontend.emit; "
                                 "give the size another name")
        if arg.annotation is not None and not (isinstance(arg.annotation, ast.Name)
                                               and arg.annotation.id == "int"):
            raise self.src.error(arg.annotation, f"size '{name}' is an int; annotate it "
                                 "`int` or not at all")
        if name in self.given_sizes:
            value = self.given_sizes[name]
            where = f"emit(..., {name}={value!r})"
        elif default is not None:
            if not (isinstance(default, ast.Constant) and type(default.value) is int):
                raise self.src.error(default, f"the default of size '{name}' must be an "
                                     "integer literal")
            value, where = default.value, "its default"
        else:
            raise self.src.error(arg, f"size '{name}' has no value: give it a default or "
                                 f"pass it, e.g. emit({self.fdef.name}, {name}=64)")
        if type(value) is not int or not 1 <= value <= MAX_DIMENSION:
            raise self.src.error(arg, f"size '{name}' must be an integer in [1, "
                                 f"{MAX_DIMENSION}], got {value!r} from {where}")
        self.sizes[name] = value

    def _parameter(self, arg: ast.arg) -> None:
        name = arg.arg
        if name in self.sizes:
            raise self.src.error(arg, f"'{name}' is both a parameter and a size")
        if arg.annotation is None:
            raise self.src.error(arg, f"parameter '{name}' needs an annotation: Graph, "
                                 "NodeFeature[...], EdgeFeature[...], Weight[...], "
                                 "NodeWeight[...] or EdgeWeight[...]")
        kind, type_ = self._annotation(arg.annotation, name)
        slot = Slot(name)
        self.arg_slots.append(slot)
        if kind == "graph":
            if self.graph is not None:
                raise self.src.error(arg, f"a model takes exactly one Graph; '{self.graph}' "
                                     f"is one already")
            self.graph = name
            self.graph_value = Value(slot, None)
            self.arg_text.append(f": {GRAPH_IR}")
            self.param_kinds[name] = "graph"
            return
        self.arg_text.append(f": {type_.ir()} {{hgraph.name = {string_literal(name)}}}")
        if isinstance(type_, WeightType):
            self.params[name] = Weight(slot, type_, name)
            self.param_kinds[name] = "weight"
        else:
            value = Value(slot, type_)
            self.params[name] = value
            self.param_kinds[name] = type_.domain
            (self.nodes if type_.domain == NODE else self.edges)[name] = value

    def _annotation(self, node: ast.expr, what: str):
        """(kind, FeatureType | WeightType | None) of a parameter or result annotation."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node = self._parse_string_annotation(node)
        head = node.value if isinstance(node, ast.Subscript) else node
        name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", None)
        if name == "Graph" and not isinstance(node, ast.Subscript):
            return "graph", None
        if name not in FEATURE_ANNOTATIONS and name not in WEIGHT_ANNOTATIONS:
            raise self.src.error(node, f"cannot read the annotation of '{what}': expected "
                                 "Graph, NodeFeature[W], NodeFeature[W, H], EdgeFeature[...], "
                                 "Weight[...], NodeWeight[...] or EdgeWeight[...]")
        if not isinstance(node, ast.Subscript):
            raise self.src.error(node, f"{name} needs its sizes, e.g. {name}[64]")
        dims_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        dims = [self._dimension(d) for d in dims_nodes]
        if name in FEATURE_ANNOTATIONS:
            if len(dims) not in (1, 2):
                raise self.src.error(node, f"{name}[width] or {name}[width, heads], got "
                                     f"{len(dims)} sizes")
            width, heads = dims[0], dims[1] if len(dims) == 2 else 1
            if width % heads:
                raise self.src.error(node, f"{heads} heads do not divide the width {width}")
            return FEATURE_ANNOTATIONS[name], FeatureType(FEATURE_ANNOTATIONS[name], width, heads)
        if len(dims) not in (1, 2, 3):
            raise self.src.error(node, f"a weight slice is a vector {name}[n], a matrix "
                                 f"{name}[in, out] or per-head blocks {name}[H, in/H, out/H]; "
                                 f"got {len(dims)} sizes")
        return "weight", WeightType(WEIGHT_ANNOTATIONS[name], tuple(dims))

    def _parse_string_annotation(self, node: ast.Constant) -> ast.expr:
        try:
            parsed = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            raise self.src.error(node, f"cannot parse the annotation {node.value!r}") from None
        for sub in ast.walk(parsed):  # positions inside the string are relative to it
            if hasattr(sub, "lineno"):
                sub.lineno, sub.col_offset = node.lineno, node.col_offset
        return parsed

    def _dimension(self, node: ast.expr) -> int:
        value = self._const(node, Scope("top"), "a size")
        if type(value) is not int or not 1 <= value <= MAX_DIMENSION:
            raise self.src.error(node, f"sizes must be integers in [1, {MAX_DIMENSION}], got "
                                 f"{value!r}")
        return value

    def _const(self, node: ast.expr, scope: Scope, what: str):
        term = self._expr(node, scope)
        if not isinstance(term, Const):
            raise self.src.error(node, f"{what} must be a constant expression of sizes and "
                                 "numbers")
        return term.value

    # ---- statements --------------------------------------------------------

    def _block(self, stmts: List[ast.stmt], scope: Scope) -> None:
        for stmt in stmts:
            self._statement(stmt, scope)

    def _statement(self, stmt: ast.stmt, scope: Scope) -> None:
        if isinstance(stmt, ast.For):
            self._for(stmt, scope)
        elif isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise self.src.error(stmt, "assign one target at a time")
            self._assign(stmt.targets[0], stmt.value, scope, stmt)
        elif isinstance(stmt, ast.AugAssign):
            self._augassign(stmt, scope)
        elif isinstance(stmt, ast.If):
            branch = stmt.body if self._condition(stmt.test, scope) else stmt.orelse
            self._block(branch, scope)
        elif isinstance(stmt, ast.Assert):
            if not self._condition(stmt.test, scope):
                detail = ""
                if stmt.msg is not None:
                    detail = f": {self._const(stmt.msg, scope, 'an assert message')}"
                raise self.src.error(stmt, f"assertion failed{detail}")
        elif isinstance(stmt, ast.Pass):
            pass
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                and isinstance(stmt.value.value, str):
            pass  # a string used as a comment
        elif isinstance(stmt, ast.Expr):
            raise self.src.error(stmt, "this expression is computed and thrown away: assign "
                                 "it to n[\"name\"], e[\"name\"] or a variable")
        elif isinstance(stmt, ast.Return):
            raise self.src.error(stmt, "return must be the last statement of the model, "
                                 "outside every loop")
        elif isinstance(stmt, (ast.While, ast.AsyncFor)):
            raise self.src.error(stmt, "only `for` loops over g.edges(), g.nodes(), "
                                 "g.dst_nodes() and n.incoming_edges() are supported")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                               ast.Lambda)):
            raise self.src.error(stmt, "a model cannot define functions or classes; write "
                                 "helpers as separate models or inline them")
        else:
            raise self.src.error(stmt, f"unsupported statement ({_kind_name(stmt)}) in a "
                                 "model")

    def _condition(self, test: ast.expr, scope: Scope) -> bool:
        term = self._expr(test, scope)
        if not isinstance(term, Const):
            raise self.src.error(test, "conditions must depend only on sizes and numbers "
                                 "(control flow on data is not supported)")
        return bool(term.value)

    def _for(self, stmt: ast.For, scope: Scope) -> None:
        if stmt.orelse:
            raise self.src.error(stmt.orelse[0], "for ... else is not supported")
        if not isinstance(stmt.target, ast.Name):
            raise self.src.error(stmt.target, "a loop binds one name: `for e in g.edges()`")
        var = stmt.target.id
        it = stmt.iter
        what = self._iteration(it, scope)
        self._check_new_name(stmt.target, var, "loop variable")
        if what in ("edges", "nodes"):
            inner = Scope("edge", edge=var) if what == "edges" else Scope("node", node=var)
            self._block(stmt.body, inner)
        else:  # incoming edges of scope.node
            inner = Scope("edge", node=scope.node, edge=var, nested=True)
            inner.summing = self._summed_keys(stmt.body, scope.node)
            self._block(stmt.body, inner)
            for key, values in inner.sums.items():
                self._finish_sum(key, values, stmt)
        self.ended_loop_vars.add(var)

    def _iteration(self, it: ast.expr, scope: Scope) -> str:
        """'edges', 'nodes' or 'incoming' for a supported loop, else an error."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
                and isinstance(it.func.value, ast.Name) and not it.args and not it.keywords:
            base, method = it.func.value.id, it.func.attr
            if base == self.graph and method in ("edges", "nodes", "dst_nodes"):
                if scope.kind != "top":
                    raise self.src.error(it, f"loops over {base}.{method}() cannot be nested; "
                                         "inside a node loop, iterate n.incoming_edges()")
                return "edges" if method == "edges" else "nodes"
            if method == "incoming_edges" and scope.kind == "node" and base == scope.node:
                return "incoming"
            if method == "incoming_edges":
                raise self.src.error(it, "`for e in n.incoming_edges()` belongs directly in "
                                     "a node loop `for n in g.dst_nodes()`, with n its "
                                     "variable")
        graph = self.graph
        raise self.src.error(it, f"a loop runs over {graph}.edges(), {graph}.nodes(), "
                             f"{graph}.dst_nodes() or, inside a node loop, n.incoming_edges()")

    def _summed_keys(self, body: List[ast.stmt], node_var: str) -> Set[str]:
        keys = set()
        for sub in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Subscript) \
                    and isinstance(sub.target.value, ast.Name) \
                    and sub.target.value.id == node_var \
                    and isinstance(sub.target.slice, ast.Constant):
                keys.add(sub.target.slice.value)
        return keys

    def _check_new_name(self, node: ast.AST, name: str, what: str) -> None:
        if name in self.param_kinds or name in self.sizes:
            raise self.src.error(node, f"{what} '{name}' hides the parameter '{name}'")

    def _key(self, target: ast.Subscript) -> str:
        if not (isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str)):
            raise self.src.error(target.slice, "feature names are string literals: "
                                 "n[\"h\"], e[\"score\"]")
        return target.slice.value

    def _assign(self, target: ast.expr, value_node: ast.expr, scope: Scope,
                stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            self._check_new_name(target, name, "variable")
            if name in (scope.node, scope.edge):
                raise self.src.error(target, f"cannot assign to the loop variable '{name}'")
            term = self._expr(value_node, scope)
            if isinstance(term, (Selector, Ref)):
                raise self.src.error(value_node, f"{term.text} cannot be stored in a "
                                     "variable; use it where it is needed")
            if isinstance(term, (Value, Weight)) and term.slot.hint is None:
                term.slot.hint = name
            self.locals[name] = term
            return
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            var = target.value.id
            key = self._key(target)
            if (scope.kind == "edge" and var == scope.edge) \
                    or (scope.kind == "node" and var == scope.node):
                domain = EDGE if scope.kind == "edge" else NODE
                term = self._stored(self._expr(value_node, scope), domain, scope, value_node)
                if isinstance(term, Value) and term.slot.hint is None:
                    term.slot.hint = key
                (self.edges if domain == EDGE else self.nodes)[key] = term
                return
            if scope.nested and var == scope.node:
                raise self.src.error(target, f"{var}[{key!r}] cannot be assigned inside its "
                                     f"incoming-edge loop: sum into it with {var}[{key!r}] "
                                     f"+= ..., or assign {var}[{key!r}] = sum(... for e in "
                                     f"{var}.incoming_edges()) in the node loop")
        if isinstance(target, ast.Tuple):
            raise self.src.error(target, "assign one value at a time (no tuple unpacking)")
        where = {"top": "outside loops, assign variables (weights and constants)",
                 "node": f"in a node loop, assign {scope.node}[\"name\"] or a variable",
                 "edge": f"in an edge loop, assign {scope.edge}[\"name\"] or a variable"}
        raise self.src.error(target, f"cannot assign to this target: {where[scope.kind]}")

    def _stored(self, term: Term, domain: str, scope: Scope, node: ast.expr) -> Term:
        """Checks a value assigned to n[...] or e[...]; keeps deferred reads deferred."""
        if isinstance(term, (NodeRead, VectorRead)):
            return term
        value = self._value(term, scope, node)
        if value.type.domain != domain:
            raise self.src.error(node, f"this is a {value.type} value; it cannot be stored "
                                 f"as a {domain}-wise feature")
        return value

    def _augassign(self, stmt: ast.AugAssign, scope: Scope) -> None:
        target = stmt.target
        if scope.nested and isinstance(target, ast.Subscript) \
                and isinstance(target.value, ast.Name) and target.value.id == scope.node:
            key = self._key(target)
            if not isinstance(stmt.op, ast.Add):
                raise self.src.error(stmt, f"only `{scope.node}[{key!r}] += ...` (a sum over "
                                     "incoming edges) is supported here; use mean(...) or "
                                     "max(...) generators for other reductions")
            value = self._value(self._expr(stmt.value, scope), scope, stmt.value)
            if value.type.domain != EDGE:
                raise self.src.error(stmt.value, f"the summed value must be edge-wise, got "
                                     f"{value.type}")
            scope.sums.setdefault(key, []).append(value)
            return
        load = ast.copy_location(ast.BinOp(left=_as_load(target), op=stmt.op,
                                           right=stmt.value), stmt)
        self._assign(target, load, scope, stmt)

    def _finish_sum(self, key: str, values: List[Value], stmt: ast.stmt) -> None:
        """n["k"] += x inside the incoming-edge loop: n["k"] (if any) + sum over edges."""
        total = values[0]
        for v in values[1:]:
            total = self._binary_values("add", "+", total, v, stmt)
        old = self.nodes.get(key)
        agg = self._emit(None if old is not None else key, "aggregate sum ", [total],
                         f" : {total.type.ir()} -> ",
                         FeatureType(NODE, total.type.width, total.type.heads), stmt)
        if old is not None:
            old = self._value(old, Scope("node"), stmt)
            agg = self._binary_values("add", "+", old, agg, stmt)
            agg.slot.hint = key
        self.nodes[key] = agg

    def _return(self, stmt: ast.Return) -> List[Value]:
        if stmt.value is None:
            raise self.src.error(stmt, "a model returns at least one value")
        items = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
        results = []
        top = Scope("top")
        for item in items:
            term = self._result_term(item, top)
            if isinstance(term, VectorRead):
                term = self._vector(term, 1, item)
            elif isinstance(term, NodeRead):
                term = self._gather(term, item)
            if isinstance(term, Weight):
                raise self.src.error(item, "a model returns node-wise or edge-wise values, "
                                     "not weights")
            if not isinstance(term, Value):
                raise self.src.error(item, "return g.ndata[\"name\"], g.edata[\"name\"] or a "
                                     "variable holding a node-wise or edge-wise value")
            results.append(term)
        if self.fdef.returns is not None:
            self._check_returns(self.fdef.returns, results)
        return results

    def _result_term(self, item: ast.expr, scope: Scope) -> Term:
        if isinstance(item, ast.Subscript) and isinstance(item.value, ast.Attribute) \
                and isinstance(item.value.value, ast.Name) and item.value.value.id == self.graph \
                and item.value.attr in ("ndata", "edata"):
            key = self._key(item)
            table = self.nodes if item.value.attr == "ndata" else self.edges
            if key not in table:
                raise self.src.error(item, self._missing(key, item.value.attr == "ndata"))
            return table[key]
        if isinstance(item, ast.Name) and item.id in self.locals:
            return self.locals[item.id]
        return self._expr(item, scope)

    def _check_returns(self, annotation: ast.expr, results: List[Value]) -> None:
        items = [annotation]
        if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) \
                and annotation.value.id in ("tuple", "Tuple"):
            sl = annotation.slice
            items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if len(items) != len(results):
            raise self.src.error(annotation, f"the annotation declares {len(items)} results, "
                                 f"the model returns {len(results)}")
        for item, result in zip(items, results):
            kind, declared = self._annotation(item, "the result")
            if kind == "graph" or isinstance(declared, WeightType):
                raise self.src.error(item, "a result is a NodeFeature[...] or EdgeFeature[...]")
            if declared != result.type:
                raise self.src.error(item, f"the result is declared {declared} but the model "
                                     f"returns {result.type}")

    # ---- expressions -------------------------------------------------------

    def _expr(self, node: ast.expr, scope: Scope) -> Term:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str)):
                return Const(node.value)
            raise self.src.error(node, f"unsupported constant {node.value!r}")
        if isinstance(node, ast.Name):
            return self._name(node, scope)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, scope)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, scope)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.BinOp):
            return self._binop(node, scope)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node, scope)
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            return self._logic(node, scope)
        if isinstance(node, ast.IfExp):
            return self._expr(node.body if self._condition(node.test, scope) else node.orelse,
                              scope)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
            raise self.src.error(node, "a generator over incoming edges is the argument of "
                                 "sum(...), mean(...) or max(...)")
        raise self.src.error(node, f"unsupported expression ({_kind_name(node)}) in a model")

    def _name(self, node: ast.Name, scope: Scope) -> Term:
        name = node.id
        if name == scope.edge:
            return Ref("edge", name)
        if name == scope.node:
            return Ref("dst" if scope.nested else "node", name)
        if name in self.locals:
            term = self.locals[name]
            if scope.kind == "edge" and isinstance(term, Value) and term.type.domain == NODE:
                if scope.nested:  # the destination's own value
                    return NodeRead(term, "dst", f"{name}_dst")
                raise self.src.error(node, f"'{name}' is node-wise; in an edge loop read it at "
                                     f"an endpoint: store it as n[{name!r}] and read "
                                     f"{scope.edge}.src[{name!r}] or {scope.edge}.dst[{name!r}]")
            if scope.kind == "node" and isinstance(term, (Value, NodeRead)) \
                    and (isinstance(term, NodeRead) or term.type.domain == EDGE):
                raise self.src.error(node, f"'{name}' is edge-wise; a node loop reads edges "
                                     "through sum/mean/max(... for e in n.incoming_edges())")
            if isinstance(term, VectorRead) and scope.kind != "top" \
                    and term.domain != scope.domain:
                raise self.src.error(node, f"'{name}' is {term.domain}-wise; it cannot be used "
                                     f"in a {scope.kind} loop")
            if scope.kind == "top" and isinstance(term, (Value, NodeRead, VectorRead)):
                raise self.src.error(node, f"'{name}' is a node-wise or edge-wise value; use it "
                                     "inside a loop")
            return term
        kind = self.param_kinds.get(name)
        if kind == "graph":
            return Ref("graph", name)
        if kind == "weight":
            return self.params[name]
        if kind in (NODE, EDGE):
            how = (f"n[{name!r}], e.src[{name!r}] or e.dst[{name!r}]" if kind == NODE
                   else f"e[{name!r}]")
            raise self.src.error(node, f"'{name}' is a {kind}-wise feature; read it through "
                                 f"a loop variable: {how}")
        if name in self.sizes:
            return Const(self.sizes[name])
        if name in self.ended_loop_vars:
            raise self.src.error(node, f"'{name}' is a loop variable and is only bound "
                                 "inside its loop")
        if name in FUNCTIONS or name in ("math",):
            raise self.src.error(node, f"'{name}' is a function; call it")
        raise self.src.error(node, f"unknown name '{name}'")

    def _attribute(self, node: ast.Attribute, scope: Scope) -> Term:
        if isinstance(node.value, ast.Name) and node.value.id == "math" \
                and node.value.id not in self.locals and node.attr in ("pi", "e"):
            return Const(getattr(math, node.attr))
        base = self._expr(node.value, scope)
        attr = node.attr
        if isinstance(base, Ref):
            text = f"{base.text}.{attr}"
            if base.kind == "edge" and attr in ("src", "dst"):
                return Ref(attr, text)
            if base.kind == "edge" and attr == "etype":
                return Selector("etype", None, text)
            if base.kind in ("node", "dst", "src") and attr == "ntype":
                endpoint = "node" if base.kind == "node" else base.kind
                return Selector("ntype", endpoint, text)
            if base.kind == "graph" and attr in ("ndata", "edata"):
                raise self.src.error(node, f"{text}[...] is only read by the return statement; "
                                     "inside loops read n[...] and e[...]")
            known = {"edge": "src, dst, etype", "node": "ntype", "dst": "ntype",
                     "src": "ntype",
                     "graph": "edges(), nodes(), dst_nodes() (as loops), ndata, edata"}
            if base.kind == "node" and attr in ("src", "dst", "etype"):
                raise self.src.error(node, f"'{base.text}' is a node; {attr} is an edge "
                                     "attribute")
            raise self.src.error(node, f"unknown attribute '{attr}' of {base.text} (known: "
                                 f"{known[base.kind]})")
        if isinstance(base, Weight):
            raise self.src.error(node, f"weight '{base.name}' has no attribute '{attr}'; apply "
                                 "it with typed_linear or typed_vector")
        raise self.src.error(node, f"unsupported attribute '{attr}'")

    def _subscript(self, node: ast.Subscript, scope: Scope) -> Term:
        base = self._expr(node.value, scope)
        if isinstance(base, Ref):
            key = self._key(node)
            if base.kind == "edge":
                if key not in self.edges:
                    raise self.src.error(node, self._missing(key, node_wise=False))
                return self.edges[key]
            if base.kind == "node":
                if key not in self.nodes:
                    raise self.src.error(node, self._missing(key, node_wise=True))
                return self.nodes[key]
            if base.kind in ("src", "dst"):
                if base.kind == "dst" and key in scope.summing:
                    raise self.src.error(node, f"{base.text}[{key!r}] is being summed by this "
                                         "loop; read it after the loop")
                if key not in self.nodes:
                    raise self.src.error(node, self._missing(key, node_wise=True))
                value = self.nodes[key]
                if isinstance(value, VectorRead):
                    value = self._vector(value, 1, node)
                return NodeRead(value, base.kind, f"{key}_{base.kind}")
            raise self.src.error(node, f"{base.text} cannot be indexed")
        if isinstance(base, Weight):
            raise self.src.error(node, f"weights are used whole: typed_linear({base.name}, x, "
                                 "e.etype) and typed_vector(...) select the slice")
        raise self.src.error(node, "only n[\"name\"], e[\"name\"], e.src[\"name\"] and "
                             "e.dst[\"name\"] can be indexed")

    def _missing(self, key: str, node_wise: bool) -> str:
        table, other = (self.nodes, self.edges) if node_wise else (self.edges, self.nodes)
        kind = "node" if node_wise else "edge"
        message = f"no {kind}-wise feature {key!r} is defined here"
        if key in other:
            message += f" ({key!r} is {'edge' if node_wise else 'node'}-wise)"
        elif table:
            message += f"; defined: {', '.join(sorted(table))}"
        return message

    # ---- arithmetic ----------------------------------------------------------

    def _binop(self, node: ast.BinOp, scope: Scope) -> Term:
        lhs = self._expr(node.left, scope)
        rhs = self._expr(node.right, scope)
        if isinstance(lhs, Const) and isinstance(rhs, Const):
            fold = CONST_BINARY.get(type(node.op))
            if fold is None or isinstance(lhs.value, str) or isinstance(rhs.value, str):
                raise self.src.error(node, "unsupported operator on constants")
            try:
                return Const(fold(lhs.value, rhs.value))
            except (ZeroDivisionError, OverflowError, ValueError) as err:
                raise self.src.error(node, f"constant expression fails: {err}") from None
        if type(node.op) not in BINARY_OPS:
            raise self.src.error(node, f"unsupported operator ({_kind_name(node.op)}) on "
                                 "values: use +, -, * or /")
        op, symbol_ = BINARY_OPS[type(node.op)]
        if isinstance(lhs, Const) or isinstance(rhs, Const):
            return self._constant_operand(op, symbol_, lhs, rhs, node, scope)
        a, b = self._pair(lhs, rhs, scope, node)
        return self._binary_values(op, symbol_, a, b, node)

    def _constant_operand(self, op, symbol_, lhs, rhs, node, scope) -> Value:
        const, other = (lhs, rhs) if isinstance(lhs, Const) else (rhs, lhs)
        value = self._value(other, scope, node)
        factor = const.value
        if isinstance(factor, str):
            raise self.src.error(node, "strings are not numbers")
        if op == "mul":
            return self._const_scale(value, float(factor), node)
        if op == "div" and const is rhs:
            if factor == 0:
                raise self.src.error(node, "division by zero")
            return self._const_scale(value, 1.0 / factor, node)
        raise self.src.error(node, f"`{symbol_}` between a value and a constant is not "
                             "supported: hgraph scales by constants (x * c, x / c) but has no "
                             "constant values")

    def _const_scale(self, value: Value, factor: float, node: ast.AST) -> Value:
        if not math.isfinite(factor):
            raise self.src.error(node, f"the constant factor {factor} is not finite")
        return self._emit(None, "const_scale ", [value],
                          f" by {float_literal(factor)} : {value.type.ir()}", value.type, node)

    def _binary_values(self, op: str, symbol_: str, a: Value, b: Value,
                       node: ast.AST) -> Value:
        if a.type == b.type:
            return self._emit(None, f"{op} ", [a, ", ", b], f" : {a.type.ir()}", a.type, node)
        if op == "mul":  # scalar per head times vector: hgraph.scale
            for s, x in ((b, a), (a, b)):
                if s.type.is_scalar and s.type.domain == x.type.domain \
                        and (s.type.width == 1 or s.type.width == x.type.heads):
                    return self._scale(s, x, node)
        raise self.src.error(node, f"operands of `{symbol_}` differ: {a.type} and {b.type}"
                             + ("; `*` also scales a value by one scalar per head (or one for "
                                "all heads)" if op == "mul" else ""))

    def _scale(self, s: Value, x: Value, node: ast.AST) -> Value:
        if s.type.domain != x.type.domain:
            raise self.src.error(node, f"scale: {s.type} and {x.type} are not of one domain")
        if not s.type.is_scalar or (s.type.width != 1 and s.type.width != x.type.heads):
            raise self.src.error(node, f"scale: the factor {s.type} must hold one scalar per "
                                 f"head of {x.type} (or a single one)")
        return self._emit(None, "scale ", [s, ", ", x],
                          f" : {s.type.ir()}, {x.type.ir()} -> {x.type.ir()}", x.type, node)

    def _unary(self, node: ast.UnaryOp, scope: Scope) -> Term:
        operand = self._expr(node.operand, scope)
        if isinstance(operand, Const):
            value = operand.value
            if isinstance(node.op, ast.USub):
                return Const(-value)
            if isinstance(node.op, ast.UAdd):
                return Const(+value)
            if isinstance(node.op, ast.Not):
                return Const(not value)
            raise self.src.error(node, "unsupported operator on a constant")
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            value = self._value(operand, scope, node)
            return self._emit(None, "neg ", [value], f" : {value.type.ir()}", value.type, node)
        raise self.src.error(node, f"unsupported operator ({_kind_name(node.op)}) on values")

    def _logic(self, node: ast.expr, scope: Scope) -> Const:
        if isinstance(node, ast.BoolOp):
            values = [self._const(v, scope, "an operand of and/or") for v in node.values]
            result = values[0]
            for v in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return Const(result)
        left = self._const(node.left, scope, "a compared operand")
        for op, right_node in zip(node.ops, node.comparators):
            right = self._const(right_node, scope, "a compared operand")
            compare = CONST_COMPARE.get(type(op))
            if compare is None:
                raise self.src.error(node, f"unsupported comparison ({_kind_name(op)})")
            if not compare(left, right):
                return Const(False)
            left = right
        return Const(True)

    # ---- materialising terms --------------------------------------------------

    def _value(self, term: Term, scope: Scope, node: ast.AST,
               heads: Optional[int] = None) -> Value:
        """A concrete node-wise or edge-wise value of `term`."""
        if isinstance(term, Value):
            return term
        if isinstance(term, NodeRead):
            return self._gather(term, node)
        if isinstance(term, VectorRead):
            return self._vector(term, heads or 1, node)
        if isinstance(term, Const):
            raise self.src.error(node, "a constant is used where a node-wise or edge-wise value "
                                 "is needed")
        if isinstance(term, Weight):
            raise self.src.error(node, f"'{term.name}' is a weight; apply it with "
                                 "typed_linear(...) or read it with typed_vector(...)")
        if isinstance(term, Selector):
            raise self.src.error(node, f"{term.text} selects weight slices (third argument of "
                                 "typed_linear / second of typed_vector); it is not a value")
        if isinstance(term, Ref):
            if term.kind == "graph":
                raise self.src.error(node, f"the graph '{term.text}' is not a value")
            raise self.src.error(node, f"'{term.text}' is a {term.kind if term.kind != 'dst' else 'node'}"
                                 f", not a value: read a feature, e.g. {term.text}[\"h\"]")
        raise AssertionError(term)

    def _pair(self, a: Term, b: Term, scope: Scope, node: ast.AST):
        """Two concrete values; a typed_vector takes the head count of the other operand."""
        if isinstance(a, VectorRead) and not isinstance(b, VectorRead):
            b = self._value(b, scope, node)
            a = self._vector(a, self._heads_for(a, b), node)
        elif isinstance(b, VectorRead) and not isinstance(a, VectorRead):
            a = self._value(a, scope, node)
            b = self._vector(b, self._heads_for(b, a), node)
        return self._value(a, scope, node), self._value(b, scope, node)

    @staticmethod
    def _heads_for(vector: VectorRead, other: Value) -> int:
        if vector.heads is not None:
            return vector.heads
        return other.type.heads if vector.weight.type.shape[0] % other.type.heads == 0 else 1

    def _gather(self, read: NodeRead, node: ast.AST) -> Value:
        key = (id(read.value.slot), read.endpoint)
        if key not in self.gathers:
            t = read.value.type
            self.gathers[key] = self._emit(read.hint, "gather ", [read.value],
                                           f" from {read.endpoint} : {t.ir()} -> ",
                                           FeatureType(EDGE, t.width, t.heads), node)
        return self.gathers[key]

    def _vector(self, read: VectorRead, heads: int, node: ast.AST) -> Value:
        heads = read.heads or heads
        width = read.weight.type.shape[0]
        if width % heads:
            raise self.src.error(node, f"typed_vector({read.weight.name}): {heads} heads do "
                                 f"not divide its length {width}")
        key = (id(read.weight.slot), read.domain, heads)
        if key not in self.vectors:
            self.vectors[key] = self._emit(f"{read.weight.slot.hint or 'w'}_v", "typed_vector ", [read.weight],
                                           f" : {read.weight.type.ir()} -> ",
                                           FeatureType(read.domain, width, heads), node)
        return self.vectors[key]

    def _emit(self, hint: Optional[str], op: str, operands: List, tail: str,
              result_type: FeatureType, node: ast.AST) -> Value:
        """Writes `%r = hgraph.<op><operands><tail>[<result type>]` and returns %r.

        `tail` ending in "-> " gets the result type appended.
        """
        slot = Slot(hint)
        parts: List = ["%", slot, " = hgraph." + op]
        for operand in operands:
            parts += ["%", operand.slot] if isinstance(operand, (Value, Weight)) else [operand]
        parts.append(tail + (result_type.ir() if tail.endswith("-> ") else ""))
        self.out.op(parts, self.src.location(node) if self.locations else None)
        return Value(slot, result_type)

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
        args = self._arguments(node, "edge_softmax", ["x"])
        x = self._value(self._expr(args["x"], scope), scope, args["x"])
        if x.type.domain != EDGE:
            raise self.src.error(node, f"edge_softmax() normalizes edge-wise values over the "
                                 f"incoming edges of each node; got {x.type}")
        return self._emit(None, "edge_softmax ", [x], f" : {x.type.ir()}", x.type, node)

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
        if isinstance(term, Const) and not isinstance(term.value, str):
            try:
                return Const(CONST_MATH[name](term.value))
            except (OverflowError, ValueError) as err:
                raise self.src.error(node, f"constant expression fails: {err}") from None
        x = self._value(term, scope, args["x"])
        return self._emit(None, f"{name} ", [x], f" : {x.type.ir()}", x.type, node)

    def _fn_leaky_relu(self, node: ast.Call, scope: Scope) -> Value:
        args = self._arguments(node, "leaky_relu", ["x", "alpha"], [], 1)
        alpha = 0.01
        if "alpha" in args:
            alpha = self._const(args["alpha"], scope, "the slope of leaky_relu")
            if isinstance(alpha, str) or not math.isfinite(alpha):
                raise self.src.error(args["alpha"], "the slope of leaky_relu must be a finite "
                                     "number")
        x = self._value(self._expr(args["x"], scope), scope, args["x"])
        return self._emit(None, "leaky_relu ", [x],
                          f" alpha {float_literal(float(alpha))} : {x.type.ir()}", x.type, node)

    def _fn_sqrt(self, node: ast.Call, scope: Scope) -> Const:
        args = self._arguments(node, "sqrt", ["x"])
        value = self._const(args["x"], scope, "the argument of sqrt (hgraph has no sqrt op)")
        if isinstance(value, str) or value < 0:
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
        if self._iteration(comp.iter, scope) != "incoming":
            raise AssertionError("unreachable")  # _iteration reports other loops
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
        index = ib if ia == SINGLE else EDGE if mixed else ia
        if ia != SINGLE and ib != SINGLE and ia != ib and not mixed:
            raise AssertionError("unreachable")
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


def _as_load(target: ast.expr) -> ast.expr:
    """A copy of an assignment target that reads it (for x op= y)."""
    node = ast.parse(ast.unparse(target), mode="eval").body
    for sub in ast.walk(node):
        if hasattr(sub, "lineno"):
            sub.lineno, sub.col_offset = target.lineno, target.col_offset
    return node

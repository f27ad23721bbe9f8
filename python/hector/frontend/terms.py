"""What a DSL expression evaluates to, where a statement runs, and where an
error is reported."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Union

from .errors import FrontendError
from .ir import Slot, string_literal
from .types import EDGE, NODE, FeatureType, WeightType

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

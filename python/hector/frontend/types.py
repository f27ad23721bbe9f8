"""The frontend's view of hgraph types, and their IR spelling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

# Sizes are bounded like the dialect's (kMaxDimension), so that the verifier
# never sees a size the frontend accepted.
MAX_DIMENSION = 1 << 24

NODE, EDGE = "node", "edge"
SINGLE = "single"


@dataclass(frozen=True)
class FeatureType:
    """!hgraph.node<...> or !hgraph.edge<...>: one row per node or per edge."""

    domain: str  # NODE or EDGE
    width: int
    heads: int = 1

    def ir(self) -> str:
        heads = f", heads = {self.heads}" if self.heads != 1 else ""
        return f"!hgraph.{self.domain}<{self.width}xf32{heads}>"

    @property
    def is_scalar(self) -> bool:
        """One column per head (attention scores, norms): a `scale` factor."""
        return self.width == self.heads

    def __str__(self) -> str:
        heads = f", heads={self.heads}" if self.heads != 1 else ""
        return f"{self.domain}-wise[{self.width}{heads}]"


@dataclass(frozen=True)
class WeightType:
    """!hgraph.weight<INDEX, SHAPE x f32>: one slice per edge type, per node type, or one."""

    index: str  # SINGLE, NODE or EDGE
    shape: Tuple[int, ...]

    def ir(self) -> str:
        return f"!hgraph.weight<{self.index}, {'x'.join(map(str, self.shape))}xf32>"

    @property
    def is_vector(self) -> bool:
        return len(self.shape) == 1

    @property
    def is_per_head(self) -> bool:
        return len(self.shape) == 3

    @property
    def in_width(self) -> int:
        return self.shape[0] * self.shape[1] if self.is_per_head else self.shape[0]

    @property
    def out_width(self) -> int:
        if self.is_vector:
            return self.shape[0]
        return self.shape[0] * self.shape[2] if self.is_per_head else self.shape[1]

    def __str__(self) -> str:
        kind = {SINGLE: "single", NODE: "node-typed", EDGE: "edge-typed"}[self.index]
        return f"{kind} weight [{', '.join(map(str, self.shape))}]"


GRAPH_IR = "!hgraph.graph"

"""The published shapes of the 8 benchmark datasets (BRIEF.md section 5), as generator specs.

Only the counts are published; everything else in a spec (compaction target,
and the schema where we know it) is documented in docs/datasets.md.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class GraphSpec:
    """What the generator must produce. Counts are for scale 1.

    node_type_sizes / edge_type_sizes / edge_type_endpoints are optional exact
    schemas (used for mag and biokg, whose schemas are public); when absent the
    generator draws skewed ones from the seed.
    """

    name: str
    num_nodes: int
    num_edges: int
    num_node_types: int
    num_edge_types: int
    compaction: float  # target (unique (src, etype) pairs) / edges
    node_type_sizes: Optional[Tuple[int, ...]] = None
    edge_type_sizes: Optional[Tuple[int, ...]] = None
    edge_type_endpoints: Optional[Tuple[Tuple[int, int], ...]] = None

    def __post_init__(self) -> None:
        if self.num_node_types < 1 or self.num_edge_types < 1:
            raise ValueError(f"{self.name}: need at least one node type and one edge type")
        if self.num_nodes < self.num_node_types:
            raise ValueError(
                f"{self.name}: {self.num_nodes} nodes cannot fill {self.num_node_types} non-empty node types"
            )
        if self.num_edges < 0:
            raise ValueError(f"{self.name}: num_edges must be >= 0, got {self.num_edges}")
        if not 0.0 < self.compaction <= 1.0:
            raise ValueError(f"{self.name}: compaction ratio must lie in (0, 1], got {self.compaction}")
        if self.node_type_sizes is not None:
            if len(self.node_type_sizes) != self.num_node_types or sum(self.node_type_sizes) != self.num_nodes:
                raise ValueError(f"{self.name}: node_type_sizes must have one entry per type and sum to num_nodes")
        if self.edge_type_sizes is not None:
            if len(self.edge_type_sizes) != self.num_edge_types or sum(self.edge_type_sizes) != self.num_edges:
                raise ValueError(f"{self.name}: edge_type_sizes must have one entry per type and sum to num_edges")
        if self.edge_type_endpoints is not None:
            if len(self.edge_type_endpoints) != self.num_edge_types or any(
                not (0 <= s < self.num_node_types and 0 <= d < self.num_node_types)
                for s, d in self.edge_type_endpoints
            ):
                raise ValueError(f"{self.name}: edge_type_endpoints must hold one valid (src, dst) type pair per edge type")


# mag (ogbn-mag): node types paper, author, institution, field_of_study; edge types
# author-writes-paper, paper-cites-paper, paper-has_topic-field, author-affiliated_with-institution.
_MAG = GraphSpec(
    "mag", 1_939_743, 21_111_007, 4, 4, compaction=0.15,
    node_type_sizes=(736_389, 1_134_649, 8_740, 59_965),
    edge_type_sizes=(7_145_660, 5_416_271, 7_505_078, 1_043_998),
    edge_type_endpoints=((1, 0), (0, 0), (0, 3), (1, 2)),
)

# biokg (ogbl-biokg): node types disease, drug, function, protein, sideeffect.
_BIOKG = GraphSpec(
    "biokg", 93_773, 4_762_678, 5, 51, compaction=0.10,
    node_type_sizes=(10_687, 10_533, 45_085, 17_499, 9_969),
)

DATASETS: Dict[str, GraphSpec] = {
    s.name: s
    for s in (
        GraphSpec("aifb", 7_262, 48_810, 7, 104, compaction=0.60),
        GraphSpec("mutag", 27_163, 148_100, 5, 50, compaction=0.60),
        GraphSpec("bgs", 94_806, 672_884, 27, 122, compaction=0.40),
        GraphSpec("am", 881_680, 5_668_682, 7, 96, compaction=0.57),  # published ratio
        GraphSpec("fb15k", 14_541, 620_232, 1, 474, compaction=0.26),  # published ratio
        _BIOKG,
        GraphSpec("wikikg2", 2_500_604, 16_109_182, 1, 535, compaction=0.60),
        _MAG,
    )
}


def get_spec(name: str) -> GraphSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None

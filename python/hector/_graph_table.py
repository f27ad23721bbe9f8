# Generated from runtime/include/hector/graph_arrays.def by
# scripts/generate-abi-tables.py: edit the table there, then run the script
# (test/python/test_abi_tables.py checks that this copy is current).
"""The graph arrays of hector_graph_build, in id order."""

from typing import NamedTuple


class GraphArray(NamedTuple):
    name: str
    length: str  # an expression of N, E, T, R and P
    dtype: str  # "int32" or "float32"
    check: str  # "ids": in [0, bound); "offsets": 0 .. bound, never decreasing; "values"
    bound: str  # N, E, T, R or P; "" for "values"


ARRAYS = (
    GraphArray('node_type', 'N', 'int32', 'ids', 'T'),
    GraphArray('edge_src', 'E', 'int32', 'ids', 'N'),
    GraphArray('edge_dst', 'E', 'int32', 'ids', 'N'),
    GraphArray('edge_type', 'E', 'int32', 'ids', 'R'),
    GraphArray('etype_offsets', 'R+1', 'int32', 'offsets', 'E'),
    GraphArray('edge_norm', 'E', 'float32', 'values', ''),
    GraphArray('csr_row_ptr', 'N+1', 'int32', 'offsets', 'E'),
    GraphArray('csr_src', 'E', 'int32', 'ids', 'N'),
    GraphArray('csr_eid', 'E', 'int32', 'ids', 'E'),
    GraphArray('csr_etype', 'E', 'int32', 'ids', 'R'),
    GraphArray('ntype_perm', 'N', 'int32', 'ids', 'N'),
    GraphArray('ntype_offsets', 'T+1', 'int32', 'offsets', 'N'),
    GraphArray('compact_src', 'P', 'int32', 'ids', 'N'),
    GraphArray('compact_offsets', 'R+1', 'int32', 'offsets', 'P'),
    GraphArray('compact_map', 'E', 'int32', 'ids', 'P'),
    GraphArray('edge_perm', 'E', 'int32', 'ids', 'E'),
    GraphArray('pair_eid', 'E', 'int32', 'ids', 'E'),
)

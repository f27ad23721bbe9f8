"""PyTorch Geometric-style layers computed by hector-compiled libraries.

    conv = hector.nn.RGCNConv(64, 64, num_relations=8)
    out = conv(x, edge_index, edge_type)            # as torch_geometric.nn.RGCNConv

RGCNConv (and FastRGCNConv, the same layer), RGATConv and HGTConv take PyG 2.8's constructor and forward
arguments where the math matches; docs/python.md says where it differs and
which options are refused. Each layer compiles its library on first use
(hector.compile, cached on disk; `model_spec` is the spec for
`python3 -m hector.aot`), and the preprocessing of each graph is cached in
`graph_cache`.
"""

from ._base import GraphCache, graph_cache  # noqa: F401
from .hgt import HGTConv  # noqa: F401
from .rgat import RGATConv  # noqa: F401
from .rgcn import FastRGCNConv, RGCNConv  # noqa: F401

__all__ = ["RGCNConv", "FastRGCNConv", "RGATConv", "HGTConv", "GraphCache", "graph_cache"]

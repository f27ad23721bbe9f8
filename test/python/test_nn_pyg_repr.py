"""The hector.nn layers print as PyG 2.8's do (PyG's unit tests compare
str(conv) with these strings): RGCNConv and FastRGCNConv
`Name(in, out, num_relations=R)` (in as given, a pair for bipartite
layers), RGATConv `RGATConv(in, out, heads=H)` whatever its options and
submodules (lin_edge), HGTConv `HGTConv(-1, out, heads=H)`."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402


@pytest.mark.parametrize("cls", [hnn.RGCNConv, hnn.FastRGCNConv])
@pytest.mark.parametrize("in_channels", [4, (4, 16)])
@pytest.mark.parametrize("decomposition", [{}, {"num_bases": 2}, {"num_blocks": 2}])
def test_rgcn_repr(cls, in_channels, decomposition):
    conv = cls(in_channels, 32, 3, aggr="sum", **decomposition)
    assert str(conv) == f"{cls.__name__}({in_channels}, 32, num_relations=3)"


@pytest.mark.parametrize("options", [
    {}, {"edge_dim": 8}, {"mod": "scaled", "edge_dim": 3}, {"num_bases": 2, "mod": "additive"},
    {"attention_mode": "multiplicative-self-attention", "dim": 2, "concat": False},
    {"dropout": 0.5, "attention_mechanism": "within-relation"},
])
def test_rgat_repr(options):
    conv = hnn.RGATConv(8, 16, 4, heads=2, **options)
    assert str(conv) == repr(conv) == "RGATConv(8, 16, heads=2)"
    assert str(hnn.RGATConv(5, 7, 2, **options)) == "RGATConv(5, 7, heads=1)"


@pytest.mark.parametrize("in_channels", [16, -1, {"a": 16, "b": 32}])
def test_hgt_repr(in_channels):
    metadata = (["a", "b"], [("a", "to", "b"), ("b", "to", "a")])
    assert str(hnn.HGTConv(in_channels, 32, metadata, heads=2)) == "HGTConv(-1, 32, heads=2)"

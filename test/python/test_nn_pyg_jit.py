"""torch.jit.script of hector.nn's RGCNConv, FastRGCNConv and RGATConv, as
PyG's unit tests use it (FULL_TEST=1): the ScriptModule computes what the
layer computes, for every input form PyG's tests script (features, x=None,
node ids, bipartite pairs, return_attention_weights), follows its own
train()/eval() mode, passes gradients to the layer's parameters, works
inside a larger scripted model, and cannot be saved (it calls Python)."""

from __future__ import annotations

import io

import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
from hectorc_support import compile_cache_in  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


def graph(num_src, num_dst, num_edges, num_relations, seed):
    g = torch.Generator().manual_seed(seed)
    edge_index = torch.stack([torch.randint(0, num_src, (num_edges,), generator=g),
                              torch.randint(0, num_dst, (num_edges,), generator=g)])
    return edge_index, torch.randint(0, num_relations, (num_edges,), generator=g)


@pytest.mark.parametrize("cls", [hnn.RGCNConv, hnn.FastRGCNConv])
def test_rgcn_script_equals_layer(cls):
    torch.manual_seed(0)
    edge_index, edge_type = graph(7, 7, 30, 3, seed=1)
    conv = cls(7, 8, 3, aggr="sum")
    jit = torch.jit.script(conv)
    x, ids = torch.randn(7, 7), torch.randperm(7)
    for inputs in (x, None, ids):
        assert torch.equal(jit(inputs, edge_index, edge_type), conv(inputs, edge_index, edge_type))
    bipartite = cls((7, 5), 8, 3, num_bases=2)
    edge_index, edge_type = graph(7, 4, 20, 3, seed=2)
    jit = torch.jit.script(bipartite)
    x_src, x_dst, ids_dst = torch.randn(7, 7), torch.randn(4, 5), torch.tensor([4, 0, 2, 1])
    for pair in ((x_src, x_dst), (None, ids_dst), (torch.arange(7), ids_dst)):
        assert torch.equal(jit(pair, edge_index, edge_type),
                           bipartite(pair, edge_index, edge_type))


def test_rgcn_script_gradients_reach_the_layer():
    torch.manual_seed(0)
    edge_index, edge_type = graph(6, 6, 25, 2, seed=3)
    conv = hnn.RGCNConv(4, 3, 2)
    x = torch.randn(6, 4)
    conv(x, edge_index, edge_type).square().sum().backward()
    expected = {n: p.grad.clone() for n, p in conv.named_parameters()}
    conv.zero_grad()
    torch.jit.script(conv)(x, edge_index, edge_type).square().sum().backward()
    for name, p in conv.named_parameters():
        assert torch.allclose(p.grad, expected[name], atol=1e-6), name


def test_rgcn_inside_a_scripted_model():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = hnn.RGCNConv(4, 3, 2)

        def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                    edge_type: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.conv(x, edge_index, edge_type)) * 2.0

    torch.manual_seed(0)
    model = Model()
    edge_index, edge_type = graph(6, 6, 25, 2, seed=4)
    x = torch.randn(6, 4)
    assert torch.equal(torch.jit.script(model)(x, edge_index, edge_type),
                       model(x, edge_index, edge_type))


def test_rgat_script_equals_layer_and_follows_its_mode():
    torch.manual_seed(0)
    edge_index, edge_type = graph(5, 5, 16, 3, seed=5)
    edge_attr, x = torch.randn(16, 4), torch.randn(5, 6)
    conv = hnn.RGATConv(6, 4, 3, heads=2, edge_dim=4, dropout=0.5)
    jit = torch.jit.script(conv)
    jit.eval()  # the layer follows the ScriptModule's mode: no dropout
    out, (index, alpha) = jit(x, edge_index, edge_type, edge_attr, return_attention_weights=True)
    conv.eval()
    expected, (_, expected_alpha) = conv(x, edge_index, edge_type, edge_attr,
                                         return_attention_weights=True)
    assert index is edge_index or torch.equal(index, edge_index)
    assert torch.equal(out, expected) and torch.equal(alpha, expected_alpha)
    jit.train()
    torch.manual_seed(7)
    dropped = jit(x, edge_index, edge_type, edge_attr)
    assert conv.training
    torch.manual_seed(7)
    assert torch.equal(dropped, conv(x, edge_index, edge_type, edge_attr))
    assert not torch.equal(dropped, expected)


def test_scripted_layer_cannot_be_saved():
    jit = torch.jit.script(hnn.RGCNConv(4, 3, 2))
    with pytest.raises(RuntimeError, match="Could not export Python function"):
        torch.jit.save(jit, io.BytesIO())

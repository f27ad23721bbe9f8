"""hector.models.stack: L layers of one model in one hgraph function, trained
as one step (`hectorc --training`), against PyTorch autograd on the BRIEF.md
§4 math of each layer, applied one after another with ReLU between them
(test/reference/models_torch.py, float64): the output and the gradient of
the input and of every layer's weights, on the graphs of model_cases.py.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import compiled, graph as hgraph, models  # noqa: E402
from hectorc_support import build  # noqa: E402
from model_cases import GRAPHS, relative_error  # noqa: E402
from reference import models_torch, params  # noqa: E402

CASES = [("rgcn", 2, 16, 1), ("rgat", 3, 16, 1), ("hgt", 2, 16, 2)]


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stack")
    cache = {}

    def get(model, layers, width, heads):
        key = (model, layers, width, heads)
        if key not in cache:
            source = models.stack(model, layers, width=width, heads=heads)
            cache[key] = compiled.load(build(directory, source, "--target=cpu", "--training",
                                             name=f"lib{model}_{layers}_{width}_{heads}.so"))
        return cache[key]

    return get


def sizes_of(pre):
    return {k: int(getattr(pre, k)) for k in ("N", "E", "T", "R", "P")}


@pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
@pytest.mark.parametrize("model,layers,width,heads", CASES)
def test_stack_matches_layer_by_layer_reference(libraries, model, layers, width, heads,
                                                graph_kind):
    rng = np.random.default_rng([layers, width, heads, len(graph_kind)])
    graph = GRAPHS[graph_kind](rng)
    n = graph["node_type"].shape[0]
    h = rng.standard_normal((n, width)).astype(np.float32)
    weights = [params.make_params(model, graph, width, width, heads, seed=10 + i)
               for i in range(layers)]
    d_out = rng.standard_normal((n, width)).astype(np.float32)

    # Reference: the layers one after another, ReLU between.
    g = models_torch.TorchGraph(graph)
    leaves = [{k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
               for k, v in w.items()} for w in weights]
    x0 = torch.tensor(h, dtype=torch.float64, requires_grad=True)
    x = x0
    for i, layer in enumerate(leaves):
        if i:
            x = torch.relu(x)
        x = models_torch.forward(model, g, x, {k: layer[k] for k in params.PARAM_NAMES[model]},
                                 heads)
    (x * torch.tensor(d_out, dtype=torch.float64)).sum().backward()

    lib = libraries(model, layers, width, heads)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    from hector import autograd
    tensors = {"h": torch.tensor(h, requires_grad=True)}
    for i, w in enumerate(weights):
        for k, v in w.items():
            tensors[f"{k}_{i}"] = torch.tensor(v, requires_grad=True)
    out, = autograd.run(lib, f"{model}_{layers}", pre, **tensors)
    (out * torch.tensor(d_out)).sum().backward()

    assert relative_error(out.detach().numpy(), x.detach().numpy()) < 1e-5
    assert relative_error(tensors["h"].grad.numpy(), x0.grad.numpy()) < 1e-4
    for i, layer in enumerate(leaves):
        for k, leaf in layer.items():
            got = tensors[f"{k}_{i}"].grad.numpy()
            assert relative_error(got, leaf.grad.numpy()) < 1e-4, f"d_{k}_{i}"


def test_stack_rejects_what_cannot_chain():
    with pytest.raises(ValueError, match="stack it with heads=1"):
        models.stack("rgat", 2, width=16, heads=2)
    with pytest.raises(ValueError, match="layers must be a positive integer"):
        models.stack("rgcn", 0)
    with pytest.raises(ValueError, match="activation must be"):
        models.stack("rgcn", 2, activation="gelu")

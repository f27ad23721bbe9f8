"""Training entry points compiled by `hectorc --training` for the CPU, against
PyTorch autograd on the BRIEF.md §4 math (test/reference/models_torch.py, in
float64).

For each model, width and head count, on graphs with isolated nodes, edge
types without edges, self-loops, duplicate edges and a giant hub:
  * `<m>_fwd` returns the forward result (and the saved tensors),
  * `<m>_bwd`, given a random output gradient, returns the gradient of the
    input features and of every weight; each must be within 1e-4 (normwise
    relative) of torch's,
  * every save policy gives the same gradients,
  * 30 SGD steps on a node-classification loss lower it by a fifth.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import compiled, graph as hgraph  # noqa: E402
from hector.models import generate  # noqa: E402
from hectorc_support import build  # noqa: E402
from model_cases import GRAPHS, TRAINING_CONFIGS as CONFIGS, random_graph, relative_error  # noqa: E402
from reference import models_torch, params  # noqa: E402

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """(model, width, heads, save policy) -> library built with --training."""
    directory = tmp_path_factory.mktemp("training")
    cache = {}

    def get(model, width, heads, save="materialized"):
        key = (model, width, heads, save)
        if key not in cache:
            source = generate(model, width=width, heads=heads)
            path = build(directory, source, "--target=cpu", "--training", f"--save={save}",
                         name=f"lib{model}_{width}_{heads}_{save}.so")
            cache[key] = compiled.load(path)
        return cache[key]

    return get


def preprocess(graph):
    return hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                             graph["num_node_types"], graph["num_edge_types"])


def empty_like_argument(argument, sizes):
    shape = [sizes[s] if isinstance(s, str) else s for s in argument.shape]
    return np.full(shape, np.nan, np.float32)  # every element must be written


def call(entry, values, sizes):
    """Runs `entry`, allocating its outputs (roles output, saved, grad) by
    their manifest shapes; returns them by name."""
    outputs = {a.name: empty_like_argument(a, sizes) for a in entry.arguments if a.is_output}
    entry(**{a.name: outputs[a.name] if a.name in outputs else values[a.name]
             for a in entry.arguments})
    return outputs


def sizes_of(graph, pre):
    arrays = pre.arrays()
    return {"N": graph["node_type"].shape[0], "E": graph["src"].shape[0],
            "R": graph["num_edge_types"], "T": graph["num_node_types"],
            "P": arrays["compact_src"].shape[0]}


def train_step(lib, model, graph, h, weights, d_out):
    """Forward then backward through the compiled entry points."""
    pre = preprocess(graph)
    sizes = sizes_of(graph, pre)
    values = dict(pre.arrays(), h=h, **weights)
    forward = call(lib[f"{model}_fwd"], values, sizes)
    values.update(forward)
    values["d_result0"] = d_out
    gradients = call(lib[f"{model}_bwd"], values, sizes)
    return forward, gradients


def torch_gradients(model, graph, h, weights, heads, d_out):
    """d(sum(out * d_out)) / d(h, weights) by torch autograd, in float64."""
    g = models_torch.TorchGraph(graph)
    leaves = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
              for k, v in dict(weights, h=h).items()}
    out = models_torch.forward(model, g, leaves["h"],
                               {k: leaves[k] for k in params.PARAM_NAMES[model]}, heads)
    (out * torch.tensor(d_out, dtype=torch.float64)).sum().backward()
    return out.detach().numpy(), {k: v.grad.numpy() for k, v in leaves.items()}


def random_case(model, width, heads, graph_kind):
    rng = np.random.default_rng([width, heads, len(graph_kind), 11])
    graph = GRAPHS[graph_kind](rng)
    n = graph["node_type"].shape[0]
    h = rng.standard_normal((n, width)).astype(np.float32)
    weights = params.make_params(model, graph, width, width, heads, seed=width + heads)
    d_out = rng.standard_normal((n, width)).astype(np.float32)
    return graph, h, weights, d_out


@pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
@pytest.mark.parametrize("model,width,heads", CONFIGS)
def test_gradients_match_torch_autograd(libraries, model, width, heads, graph_kind):
    graph, h, weights, d_out = random_case(model, width, heads, graph_kind)
    forward, gradients = train_step(libraries(model, width, heads), model, graph, h, weights,
                                    d_out)
    expected_out, expected = torch_gradients(model, graph, h, weights, heads, d_out)
    assert relative_error(forward["result0"], expected_out) < 1e-5
    names = ("h",) + params.PARAM_NAMES[model]
    assert sorted(gradients) == sorted(f"d_{k}" for k in names)
    for name in names:
        got = gradients[f"d_{name}"]
        assert not np.isnan(got).any(), f"d_{name} has unwritten elements"
        assert relative_error(got, expected[name]) < TOLERANCE, f"d_{name}"


@pytest.mark.parametrize("model,heads", [("rgcn", 1), ("rgat", 4), ("hgt", 4)])
def test_save_policies_agree(libraries, model, heads):
    graph, h, weights, d_out = random_case(model, 32, heads, "random_graph")
    results = {}
    for save in ("materialized", "all", "none"):
        lib = libraries(model, 32, heads, save)
        _, results[save] = train_step(lib, model, graph, h, weights, d_out)
    saved = {save: [a.name for a in libraries(model, 32, heads, save)[f"{model}_fwd"].arguments
                    if a.role == "saved"] for save in results}
    assert saved["none"] == [] and len(saved["all"]) >= len(saved["materialized"])
    for name, value in results["materialized"].items():
        for save in ("all", "none"):
            np.testing.assert_allclose(results[save][name], value, rtol=1e-5,
                                       atol=1e-6 * np.abs(value).max())


@pytest.mark.parametrize("model,heads", [("rgcn", 1), ("rgat", 2), ("hgt", 2)])
def test_sgd_steps_lower_the_loss(libraries, model, heads):
    """Node classification with the layer's output as logits: loss must fall."""
    rng = np.random.default_rng(5)
    graph = random_graph(rng)
    width = 16
    n = graph["node_type"].shape[0]
    h = rng.standard_normal((n, width)).astype(np.float32)
    labels = torch.tensor(rng.integers(0, width, n))
    weights = params.make_params(model, graph, width, width, heads, seed=1)
    lib = libraries(model, width, heads)
    losses = []
    for _ in range(30):
        out = torch.zeros(n, width, requires_grad=True)
        forward, _ = train_step(lib, model, graph, h, weights, np.zeros((n, width), np.float32))
        with torch.no_grad():
            out.copy_(torch.from_numpy(forward["result0"]))
        loss = models_torch.nll_loss(out, labels)
        loss.backward()
        losses.append(float(loss))
        _, gradients = train_step(lib, model, graph, h, weights, out.grad.numpy())
        for name in params.PARAM_NAMES[model]:
            weights[name] = weights[name] - 0.5 * gradients[f"d_{name}"]
    assert losses[-1] < 0.8 * losses[0], losses


def test_manifest_names_saved_tensors(libraries):
    lib = libraries("rgat", 16, 4)
    forward, backward = lib["rgat_fwd"], lib["rgat_bwd"]
    saved_out = [(a.name, tuple(a.shape)) for a in forward.arguments if a.role == "saved"]
    saved_in = [(a.name, tuple(a.shape)) for a in backward.arguments if a.role == "saved"]
    assert saved_out and saved_out == saved_in
    assert all(shape[0] in ("N", "E", "P") for _, shape in saved_out)
    grad_outputs = [a.name for a in backward.arguments if a.role == "grad_output"]
    assert grad_outputs == ["d_result0"]
    assert [a.name for a in backward.arguments if a.role == "grad"] == ["d_h", "d_W", "d_a", "d_b"]


def test_backward_rejects_a_missing_saved_tensor(libraries):
    graph, h, weights, d_out = random_case("rgat", 16, 1, "random_graph")
    lib = libraries("rgat", 16, 1)
    pre = preprocess(graph)
    sizes = sizes_of(graph, pre)
    backward = lib["rgat_bwd"]
    values = dict(pre.arrays(), h=h, d_result0=d_out, **weights)
    outputs = {a.name: empty_like_argument(a, sizes) for a in backward.arguments
               if a.role == "grad"}
    values.update(outputs)
    with pytest.raises(TypeError):
        backward(**{a.name: values[a.name] for a in backward.arguments
                    if a.role != "saved" and a.name in values})

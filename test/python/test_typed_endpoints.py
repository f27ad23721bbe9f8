"""A library built with `hectorc --typed-endpoints` is right only on graphs
whose edge types each join nodes of one source type to nodes of one
destination type; its manifest says so and every call checks the graph
(hector/_graph_checks.py), so that no other graph gets a silently wrong
answer.

HGT (its reordered key and message chains pick a node-typed weight through
an edge type's endpoint type) on the CPU: qualifying graphs give the float64
NumPy reference's result; a graph with an edge type between mixed node
types raises ValueError naming the edge type, with numpy arrays and with
torch tensors; torch tensors are checked once per content, and again after any in-place
change (version counter bumped or not); a malformed manifest flag is
refused.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from hector import _graph_checks, compiled, graph as hgraph, models
from hectorc_support import build
from model_cases import random_graph, reference, relative_error
from reference import params

WIDTH = 16


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("typed")
    source = models.generate("hgt", WIDTH)
    return {typed: build(directory, source, "--target=cpu", "--cpu=native",
                         *(["--typed-endpoints"] if typed else []),
                         name=f"libhgt_{'typed' if typed else 'plain'}.so")
            for typed in (True, False)}


def typed_graph(rng, n=60, t=3, r=5, e=400):
    """Edge type k joins nodes of type ends[k, 0] to nodes of type ends[k, 1]."""
    node_type = np.concatenate([np.arange(t), rng.integers(0, t, n - t)])
    ends = rng.integers(0, t, (r, 2))
    etype = rng.integers(0, r, e)
    by_type = [np.flatnonzero(node_type == k) for k in range(t)]
    src = np.array([rng.choice(by_type[ends[k, 0]]) for k in etype])
    dst = np.array([rng.choice(by_type[ends[k, 1]]) for k in etype])
    return {"node_type": node_type, "src": src, "dst": dst, "etype": etype,
            "num_node_types": t, "num_edge_types": r}


def call(entry, graph, seed=0, torch_arrays=False):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((graph["node_type"].shape[0], WIDTH)).astype(np.float32)
    weights = params.make_params("hgt", graph, WIDTH, WIDTH, seed=seed)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    arrays = pre.arrays()
    if torch_arrays:
        import torch
        arrays = {k: torch.from_numpy(np.array(v)) for k, v in arrays.items()}
    out = np.zeros_like(h)
    values = dict(arrays, h=h, result0=out, **weights)
    entry(**{a.name: values[a.name] for a in entry.arguments})
    return out, h, weights, values


def test_manifest_says_typed_endpoints(libraries):
    assert compiled.load(libraries[True])["hgt"].typed_endpoints
    assert not compiled.load(libraries[False])["hgt"].typed_endpoints


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qualifying_graph_matches_reference(libraries, seed):
    graph = typed_graph(np.random.default_rng(seed))
    out, h, weights, _ = call(compiled.load(libraries[True])["hgt"], graph, seed)
    assert relative_error(out, reference("hgt", graph, h, weights, 1)) < 1e-5


def test_mixed_graph_is_refused(libraries):
    graph = random_graph(np.random.default_rng(5))  # node types drawn per node
    with pytest.raises(ValueError, match=r"--typed-endpoints.*edge type \d+ has (source|destination) "
                                         r"nodes of types \d+ and \d+"):
        call(compiled.load(libraries[True])["hgt"], graph)
    # The library without the flag is right on it.
    out, h, weights, _ = call(compiled.load(libraries[False])["hgt"], graph)
    assert relative_error(out, reference("hgt", graph, h, weights, 1)) < 1e-5


def test_torch_arrays_checked_once_until_modified(libraries, monkeypatch):
    pytest.importorskip("torch")
    entry = compiled.load(libraries[True])["hgt"]
    graph = typed_graph(np.random.default_rng(3))
    checks = []
    real = _graph_checks._first_mixed_edge_type
    monkeypatch.setattr(_graph_checks, "_first_mixed_edge_type",
                        lambda *a: checks.append(1) or real(*a))
    _, _, _, values = call(entry, graph, torch_arrays=True)
    first = len(checks)
    assert first > 0
    entry(**{a.name: values[a.name] for a in entry.arguments})
    assert len(checks) == first  # same tensors, unchanged: not checked again
    # Retype one endpoint node in place: the version counter moves on.
    node_type = values["node_type"]
    src = int(values["edge_src"][0])
    node_type[src] = (int(node_type[src]) + 1) % graph["num_node_types"]
    with pytest.raises(ValueError, match="--typed-endpoints"):
        entry(**{a.name: values[a.name] for a in entry.arguments})


@pytest.mark.parametrize("how", ["numpy view", ".data"])
def test_in_place_change_without_version_bump_is_checked(libraries, how):
    """Writes through .numpy() or .data leave the version counter alone; the
    check is keyed by content, so the changed graph is checked again."""
    pytest.importorskip("torch")
    entry = compiled.load(libraries[True])["hgt"]
    graph = typed_graph(np.random.default_rng(4))
    _, _, _, values = call(entry, graph, torch_arrays=True)
    node_type = values["node_type"]
    version = node_type._version
    src = int(values["edge_src"][0])
    retyped = (int(node_type[src]) + 1) % graph["num_node_types"]
    if how == "numpy view":
        node_type.numpy()[src] = retyped
    else:
        node_type.data[src] = retyped
    assert node_type._version == version  # invisible to a version-keyed cache
    with pytest.raises(ValueError, match="--typed-endpoints"):
        entry(**{a.name: values[a.name] for a in entry.arguments})


def test_malformed_flag_is_refused(libraries, tmp_path):
    lib = tmp_path / "libhgt.so"
    shutil.copy(libraries[True], lib)
    with open(libraries[True] + ".json", encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["entries"][0]["typed_endpoints"] = "yes"
    (tmp_path / "libhgt.so.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="typed_endpoints 'yes'"):
        compiled.load(str(lib))

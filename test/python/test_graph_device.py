"""hector.graph.preprocess(..., device=...) (torch operations) builds exactly
the arrays of the runtime's host implementation; here on the CPU device,
on the GPU in test/gpu/models_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import graph as hgraph  # noqa: E402
from model_cases import GRAPHS  # noqa: E402


def cases():
    yield from ((name, make) for name, make in sorted(GRAPHS.items()))
    yield "no_edges", lambda rng: {"node_type": np.array([0, 1, 1]), "src": [], "dst": [],
                                   "etype": [], "num_node_types": 2, "num_edge_types": 3}
    yield "one_node", lambda rng: {"node_type": np.array([0]), "src": [0, 0], "dst": [0, 0],
                                   "etype": [1, 0], "num_node_types": 1, "num_edge_types": 2}


@pytest.mark.parametrize("name,make", list(cases()))
def test_device_preprocessing_matches_the_runtime(name, make):
    g = make(np.random.default_rng(len(name)))
    args = (g["node_type"], g["src"], g["dst"], g["etype"], g["num_node_types"],
            g["num_edge_types"])
    host = hgraph.preprocess(*args)
    device = hgraph.preprocess(*args, device="cpu")
    for key in ("N", "E", "T", "R", "P"):
        assert getattr(device, key) == getattr(host, key), key
    for key, expected in host.arrays().items():
        actual = getattr(device, key)
        assert isinstance(actual, torch.Tensor) and actual.dtype in (torch.int32, torch.float32)
        np.testing.assert_array_equal(actual.numpy(), expected, err_msg=key)


def test_device_preprocessing_of_int32_tensors():
    rng = np.random.default_rng(5)
    g = GRAPHS["giant_hub"](rng)
    tensors = [torch.from_numpy(np.asarray(g[k]).astype(np.int32))
               for k in ("node_type", "src", "dst", "etype")]
    host = hgraph.preprocess(*(t.numpy() for t in tensors))
    device = hgraph.preprocess(*tensors, device="cpu")
    np.testing.assert_array_equal(device.compact_map.numpy(), host.compact_map)
    np.testing.assert_array_equal(device.pair_eid.numpy(), host.pair_eid)
    features = torch.arange(host.E * 2, dtype=torch.float32).reshape(host.E, 2)
    np.testing.assert_array_equal(device.to_canonical(features).numpy(),
                                  host.to_canonical(features.numpy()))


@pytest.mark.parametrize("change,message", [
    (dict(dst=[0, 5]), r"dst\[1\] = 5 is out of range: node ids must lie in \[0, 3\)"),
    (dict(src=[-1, 0]), r"src\[0\] = -1 is out of range"),
    (dict(etype=[0, 2]), r"etype\[1\] = 2 is out of range: edge types must lie in \[0, 2\)"),
    (dict(node_type=[0, 0, 4]), r"node_type\[2\] = 4 is out of range"),
    (dict(dst=[0]), "must have one length"),
    (dict(src=[0.5, 1.0]), "integer dtype"),
])
def test_device_preprocessing_rejects_bad_graphs(change, message):
    g = dict(node_type=[0, 1, 0], src=[0, 1], dst=[1, 2], etype=[0, 1])
    g.update(change)
    with pytest.raises(hgraph.GraphInputError, match=message):
        hgraph.preprocess(g["node_type"], g["src"], g["dst"], g["etype"], 2, 2, device="cpu")

"""A CPU library counts the bytes its temporaries hold and reports their peak
(CompiledLibrary.peak_temporary_bytes, the CPU runtime's
hector_cpu_peak_temporary_bytes), as CUDA libraries do for device memory:
what bench/offload_model.py measures the offload planner's model against.
"""

from __future__ import annotations

import numpy as np
import pytest

from hector import compiled, graph as hgraph, models
from hectorc_support import build
from model_cases import random_graph
from reference import params

WIDTH = 16


@pytest.fixture(scope="module")
def rgcn(tmp_path_factory):
    directory = tmp_path_factory.mktemp("temporaries")
    return compiled.load(build(str(directory), models.generate("rgcn", WIDTH), "--target=cpu",
                               name="librgcn.so"))


def call(library, seed):
    rng = np.random.default_rng(seed)
    graph = random_graph(rng)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    values = dict(pre.arrays(), h=rng.standard_normal((pre.N, WIDTH)).astype(np.float32),
                  result0=np.zeros((pre.N, WIDTH), np.float32))
    for name, value in params.make_params("rgcn", graph, WIDTH, WIDTH, seed=seed).items():
        values[name] = value.astype(np.float32)
    entry = library.entries["rgcn"]
    entry(**{arg.name: values[arg.name] for arg in entry.arguments})
    return pre


def test_peak_of_a_call_covers_its_largest_temporary(rgcn):
    rgcn.peak_temporary_bytes(reset=True)
    assert rgcn.peak_temporary_bytes() == 0
    pre = call(rgcn, seed=1)
    peak = rgcn.peak_temporary_bytes()
    # Compacted RGCN keeps the messages of the (source, type) pairs, [P, W],
    # in a temporary; the other temporaries are node rows.
    assert pre.P * WIDTH * 4 <= peak <= (pre.P + 4 * pre.N) * WIDTH * 4
    # Everything is freed when the call returns: a reset starts from 0, and
    # the same call on the same graph reaches the same peak.
    assert rgcn.peak_temporary_bytes(reset=True) == peak
    assert rgcn.peak_temporary_bytes() == 0
    call(rgcn, seed=1)
    assert rgcn.peak_temporary_bytes() == peak

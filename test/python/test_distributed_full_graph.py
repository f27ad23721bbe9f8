"""Full-graph training of a partitioned graph (hector.distributed: partition,
local_graph, halo, full_graph; issue #20), on the CPU with gloo.

The partitioned forward and gradients (input features and weights) of
RGCN, RGAT and HGT, one layer and 2-layer stacks, equal the unpartitioned
layer run in one process (1e-5), with METIS and with the ranges fallback,
with a partition that has no halo and with a rank that owns no node; the
halo exchange alone matches a hand computation; ranks that disagree on the
partition all stop with an error. RGATConv's edge_attr and attention
weights through FullGraphLayer (1, 2 and 3 ranks, isolated nodes, a rank
with no edge) equal the whole-graph layer, gradients of edge_attr and α's
included, and bad edge input raises a clear error. The ranks are processes spawned by
torch.multiprocessing (full_graph_cases.py holds their code); the libraries
are compiled once, here, before they start.
"""

import json
import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import full_graph_cases as cases
from hector.distributed import partition
from hector.distributed.local_graph import local_graph
from hector.distributed.partition import partition_nodes, partition_stats

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Three spawns, each running several scenarios (starting a rank costs seconds:
# importing torch): 1 rank, 2 ranks and 3 ranks (the empty rank, the
# hand-computed halo). attr-*: RGATConv's edge_attr and attention weights.
SCENARIOS = {1: ("attr-ranges",),
             2: ("metis", "ranges", "no-halo", "ddp", "disagree", "attr-metis", "attr-ranges",
                 "attr-errors"),
             3: ("halo", "empty-rank", "attr-metis", "attr-ranges", "attr-isolated")}


def _spawn(world, scenarios, tmp_path_factory) -> dict:
    """{scenario: the failures all ranks reported}."""
    out = tmp_path_factory.mktemp(f"ranks{world}")
    mp.spawn(cases.worker, args=(world, _free_port(), scenarios, str(out)), nprocs=world,
             join=True)
    results = {s: [] for s in scenarios}
    for rank in range(world):
        with open(out / f"rank{rank}.json") as f:
            for scenario, failures in json.load(f).items():
                results[scenario] += failures
    return results


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """The results of every spawn, run once for the module (the libraries
    compiled here first, so that ranks only load them)."""
    cases.warm()
    return {world: _spawn(world, scenarios, tmp_path_factory)
            for world, scenarios in SCENARIOS.items()}


def _check(ranks, world, scenario):
    failures = ranks[world][scenario]
    assert not failures, "\n".join(failures)


# ---- partitioning (no processes) ------------------------------------------------------

def _random_graph(n, e, seed):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(np.stack([rng.integers(0, n, e), rng.integers(0, n, e)]))


@pytest.mark.parametrize("method", ["metis", "ranges"])
@pytest.mark.parametrize("num_parts", [1, 2, 3, 5])
def test_partition_owns_every_node_once_and_balances(method, num_parts):
    if method == "metis" and not partition.metis_available():
        pytest.skip("libmetis is not installed")
    n, e = 300, 1500
    edges = _random_graph(n, e, num_parts)
    parts = partition_nodes(n, edges, num_parts, method=method)
    assert parts.shape == (n,) and parts.dtype == np.int64
    assert parts.min() >= 0 and parts.max() < num_parts
    assert np.array_equal(parts, partition_nodes(n, edges, num_parts, method=method))
    stats = partition_stats(parts, edges, num_parts)
    assert stats.nodes.sum() == n and stats.edges.sum() == e
    # Balanced by weight 1 + in-degree: within METIS's default 3 % (plus
    # rounding on tiny parts), within one node's weight for ranges.
    weight = stats.nodes + stats.edges
    assert weight.max() <= weight.mean() * 1.06 + (1 + np.bincount(edges[1]).max())


def test_partition_ranges_are_contiguous():
    edges = _random_graph(100, 400, 1)
    parts = partition_nodes(100, edges, 4, method="ranges")
    assert np.all(np.diff(parts) >= 0) and set(parts.tolist()) == {0, 1, 2, 3}


@pytest.mark.skipif(not partition.metis_available(), reason="libmetis is not installed")
def test_metis_cuts_fewer_edges_and_finds_components():
    edges = _random_graph(200, 600, 2)
    metis = partition_stats(partition_nodes(200, edges, 4, method="metis"), edges, 4)
    ranges = partition_stats(partition_nodes(200, edges, 4, method="ranges"), edges, 4)
    assert metis.cut_edges < ranges.cut_edges
    # Two components, interleaved ids: METIS puts each on one part.
    pair = torch.cat([edges % 100 * 2, edges % 100 * 2 + 1], dim=1)
    stats = partition_stats(partition_nodes(200, pair, 2, method="metis"), pair, 2)
    assert stats.cut_edges == 0 and stats.halo.sum() == 0


def test_partition_fallback_without_metis(monkeypatch):
    monkeypatch.setattr(partition, "_metis", None)
    monkeypatch.setattr(partition, "_metis_tried", True)
    edges = _random_graph(50, 200, 3)
    assert np.array_equal(partition_nodes(50, edges, 3),
                          partition_nodes(50, edges, 3, method="ranges"))
    with pytest.raises(RuntimeError, match="libmetis"):
        partition_nodes(50, edges, 3, method="metis")


def test_partition_edge_cases_and_errors():
    empty = torch.zeros(2, 0, dtype=torch.int64)
    assert partition_nodes(0, empty, 2).shape == (0,)
    assert sorted(partition_nodes(3, empty, 5).tolist()) == [0, 2, 4]  # more parts than nodes
    with pytest.raises(ValueError, match="node 9"):
        partition_nodes(5, torch.tensor([[0, 9], [1, 2]]), 2)
    with pytest.raises(ValueError, match="method"):
        partition_nodes(5, empty, 2, method="spectral")
    with pytest.raises(ValueError, match="num_parts"):
        partition_nodes(5, empty, 0)
    with pytest.raises(ValueError, match=r"\[2, E\]"):
        partition_nodes(5, torch.zeros(3, 4, dtype=torch.int64), 2)


# ---- local graphs and halo plans (no processes) --------------------------------------

@pytest.mark.parametrize("num_parts", [2, 3])
def test_local_graphs_cover_the_graph_and_plans_match(num_parts):
    edge_index, edge_type, node_type = cases.graph(seed=num_parts)
    n = node_type.numel()
    parts = partition_nodes(n, edge_index, num_parts, method="ranges")
    graphs = [local_graph(r, parts, edge_index, edge_type=edge_type, node_type=node_type,
                          num_parts=num_parts) for r in range(num_parts)]
    assert sorted(np.concatenate([g.owned for g in graphs]).tolist()) == list(range(n))
    assert sorted(np.concatenate([g.edge_ids for g in graphs]).tolist()) == \
        list(range(edge_index.size(1)))
    for g in graphs:
        ids = np.concatenate([g.owned, g.halo])
        assert np.array_equal(ids[g.edge_index.numpy()], edge_index[:, g.edge_ids].numpy())
        assert (g.edge_index[1] < g.num_owned).all()  # destinations are owned
        assert torch.equal(g.edge_type, edge_type[g.edge_ids])
        assert torch.equal(g.node_type, node_type[ids])
        foreign = {int(s) for s in edge_index[0, g.edge_ids] if parts[s] != g.rank}
        assert sorted(g.halo.tolist()) == sorted(foreign)
        assert np.all(parts[g.halo] != g.rank) and np.all(np.diff(parts[g.halo]) >= 0)
    for r, g in enumerate(graphs):  # what r sends to q is what q receives from r, in order
        start = 0
        for q in range(num_parts):
            count = g.send_counts[q]
            sent = g.owned[g.send_index[start:start + count].numpy()]
            offset = sum(graphs[q].recv_counts[:r])
            assert count == graphs[q].recv_counts[r]
            assert np.array_equal(sent, graphs[q].halo[offset:offset + count])
            start += count


def test_local_graph_errors():
    edge_index, edge_type, _ = cases.graph()
    n = int(edge_index.max()) + 1
    with pytest.raises(ValueError, match="parts holds rank 3"):
        local_graph(0, np.full(n, 3), edge_index, num_parts=2)
    with pytest.raises(ValueError, match="rank 2 is not"):
        local_graph(2, np.zeros(n, np.int64), edge_index, num_parts=2)
    with pytest.raises(ValueError, match="edge_type"):
        local_graph(0, np.zeros(n, np.int64), edge_index, edge_type=edge_type[:-1])


# ---- ranks (spawned processes, gloo) ---------------------------------------------------

def test_halo_exchange_matches_hand_computation(ranks):
    _check(ranks, 3, "halo")


@pytest.mark.parametrize("world, scenario", [(2, "metis"), (2, "ranges"), (2, "no-halo"),
                                             (3, "empty-rank")])
def test_partitioned_layers_equal_the_whole_graph(ranks, world, scenario):
    if scenario == "metis" and not partition.metis_available():
        pytest.skip("libmetis is not installed")
    _check(ranks, world, scenario)


def test_distributed_data_parallel_sums_the_gradients_too(ranks):
    """FullGraphLayers inside DDP instead of all_reduce_gradients: the same
    input gradients, and weight gradients averaged (the sum / world size)."""
    _check(ranks, 2, "ddp")


def test_ranks_that_disagree_on_the_partition_all_stop(ranks):
    _check(ranks, 2, "disagree")


@pytest.mark.parametrize("world, scenario", [(1, "attr-ranges"), (2, "attr-metis"),
                                             (2, "attr-ranges"), (3, "attr-metis"),
                                             (3, "attr-ranges"), (3, "attr-isolated")])
def test_rgat_edge_attr_and_attention_weights_equal_the_whole_graph(ranks, world, scenario):
    """RGATConv's edge_attr (the local edges' rows, or the whole graph's) and
    return_attention_weights through FullGraphLayer: outputs, α (the local
    edges', in global node ids) and the gradients of x, edge_attr and the
    weights equal the whole-graph layer; the isolated scenario has a rank
    that owns only isolated nodes (no edge, no halo), then one with no node."""
    if scenario == "attr-metis" and not partition.metis_available():
        pytest.skip("libmetis is not installed")
    _check(ranks, world, scenario)


def test_bad_edge_input_gives_a_clear_error_on_every_rank(ranks):
    _check(ranks, 2, "attr-errors")

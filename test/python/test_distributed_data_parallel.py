"""Data-parallel mini-batch training (hector.distributed, issue #20) on the
CPU with gloo: DDP over hector.nn's RGCN, RGAT and HGT layers gives the
gradients and, after an SGD step, the parameters of one process computing
on the disjoint union of the ranks' batches (2 and 3 ranks, two steps);
the seed split and the neighbour sampler against their definitions; one
shared feature table per host; a rank that dies or stalls mid-step makes
the other stop with an error within the process group's timeout.

Each layer's training library is compiled once, into $HECTOR_CACHE_DIR
when it is set (shared with the rest of the session), else a temporary
cache; the parent compiles before spawning so that the ranks only load.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

if not dist.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

import distributed_cases as cases  # noqa: E402
from hector import compiler  # noqa: E402
from hector.distributed import data_parallel, sampler  # noqa: E402
from hectorc_support import hectorc  # noqa: E402

TOL = 1e-5
pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    directory = os.environ.get(compiler.CACHE_ENV) or str(tmp_path_factory.mktemp("hcache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(compiler.CACHE_ENV, directory)
        mp.setenv(compiler.BUILD_DIR_ENV, os.path.dirname(os.path.dirname(hectorc())))
        for kind in cases.KINDS:  # compile here, once; the ranks load from the cache
            net = cases.model(kind)
            for conv in (net.conv1, net.conv2):
                conv.library("cpu", True)
        yield


# ---- the seed split and the sampler ------------------------------------------------

def test_seed_split_is_deterministic_disjoint_and_covers():
    seeds = torch.randperm(103)[:101]
    for world in (1, 2, 3, 4):
        splits = [sampler.SeedSplit(seeds, r, world, seed=3) for r in range(world)]
        for epoch in (0, 1):
            shares = [s.share(epoch) for s in splits]
            assert all(s.numel() == 101 // world for s in shares)
            joined = torch.cat(shares)
            assert joined.unique().numel() == joined.numel()  # disjoint
            assert set(joined.tolist()) <= set(seeds.tolist())
            assert joined.numel() == 101 - 101 % world  # only the remainder dropped
            again = sampler.SeedSplit(seeds, 0, world, seed=3).share(epoch, rank=0)
            assert torch.equal(again, shares[0])  # the same on every rank and call
            assert len(splits[0].batches(epoch, 7)) == splits[0].num_batches(7)
    a, b = (sampler.SeedSplit(seeds, 0, 2, seed=3).share(e) for e in (0, 1))
    assert not torch.equal(a, b)  # epochs reshuffle
    assert torch.equal(sampler.SeedSplit(seeds, 1, 2, shuffle=False).share(5),
                       seeds[:100][1::2])


@pytest.mark.parametrize("fanouts", [[2], [3, 2], [1, 1, 1], [-1, 2]])
def test_sampler_subgraph_is_real_sampled_and_relabelled(fanouts):
    node_type, src, dst, etype, _, _, _ = cases.graph()
    s = sampler.NeighborSampler(src, dst, cases.N, fanouts, edge_type=etype)
    seeds = torch.tensor([5, 40, 17, 33])
    sub = s.sample(seeds, seed=11)
    assert sub.num_seeds == 4 and torch.equal(sub.node_ids[:4], seeds)
    assert sub.node_ids.unique().numel() == sub.node_ids.numel()
    # every edge is a real edge of the graph, with its type and both endpoints
    assert torch.equal(src[sub.edge_ids], sub.node_ids[sub.edge_index[0]])
    assert torch.equal(dst[sub.edge_ids], sub.node_ids[sub.edge_index[1]])
    assert torch.equal(etype[sub.edge_ids], sub.edge_type)
    assert sub.edge_ids.unique().numel() == sub.edge_ids.numel()  # no edge twice
    # hop by hop: each expanded node gets min(in-degree, fan-out) in-edges
    in_degree = torch.bincount(dst, minlength=cases.N)
    got = torch.bincount(sub.edge_index[1], minlength=sub.node_ids.numel())
    frontier, reached = list(range(4)), 4
    for fanout in fanouts:
        for v in frontier:
            want = int(in_degree[sub.node_ids[v]])
            assert int(got[v]) == (want if fanout == -1 else min(want, fanout))
        srcs = sub.edge_index[0][torch.isin(sub.edge_index[1], torch.tensor(frontier))]
        fresh = sorted({int(u) for u in srcs if int(u) >= reached})
        assert fresh == list(range(reached, reached + len(fresh)))  # numbered in order
        frontier, reached = fresh, reached + len(fresh)
    assert reached == sub.node_ids.numel()
    for v in frontier:  # the last hop's new nodes are not expanded
        assert int(got[v]) == 0
    again = s.sample(seeds, seed=11)
    assert all(torch.equal(a, b) for a, b in zip(sub[:4], again[:4]))
    other = s.sample(seeds, seed=12)
    assert not torch.equal(sub.edge_ids, other.edge_ids) or fanouts == [-1, 2]


def test_sampler_uniform_choice():
    """One node with 6 in-edges, fan-out 2: each in-edge is picked with
    probability 1/3 (within a few standard deviations over 1000 draws)."""
    s = sampler.NeighborSampler(torch.arange(1, 7), torch.zeros(6, dtype=torch.long), 7, [2])
    counts = torch.zeros(6)
    for i in range(1000):
        counts[s.sample(torch.tensor([0]), seed=i).edge_ids] += 1
    assert counts.sum() == 2000
    assert float((counts / 1000 - 1 / 3).abs().max()) < 0.065  # ~4.4 sigma


def test_hetero_form_matches_the_homogeneous_subgraph():
    node_type, src, dst, etype, _, _, _ = cases.graph()
    s = sampler.NeighborSampler(src, dst, cases.N, [3, 3], edge_type=etype)
    sub = s.sample(torch.tensor([1, 45, 2]), seed=0)
    hb = sampler.hetero(sub, node_type, cases.NODE_TYPES, cases.EDGE_TYPES)
    assert torch.equal(hb.node_ids["a"][:2], torch.tensor([1, 2]))  # seeds first per type
    assert torch.equal(hb.node_ids["b"][:1], torch.tensor([45]))
    assert torch.equal(hb.seeds["a"], torch.tensor([0, 1]))
    edges = set()
    for (st, rel, dt), ei in hb.edge_index_dict.items():
        r = int(rel[1:])
        for u, v in ei.t().tolist():
            g_u, g_v = int(hb.node_ids[st][u]), int(hb.node_ids[dt][v])
            assert int(node_type[g_u]) == cases.NODE_TYPES.index(st)
            edges.add((g_u, g_v, r))
    want = {(int(src[e]), int(dst[e]), int(etype[e])) for e in sub.edge_ids}
    assert edges == want


def test_sampler_rejects_bad_input():
    src, dst = torch.tensor([0, 1]), torch.tensor([1, 2])
    with pytest.raises(ValueError, match="fanouts"):
        sampler.NeighborSampler(src, dst, 3, [])
    with pytest.raises(ValueError, match="fanouts"):
        sampler.NeighborSampler(src, dst, 3, [0])
    with pytest.raises(ValueError, match=r"dst holds 5"):
        sampler.NeighborSampler(src, torch.tensor([1, 5]), 3, [1])
    with pytest.raises(ValueError, match="edge_type has 1 entries"):
        sampler.NeighborSampler(src, dst, 3, [1], edge_type=torch.tensor([0]))
    s = sampler.NeighborSampler(src, dst, 3, [1])
    with pytest.raises(ValueError, match="distinct"):
        s.sample(torch.tensor([1, 1]))
    assert s.sample(torch.tensor([2])).node_ids.tolist() == [2, 1]  # usable after an error
    with pytest.raises(TypeError, match="integer ids"):
        s.sample(torch.tensor([0.5]))
    with pytest.raises(ValueError, match="rank"):
        sampler.SeedSplit(torch.arange(4), 2, 2)
    with pytest.raises(ValueError, match="distinct"):
        sampler.SeedSplit(torch.tensor([1, 1]), 0, 1)
    with pytest.raises(ValueError, match="edge types"):
        sampler.hetero(s.sample(torch.tensor([2])), torch.zeros(3), ["a"], [("a", "r", "a")])


# ---- DDP equals one process on the union of the batches ----------------------------

def reference(kind, world, steps):
    """(gradients, parameters) per step of one process on the union of the
    `world` ranks' batches: one forward on their disjoint union, the mean
    loss over all their seeds (every rank's batch has the same size)."""
    node_type, x, labels, seeds, the_sampler = cases.parts()
    splits = [sampler.SeedSplit(seeds, r, world, seed=7) for r in range(world)]
    net = cases.model(kind)
    opt = torch.optim.SGD(net.parameters(), lr=cases.LR)
    record = []
    for step in range(steps):
        subs = [cases.batch_of(s, the_sampler, step) for s in splits]
        assert len({s.num_seeds for s in subs}) == 1
        opt.zero_grad()
        cases.loss_of(kind, net, x, labels, node_type, sampler.union(subs),
                      sampler.seed_positions(subs)).backward()
        grads = {n: p.grad.clone() for n, p in net.named_parameters()}
        opt.step()
        record.append((grads, {n: p.detach().clone() for n, p in net.named_parameters()}))
    return record


def close(a, b) -> bool:
    return torch.allclose(a, b, rtol=TOL, atol=TOL)


def check_against_reference(out_dir, kinds, world, steps):
    for kind in kinds:
        want = reference(kind, world, steps)
        for rank in range(world):
            got = torch.load(os.path.join(out_dir, f"{kind}-{world}-{rank}.pt"))
            for step, ((g, p), (wg, wp)) in enumerate(zip(got, want)):
                assert g.keys() == wg.keys()
                for name in wg:
                    assert close(g[name], wg[name]), (kind, rank, step, "grad", name)
                    assert close(p[name], wp[name]), (kind, rank, step, "param", name)
            # the gradients moved the weights (the test is not vacuous)
            assert any(float(v.abs().max()) > 1e-3 for v in got[0][0].values())


def test_ddp_two_ranks_equal_one_process_on_the_union(tmp_path):
    data_parallel.launch(cases.ddp_steps, nproc=2, args=(cases.KINDS, 2, str(tmp_path)),
                         device="cpu", timeout_s=60)
    check_against_reference(str(tmp_path), cases.KINDS, 2, 2)
    # the host's ranks shared one feature table, built once, by local rank 0
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith("built-by-")) == \
        ["built-by-0"]
    for rank in (0, 1):
        assert (tmp_path / f"shared-{rank}").read_text() == "True 1234.5"
    assert not [p for p in os.listdir("/dev/shm") if p.startswith("hector-test-")] \
        if os.path.isdir("/dev/shm") else True


def test_ddp_three_ranks_rgcn(tmp_path):
    data_parallel.launch(cases.ddp_steps, nproc=3, args=(("rgcn",), 1, str(tmp_path)),
                         device="cpu", timeout_s=60)
    check_against_reference(str(tmp_path), ("rgcn",), 3, 1)


# ---- a failing rank ends the others with an error ----------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("mode", ["raise", "stall"])
def test_a_failing_rank_stops_the_other_with_an_error(tmp_path, mode):
    timeout_s = 4
    ctx = multiprocessing.get_context("spawn")
    port = _free_port()
    procs = [ctx.Process(target=cases.failing_rank,
                         args=(r, 2, port, mode, timeout_s, str(tmp_path)), daemon=True)
             for r in range(2)]
    for p in procs:
        p.start()
    try:
        procs[0].join(120)
        assert not procs[0].is_alive(), "rank 0 hangs after rank 1 failed"
        waited, outcome = (tmp_path / "rank0").read_text().split(" ", 1)
        assert outcome.startswith("error RuntimeError"), outcome
        # it stopped in the all-reduce of the failing step, not much after the timeout
        assert float(waited) < timeout_s + 30, waited
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(10)
    if mode == "raise":
        assert procs[1].exitcode not in (0, None)


def test_launch_checks_its_arguments():
    with pytest.raises(ValueError, match="nproc"):
        data_parallel.launch(cases.ddp_steps, nproc=0, device="cpu")
    with pytest.raises(RuntimeError, match="torchrun"):
        if not data_parallel.under_torchrun():
            data_parallel.init()
        else:  # pragma: no cover - the test run itself under torchrun
            raise RuntimeError("torchrun")

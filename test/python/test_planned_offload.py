"""hector.offload.plan on the CPU: stacks of hector.nn layers (RGAT, RGCN,
HGT) with torch operations between them, trained with the plan of
hector.step_plan applied (values moved to the host or disk tier of the
tensor cache, or recomputed), give the gradients of the same steps keeping
everything (1e-6 relative); the plan is made from the layers' manifests at
the graph's sizes; every moved value is evicted, prefetched where the plan
says and only then read; statistics count what moved; bad settings are
refused with clear errors.

The layers' training libraries are compiled with the built hectorc."""

from __future__ import annotations

import gc
import warnings

import pytest

torch = pytest.importorskip("torch")

import hector.nn as hnn  # noqa: E402
import hector.offload  # noqa: E402
from hector.step_plan import argument_bytes  # noqa: E402
from hector.tensor_cache import TensorCache  # noqa: E402
from hectorc_support import compile_cache_in  # noqa: E402

MIB = 1 << 20
R = 3


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    with compile_cache_in(tmp_path_factory.mktemp("hector-cache")):
        yield


@pytest.fixture
def cache(tmp_path):
    with TensorCache(64 * MIB, str(tmp_path), checksum=True) as c:
        yield c


def graph(n, e, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, n, (2, e), generator=g), torch.randint(0, R, (e,), generator=g),
            torch.randn(n, 8, generator=g, requires_grad=True))


class Stack(torch.nn.Module):
    """RGAT -> linear, ReLU -> RGAT -> ReLU -> RGCN: torch ops between the layers."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = hnn.RGATConv(8, 16, R)
        self.mix = torch.nn.Linear(16, 16)
        self.conv2 = hnn.RGATConv(16, 16, R)
        self.conv3 = hnn.RGCNConv(16, 4, R)

    def forward(self, x, ei, et):
        h = torch.relu(self.mix(self.conv1(x, ei, et)))
        h = torch.relu(self.conv2(h, ei, et))
        return self.conv3(h, ei, et)


def step(model, x, ei, et, retain=False):
    """Gradients of x and every parameter after one step."""
    loss = (model(x, ei, et) ** 2).sum()
    loss.backward(retain_graph=retain)
    if retain:
        loss.backward()
    grads = [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]
    x.grad = None
    model.zero_grad(set_to_none=True)
    return grads


def assert_same(got, want, tol=1e-6):
    for a, b in zip(got, want):
        assert float((a - b).abs().max()) <= tol * max(float(b.abs().max()), 1e-30)


def planned_steps(model, args, planner, steps=2):
    out = []
    for _ in range(steps):
        with planner:
            out.append(step(model, *args))
    return out


def kept_peak(model, args, cache):
    planner = hector.offload.plan(model, None, tiers=("host",), cache=cache)
    planned_steps(model, args, planner, 1)
    return planner.plan.peak_kept


def check_events(planner):
    """Every moved value: evicted after its forward, prefetched at the plan's
    point, read by its backward after that; every recomputed one recomputed
    before it is read."""
    plan, events = planner.plan, planner.last_step_events
    for v in plan.values:
        mine = [(kind, point) for kind, call, name, point in events
                if call == v.call and (name == v.name or (kind == "recompute" and v.name in name))]
        if v.decision in ("host", "disk"):
            assert mine == [("evict", v.produced), ("prefetch", v.prefetch_at),
                            ("read", v.first_backward)]
        elif v.decision == "recompute":
            assert mine == [("recompute", v.first_backward), ("read", v.first_backward)]
        else:
            assert mine == []


def test_the_plan_comes_from_the_manifests(cache):
    ei, et, x = graph(80, 400, 1)
    model = Stack()
    planner = hector.offload.plan(model, None, cache=cache)
    planned_steps(model, (x, ei, et), planner, 1)
    plan = planner.plan
    assert plan.layers == ["conv1", "conv2", "conv3"]
    assert plan.points == ["forward conv1", "forward conv2", "forward conv3",
                           "backward conv3", "backward conv2", "backward conv1"]
    # The graph's sizes, computed here: P is the number of (source, edge type) pairs.
    pairs = int(torch.unique(ei[0] * R + et).numel())
    sizes = {"N": 80, "E": 400, "P": pairs}
    for k, conv in enumerate((model.conv1, model.conv2, model.conv3)):
        fwd, bwd = conv.library("cpu", True).training_entries(conv.model)
        saved = {a.name: a for a in fwd.arguments if a.role == "saved"}
        assert {v.name for v in plan.of(k)} == set(saved)
        for v in plan.of(k):
            assert v.bytes == argument_bytes(saved[v.name], sizes)
    assert {v.name: v.bytes for v in plan.of(0)} == {
        "saved0": 400 * 4, "saved1": pairs * 16 * 4, "saved2": 400 * 4}
    assert plan.of(2) == []  # RGCN saves nothing but its input


@pytest.mark.parametrize("tiers", [("host",), ("disk",), ("recompute",),
                                   ("host", "disk", "recompute")])
@pytest.mark.parametrize("fraction", [1.0, 0.8, 0.6, 0.0])
def test_planned_steps_have_the_gradients_of_keep_all(cache, tiers, fraction):
    ei, et, x = graph(80, 400, 2)
    model = Stack()
    want = step(model, x, ei, et)
    capacity = max(1, int(kept_peak(model, (x, ei, et), cache) * fraction))
    planner = hector.offload.plan(model, capacity, tiers=tiers, cache=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # capacities nothing reaches
        for got in planned_steps(model, (x, ei, et), planner, 3):
            assert_same(got, want)
    plan, stats = planner.plan, planner.stats()
    assert stats["steps"] == 3 and stats["plans"] == 1
    moved = [v for v in plan.values if v.decision != "keep"]
    if fraction == 1.0:
        assert moved == [] and plan.reachable
    if fraction == 0.0:  # nothing fits: every value with an idle period moves
        assert not plan.reachable
        assert {(v.call, v.name) for v in moved} == {
            (v.call, v.name) for v in plan.values if v.first_backward > v.produced + 1}
    if fraction < 1.0:
        assert moved
    # Two planned steps: counts are twice the plan's.
    for tier in ("host", "disk"):
        assert stats[f"evicted_{tier}_bytes"] == 2 * plan.moved_bytes(tier)
    assert stats["prefetched_bytes"] == 2 * (plan.moved_bytes("host") + plan.moved_bytes("disk"))
    assert stats["recomputed_values"] == 2 * sum(v.decision == "recompute" for v in plan.values)
    assert stats["late_prefetches"] == 0 and stats["kept_in_place"] == 0
    check_events(planner)
    gc.collect()
    assert cache.stats()["values"] == 0


def test_hgt_stack(cache):
    meta = (["a", "b"], [("a", "to", "b"), ("b", "to", "a"), ("a", "self", "a")])
    g = torch.Generator().manual_seed(3)
    x = {"a": torch.randn(30, 8, generator=g, requires_grad=True),
         "b": torch.randn(20, 8, generator=g, requires_grad=True)}
    edges = {("a", "to", "b"): torch.stack([torch.randint(0, 30, (90,), generator=g),
                                            torch.randint(0, 20, (90,), generator=g)]),
             ("b", "to", "a"): torch.stack([torch.randint(0, 20, (70,), generator=g),
                                            torch.randint(0, 30, (70,), generator=g)]),
             ("a", "self", "a"): torch.randint(0, 30, (2, 60), generator=g)}
    torch.manual_seed(0)
    model = torch.nn.ModuleList([hnn.HGTConv(8, 16, meta, heads=2),
                                 hnn.HGTConv(16, 16, meta, heads=2)])

    def hgt_step():
        h = x
        for conv in model:
            h = {t: torch.relu(v) for t, v in conv(h, edges).items()}
        (sum((v ** 2).sum() for v in h.values())).backward()
        # The first layer's skip gets no gradient: 8 ≠ 16, no gated residual (as in PyG).
        grads = [x["a"].grad.clone(), x["b"].grad.clone()] + [
            p.grad.clone() for p in model.parameters() if p.grad is not None]
        x["a"].grad = x["b"].grad = None
        model.zero_grad(set_to_none=True)
        return grads

    want = hgt_step()
    planner = hector.offload.plan(model, None, cache=cache)
    with planner:
        hgt_step()
    capacity = int(planner.plan.peak_kept * 0.7)
    planner = hector.offload.plan(model, capacity, tiers=("host", "disk"), cache=cache)
    for _ in range(2):
        with planner:
            assert_same(hgt_step(), want)
    assert planner.plan.layers == ["0", "1"]
    assert planner.plan.reachable
    assert planner.stats()["evicted_host_bytes"] + planner.stats()["evicted_disk_bytes"] > 0
    check_events(planner)


@pytest.mark.parametrize("tiers", [("host",), ("recompute",)])
def test_a_backward_run_twice_reads_the_values_again(cache, tiers):
    ei, et, x = graph(60, 300, 4)
    model = Stack()
    want = step(model, x, ei, et, retain=True)
    planner = hector.offload.plan(model, 1, tiers=tiers, cache=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(2):
            with planner:
                assert_same(step(model, x, ei, et, retain=True), want)
    stats = planner.stats()
    assert stats["late_prefetches"] == 0
    # One planned step (the first records), whose two backwards each read
    # the values again, or recompute both RGAT layers again.
    if tiers == ("host",):
        assert stats["prefetched_bytes"] == 2 * stats["evicted_host_bytes"] > 0
    else:
        assert stats["recomputed_calls"] == 2 * 2
    gc.collect()
    assert cache.stats()["values"] == 0


def test_a_new_graph_is_planned_again(cache):
    model = Stack()
    first, second = graph(60, 300, 5), graph(90, 500, 6)
    planner = hector.offload.plan(model, None, tiers=("disk",), cache=cache)
    want = [step(model, x, ei, et) for ei, et, x in (first, second)]
    for args, expected in ((first, want[0]), (first, want[0]), (second, want[1]),
                           (second, want[1])):
        ei, et, x = args
        with planner:
            assert_same(step(model, x, ei, et), expected)
    assert planner.stats()["plans"] == 2
    assert planner.plan.of(0)[0].bytes == 500 * 4


def test_a_full_host_tier_keeps_values_in_place():
    ei, et, x = graph(80, 400, 7)
    model = Stack()
    want = step(model, x, ei, et)
    with TensorCache(1024) as small:
        planner = hector.offload.plan(model, 1, tiers=("host",), cache=small)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for got in planned_steps(model, (x, ei, et), planner):
                assert_same(got, want)
        assert planner.stats()["kept_in_place"] > 0


def test_the_step_outside_the_layers_is_untouched(cache):
    """Inference inside the block, and torch-only models, are not planned."""
    ei, et, x = graph(40, 200, 8)
    model = Stack()
    planner = hector.offload.plan(model, 1, cache=cache)
    with planner, torch.no_grad():
        model(x, ei, et)
    assert planner.plan is None and planner.stats()["steps"] == 0


def test_bad_settings(cache):
    model = Stack()
    with pytest.raises(ValueError, match="capacity_bytes must be a positive number of bytes"):
        hector.offload.plan(model, -1, cache=cache)
    with pytest.raises(ValueError, match="tiers must be distinct names among"):
        hector.offload.plan(model, 100, tiers=("gpu",), cache=cache)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        hector.offload.plan([model.conv1], 100, cache=cache)
    with pytest.raises(ValueError, match="Sequential has no hector.nn layers to plan"):
        hector.offload.plan(torch.nn.Sequential(torch.nn.Linear(2, 2)), 100, cache=cache)
    with TensorCache(MIB) as no_disk:
        with pytest.raises(ValueError, match="the disk tier needs a tensor cache with a "
                                             "directory"):
            hector.offload.plan(model, 100, cache=no_disk)
        hector.offload.plan(model, 100, tiers=("host", "recompute"), cache=no_disk)
    planner = hector.offload.plan(model, 100, cache=cache)
    with planner:
        with pytest.raises(RuntimeError, match="already active"):
            planner.__enter__()


def test_steps_found_inside_one_block(cache):
    """A block around the whole loop: a step ends when its last layer
    backward has run; a forward whose graph is dropped without a backward
    is not planned from."""
    ei, et, x = graph(60, 300, 9)
    model = Stack()
    want = step(model, x, ei, et)
    planner = hector.offload.plan(model, 1, tiers=("disk",), cache=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with planner:
            (model(x, ei, et) ** 2).sum()  # dropped: never backpropagated
            gc.collect()
            for _ in range(3):
                assert_same(step(model, x, ei, et), want)
    stats = planner.stats()
    assert stats["steps"] == 4 and stats["plans"] == 1
    assert stats["evicted_disk_bytes"] == 2 * planner.plan.moved_bytes("disk") > 0

"""hector.step_plan: the offload plan of a step of separately compiled
layers, checked against a hand-computed case, against a reference of the
compiler pass's greedy rule written here independently (random small
steps), and against brute force for the prefetch placement; the rates are
the pass's; bad settings are refused with clear errors. No library is
compiled: the entries are manifest-shaped objects."""

from __future__ import annotations

import math
import os
import random
import re
import warnings
from types import SimpleNamespace

import pytest

from hector import step_plan
from hector.step_plan import LayerCall, Rates, plan_step

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def arg(role, name, *shape):
    return SimpleNamespace(role=role, name=name, dtype="float32", shape=tuple(shape))


def layer(name, saved, n=1, e=1, in_w=1, out_w=1, fwd_s=1.0, bwd_s=1.0, offloaded=()):
    """A call with input h [N, in_w], weight W [in_w, out_w], output [N, out_w] and
    saved values [E, w] for w in `saved`; the backward reads h, W and every saved
    value and returns d_h and d_W."""
    saved_args = [arg("saved", f"saved{i}", "E", w) for i, w in enumerate(saved)]
    fwd = SimpleNamespace(name="f_fwd", offloaded=offloaded, arguments=[
        arg("graph", "edge_src", "E"), arg("input", "h", "N", in_w),
        arg("weight", "W", in_w, out_w), arg("output", "result0", "N", out_w), *saved_args])
    bwd = SimpleNamespace(name="f_bwd", offloaded=(), arguments=[
        arg("graph", "edge_src", "E"), arg("input", "h", "N", in_w),
        arg("weight", "W", in_w, out_w), *saved_args, arg("grad_output", "d_result0", "N", out_w),
        arg("grad", "d_h", "N", in_w), arg("grad", "d_W", in_w, out_w)])
    return LayerCall(name, (fwd, bwd), {"N": n, "E": e}, fwd_s, bwd_s)


def decisions(plan):
    return {(v.call, v.name): (v.decision, v.prefetch_at) for v in plan.values}


# ---- the pass's rates ----------------------------------------------------------------

def test_rates_are_the_passes_defaults():
    text = open(os.path.join(REPO, "include/hector/Dialect/HGraph/Transforms/Passes.td")).read()
    text = text[text.index("def OffloadScheduling"):]
    options = dict(re.findall(r'Option<"\w+", "([\w-]+)", "double", "([0-9.]+)"', text))
    assert {k.replace("-", "_"): float(v) for k, v in options.items()} == {
        k: float(v) for k, v in vars(Rates()).items()}


# ---- a hand-computed step ------------------------------------------------------------
# Three calls (points 0..2 forward, 3..5 backward: call 2, 1, 0), one second
# each; saved values of 4000 (call 0), 8000 (call 1) and 2000 bytes (call 2).
# Each input, output and weight is 4 bytes; a backward's d_result0, d_h, d_W 12.
# Kept (weights are not counted): p0 = 4000 + in0 + out0 = 4008;
#   p1 = 12000 + in0 + in1 + out1 = 12012; p2 = 14000 + 12 + 4 = 14016;
#   p3 = 14000 + 12 + 12 = 14024; p4 = 12000 + 8 + 12 = 12020; p5 = 4000 + 4 + 12 = 4016.

def hand_step():
    return [layer("a", [1000]), layer("b", [2000]), layer("c", [500])]


def test_hand_computed_kept_profile():
    plan = plan_step(hand_step(), None, tiers=("host",))
    assert plan.memory_kept == [4008, 12012, 14016, 14024, 12020, 4016]
    assert plan.peak_kept == 14024
    # No capacity: each round trip (~0.15 us) hides in a 1 s idle period;
    # call 2's value has none (its backward follows its forward). Without a
    # capacity a prefetch goes to the latest point hiding its read: one point
    # (1 s) before its reader.
    assert decisions(plan) == {(0, "saved0"): ("host", 4), (1, "saved0"): ("host", 3),
                               (2, "saved0"): ("keep", None)}


def test_hand_computed_one_move():
    # Over 13000 at p2 (1016) and p3 (1024). Moving call 0's value relieves
    # 1016 + 1024 byte-seconds at half the cost of call 1's: it goes to the host.
    # Then the peak is 10024. Its prefetch: p4 + 4000 = 12020 fits, p3 + 4000 =
    # 14024 does not: at p4.
    plan = plan_step(hand_step(), 13000, tiers=("host",))
    assert decisions(plan) == {(0, "saved0"): ("host", 4), (1, "saved0"): ("keep", None),
                               (2, "saved0"): ("keep", None)}
    assert plan.reachable and plan.peak_planned == 12020
    assert plan.moved_bytes("host") == 4000


def test_hand_computed_two_moves_and_latest_safe_prefetch():
    # 9000: after call 0's value, p2 = 10016 and p3 = 10024 are still over;
    # call 1's value goes too. Prefetches, in order of reader: call 1's (reader
    # p4) does not fit at p3 (2024 + 8000): the latest point hiding its read,
    # p3; call 0's (reader p5) does not fit at p4 (8020 + 4000): p4.
    plan = plan_step(hand_step(), 9000, tiers=("host",))
    assert decisions(plan) == {(0, "saved0"): ("host", 4), (1, "saved0"): ("host", 3),
                               (2, "saved0"): ("keep", None)}
    assert plan.reachable  # by the greedy's own measure, as in the pass
    assert plan.memory == [4008, 8012, 2016, 10024, 12020, 4016]


def test_hand_computed_host_capacity_sends_the_rest_to_disk():
    plan = plan_step(hand_step(), 9000, tiers=("host", "disk"), host_capacity_bytes=5000)
    assert [v.decision for v in plan.values] == ["host", "disk", "keep"]


def test_hand_computed_recompute_when_cheaper():
    # Recomputing call 0 reruns its forward: 1 s, far more than a host round
    # trip; with forwards of 1 ns it is cheaper, and its rerun holds its output
    # (4 bytes) at its backward.
    calls = [layer("a", [1000], fwd_s=1e-9), layer("b", [2000]), layer("c", [500])]
    plan = plan_step(calls, 13000)
    assert [v.decision for v in plan.values] == ["recompute", "keep", "keep"]
    assert plan.memory[5] == 4016 + 4
    assert [v.decision for v in plan_step(hand_step(), 13000).values] == [
        "host", "keep", "keep"]


def test_nothing_fits():
    with pytest.warns(RuntimeWarning, match=r"needs .* the capacity is 1 bytes"):
        plan = plan_step(hand_step(), 1)
    assert not plan.reachable
    assert [v.decision for v in plan.values][:2] != ["keep", "keep"]
    assert all(v.decision != "keep" for v in plan.values if v.first_backward > v.produced + 1)
    assert plan.values[2].decision == "keep"  # no idle period


def test_everything_fits():
    plan = plan_step(hand_step(), 14024)
    assert all(v.decision == "keep" for v in plan.values)
    assert plan.peak_planned == plan.peak_kept == 14024


def test_times_from_the_manifest_sizes():
    # Without measured seconds, an entry takes its buffers' bytes over the
    # device bandwidth: forward h, W, result0, saved0 = (3*4 + 4 + 3*4 + 5*8*4)
    c = layer("a", [8], n=3, e=5)
    c = LayerCall(c.layer, c.entries, c.symbols)
    plan = plan_step([c], None, rates=Rates(device_gbps=1))
    assert plan.seconds == [pytest.approx(188e-9), pytest.approx((12 + 4 + 160 + 12 + 12 + 4)
                                                                 * 1e-9)]


# ---- random steps against an independent reference of the greedy rule -------------

def reference(desc, capacity, tiers, host_capacity, rates):
    """The pass's greedy rule and prefetch placement (OffloadScheduling.cpp,
    planAuto and placePrefetches), for calls described by `desc`: per call
    (input, output, grads, saved sizes, forward s, backward s)."""
    L = len(desc)
    T = 2 * L
    bp = [T - 1 - k for k in range(L)]
    secs = [0.0] * T
    for k, d in enumerate(desc):
        secs[k], secs[bp[k]] = d["fwd_s"], d["bwd_s"]
    start = [sum(secs[:p]) for p in range(T + 1)]
    base = [0] * T
    for k, d in enumerate(desc):
        for p in range(k, bp[k] + 1):
            base[p] += d["input"]
        base[k] += d["output"]
        base[bp[k]] += d["grads"]
    vals = [{"k": k, "i": i, "b": b} for k, d in enumerate(desc) for i, b in enumerate(d["saved"])]
    dec = {id(v): "keep" for v in vals}
    pre = {}

    def held(v):
        k, d = v["k"], dec[id(v)]
        if d == "keep":
            return set(range(k, bp[k] + 1))
        if d == "recompute":
            return {k, bp[k]}
        return {k} | set(range(pre.get(id(v), bp[k]), bp[k] + 1))

    def memory():
        m = list(base)
        for v in vals:
            for p in held(v):
                m[p] += v["b"]
        for k in {v["k"] for v in vals if dec[id(v)] == "recompute"}:
            m[bp[k]] += desc[k]["output"] + sum(v["b"] for v in vals if v["k"] == k
                                                and dec[id(v)] != "recompute")
        return m

    host = 0
    reachable = True
    while max(memory()) > capacity:
        m = memory()
        rerun = {v["k"] for v in vals if dec[id(v)] == "recompute"}
        options = []
        for n, v in enumerate(vals):
            if dec[id(v)] != "keep":
                continue
            k = v["k"]
            relief = sum(min(v["b"], m[p] - capacity) * max(secs[p], 1e-9)
                         for p in range(k + 1, bp[k]) if m[p] > capacity)
            if relief <= 0:
                continue
            choice = []
            if "host" in tiers and (host_capacity is None or host + v["b"] <= host_capacity):
                choice = [("host", v["b"] / (rates.host_write_gbps * 1e9)
                           + v["b"] / (rates.host_read_gbps * 1e9))]
            elif "disk" in tiers:
                choice = [("disk", v["b"] / (rates.disk_write_gbps * 1e9)
                           + v["b"] / (rates.disk_read_gbps * 1e9))]
            if "recompute" in tiers:
                again = 0.0 if k in rerun else desc[k]["fwd_s"]
                if not choice or again < choice[0][1]:
                    choice = [("recompute", again)]
            if choice:
                options.append((relief / max(choice[0][1], 1e-12), -n, v, choice[0][0]))
        if not options:
            reachable = False
            break
        _, _, v, d = max(options, key=lambda o: (o[0], o[1]))
        dec[id(v)] = d
        host += v["b"] if d == "host" else 0
    moved = sorted((v for v in vals if dec[id(v)] in ("host", "disk")),
                   key=lambda v: bp[v["k"]])
    for v in moved:  # brute force: every candidate point checked in full
        first = bp[v["k"]]
        m = memory()
        fits = [p for p in range(L, first)
                if all(m[q] + v["b"] <= capacity for q in range(p, first))]
        if fits:
            pre[id(v)] = min(fits)
            continue
        rate = rates.disk_read_gbps if dec[id(v)] == "disk" else rates.host_read_gbps
        hides = [p for p in range(L, first + 1) if start[first] - start[p] >= v["b"] / (rate * 1e9)]
        pre[id(v)] = max(hides) if hides else L
    return ({(v["k"], f"saved{v['i']}"): (dec[id(v)], pre.get(id(v))) for v in vals},
            reachable, memory())


@pytest.mark.parametrize("seed", range(60))
def test_random_steps_follow_the_greedy_rule(seed):
    rng = random.Random(seed)
    L = rng.randint(2, 4)
    desc, calls = [], []
    for k in range(L):
        n, e = rng.randint(1, 50), rng.randint(1, 400)
        in_w, out_w = rng.randint(1, 8), rng.randint(1, 8)
        widths = [rng.randint(1, 16) for _ in range(rng.randint(0, 3))]
        fwd_s, bwd_s = rng.choice([1e-9, 1e-6, 1e-3]), rng.choice([1e-6, 1e-3])
        calls.append(layer(f"l{k}", widths, n, e, in_w, out_w, fwd_s, bwd_s))
        desc.append({"input": 4 * n * in_w, "output": 4 * n * out_w,
                     "grads": 4 * (n * out_w + n * in_w + in_w * out_w),
                     "saved": [4 * e * w for w in widths], "fwd_s": fwd_s, "bwd_s": bwd_s})
    tiers = rng.choice([("host", "disk", "recompute"), ("host",), ("disk",), ("recompute",),
                        ("host", "disk")])
    host_capacity = rng.choice([None, 4000, 40000])
    kept = plan_step(calls, None, tiers=tiers).peak_kept
    capacity = max(1, int(kept * rng.choice([1.0, 0.9, 0.7, 0.5, 0.2, 0.0])))
    rates = Rates(host_write_gbps=rng.choice([53.1, 1e-3]), disk_read_gbps=rng.choice([1.78, 1e-4]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        plan = plan_step(calls, capacity, tiers=tiers, host_capacity_bytes=host_capacity,
                         rates=rates)
    want, reachable, memory = reference(desc, capacity, tiers, host_capacity, rates)
    assert decisions(plan) == want
    assert plan.reachable == reachable
    assert plan.memory == pytest.approx(memory)
    check_prefetches(plan)


def check_prefetches(plan):
    """No value is read before its prefetch, nor prefetched before its evict
    or outside the backward."""
    L = len(plan.layers)
    for v in plan.values:
        if v.decision in ("host", "disk"):
            assert v.evict_after == v.produced < L <= v.prefetch_at <= v.first_backward
        else:
            assert v.prefetch_at is None and v.evict_after is None


# ---- bad settings ----------------------------------------------------------------------

@pytest.mark.parametrize("capacity", [0, -5, 1.5, True, "1G"])
def test_bad_capacities(capacity):
    with pytest.raises(ValueError, match="capacity_bytes must be a positive number of bytes"):
        plan_step(hand_step(), capacity)
    with pytest.raises(ValueError, match="host_capacity_bytes must be"):
        plan_step(hand_step(), 100, host_capacity_bytes=capacity)


@pytest.mark.parametrize("tiers", [(), ("tape",), ("host", "host"), ("keep",)])
def test_bad_tiers(tiers):
    with pytest.raises(ValueError, match="tiers must be distinct names among host, disk, "
                                         "recompute"):
        plan_step(hand_step(), 100, tiers=tiers)


def test_one_tier_as_a_string():
    assert plan_step(hand_step(), 9000, tiers="disk").tiers == ("disk",)


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, "fast"])
def test_bad_rates(bad):
    with pytest.raises(ValueError, match="Rates: disk_read_gbps must be a positive number"):
        Rates(disk_read_gbps=bad)
    with pytest.raises(TypeError, match="rates must be a hector.step_plan.Rates"):
        plan_step(hand_step(), 100, rates={"device_gbps": 1})


def test_bad_calls():
    with pytest.raises(TypeError, match=r"calls\[1\] must be a LayerCall"):
        plan_step([hand_step()[0], "b"], 100)
    c = hand_step()[0]
    with pytest.raises(ValueError, match=r"layer a: argument 'saved0' has dimension 'E', "
                                         r"which the graph sizes \['N'\]"):
        plan_step([LayerCall("a", c.entries, {"N": 1})], 100)


def test_a_library_with_its_own_plan_is_not_recomputed():
    evict = SimpleNamespace(direction="evict")
    calls = [layer("a", [1000], fwd_s=1e-9, offloaded=(evict,)), layer("b", [2000]),
             layer("c", [500])]
    plan = plan_step(calls, 13000, tiers=("recompute",))
    assert plan.values[0].recompute_seconds is None
    assert plan.values[0].decision == "keep"
    assert step_plan.DECISIONS == ("keep", "host", "disk", "recompute")

"""Compiled offload plans (`hectorc --training --offload=...`) on the CPU.

The forward of a training step evicts the saved values its plan moves to
the runtime's tensor cache (host memory or disk) and the backward prefetches
them back (docs/offload.md). For RGAT and HGT, on the graphs of
model_cases.py, through hector.autograd:
  * the gradients and outputs equal those of the same model built to keep
    everything (the kernels are the same; only where the saved values wait
    changes; 1e-6, as the CPU backward's parallel sums may add in another
    order from one run to the next);
  * the values really go through the cache (it holds them between the
    forward and the backward; the disk tier writes them) and their keys are
    released when autograd frees the step;
  * a backward run twice (retain_graph) reads them again;
  * a host tier too small for them keeps them in the runtime's fallback,
    with the same gradients;
  * a two-layer model (hector.models.stack) planned under a capacity (its first layer's values
    recomputed in the backward) or moved to disk gives the keep-all
    gradients to 1e-5;
  * an entry called without its cache is refused with a clear error.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import autograd, compiled, graph as hgraph  # noqa: E402
from hector import models  # noqa: E402
from hector.models import generate  # noqa: E402
from hector.tensor_cache import TensorCache  # noqa: E402
from hectorc_support import build  # noqa: E402
from model_cases import GRAPHS, relative_error  # noqa: E402

CONFIGS = [("rgat", 16, 1), ("hgt", 16, 2)]
SAME = 1e-6  # the same computation, summed in another order


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("offload")
    cache = {}

    def get(source_name, source, *options):
        key = (source_name, options)
        if key not in cache:
            name = f"lib{source_name}_{len(cache)}.so"
            cache[key] = compiled.load(build(directory, source, "--target=cpu",
                                             "--training", *options, name=name))
        return cache[key]

    return get


def preprocess(graph):
    return hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                             graph["num_node_types"], graph["num_edge_types"])


def parameters(library, name, pre, seed):
    """Random float32 tensors for every input and weight of entry `name`."""
    rng = np.random.default_rng(seed)
    entry = library[name]
    symbols = {k: int(getattr(pre, k)) for k in ("N", "E", "T", "R", "P")}
    tensors = {}
    for arg in entry.arguments:
        if arg.role in ("input", "weight"):
            shape = autograd._shape(entry, arg, symbols)
            scale = 1.0 if arg.role == "input" else 0.3
            tensors[arg.name] = torch.tensor(
                rng.standard_normal(shape).astype(np.float32) * scale, requires_grad=True)
    return tensors


def step(library, name, pre, seed, cache=None, retain=False, inspect=None):
    """One forward and backward; returns the output and every gradient."""
    tensors = parameters(library, name, pre, seed)
    out, = autograd.run(library, name, pre, offload_cache=cache, **tensors)
    if inspect:
        inspect()
    weight = torch.sin(torch.arange(out.numel(), dtype=torch.float32)).reshape(out.shape)
    loss = (out * weight).sum()
    loss.backward(retain_graph=retain)
    grads = [out.detach().clone()] + [t.grad.clone() for t in tensors.values()]
    if retain:
        for t in tensors.values():
            t.grad = None
        loss.backward()
        again = [t.grad for t in tensors.values()]
        assert all(relative_error(b.numpy(), a.numpy()) < SAME
                   for a, b in zip(grads[1:], again))
    return grads


@pytest.mark.parametrize("graph_name", sorted(GRAPHS))
@pytest.mark.parametrize("mode", ["host", "disk"])
@pytest.mark.parametrize("model,width,heads", CONFIGS)
def test_offloaded_step_equals_keep_all(libraries, tmp_path, model, width, heads, mode,
                                        graph_name):
    source = generate(model, width=width, heads=heads)
    keep = libraries(f"{model}{width}_{heads}", source)
    moved = libraries(f"{model}{width}_{heads}", source, f"--offload={mode}")
    evicted = [o for o in moved[f"{model}_fwd"].offloaded if o.direction == "evict"]
    prefetched = [o for o in moved[f"{model}_bwd"].offloaded if o.direction == "prefetch"]
    assert evicted and sorted(o.slot for o in evicted) == sorted(o.slot for o in prefetched)
    assert all(o.tier == mode for o in evicted)
    assert not keep[f"{model}_fwd"].offloaded

    pre = preprocess(GRAPHS[graph_name](np.random.default_rng(7)))
    expected = step(keep, model, pre, seed=3)
    with TensorCache(host_capacity=1 << 30, directory=str(tmp_path)) as cache:
        def between():  # after the forward, before the backward
            stats = cache.stats()
            assert stats["values"] == len(evicted)
            if mode == "disk":
                cache.flush()
                assert cache.stats()["bytes_written"] > 0
        got = step(moved, model, pre, seed=3, cache=cache, retain=True, inspect=between)
        gc.collect()
        assert cache.stats()["values"] == 0, "the step's keys were not released"
    for a, b in zip(expected, got):
        assert relative_error(b.numpy(), a.numpy()) < SAME


def test_full_host_tier_falls_back(libraries, tmp_path):
    source = generate("rgat", width=16, heads=1)
    keep = libraries("rgat16_1", source)
    moved = libraries("rgat16_1", source, "--offload=host")
    pre = preprocess(GRAPHS["giant_hub"](np.random.default_rng(1)))
    with TensorCache(host_capacity=4096, directory=None) as cache:
        got = step(moved, "rgat", pre, seed=5, cache=cache)
        assert cache.stats()["values"] == 0
    for a, b in zip(step(keep, "rgat", pre, seed=5), got):
        assert relative_error(b.numpy(), a.numpy()) < SAME


TWO_LAYERS = models.stack("rgat", 2, width=16)


@pytest.mark.parametrize("graph_name", ["random_graph", "giant_hub", "empty_edge_types"])
@pytest.mark.parametrize("plan", [("--offload=auto", "--offload-capacity-mib=200"),
                                  ("--offload=disk",)])
def test_two_layers(libraries, tmp_path, graph_name, plan):
    # At these (pretended) sizes the step needs ~264 MiB; under 200 MiB the
    # plan recomputes the first layer's messages and each layer's attention
    # (from its kept scores) in the backward, cheaper than moving them at the
    # default rates, so they are no longer saved at all, and moves a value
    # whose copy its idle period hides. --offload=disk moves every saved
    # value.
    sizes = "--graph-sizes=N=100000,E=2000000,P=1000000,R=6,T=3"
    keep = libraries("rgat2", TWO_LAYERS, sizes)
    planned = libraries("rgat2", TWO_LAYERS, sizes, *plan)
    keep_saved = {a.name for a in keep["rgat_2_fwd"].arguments if a.role == "saved"}
    planned_saved = {a.name for a in planned["rgat_2_fwd"].arguments if a.role == "saved"}
    evicted = {o.name for o in planned["rgat_2_fwd"].offloaded}
    if plan[0] == "--offload=auto":
        recomputed = keep_saved - planned_saved - evicted
        assert {"saved0", "saved5"} <= recomputed
    else:
        assert not planned_saved and evicted == keep_saved

    pre = preprocess(GRAPHS[graph_name](np.random.default_rng(2)))
    expected = step(keep, "rgat_2", pre, seed=9)
    with TensorCache(host_capacity=1 << 30, directory=str(tmp_path)) as cache:
        got = step(planned, "rgat_2", pre, seed=9, cache=cache)
    for a, b in zip(expected, got):
        assert relative_error(b.numpy(), a.numpy()) < 1e-5


def test_entry_without_its_cache_is_refused(libraries):
    lib = libraries("rgat16_1", generate("rgat", width=16, heads=1), "--offload=host")
    with pytest.raises(TypeError, match=r"through a tensor cache: pass offload=\(cache, key_base\)"):
        lib["rgat_fwd"]()


@pytest.mark.parametrize("forward_done", [False, True])
def test_step_keys_released_after_a_forward_that_failed_part_way(libraries, forward_done):
    # A forward that fails part-way (a temporary over the cap, a launch
    # error) has evicted some slots and not others. Its keys are released
    # when the step's graph goes: every key it stored, whatever comes first;
    # a key missing is an error only when the forward had returned.
    moved = libraries("rgat2", TWO_LAYERS, "--offload=host")
    slots = [o.slot for o in moved["rgat_2_fwd"].offloaded if o.direction == "evict"]
    assert len(slots) >= 3
    with TensorCache(host_capacity=1 << 20, directory=None) as cache:
        keys = autograd._StepKeys(moved, cache, slots)
        stored = [keys.base + slot for slot in sorted(slots)[1::2]]  # not the first
        for key in stored:
            cache.put(key, np.arange(8, dtype=np.float32), tier="host")
        keys.forward_done[0] = forward_done
        everything = [keys.base + slot for slot in slots]
        if forward_done:
            with pytest.raises(RuntimeError, match="no value under key"):
                autograd._release_keys(moved, cache, everything, keys.forward_done)
        else:
            del keys
            gc.collect()
        assert cache.stats()["values"] == 0, "a step's stored keys were not all released"

"""Compiled entries never index memory with a corrupted graph array
(issue 16): every call checks the graph arrays by default, so a value out of
range in any of them -- far out, negative, an offset table that decreases or
ends elsewhere -- raises ValueError naming the array, instead of reading or
writing out of bounds. For each model (the default variant, compacted and
reordered, and the unoptimised one, so that every array some entry reads is
covered), for numpy arrays and torch tensors, for the inference and the
training entries, and through hector.autograd.run.
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

from hector import _graph_checks, compiled, graph as hgraph, models
from hectorc_support import build
from model_cases import random_graph
from reference import params

WIDTH = 8
# A value per id range: far past the end, just past the end, negative.
CORRUPTIONS = {
    "far": lambda bound: 2**30,
    "end": lambda bound: bound,
    "negative": lambda bound: -7,
}


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("checks")
    built = {}
    for model in ("rgcn", "rgat", "hgt"):
        source = models.generate(model, WIDTH)
        for variant in ("default", "unopt"):
            flags = ["--target=cpu", "--cpu=native", "--training"]
            if variant == "unopt":
                flags.append("--variant=unopt")
            built[model, variant] = compiled.load(
                build(directory, source, *flags, name=f"lib{model}_{variant}.so"))
    return built


def arguments(entry, model, rng, torch_arrays=False):
    graph = random_graph(rng)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    arrays = {k: np.array(v) for k, v in pre.arrays().items()}
    sizes = {"N": len(arrays["node_type"]), "E": len(arrays["edge_src"]),
             "R": graph["num_edge_types"], "T": graph["num_node_types"],
             "P": len(arrays["compact_src"])}
    weights = params.make_params(model, graph, WIDTH, WIDTH, seed=1)
    values = {}
    for arg in entry.arguments:
        if arg.role == "graph":
            values[arg.name] = arrays[arg.name]
        elif arg.name in weights:
            values[arg.name] = np.ascontiguousarray(weights[arg.name], np.float32)
        else:
            shape = [sizes[d] if isinstance(d, str) else d for d in arg.shape]
            values[arg.name] = rng.standard_normal(shape).astype(np.float32)
    if torch_arrays:
        import torch
        values = {k: torch.from_numpy(v) if k in arrays else v for k, v in values.items()}
    return values, sizes


def cases():
    for model in ("rgcn", "rgat", "hgt"):
        for variant in ("default", "unopt"):
            yield model, variant


@pytest.mark.parametrize("model,variant", list(cases()))
@pytest.mark.parametrize("kind", ["inference", "training_forward", "training_backward"])
def test_every_graph_array_is_checked(libraries, model, variant, kind):
    library = libraries[model, variant]
    entry = next(e for e in library.entries.values() if e.kind == kind)
    rng = np.random.default_rng(5)
    values, sizes = arguments(entry, model, rng)
    entry(**values)  # the clean graph runs
    graph_args = [a for a in entry.arguments if a.role == "graph"]
    assert graph_args
    bound_symbols = {d for a in entry.arguments for d in a.shape if isinstance(d, str)}
    checked = 0
    for arg in graph_args:
        if arg.name in _graph_checks._ID_RANGES:
            symbol = _graph_checks._ID_RANGES[arg.name]
            bound = sizes[symbol]
            for how, value in CORRUPTIONS.items():
                if how != "negative" and symbol not in bound_symbols:
                    # Nothing of the entry is sized by the symbol (RGCN has
                    # no node-typed weight), so no value indexes past it.
                    continue
                bad = dict(values)
                bad[arg.name] = values[arg.name].copy()
                bad[arg.name][len(bad[arg.name]) // 2] = value(bound)
                with pytest.raises(ValueError, match=f"'{arg.name}' holds"):
                    entry(**bad)
            checked += 1
        elif arg.name in _graph_checks._OFFSETS:
            for change, message in (((1, 10**6), "never decrease|ends at"),
                                    ((-1, -1), "never decrease|ends at"),
                                    ((0, 5), "start at 0")):
                bad = dict(values)
                bad[arg.name] = values[arg.name].copy()
                position, value = change
                if len(bad[arg.name]) <= max(position, 0):
                    continue
                bad[arg.name][position] = value
                with pytest.raises(ValueError, match=message):
                    entry(**bad)
            checked += 1
    assert checked == sum(a.name in _graph_checks._ID_RANGES or a.name in _graph_checks._OFFSETS
                          for a in graph_args)


@pytest.mark.parametrize("model", ["rgcn", "rgat", "hgt"])
def test_torch_arrays_checked_too(libraries, model):
    pytest.importorskip("torch")
    entry = libraries[model, "default"][model]
    values, sizes = arguments(entry, model, np.random.default_rng(6), torch_arrays=True)
    entry(**values)
    bound_symbols = {d for a in entry.arguments for d in a.shape if isinstance(d, str)}
    for arg in entry.arguments:
        if arg.name in _graph_checks._ID_RANGES and \
                _graph_checks._ID_RANGES[arg.name] in bound_symbols:
            bad = dict(values)
            bad[arg.name] = values[arg.name].clone()
            bad[arg.name][0] = 2**30
            with pytest.raises(ValueError, match=f"'{arg.name}' holds {2**30}"):
                entry(**bad)


def test_autograd_run_checks_the_graph(libraries):
    torch = pytest.importorskip("torch")
    from hector import autograd
    library = libraries["rgcn", "default"]
    rng = np.random.default_rng(7)
    graph = random_graph(rng)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    weights = params.make_params("rgcn", graph, WIDTH, WIDTH, seed=1)
    tensors = {k: torch.tensor(np.asarray(v), dtype=torch.float32)
               for k, v in weights.items()}
    tensors["h"] = torch.randn(len(graph["node_type"]), WIDTH)
    autograd.run(library, "rgcn", pre, **tensors)
    bad = pre.compact_src.copy()
    bad[0] = 10**6  # a graph put together by hand, one pair out of range
    with pytest.raises(ValueError, match="'compact_src' holds 1000000"):
        autograd.run(library, "rgcn", dataclasses.replace(pre, compact_src=bad), **tensors)


# ---- the C ABI: hector_graph_check_array (runtime/include/hector/graph.h) ----

def _c_check(lib, name, array, sizes):
    import ctypes
    from hector import graph as g
    fn = lib.hector_graph_check_array
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64,
                   ctypes.POINTER(g._GraphSizes), ctypes.c_int]
    s = g._GraphSizes(sizes["N"], sizes["E"], sizes["T"], sizes["R"], sizes["P"])
    array = np.ascontiguousarray(array, dtype=np.float32 if name == "edge_norm" else np.int32)
    status = fn(name.encode(), array.ctypes.data if array.size else None, array.size,
                ctypes.byref(s), -1)
    return status, lib.hector_last_error().decode()


def _python_check(name, array, sizes):
    """check_graph_indices on one array, as an entry taking it would call it."""
    argument = types.SimpleNamespace(role="graph", name=name)
    _graph_checks.check_graph_indices("entry", [(argument, array)], sizes)


def test_c_abi_check_agrees_with_the_python_check():
    """Every array of a preprocessed graph passes; each corruption the Python
    check refuses, the C check refuses too, with INDEX_OUT_OF_RANGE naming
    the array. Every array but edge_norm has a rule in both."""
    from hector import _runtime, graph as g
    lib = g._lib()
    graph = random_graph(np.random.default_rng(8))
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    arrays = {k: np.array(v) for k, v in pre.arrays().items()}
    sizes = {"N": pre.N, "E": pre.E, "R": pre.R, "T": pre.T, "P": pre.P}
    assert set(arrays) == set(_graph_checks._ID_RANGES) | set(_graph_checks._OFFSETS) | \
        {"edge_norm"}
    for name, array in arrays.items():
        assert _c_check(lib, name, array, sizes) == (_runtime.OK, ""), name
        _python_check(name, array, sizes)
    corrupted = 0
    for name, array in arrays.items():
        if name in _graph_checks._ID_RANGES:
            bound = sizes[_graph_checks._ID_RANGES[name]]
            for value in (2**30, bound, -7):
                bad = array.copy()
                bad[len(bad) // 2] = value
                with pytest.raises(ValueError, match=f"'{name}' holds {value}"):
                    _python_check(name, bad, sizes)
                status, message = _c_check(lib, name, bad, sizes)
                assert status == _runtime.INDEX_OUT_OF_RANGE, (name, value)
                assert f"'{name}' holds {value} at index {len(bad) // 2}" in message
                corrupted += 1
        elif name in _graph_checks._OFFSETS:
            for position, value, words in ((1, 10**6, "never decrease"), (-1, -1, ""),
                                           (0, 5, "start at 0")):
                bad = array.copy()
                if len(bad) <= max(position, 0):
                    continue
                bad[position] = value
                with pytest.raises(ValueError, match=f"'{name}'"):
                    _python_check(name, bad, sizes)
                status, message = _c_check(lib, name, bad, sizes)
                assert status == _runtime.INDEX_OUT_OF_RANGE, (name, position, value)
                assert f"'{name}'" in message and words in message
                corrupted += 1
            status, message = _c_check(lib, name, array[:0], sizes)
            assert status == _runtime.INDEX_OUT_OF_RANGE and "empty" in message
    assert corrupted > 30
    # Unknown sizes are not checked against; bad arguments are refused.
    unknown = dict(sizes, N=-1)
    bad = arrays["edge_src"].copy()
    bad[0] = 10**6
    assert _c_check(lib, "edge_src", bad, unknown)[0] == _runtime.OK
    assert _c_check(lib, "no_such_array", bad, sizes)[0] == _runtime.INVALID_ARGUMENT

"""The gradient ops and the training ABI, compiled by hectorc for the CPU.

Every case of gradient_cases.py (typed_linear transpose from node/src/dst/
edge with node/edge/single and per-head weights, aggregate to src and its
scattering GEMM, weight_grad of every index kind including compact gradient
rows, type_sum, zeros, degree_norm, slice, equal, leaky_relu_grad) runs on
the edge-case graphs of model_cases.py (isolated nodes, edge types without
edges, self-loops and duplicate edges, a giant hub) against float64 NumPy
written from the ops' math: normwise relative error < 1e-5, and every output
element written (outputs start as NaN). The training entries (kind, primal,
roles saved / grad_output / grad, weight-shaped gradient outputs, compact
saved tensors) are read back through hector.compiled.
"""

from __future__ import annotations

import numpy as np
import pytest

from hector import compiled, graph as hgraph
from hectorc_support import build
from model_cases import GRAPHS, relative_error
import gradient_cases

TOLERANCE = 1e-5
CASES = {case.name: case for case in gradient_cases.cases()}


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """All cases in one CPU library (one hectorc run)."""
    source = "".join(case.ir for case in CASES.values())
    path = build(tmp_path_factory.mktemp("gradients"), source, "--target=cpu",
                 name="libgradients.so")
    return compiled.load(path)


def preprocessed(graph_kind, seed):
    rng = np.random.default_rng(seed)
    graph = GRAPHS[graph_kind](rng)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    return pre.arrays(), rng


def symbols(g):
    return {"N": len(g["node_type"]), "E": len(g["edge_src"]),
            "R": len(g["etype_offsets"]) - 1, "T": len(g["ntype_offsets"]) - 1,
            "P": len(g["compact_src"])}


def shape_of(arg, sym):
    return tuple(sym[d] if isinstance(d, str) else d for d in arg.shape)


def call(entry, g, rng, given=None):
    """Runs `entry` with random inputs (or `given` ones) and NaN-filled
    outputs; returns (all values by name, outputs by name)."""
    sym = symbols(g)
    values, outputs = dict(g), {}
    for arg in entry.arguments:
        if arg.role == "graph":
            continue
        shape = shape_of(arg, sym)
        if arg.is_output:
            outputs[arg.name] = values[arg.name] = np.full(shape, np.nan, np.float32)
        elif given is not None and arg.name in given:
            values[arg.name] = given[arg.name]
        else:
            values[arg.name] = rng.standard_normal(shape).astype(np.float32)
    entry(**{a.name: values[a.name] for a in entry.arguments})
    return values, outputs


def reference(fn, g, values):
    """`fn` on float64 copies of the float values and int64 graph arrays."""
    o = gradient_cases.NUMPY
    floats = {k: o.f64(v) for k, v in values.items() if k not in g}
    return fn(floats, {k: o.ids(v) for k, v in g.items()}, o)


def check(outputs, expected):
    assert set(outputs) == set(expected)
    for name, out in outputs.items():
        want = np.asarray(expected[name], np.float64)
        assert out.shape == want.shape, name
        assert not np.isnan(out).any(), f"{name}: some elements were never written"
        if not np.abs(want).max(initial=0.0):
            assert not np.abs(out).max(initial=0.0), f"{name} must be all zeros"
            continue
        assert relative_error(out, want) < TOLERANCE, name


@pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_case_matches_numpy(library, case, graph_kind):
    g, rng = preprocessed(graph_kind, [len(case), len(graph_kind)])
    values, outputs = call(library[case], g, rng)
    check(outputs, reference(CASES[case].reference, g, values))


def test_manifest_of_gradient_entries(library):
    entry = library["weight_grad_src_edge_64_32_4"]
    assert (entry.kind, entry.primal) == ("inference", "weight_grad_src_edge_64_32_4")
    dW = entry.arguments[-1]
    assert (dW.role, dW.name, dW.shape, dW.is_output) == ("output", "dW", ("R", 4, 16, 8), True)
    vector = library["type_sum_single_node_16_1"].arguments[-1]
    assert (vector.name, vector.shape) == ("w", (16,))
    per_node = library["type_sum_node_node_64_4"].arguments[-1]
    assert per_node.shape == ("T", 64)


# ---- the training ABI -------------------------------------------------------

@pytest.fixture(scope="module")
def training(tmp_path_factory):
    path = build(tmp_path_factory.mktemp("training"), gradient_cases.training_module(16),
                 "--target=cpu", name="libtraining.so")
    return compiled.load(path)


def test_training_manifest(training):
    f, fwd, bwd = training["f"], training["f_fwd"], training["f_bwd"]
    assert (f.kind, f.primal) == ("inference", "f")
    assert (fwd.kind, fwd.primal) == ("training_forward", "f")
    assert (bwd.kind, bwd.primal) == ("training_backward", "f")
    assert training.training_entries("f") == (fwd, bwd)
    args = {a.name: a for a in fwd.arguments if a.role != "graph"}
    assert [(a.name, a.role, a.shape) for a in args.values()] == [
        ("h", "input", ("N", 16)), ("W", "weight", ("R", 16, 16)),
        ("result0", "output", ("N", 16)), ("saved0", "saved", ("P", 16))]
    assert args["saved0"].is_output
    args = {a.name: a for a in bwd.arguments if a.role != "graph"}
    assert [(a.name, a.role, a.shape, a.is_output) for a in args.values()] == [
        ("h", "input", ("N", 16), False), ("W", "weight", ("R", 16, 16), False),
        ("saved0", "saved", ("P", 16), False), ("d_result0", "grad_output", ("N", 16), False),
        ("d_h", "grad", ("N", 16), True), ("d_W", "grad", ("R", 16, 16), True),
        ("check", "output", ("N", 16), True)]


@pytest.mark.parametrize("graph_kind", sorted(GRAPHS))
def test_training_entries_run(training, graph_kind):
    g, rng = preprocessed(graph_kind, 11)
    values, outputs = call(training["f_fwd"], g, rng)
    inference = call(training["f"], g, rng, given=values)[1]
    given = dict(values, **outputs)
    bwd_values, grads = call(training["f_bwd"], g, rng, given=given)
    expected = reference(gradient_cases.training_reference, g, bwd_values)
    check(outputs, {k: expected[k] for k in outputs})
    check(inference, {"result0": expected["result0"]})
    check(grads, {k: expected[k] for k in grads})


def test_gradients_are_written_in_full(training):
    """Gradient buffers hold garbage before the call: nothing accumulates."""
    g, rng = preprocessed("empty_edge_types", 5)
    values, _ = call(training["f_fwd"], g, rng)
    first = call(training["f_bwd"], g, rng, given=values)
    again = dict(first[0])
    for name in ("d_h", "d_W", "check"):
        again[name] = np.full_like(first[1][name], 1e30)
    training["f_bwd"](**{a.name: again[a.name] for a in training["f_bwd"].arguments})
    for name in ("d_h", "d_W", "check"):
        # Threads combine partial sums in whichever order they finish, so two
        # calls may differ in the last bits; a leftover 1e30 would not.
        np.testing.assert_allclose(again[name], first[1][name], rtol=1e-5, atol=1e-5)


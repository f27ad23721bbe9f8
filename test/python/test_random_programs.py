"""Random well-typed hgraph programs (program_generator.py), compiled for the
CPU by hectorc, against the float64 interpreter (hgraph_interpreter.py):
every result of the inference entry and, for training programs, of the
training forward and every gradient of the backward, on three random graphs
with empty types, isolated nodes, self-loops, duplicate edges, a hub, and no
edges or one node. Batches cycle through hectorc's variants, save policies
and edge-softmax lowerings. Seeded and deterministic.

The interpreter itself is checked here too: its forward against the NumPy
model references on RGCN, RGAT and HGT (an independent implementation of
BRIEF.md §4), and its vector-Jacobian products against central finite
differences of its own forward.

A longer run: python3 test/python/program_generator.py --batches 50 --seed N
(docs/robustness.md).
"""

from __future__ import annotations

import numpy as np
import pytest

import hgraph_interpreter as hi
import program_generator as pg
from hector import models
from reference import models_numpy

BATCHES = 5          # per mode
PER_BATCH = 30       # programs per hectorc run: 300 programs in all


@pytest.mark.parametrize("training", [False, True], ids=["forward", "training"])
@pytest.mark.parametrize("index", range(BATCHES))
def test_random_programs_match_the_interpreter(index, training, tmp_path):
    report = pg.run_batch(index, PER_BATCH, training, str(tmp_path))
    assert not report.failures, (f"{report.summary()}\n\n"
                                 + "\n\n".join(map(str, report.failures[:4])))
    # The conditioning filter must leave most pairs to compare.
    assert report.compared >= 0.8 * report.pairs, report.summary()


def test_generation_is_deterministic():
    assert pg.generate(12345, True).text == pg.generate(12345, True).text
    first = pg.random_graphs(np.random.default_rng(3))
    again = pg.random_graphs(np.random.default_rng(3))
    for (ka, a), (kb, b) in zip(first, again):
        assert ka == kb and np.array_equal(a.src, b.src) and np.array_equal(a.etype, b.etype)


def test_programs_use_every_op():
    """Over 200 programs, the generator emits every op the lowering handles."""
    seen = set()
    for seed in range(200):
        for training in (False, True):
            seen |= {op.name for op in pg.generate(seed, training).function.ops}
    ops = {"typed_linear", "typed_vector", "gather", "aggregate", "edge_softmax", "dot",
           "scale", "concat", "slice", "add", "sub", "mul", "div", "neg", "exp", "relu",
           "tanh", "sigmoid", "leaky_relu", "const_scale", "relation_norm", "degree_norm",
           "zeros", "equal", "leaky_relu_grad", "weight_grad", "type_sum", "weight_product",
           "weight_outer", "dropout"}
    assert ops <= seen, ops - seen


COMPACT = ("hgraph.materialization = #hgraph.materialization<compact>")
COMPACT_PROGRAM = f"""
hgraph.func @compact(%g: !hgraph.graph, %h: !hgraph.node<4xf32> {{hgraph.name = "h"}},
    %x: !hgraph.edge<4xf32> {{hgraph.name = "x", {COMPACT}}},
    %W: !hgraph.weight<edge, 4x8xf32> {{hgraph.name = "W"}})
    -> (!hgraph.edge<4xf32> {{{COMPACT}}}, !hgraph.edge<8xf32> {{{COMPACT}}},
        !hgraph.edge<4xf32>, !hgraph.node<8xf32>) {{
  %s = hgraph.gather %h from src : !hgraph.node<4xf32> -> !hgraph.edge<4xf32>
  %t = hgraph.tanh %x : !hgraph.edge<4xf32>
  %y = hgraph.add %s, %t : !hgraph.edge<4xf32>
  %z = hgraph.typed_linear %W, %y from edge : !hgraph.weight<edge, 4x8xf32>, !hgraph.edge<4xf32> -> !hgraph.edge<8xf32>
  %o = hgraph.aggregate sum %z : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %y, %z, %y, %o : !hgraph.edge<4xf32>, !hgraph.edge<8xf32>, !hgraph.edge<4xf32>, !hgraph.node<8xf32>
}}
"""


@pytest.mark.parametrize("variant", ["unopt", "both"])
def test_compact_arguments_and_results(variant, tmp_path):
    """Row math on a compact argument returned compact, and a typed linear
    map of it (compacted by --variant=both), against the interpreter.
    hectorc used to reject the program (found by program_generator.py)."""
    import hector
    program = pg.Program("compact", 0, False, COMPACT_PROGRAM)
    lib = hector.compile(program.text, "cpu", flags=[f"--variant={variant}"],
                         cache_dir=str(tmp_path))
    report = pg.Report()
    pg.check_program(program, lib, pg.random_graphs(np.random.default_rng(1)), 0, report)
    assert not report.failures, "\n".join(map(str, report.failures))
    assert report.compared == 3


# ---- the interpreter against independent references ---------------------------

def _graph(rng):
    n, e, t, r = 30, 160, 3, 4
    return hi.Graph(rng.integers(0, t, n), rng.integers(0, n, e), rng.integers(0, n, e),
                    rng.integers(0, r, e), t, r)


@pytest.mark.parametrize("model,heads", [("rgcn", 1), ("rgat", 1), ("rgat", 2), ("hgt", 2)])
def test_interpreter_matches_the_model_references(model, heads):
    rng = np.random.default_rng(5)
    graph = _graph(rng)
    func = hi.parse_function(models.generate(model, 8, 8, heads))
    inputs = pg._inputs(func, graph, rng)
    got = hi.evaluate(func, graph, inputs).results[0]
    g = {"node_type": graph.node_type, "src": graph.src, "dst": graph.dst, "etype": graph.etype}
    if model == "rgcn":
        want = models_numpy.rgcn(g, inputs["h"], inputs["W"], inputs["W0"])
    elif model == "rgat":
        want = models_numpy.rgat(g, inputs["h"], inputs["W"], inputs["a"], inputs["b"], heads)
    else:
        want = models_numpy.hgt(g, *(inputs[k] for k in
                                     ("h", "K", "Q", "V", "A", "Watt", "Wmsg", "mu")))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(100))
def test_interpreter_gradients_match_finite_differences(seed):
    """<vjp(cot), v> against (f(x + εv) − f(x − εv)) / 2ε with f = Σ <cot, results>,
    for a random direction v of every argument, in float64."""
    program = pg.generate(seed, training=True)
    func = program.function
    rng = np.random.default_rng(seed)
    for kind, graph in pg.random_graphs(rng):
        inputs = {k: v if v.dtype == np.int64 else v.astype(np.float64)   # seeds stay int
                  for k, v in pg._inputs(func, graph, rng).items()}
        run = hi.evaluate(func, graph, inputs)
        if pg.ill_conditioned(func, run, graph, gradients=True):
            continue
        cot = [rng.standard_normal(r.shape) for r in run.results]
        grads = hi.vjp(func, graph, run, cot)

        def f(values):
            out = hi.evaluate(func, graph, values).results
            return sum(float(np.sum(c * o)) for c, o in zip(cot, out))

        eps = 1e-6
        # Rounding in f: ~1e-16 of its terms' size, divided by 2ε.
        noise = 1e-8 * (1 + sum(float(np.sum(np.abs(c * o))) for c, o in zip(cot, run.results)))
        for name, x in inputs.items():
            if name not in grads:   # a seed: not differentiable
                continue
            v = rng.standard_normal(x.shape)
            plus, minus = dict(inputs), dict(inputs)
            plus[name], minus[name] = x + eps * v, x - eps * v
            numeric = (f(plus) - f(minus)) / (2 * eps)
            analytic = float(np.sum(grads[name] * v))
            scale = float(np.sum(np.abs(grads[name] * v))) + 1e-8
            assert abs(numeric - analytic) <= 1e-5 * scale + noise, (
                f"{name} on the {kind} graph: numeric {numeric}, vjp {analytic}\n{program.text}")

#!/usr/bin/env python3
"""Random well-typed hgraph programs, compiled for the CPU and checked against
the float64 interpreter of hgraph_interpreter.py (forward, and with
--training the gradients of every argument).

A program is one `hgraph.func` of 3 to 14 ops drawn from every op of the
dialect that hectorc lowers: typed linear maps (single, node- and edge-typed
weights, matrix and per-head slices, from node/src/dst/edge, transposed),
typed vectors, gathers, aggregations (sum, mean, max; to dst and to src),
edge softmax, dot, scale, concat, slice, element-wise math, relation and
degree norms, zeros, dropout (with a seed argument), and in forward-only programs the ops autodiff cannot
differentiate (equal, leaky_relu_grad, weight_grad, type_sum, weight_outer,
weight_products other than a matrix times a vector indexed alike, with or
without `heads`) and
compact edge-wise arguments and results. Each runs on
random graphs with the edge cases that break kernels: edge types and node
types without edges or nodes, isolated nodes, self-loops, duplicate edges, a
hub with hundreds of incoming edges, a graph without edges and a graph of one
node (--large adds one of 40,000 edges).

Known compile-time problems are kept out on purpose, so that what fails here
is a wrong answer, not a known issue: hectorc re-expands shared row-wise
subexpressions in every consumer (issue 16, item 5), so a value whose
row-wise expression has grown past MAX_ROW_COST ops is no longer used as an
operand, and programs are short (no deep chains).

A (program, graph) pair is compared only where the comparison means
something in float32: no overflow, no division by a value near 0, and (for
gradients, or where `equal` / `leaky_relu_grad` read it) no value within
rounding of a kink of relu / leaky_relu or of a tie of `aggregate max`
that float64 does not also see as exact. Skipped pairs are counted.

    python3 test/python/program_generator.py --batches 20 --seed 100   # a longer run
    python3 test/python/program_generator.py --batches 5 --large       # + 40K edges
    python3 test/python/program_generator.py --show 7                  # print program 7

The pytest entry is test_random_programs.py (a few hundred programs in CI).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

import numpy as np

import conftest  # noqa: F401  (this folder's import paths, also when run as a script)
import hgraph_interpreter as hi
from hgraph_interpreter import Feature, Weight

WIDTHS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 1, 2, 4, 8, 32, 64)
HEADS = (1, 1, 1, 2, 4)
MAX_ROW_COST = 24          # row-wise ops under a stored value (see the docstring)
MIN_OPS, MAX_OPS = 3, 14


# ---- programs -------------------------------------------------------------------

@dataclasses.dataclass
class Value:
    ssa: str
    type: object
    cost: int          # row-wise ops a consumer re-evaluates (1: stored)
    uses: int = 0
    # Edge-wise and a function of the source node and the edge type only:
    # it may be returned compact (one row per unique pair).
    src_only: bool = False


@dataclasses.dataclass
class Program:
    name: str
    seed: int
    training: bool
    text: str

    @property
    def function(self) -> hi.Function:
        return hi.parse_function(self.text)


# Ops whose result is stored by the lowering (consumers read it, they do not
# re-evaluate it).
_STORED = {"typed_linear", "aggregate", "edge_softmax", "concat", "weight_grad", "type_sum",
           "weight_product", "weight_outer"}


class _Builder:
    def __init__(self, rng: np.random.Generator, training: bool, name: str):
        self.rng = rng
        self.training = training
        self.name = name
        self.args: List[Tuple[str, object, bool]] = []   # (ssa, type, compact)
        self.values: List[Value] = []
        self.weight_values: List[Value] = []
        self.lines: List[str] = []
        self.count = 0
        self.seed: Optional[Value] = None   # the seed argument of dropouts, once

    # -- random choices
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, items):
        return items[int(self.rng.integers(len(items)))]

    def feature(self, domain: Optional[str] = None) -> Feature:
        domain = domain or self.choice(["node", "edge"])
        width = self.choice(WIDTHS)
        heads = self.choice([h for h in HEADS if width % h == 0])
        return Feature(domain, width, heads)

    # -- values
    def new_arg(self, type_, prefix: str) -> Value:
        index = sum(1 for _, t, _ in self.args if type(t) is type(type_))
        ssa = f"{prefix}{index}"
        # An edge-wise input given once per (source, edge type) pair (not
        # differentiable: hgraph-autodiff reports it).
        compact = not self.training and isinstance(type_, Feature) and \
            type_.domain == "edge" and self.chance(0.2)
        self.args.append((ssa, type_, compact))
        value = Value(ssa, type_, 1, src_only=compact)
        (self.weight_values if isinstance(type_, Weight) else self.values).append(value)
        return value

    def emit(self, op: str, body: str, types: str, result_type, operands: List[Value],
             src_only: Optional[bool] = None) -> Value:
        ssa = f"v{self.count}"
        self.count += 1
        self.lines.append(f"  %{ssa} = hgraph.{op} {body} : {types}".replace("  :", " :"))
        for operand in operands:
            operand.uses += 1
        cost = 1 if op in _STORED else 1 + sum(o.cost for o in operands
                                                if not isinstance(o.type, Weight))
        features = [o for o in operands if isinstance(o.type, Feature)]
        if src_only is None:   # row-wise math of edge values keeps the property
            src_only = all(o.type.domain == "edge" and o.src_only for o in features)
        src_only = src_only and isinstance(result_type, Feature) and \
            result_type.domain == "edge"
        value = Value(ssa, result_type, cost, src_only=src_only)
        (self.weight_values if isinstance(result_type, Weight) else self.values).append(value)
        return value

    def pick(self, predicate, recent: bool = True) -> Optional[Value]:
        found = [v for v in self.values if predicate(v.type) and v.cost < MAX_ROW_COST]
        if not found:
            return None
        if recent:   # later values are likelier: programs grow deep, not wide
            weights = np.arange(1, len(found) + 1, dtype=float) ** 1.5
            return found[int(self.rng.choice(len(found), p=weights / weights.sum()))]
        return self.choice(found)

    def obtain(self, type_: Feature) -> Value:
        """A value of exactly this type: an existing one, or a new one."""
        found = self.pick(lambda t: t == type_)
        if found is not None and self.chance(0.7):
            return found
        source = self.pick(lambda t: isinstance(t, Feature) and t.domain == "node")
        if source is not None and self.chance(0.7):
            frm = "node" if type_.domain == "node" else self.choice(["src", "dst"])
            made = self.typed_linear(source, frm, type_)
            if made is not None:
                return made
        prefix = "h" if type_.domain == "node" else "x"
        return self.new_arg(type_, prefix)

    def weight(self, type_: Weight) -> Value:
        existing = [w for w in self.weight_values if w.type == type_]
        if existing and self.chance(0.35):
            return self.choice(existing)   # a weight used twice: gradients add up
        if self.chance(0.15):
            # Autodiff differentiates a matrix times a vector indexed alike;
            # weight_outer (a gradient op) only appears in forward programs.
            if not self.training and not type_.is_vector and self.chance(0.4):
                return self.weight_outer(type_)
            if not self.training or type_.is_vector:
                return self.weight_product(type_)
            if not type_.is_per_head and type_.shape[1] > 1 and self.chance(0.4):
                return self.head_product(type_, type_.shape[1])
        return self.new_arg(type_, "W")

    # -- ops
    def typed_linear(self, x: Value, frm: str, out: Feature,
                     transpose: Optional[bool] = None) -> Optional[Value]:
        xt: Feature = x.type
        indexes = {"node": ["single", "node"], "src": ["single", "node", "edge"],
                   "dst": ["single", "node", "edge"], "edge": ["single", "edge"]}[frm]
        index = self.choice(indexes)
        if transpose is None:
            # Autodiff has no rule for the weight of a transposed map read at
            # an edge endpoint (a diagnosed limitation).
            transpose = self.chance(0.15) and not (self.training and frm in ("src", "dst"))
        per_head = (xt.heads == out.heads and xt.heads > 1 and self.chance(0.5)) or \
            (xt.heads == out.heads == 1 and self.chance(0.05))
        if per_head:
            h = xt.heads
            a, b = xt.width // h, out.width // h
            shape = (h, b, a) if transpose else (h, a, b)
        else:
            shape = (out.width, xt.width) if transpose else (xt.width, out.width)
        w = self.weight(Weight(index, shape))
        t = " transpose" if transpose else ""
        return self.emit("typed_linear", f"%{w.ssa}, %{x.ssa} from {frm}{t}",
                         f"{w.type.text()}, {xt.text()} -> {out.text()}", out, [w, x],
                         src_only=frm == "src" or (frm == "edge" and x.src_only))

    def weight_product(self, want: Weight) -> Value:
        """R = A · B with R of type `want` (in training programs: a matrix
        and a vector indexed alike)."""
        heads = self.head_count(want)
        if heads:
            return self.head_product(want, heads)
        kinds = [(want.index, want.index), ("single", want.index), (want.index, "single")]
        ai, bi = self.choice(kinds[:1] if self.training else kinds)
        if want.is_vector:
            (m,) = want.shape
            n = self.choice(WIDTHS)
            a_shape, b_shape = ((m, n), (n,)) if self.chance(0.5) else ((n,), (n, m))
        elif want.is_per_head:
            h, a, c = want.shape
            b = self.choice([1, 2, 3, 4])
            a_shape, b_shape = (h, a, b), (h, b, c)
        else:
            m, p = want.shape
            n = self.choice(WIDTHS)
            a_shape, b_shape = (m, n), (n, p)
            if n % 2 == 0 and m % 2 == 0 and self.chance(0.3):
                a_shape = (2, m // 2, n // 2)       # per-head times a matrix
        a = self.new_arg(Weight(ai, a_shape), "W")
        b = self.new_arg(Weight(bi, b_shape), "W")
        return self.emit("weight_product", f"%{a.ssa}, %{b.ssa}",
                         f"{a.type.text()}, {b.type.text()} -> {want.text()}", want, [a, b])

    def head_count(self, want: Weight) -> int:
        """Sometimes (0 otherwise) a head count H for a `heads H` product giving
        `want`: a matrix [m, H] (matrix · vector cut into H blocks) or, in forward
        programs, a vector [n] with H dividing n (that product's gradient)."""
        if want.is_per_head or not self.chance(0.3):
            return 0
        if not want.is_vector:
            return want.shape[1] if want.shape[1] > 1 else 0
        divisors = [h for h in (2, 3, 4) if want.shape[0] % h == 0]
        return self.choice(divisors) if divisors and not self.training else 0

    def head_product(self, want: Weight, heads: int) -> Value:
        """weight_product ... heads H: [m, n] · [n] -> [m, H] (want a matrix) or
        [m, H] · [m, n] -> [n] (want a vector), operands indexed like `want`."""
        if want.is_vector:
            m, (n,) = self.choice(WIDTHS), want.shape
            a_shape, b_shape = (m, heads), (m, n)
        else:
            m, n = want.shape[0], heads * self.choice([1, 2, 3])
            a_shape, b_shape = (m, n), (n,)
        a = self.new_arg(Weight(want.index, a_shape), "W")
        b = self.new_arg(Weight(want.index, b_shape), "W")
        return self.emit("weight_product", f"%{a.ssa}, %{b.ssa} heads {heads}",
                         f"{a.type.text()}, {b.type.text()} -> {want.text()}", want, [a, b])

    def weight_outer(self, want: Weight) -> Value:
        """R = u ⊗ v with R a matrix or per-head weight (forward programs); for
        a matrix [m, n] sometimes u[m, H] ⊗ v[n] cut into H head blocks."""
        divisors = [h for h in (2, 3, 4) if not want.is_per_head and want.shape[1] % h == 0]
        if divisors and self.chance(0.3):
            heads = self.choice(divisors)
            m, n = want.shape
            u = self.new_arg(Weight(want.index, (m, heads)), "W")
            v = self.new_arg(Weight(want.index, (n,)), "W")
            return self.emit("weight_outer", f"%{u.ssa}, %{v.ssa} heads {heads}",
                             f"{u.type.text()}, {v.type.text()} -> {want.text()}", want, [u, v])
        if want.is_per_head:
            h, a, b = want.shape
            m, n = h * a, h * b
        else:
            m, n = want.shape
        u = self.new_arg(Weight(want.index, (m,)), "W")
        v = self.new_arg(Weight(want.index, (n,)), "W")
        return self.emit("weight_outer", f"%{u.ssa}, %{v.ssa}",
                         f"{u.type.text()}, {v.type.text()} -> {want.text()}", want, [u, v])

    def step(self) -> Optional[Value]:
        ops = {"typed_linear": 3.0, "gather": 1.5, "aggregate": 2.0, "edge_softmax": 1.2,
               "dot": 1.2, "scale": 1.2, "concat": 0.7, "slice": 0.7, "unary": 2.5,
               "binary": 2.5, "typed_vector": 1.0, "norm": 0.6, "zeros": 0.1}
        ops["dropout"] = 0.5
        if self.training:   # slice is a gradient op: autodiff has no rule for it
            del ops["slice"]
        else:
            ops.update({"equal": 0.5, "leaky_relu_grad": 0.4, "weight_grad": 0.4,
                        "type_sum": 0.4})
        names = list(ops)
        p = np.array([ops[n] for n in names])
        op = names[int(self.rng.choice(len(names), p=p / p.sum()))]
        return getattr(self, "op_" + op)()

    def any_feature(self, domain=None) -> Value:
        found = self.pick(lambda t: isinstance(t, Feature) and
                          (domain is None or t.domain == domain))
        return found if found is not None else self.obtain(self.feature(domain))

    def op_typed_linear(self):
        x = self.any_feature()
        frm = "edge" if x.type.domain == "edge" else self.choice(["node", "src", "dst"])
        out = Feature("node" if frm == "node" else "edge", self.choice(WIDTHS), 1)
        if x.type.heads > 1 and self.chance(0.6):
            h = x.type.heads
            out = Feature(out.domain, h * self.choice([1, 2, 3]), h)
        elif self.chance(0.3):
            heads = [h for h in HEADS if out.width % h == 0]
            out = Feature(out.domain, out.width, self.choice(heads))
        return self.typed_linear(x, frm, out)

    def op_gather(self):
        x = self.any_feature("node")
        out = Feature("edge", x.type.width, x.type.heads)
        frm = self.choice(["src", "dst"])
        return self.emit("gather", f"%{x.ssa} from {frm}", f"{x.type.text()} -> {out.text()}",
                         out, [x], src_only=frm == "src")

    def op_aggregate(self):
        x = self.any_feature("edge")
        out = Feature("node", x.type.width, x.type.heads)
        if self.chance(0.15):
            body = f"sum %{x.ssa} to src"
        else:
            body = f"{self.choice(['sum', 'sum', 'mean', 'max'])} %{x.ssa}"
        return self.emit("aggregate", body, f"{x.type.text()} -> {out.text()}", out, [x])

    def op_edge_softmax(self):
        x = self.pick(lambda t: isinstance(t, Feature) and t.domain == "edge" and t.width <= 4)
        x = x if x is not None else self.any_feature("edge")
        # Every other softmax groups by (destination, edge type); chosen
        # without a draw, so that the programs of a seed keep their shape.
        by_type = " by_type" if self.count % 2 else ""
        return self.emit("edge_softmax", f"%{x.ssa}{by_type}", x.type.text(), x.type, [x],
                         src_only=False)

    def op_dot(self):
        x = self.any_feature()
        y = self.obtain(x.type)
        h = x.type.heads
        out = Feature(x.type.domain, h, h)
        return self.emit("dot", f"%{x.ssa}, %{y.ssa}", f"{x.type.text()} -> {out.text()}",
                         out, [x, y])

    def op_scale(self):
        x = self.any_feature()
        h = x.type.heads
        one = h == 1 or (not self.training and self.chance(0.3))
        stype = Feature(x.type.domain, 1, 1) if one else Feature(x.type.domain, h, h)
        if stype.domain == "edge" and stype.width == 1 and self.chance(0.3):
            s = self.op_norm()
        else:
            s = self.obtain(stype)
        return self.emit("scale", f"%{s.ssa}, %{x.ssa}",
                         f"{s.type.text()}, {x.type.text()} -> {x.type.text()}", x.type, [s, x])

    def op_concat(self):
        x = self.any_feature()
        h = x.type.heads
        parts = [x]
        for _ in range(int(self.rng.integers(1, 3))):
            width = h * self.choice([1, 2, 3])
            parts.append(self.obtain(Feature(x.type.domain, width, h)))
        out = Feature(x.type.domain, sum(p.type.width for p in parts), h)
        return self.emit("concat", ", ".join(f"%{p.ssa}" for p in parts),
                         ", ".join(p.type.text() for p in parts) + f" -> {out.text()}",
                         out, parts)

    def op_slice(self):
        x = self.pick(lambda t: isinstance(t, Feature) and t.head_width > 1) or \
            self.obtain(Feature(self.choice(["node", "edge"]), 6, 2))
        hw = x.type.head_width
        offset = int(self.rng.integers(0, hw))
        width = int(self.rng.integers(1, hw - offset + 1))
        out = Feature(x.type.domain, width * x.type.heads, x.type.heads)
        return self.emit("slice", f"%{x.ssa} offset {offset}", f"{x.type.text()} -> {out.text()}",
                         out, [x])

    def op_unary(self):
        x = self.any_feature()
        op = self.choice(["neg", "exp", "relu", "tanh", "sigmoid", "leaky_relu", "const_scale"])
        if op == "exp" and x.cost > 1:
            x = self.emit("tanh", f"%{x.ssa}", x.type.text(), x.type, [x])   # keep exp bounded
        if op == "leaky_relu":
            alpha = self.choice([0.01, 0.2, 0.5, -0.3, 1.5])
            return self.emit(op, f"%{x.ssa} alpha {alpha!r}", x.type.text(), x.type, [x])
        if op == "const_scale":
            factor = self.choice([0.5, -2.0, 0.125, 3.0, -0.75])
            return self.emit(op, f"%{x.ssa} by {factor!r}", x.type.text(), x.type, [x])
        return self.emit(op, f"%{x.ssa}", x.type.text(), x.type, [x])

    def op_binary(self):
        x = self.any_feature()
        op = self.choice(["add", "sub", "mul", "div"])
        y = self.obtain(x.type)
        if y is x and not self.chance(0.2):
            y = self.emit("tanh", f"%{x.ssa}", x.type.text(), x.type, [x])
        if op == "div":   # a denominator away from 0
            f = self.choice(["exp", "sigmoid"])
            if f == "exp" and y.cost > 1:
                y = self.emit("tanh", f"%{y.ssa}", y.type.text(), y.type, [y])
            y = self.emit(f, f"%{y.ssa}", y.type.text(), y.type, [y])
        return self.emit(op, f"%{x.ssa}, %{y.ssa}", x.type.text(), x.type, [x, y])

    def op_typed_vector(self):
        out = self.feature()
        index = self.choice(["single", out.domain])
        w = self.weight(Weight(index, (out.width,)))
        v = self.emit("typed_vector", f"%{w.ssa}", f"{w.type.text()} -> {out.text()}", out, [w],
                      src_only=True)
        x = self.obtain(out)
        op = self.choice(["mul", "add", "dot"])
        if op == "dot":
            h = out.heads
            res = Feature(out.domain, h, h)
            return self.emit("dot", f"%{x.ssa}, %{v.ssa}", f"{out.text()} -> {res.text()}", res,
                             [x, v])
        return self.emit(op, f"%{x.ssa}, %{v.ssa}", out.text(), out, [x, v])

    def op_norm(self):
        op = self.choice(["relation_norm", "degree_norm"])
        out = Feature("edge", 1, 1)
        return self.emit(op, "%g", f"!hgraph.graph -> {out.text()}", out, [], src_only=False)

    def op_zeros(self):
        out = self.feature()
        value = self.emit("zeros", "", out.text(), out, [], src_only=True)
        x = self.obtain(out)
        return self.emit("add", f"%{x.ssa}, %{value.ssa}", out.text(), out, [x, value])

    # forward-only ops
    def op_dropout(self):
        x = self.any_feature("edge")
        if self.seed is None:   # one seed argument, read by every dropout
            self.args.append(("seed", hi.SeedT(), False))
            self.seed = Value("seed", hi.SeedT(), 1)
        p = self.choice([0.0, 0.25, 0.5, 0.9, 1.0])
        return self.emit("dropout", f"%{x.ssa}, %seed p {p!r}", x.type.text(), x.type,
                         [x, self.seed], src_only=False)

    def op_equal(self):
        x = self.any_feature("edge")
        if self.chance(0.7):   # the argmax indicator autodiff builds for aggregate max
            m = self.emit("aggregate", f"max %{x.ssa}",
                          f"{x.type.text()} -> {Feature('node', x.type.width, x.type.heads).text()}",
                          Feature("node", x.type.width, x.type.heads), [x])
            y = self.emit("gather", f"%{m.ssa} from dst", f"{m.type.text()} -> {x.type.text()}",
                          x.type, [m])
        else:
            y = x
        return self.emit("equal", f"%{x.ssa}, %{y.ssa}", x.type.text(), x.type, [x, y])

    def op_leaky_relu_grad(self):
        x = self.any_feature()
        g = self.obtain(x.type)
        alpha = self.choice([0.0, 0.01, 0.2])
        return self.emit("leaky_relu_grad", f"%{g.ssa}, %{x.ssa} alpha {alpha!r}", x.type.text(),
                         x.type, [g, x])

    def op_weight_grad(self):
        x = self.any_feature()
        frm = "edge" if x.type.domain == "edge" else self.choice(["node", "src", "dst"])
        # A node-typed weight's gradient is read 'from node' only
        # (docs/compilation.md).
        index = self.choice({"node": ["single", "node"], "src": ["single", "edge"],
                             "dst": ["single", "edge"], "edge": ["single", "edge"]}[frm])
        out = Feature("node" if frm == "node" else "edge", self.choice(WIDTHS), x.type.heads)
        if out.width % out.heads:
            out = Feature(out.domain, out.heads * max(1, out.width // out.heads), out.heads)
        if x.type.heads > 1 and self.chance(0.5):
            h = x.type.heads
            shape = (h, x.type.width // h, out.width // h)
        else:
            shape = (x.type.width, out.width)
        dy = self.obtain(out)
        result = Weight(index, shape)
        return self.emit("weight_grad", f"%{x.ssa} from {frm}, %{dy.ssa}",
                         f"{x.type.text()}, {out.text()} -> {result.text()}", result, [x, dy])

    def op_type_sum(self):
        x = self.any_feature()
        index = self.choice(["single", x.type.domain])
        result = Weight(index, (x.type.width,))
        return self.emit("type_sum", f"%{x.ssa}", f"{x.type.text()} -> {result.text()}", result,
                         [x])

    # -- the function
    def build(self, ops: int) -> str:
        self.obtain(self.feature("node"))
        while self.count < ops:
            self.step()
        features = [v for v in self.values if v.ssa.startswith("v")]
        results = [features[-1]] if features else [self.values[-1]]
        weights = [w for w in self.weight_values if w.ssa.startswith("v") and w.uses == 0]
        unused = [v for v in features[:-1] if v.uses == 0]
        for v in reversed(unused):
            if len(results) < 4 and self.chance(0.8):
                results.append(v)
        results += weights
        if self.chance(0.05):
            results.append(results[0])          # one value returned twice
        if self.chance(0.05):
            results.append(self.values[0])      # an argument returned as is
        compact = ", hgraph.materialization = #hgraph.materialization<compact>"
        args = ["%g: !hgraph.graph"] + [
            f'%{ssa}: {t.text()} {{hgraph.name = "{ssa}"{compact if c else ""}}}'
            for ssa, t, c in self.args]
        marked = [r.src_only and not self.training and self.chance(0.3) for r in results]
        result_types = ", ".join(r.type.text() + (" {" + compact[2:] + "}" if m else "")
                                 for r, m in zip(results, marked))
        if len(results) > 1 or any(marked):
            result_types = f"({result_types})"
        head = f"hgraph.func @{self.name}({', '.join(args)}) -> {result_types} {{"
        ret = (f"  hgraph.return {', '.join('%' + r.ssa for r in results)} : "
               f"{', '.join(r.type.text() for r in results)}")
        return "\n".join([head] + self.lines + [ret, "}"]) + "\n"


def generate(seed: int, training: bool = False, name: Optional[str] = None) -> Program:
    """The program of `seed` (deterministic)."""
    rng = np.random.default_rng([seed, int(training), 0x4847])
    name = name or f"p{seed}{'_t' if training else ''}"
    builder = _Builder(rng, training, name)
    text = builder.build(int(rng.integers(MIN_OPS, MAX_OPS + 1)))
    return Program(name, seed, training, text)


# ---- graphs ---------------------------------------------------------------------

def _graph(kind: str, node_type, src, dst, etype, t: int, r: int) -> Tuple[str, hi.Graph]:
    return kind, hi.Graph(np.asarray(node_type), np.asarray(src, np.int64),
                          np.asarray(dst, np.int64), np.asarray(etype, np.int64), t, r)


def typed_endpoint_graph(rng: np.random.Generator) -> Tuple[str, hi.Graph]:
    """Every edge type joins one source node type to one destination node
    type (hectorc --typed-endpoints); some types have no edges."""
    n, t, r = int(rng.integers(10, 60)), int(rng.integers(1, 4)), int(rng.integers(1, 8))
    node_type = rng.integers(0, t, n)
    ends = rng.integers(0, t, (r, 2))
    src, dst, etype = [], [], []
    for k in range(r):
        sources = np.nonzero(node_type == ends[k, 0])[0]
        targets = np.nonzero(node_type == ends[k, 1])[0]
        if not len(sources) or not len(targets) or rng.random() < 0.2:
            continue
        e = int(rng.integers(1, 60))
        src.append(rng.choice(sources, e))
        dst.append(rng.choice(targets, e))
        etype.append(np.full(e, k))
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
    src, dst, etype = cat(src), cat(dst), cat(etype)
    perm = rng.permutation(len(src))
    return _graph("typed_endpoints", node_type, src[perm], dst[perm], etype[perm], t, r)


def large_graph(rng: np.random.Generator) -> Tuple[str, hi.Graph]:
    """Tens of thousands of edges with skewed in-degrees: every parallel loop
    of the CPU library runs in several chunks on several threads."""
    n, t, r, e = 3000, 3, 12, 40000
    dst = np.minimum((rng.pareto(1.2, e) * 20).astype(np.int64), n - 1)
    return _graph("large", rng.integers(0, t, n), rng.integers(0, n, e), rng.permutation(dst),
                  rng.integers(0, r, e), t, r)


def random_graphs(rng: np.random.Generator, typed_endpoints: bool = False,
                  large: bool = False) -> List[Tuple[str, hi.Graph]]:
    """Three graphs: a mixed one (types without nodes or edges, isolated
    nodes, self-loops, duplicate edges), one with a hub, and a degenerate one
    (no edges, or one node); with `typed_endpoints`, three graphs whose edge
    types have fixed endpoint node types. `large` adds a large_graph."""
    extra = [large_graph(rng)] if large else []
    if typed_endpoints:
        return [typed_endpoint_graph(rng) for _ in range(3)] + extra
    graphs = extra
    # Mixed: declared types beyond those used; nodes 0..n_live-1 only have edges.
    n = int(rng.integers(8, 40))
    t, r = int(rng.integers(1, 5)), int(rng.integers(1, 7))
    used_r = rng.choice(r, size=max(1, r - int(rng.integers(0, 3))), replace=False)
    node_type = rng.choice(max(1, t - 1), n) if t > 1 and rng.random() < 0.5 else rng.integers(0, t, n)
    live = max(2, n - int(rng.integers(0, n // 3 + 1)))
    e = int(rng.integers(0, 120))
    src, dst = rng.integers(0, live, e), rng.integers(0, live, e)
    etype = rng.choice(used_r, e)
    loops = rng.choice(live, size=int(rng.integers(0, 6)))
    dup = rng.integers(0, max(e, 1), size=int(rng.integers(0, 12))) if e else np.zeros(0, np.int64)
    src = np.concatenate([src, loops, src[dup]])
    dst = np.concatenate([dst, loops, dst[dup]])
    etype = np.concatenate([etype, rng.choice(used_r, len(loops)), etype[dup]])
    perm = rng.permutation(len(src))
    graphs.append(_graph("mixed", node_type, src[perm], dst[perm], etype[perm], t, r))
    # Hub: node 0 receives most edges; one edge type has none.
    n, t, r = int(rng.integers(5, 30)), int(rng.integers(1, 4)), int(rng.integers(2, 20))
    hub = int(rng.integers(150, 500))
    e = int(rng.integers(0, 60))
    src = rng.integers(0, n, hub + e)
    dst = np.concatenate([np.zeros(hub, np.int64), rng.integers(0, n, e)])
    etype = rng.integers(0, r - 1, hub + e)
    perm = rng.permutation(hub + e)
    graphs.append(_graph("hub", rng.integers(0, t, n), src[perm], dst[perm], etype[perm], t, r))
    # Degenerate.
    if rng.random() < 0.5:
        n = int(rng.integers(1, 6))
        graphs.append(_graph("no_edges", rng.integers(0, 2, n), [], [], [], 2, 3))
    else:
        k = int(rng.integers(1, 4))   # one node, k self-loops
        graphs.append(_graph("one_node", [0], [0] * k, [0] * k, rng.integers(0, 2, k), 1, 2))
    return graphs


# ---- checking -------------------------------------------------------------------

TOLERANCE = 1e-4     # normwise, per row, on top of float32's own rounding
ROUNDING = 30.0      # times the float32 interpreter's deviation from float64
# Inputs, weights and cotangents are O(1): a result that cancels to ~0
# (a softmax gradient over one edge, x - x) keeps float32 noise of the size
# of its terms, in any evaluation order.
ATOL = 1e-5


@dataclasses.dataclass
class Failure:
    program: Program
    graph: str
    what: str
    detail: str

    def __str__(self):
        return (f"{self.program.name} (seed {self.program.seed}, "
                f"{'training' if self.program.training else 'forward'}) on the {self.graph} "
                f"graph: {self.what}: {self.detail}\n{self.program.text}")


@dataclasses.dataclass
class Report:
    programs: int = 0
    pairs: int = 0
    compared: int = 0
    skipped: Dict[str, int] = dataclasses.field(default_factory=dict)
    failures: List[Failure] = dataclasses.field(default_factory=list)
    compile_seconds: float = 0.0

    def add(self, other: "Report"):
        self.programs += other.programs
        self.pairs += other.pairs
        self.compared += other.compared
        for k, v in other.skipped.items():
            self.skipped[k] = self.skipped.get(k, 0) + v
        self.failures += other.failures
        self.compile_seconds += other.compile_seconds

    def summary(self) -> str:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items())) or "none"
        return (f"{self.programs} programs, {self.pairs} (program, graph) pairs, "
                f"{self.compared} compared, skipped: {skipped}; "
                f"{len(self.failures)} failures; hectorc {self.compile_seconds:.1f} s")


def ill_conditioned(func: hi.Function, run: hi.Run, graph: hi.Graph,
                    gradients: bool) -> Optional[str]:
    """Why float32 cannot be compared with float64 on this run, or None."""
    def near_zero(x):
        with np.errstate(over="ignore"):
            scale = np.sqrt(np.mean(x * x)) if x.size else 0.0
        small = np.abs(x) < 1e-4 * max(scale, 1e-3)
        return bool(np.any(small & (x != 0)))

    for value in run.values.values():
        if not np.all(np.isfinite(value)) or (value.size and np.max(np.abs(value)) > 1e6):
            return "overflow"
    kinks = {"leaky_relu_grad": 1} if not gradients else {"relu": 0, "leaky_relu": 0,
                                                           "leaky_relu_grad": 1}
    for op in func.ops:
        xs = [run.values.get(o) for o in op.operands]
        if op.name == "div" and xs[1].size and np.min(np.abs(xs[1])) < 1e-3:
            return "division"
        if op.name == "exp" and xs[0].size and np.max(xs[0]) > 40:
            return "overflow"
        if op.name in kinks and near_zero(xs[kinks[op.name]]):
            return "kink"
        if op.name == "equal":
            a, b = xs
            close = np.abs(a - b) < 1e-4 * (np.abs(a) + np.abs(b) + 1e-6)
            if np.any(close & (a != b)):
                return "tie"
        if op.name == "aggregate" and op.attrs["kind"] == "max" and graph.E:
            x = xs[0]
            y = run.values[op.result][graph.dst]
            gap = np.abs(x - y)
            close = gap < 1e-5 * (np.abs(y) + 1e-6)
            # Only exact float64 ties (the same computation on duplicate
            # edges) are ties in float32 too; near ties flip.
            if np.any(close & (gap != 0)):
                return "tie"
    return None


def _row_norms(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.sqrt((x.reshape(x.shape[0], -1) ** 2).sum(axis=1)) if x.ndim > 1 else np.abs(x)


def mismatch(out: np.ndarray, ref: np.ndarray, ref32: np.ndarray) -> Optional[str]:
    """Why `out` (float32, from the compiled library) does not match the
    float64 reference `ref`, given the float32 interpreter's `ref32`; None if
    it does. Row by row: ‖out−ref‖ ≤ TOLERANCE·(‖ref‖ + typical row) +
    ROUNDING·‖ref32−ref‖ + ATOL."""
    if out.shape != ref.shape:
        return f"shape {out.shape}, expected {ref.shape}"
    if np.isnan(out).any() and not np.isnan(ref).any():
        rows = np.unique(np.nonzero(np.isnan(out))[0])
        return f"NaN (never written?) in rows {rows[:10].tolist()}"
    if out.size == 0:
        return None
    if out.ndim == 1:
        out, ref, ref32 = out[None], ref[None], ref32[None]
    err = _row_norms(out - ref)
    norms = _row_norms(ref)
    typical = max(float(np.median(norms)), 1e-3 * float(norms.max(initial=0)), 1e-6)
    bound = TOLERANCE * (norms + typical) + ROUNDING * _row_norms(ref32 - ref) + ATOL
    bad = np.nonzero(err > bound)[0]
    if not len(bad):
        return None
    worst = bad[np.argmax((err / bound)[bad])]
    return (f"{len(bad)} of {len(err)} rows differ; row {worst}: got "
            f"{np.array2string(np.asarray(out[worst]).ravel()[:6], precision=5)}, expected "
            f"{np.array2string(np.asarray(ref[worst]).ravel()[:6], precision=5)} "
            f"(error {err[worst]:.3g}, bound {bound[worst]:.3g})")


# ---- running a batch ------------------------------------------------------------

# --graph-sizes that push the optimisations' profitability decisions both
# ways: many edges per unique (source, type) pair (compaction and reordering
# pay), and as many pairs as edges (they do not).
GRAPH_SIZES = ["N=100,E=1000000,P=100,R=4,T=2", "N=100000,E=100001,P=100001,R=100,T=10"]


def batch_flags(index: int, training: bool) -> List[str]:
    """hectorc options of batch `index`: every variant, save policy, both
    edge-softmax lowerings, graph sizes either way and typed endpoints over
    consecutive batches."""
    variant = ["both", "unopt", "compact", "reorder"][index % 4]
    # One CPU version (not the portable three) halves LLVM's time; the
    # library runs where it is built.
    flags = [f"--variant={variant}", "--cpu=native"]
    if training:
        flags.append("--save=" + ["materialized", "all", "none"][index % 3])
    if index % 5 == 4:
        flags.append("--split-softmax")
    if index % 7 in (2, 5):
        flags.append("--graph-sizes=" + GRAPH_SIZES[index % 7 == 5])
    if typed_endpoints(index):
        flags.append("--typed-endpoints")
    return flags


def typed_endpoints(index: int) -> bool:
    return index % 8 == 4   # with --variant=both: reordering sees the typed endpoints


def _inputs(func: hi.Function, graph: hi.Graph, rng) -> Dict[str, np.ndarray]:
    values = {}
    pairs = len(graph.pairs()[1])
    for index, (_, type_, _) in enumerate(func.args):
        if isinstance(type_, hi.GraphT):
            continue
        name = func.arg_name(index)
        if isinstance(type_, hi.SeedT):
            values[name] = np.array([rng.integers(-2**63, 2**63 - 1)], np.int64)
            continue
        if isinstance(type_, Feature):
            rows = graph.N if type_.domain == "node" else graph.E
            rows = pairs if func.arg_compact(index) else rows
            values[name] = rng.standard_normal((rows, type_.width)).astype(np.float32)
        else:
            lead = () if type_.index == "single" else (
                graph.num_node_types if type_.index == "node" else graph.num_edge_types,)
            scale = 1.0 / np.sqrt(type_.shape[-2] if len(type_.shape) > 1 else type_.shape[0])
            values[name] = (rng.standard_normal(lead + type_.shape) * scale).astype(np.float32)
    return values


def _symbols(pre) -> Dict[str, int]:
    return {"N": pre.N, "E": pre.E, "R": pre.R, "T": pre.T, "P": pre.P}


def _shape(arg, symbols) -> tuple:
    return tuple(symbols[d] if isinstance(d, str) else d for d in arg.shape)


class _Canonical:
    """Maps edge-wise arrays between the user's edge order (the
    interpreter's) and the canonical order of the compiled code."""

    def __init__(self, pre):
        self.perm = np.asarray(pre.arrays()["edge_perm"], np.int64)

    def to_library(self, x, type_):
        return np.ascontiguousarray(x[self.perm]) if _edge_wise(type_) else x

    def from_library(self, x, type_):
        if not _edge_wise(type_):
            return x
        out = np.empty_like(x)
        out[self.perm] = x
        return out


def _edge_wise(type_) -> bool:
    """Rows in edge order (a compact value, COMPACT, is in pair order)."""
    return isinstance(type_, Feature) and type_.domain == "edge"


COMPACT = "compact"


def _call(entry, arrays, given: Dict[str, np.ndarray], symbols):
    """Calls `entry` with the graph arrays, `given` inputs and NaN-filled
    outputs; returns the outputs by name."""
    outputs, call = {}, {}
    for arg in entry.arguments:
        if arg.role == "graph":
            call[arg.name] = arrays[arg.name]
        elif arg.is_output:
            outputs[arg.name] = call[arg.name] = np.full(_shape(arg, symbols), np.nan, np.float32)
        else:
            call[arg.name] = given[arg.name]
    entry(**call)
    return outputs


def check_program(program: Program, lib, graphs, seed: int, report: Report):
    from hector import graph as hgraph
    func = program.function
    arg_types = {func.arg_name(i): COMPACT if func.arg_compact(i) else t
                 for i, (_, t, _) in enumerate(func.args)}
    result_types = [COMPACT if c else t for t, c in
                    zip(func.result_types, func.compact_results or [False] * len(func.results))]
    for g_index, (kind, graph) in enumerate(graphs):
        report.pairs += 1
        rng = np.random.default_rng([seed, program.seed, g_index])
        inputs = _inputs(func, graph, rng)
        run = hi.evaluate(func, graph, inputs)
        why = ill_conditioned(func, run, graph, program.training)
        if why:
            report.skipped[why] = report.skipped.get(why, 0) + 1
            continue
        run32 = hi.evaluate(func, graph, inputs, np.float32)
        pre = hgraph.preprocess(graph.node_type, graph.src, graph.dst, graph.etype,
                                graph.num_node_types, graph.num_edge_types)
        arrays, symbols, canon = pre.arrays(), _symbols(pre), _Canonical(pre)
        lib_inputs = {k: canon.to_library(v, arg_types[k]) for k, v in inputs.items()}

        def compare(what, out, ref, ref32, type_):
            got = canon.from_library(out, type_)
            problem = mismatch(got, ref, ref32)
            if problem:
                report.failures.append(Failure(program, kind, what, problem))
                return False
            return True

        try:
            outputs = _call(lib[program.name], arrays, lib_inputs, symbols)
        except Exception as err:   # noqa: BLE001 - any failure to run is a failure
            report.failures.append(Failure(program, kind, "calling the entry", repr(err)))
            continue
        ok = all(compare(f"result{i}", outputs[f"result{i}"], ref, ref32, rt)
                 for i, (ref, ref32, rt) in enumerate(zip(run.results, run32.results,
                                                          result_types)))
        if program.training and ok:
            ok = _check_training(program, func, lib, graph, kind, run, run32, inputs,
                                 lib_inputs, arrays, symbols, canon, arg_types, result_types,
                                 rng, compare, report)
        report.compared += 1


def _check_training(program, func, lib, graph, kind, run, run32, inputs, lib_inputs, arrays,
                    symbols, canon, arg_types, result_types, rng, compare, report) -> bool:
    fwd, bwd = lib.training_entries(program.name)
    try:
        saved = _call(fwd, arrays, lib_inputs, symbols)
    except Exception as err:   # noqa: BLE001
        report.failures.append(Failure(program, kind, "calling the training forward", repr(err)))
        return False
    for i, (ref, ref32, rt) in enumerate(zip(run.results, run32.results, result_types)):
        if not compare(f"training forward result{i}", saved[f"result{i}"], ref, ref32, rt):
            return False
    cotangents = [rng.standard_normal(r.shape).astype(np.float32) for r in run.results]
    given = dict(lib_inputs, **saved)
    for i, (cot, rt) in enumerate(zip(cotangents, result_types)):
        given[f"d_result{i}"] = canon.to_library(cot, rt)
    try:
        grads = _call(bwd, arrays, given, symbols)
    except Exception as err:   # noqa: BLE001
        report.failures.append(Failure(program, kind, "calling the backward", repr(err)))
        return False
    ref = hi.vjp(func, graph, run, cotangents)
    ref32 = hi.vjp(func, graph, run32, cotangents)
    ok = True
    for name, got in grads.items():
        if not name.startswith("d_"):
            continue
        arg = name[2:]
        ok &= compare(f"gradient {name}", got, ref[arg], ref32[arg], arg_types[arg])
    return ok


def run_batch(index: int, count: int, training: bool, workdir: str, seed: int = 0,
              large: bool = False) -> Report:
    """Generates `count` programs, compiles them into one CPU library with the
    flags of batch `index`, and checks each on three random graphs (and a
    large one with `large`)."""
    import hector
    report = Report()
    base = seed * 1_000_000 + index * 1000
    programs = [generate(base + i, training) for i in range(count)]
    report.programs = len(programs)
    flags = batch_flags(index, training)
    text = "".join(p.text for p in programs)
    start = time.time()
    try:
        lib = hector.compile(text, "cpu", training=training, flags=flags,
                             cache_dir=os.path.join(workdir, "cache"),
                             name=f"batch{index}{'t' if training else ''}")
    except hector.CompileError:
        # Find the programs hectorc rejects, and check the others.
        report.compile_seconds += time.time() - start
        good = []
        for p in programs:
            try:
                hector.compile(p.text, "cpu", training=training, flags=flags,
                               cache_dir=os.path.join(workdir, "cache"))
                good.append(p)
            except hector.CompileError as err:
                report.failures.append(Failure(p, "-", f"hectorc {' '.join(flags)}",
                                               str(err)[-2000:]))
        if not good:
            return report
        start = time.time()
        lib = hector.compile("".join(p.text for p in good), "cpu", training=training,
                             flags=flags, cache_dir=os.path.join(workdir, "cache"))
        programs = good
    report.compile_seconds += time.time() - start
    graphs = random_graphs(np.random.default_rng([seed, index, 7]), typed_endpoints(index),
                           large)
    for program in programs:
        check_program(program, lib, graphs, seed, report)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--per-batch", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=["both", "forward", "training"], default="both")
    parser.add_argument("--show", type=int, metavar="SEED",
                        help="print the program of SEED (with --mode training: its training "
                             "variant) and exit")
    parser.add_argument("--keep", metavar="DIR", help="write failing programs to DIR")
    parser.add_argument("--large", action="store_true",
                        help="also check every program on a graph of 40,000 edges (slower)")
    args = parser.parse_args(argv)
    if args.show is not None:
        sys.stdout.write(generate(args.show, args.mode == "training").text)
        return 0
    modes = [False, True] if args.mode == "both" else [args.mode == "training"]
    total = Report()
    start = time.time()
    with tempfile.TemporaryDirectory() as workdir:
        for index in range(args.batches):
            for training in modes:
                report = run_batch(index, args.per_batch, training, workdir, args.seed,
                                   args.large)
                total.add(report)
                for failure in report.failures:
                    print(f"FAIL {failure}\n")
                    if args.keep:
                        os.makedirs(args.keep, exist_ok=True)
                        with open(os.path.join(args.keep, failure.program.name + ".mlir"),
                                  "w") as f:
                            f.write(f"// {failure.graph}: {failure.what}: {failure.detail}\n"
                                    + failure.program.text)
                print(f"batch {index} {'training' if training else 'forward'} "
                      f"{' '.join(batch_flags(index, training))}: {report.summary()}",
                      flush=True)
    print(f"total ({time.time() - start:.0f} s): {total.summary()}")
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())

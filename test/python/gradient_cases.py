"""hgraph functions using the gradient ops (typed_linear transpose,
aggregate to src, weight_grad, type_sum, zeros, degree_norm, slice, equal,
leaky_relu_grad, group_sum with the by_type edge_softmax) and weight
results, with float64 NumPy references written from the ops' math
(include/hector/Dialect/HGraph/IR/HGraphOps.td).

Shared by test_gradient_ops_cpu.py and test/gpu/test_gradient_ops_gpu.py.
Every case is one hgraph.func named after the case; its arguments and
results are named (`hgraph.name`), so a test fills the inputs by name and
reads the outputs by name. Edge-wise values are in canonical edge order
(docs/compilation.md), the order of the graph arrays `g` the references get.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


def node(width, heads=1):
    return f"!hgraph.node<{width}xf32{f', heads = {heads}' if heads > 1 else ''}>"


def edge(width, heads=1):
    return f"!hgraph.edge<{width}xf32{f', heads = {heads}' if heads > 1 else ''}>"


def weight(index, *shape):
    return f"!hgraph.weight<{index}, {'x'.join(map(str, shape))}xf32>"


def slice_shape(in_width, out_width, heads):
    """A typed_linear slice: a matrix, or per-head blocks."""
    if heads == 1:
        return (in_width, out_width)
    return (heads, in_width // heads, out_width // heads)


@dataclass(frozen=True)
class Case:
    name: str
    ir: str
    # (values by argument name, graph arrays) -> expected outputs by name
    reference: Callable


def _func(name, args, results, body, attrs=""):
    """An hgraph.func: args/results are (name, type[, extra attributes])."""
    def attr(entry, key="hgraph.name"):
        extra = f", {entry[2]}" if len(entry) > 2 else ""
        return f'{{{key} = "{entry[0]}"{extra}}}'
    params = ", ".join(["%g: !hgraph.graph"]
                       + [f"%{a[0]}: {a[1]} {attr(a)}" for a in args])
    outs = ", ".join(f"{r[1]} {attr(r)}" for r in results)
    ret_values = ", ".join(f"%{r[0]}" for r in results)
    ret_types = ", ".join(r[1] for r in results)
    attributes = f" attributes {{{attrs}}}" if attrs else ""
    return (f"hgraph.func @{name}({params}) -> ({outs}){attributes} {{\n{body}"
            f"  hgraph.return {ret_values} : {ret_types}\n}}\n")


# ---- reference helpers (float64) ---------------------------------------------
#
# The references are written once against a small array API `o`: NUMPY here
# (the CPU tests), torch on the GPU (test/gpu/test_gradient_ops_gpu.py). They
# get float64 inputs `v` and integer graph arrays `g` of that API.

class NumpyOps:
    """The array operations the references use, in NumPy."""

    def f64(self, x):
        return np.asarray(x, np.float64)

    def ids(self, x):
        return np.asarray(x, np.int64)

    def zeros(self, *shape):
        return np.zeros(shape)

    def einsum(self, spec, *operands):
        return np.einsum(spec, *operands)

    def index_add(self, out, index, values):
        np.add.at(out, index, values)
        return out

    def where(self, cond, a, b):
        return np.where(cond, a, b)

    def indicator(self, cond):
        return cond.astype(np.float64)

    def total(self, x):
        return x.sum(axis=0)

    def arange(self, n):
        return np.arange(n)

    def repeat(self, values, counts):
        return np.repeat(values, counts)

    def diff(self, x):
        return np.diff(x)

    def bincount(self, x, n):
        return np.bincount(x, minlength=n).astype(np.float64)


NUMPY = NumpyOps()


def sizes(g):
    return (len(g["node_type"]), len(g["edge_src"]), len(g["etype_offsets"]) - 1,
            len(g["ntype_offsets"]) - 1)


def linear_rows(o, x, w, types, transpose=False):
    """Row i times slice w[types[i]] (types None: one slice), per head for
    rank-3 slices, transposed on request."""
    rows = len(x)
    if types is not None:
        w = w[types]
    each = "r" if types is not None else ""
    if w.ndim == (3 if types is not None else 2):  # [rows?, in, out]
        spec = f"ri,{each}io->ro" if not transpose else f"ro,{each}io->ri"
        return o.einsum(spec, x, w)
    heads, a, b = w.shape[-3:]  # per-head blocks [rows?, H, a, b]
    if not transpose:
        y = o.einsum(f"rha,{each}hab->rhb", x.reshape(rows, heads, a), w)
        return y.reshape(rows, heads * b)
    y = o.einsum(f"rhb,{each}hab->rha", x.reshape(rows, heads, b), w)
    return y.reshape(rows, heads * a)


def segment_sum(o, values, index, count):
    return o.index_add(o.zeros(count, *values.shape[1:]), index, values)


def outer_sum(o, x, dy, types, count, slice_shape_):
    """Σ_{rows i of type k} x_iᵀ ⊗ dy_i into [count, *slice] (types None: one slice)."""
    if len(slice_shape_) == 2:
        prods = o.einsum("ri,ro->rio", x, dy)
    else:
        heads, a, b = slice_shape_
        prods = o.einsum("rha,rhb->rhab", x.reshape(len(x), heads, a),
                         dy.reshape(len(dy), heads, b))
    if types is None:
        return o.total(prods)
    return segment_sum(o, prods, types, count)


def in_degree(o, g):
    return o.bincount(g["edge_dst"], len(g["node_type"]))


# ---- the cases -------------------------------------------------------------------

def typed_linear_transpose(from_, index, width_in, width_out, heads):
    """y = x · W[k]ᵀ read `from_` with a weight indexed by `index`."""
    shape = slice_shape(width_in, width_out, heads)
    x_type = edge(width_out, heads) if from_ == "edge" else node(width_out, heads)
    y_type = node(width_in, heads) if from_ == "node" else edge(width_in, heads)
    name = f"linear_t_{from_}_{index}_{width_in}_{width_out}_{heads}"
    body = (f"  %y = hgraph.typed_linear %W, %x from {from_} transpose : "
            f"{weight(index, *shape)}, {x_type} -> {y_type}\n")
    ir = _func(name, [("x", x_type), ("W", weight(index, *shape))], [("y", y_type)], body)

    def reference(v, g, o):
        x = v["x"]
        rows = {"node": None, "src": g["edge_src"], "dst": g["edge_dst"], "edge": None}[from_]
        if rows is not None:
            x = x[rows]
        if index == "single":
            types = None
        elif index == "edge":
            types = g["edge_type"]
        else:
            nodes = o.arange(len(g["node_type"])) if rows is None else rows
            types = g["node_type"][nodes]
        return {"y": linear_rows(o, x, v["W"], types, transpose=True)}

    return Case(name, ir, reference)


def aggregate_to_src(width, heads):
    """Σ over outgoing edges, of an edge value and of a fused row expression."""
    name = f"aggregate_src_{width}_{heads}"
    body = (f"  %a = hgraph.aggregate sum %x to src : {edge(width, heads)} -> {node(width, heads)}\n"
            f"  %hd = hgraph.gather %h from dst : {node(width, heads)} -> {edge(width, heads)}\n"
            f"  %p = hgraph.mul %x, %hd : {edge(width, heads)}\n"
            f"  %b = hgraph.aggregate sum %p to src : {edge(width, heads)} -> {node(width, heads)}\n")
    ir = _func(name, [("x", edge(width, heads)), ("h", node(width, heads))],
               [("a", node(width, heads)), ("b", node(width, heads))], body)

    def reference(v, g, o):
        n = len(g["node_type"])
        x = v["x"]
        return {"a": segment_sum(o, x, g["edge_src"], n),
                "b": segment_sum(o, x * v["h"][g["edge_dst"]], g["edge_src"], n)}

    return Case(name, ir, reference)


def scatter_to_src(index, width_in, width_out, heads):
    """aggregate sum (typed_linear W, dz from edge transpose) to src: one
    scattering GEMM (the input gradient of typed_linear from src)."""
    shape = slice_shape(width_in, width_out, heads)
    name = f"scatter_src_{index}_{width_in}_{width_out}_{heads}"
    body = (f"  %t = hgraph.typed_linear %W, %dz from edge transpose : "
            f"{weight(index, *shape)}, {edge(width_out, heads)} -> {edge(width_in, heads)}\n"
            f"  %dh = hgraph.aggregate sum %t to src : {edge(width_in, heads)} -> "
            f"{node(width_in, heads)}\n")
    ir = _func(name, [("dz", edge(width_out, heads)), ("W", weight(index, *shape))],
               [("dh", node(width_in, heads))], body)

    def reference(v, g, o):
        types = g["edge_type"] if index == "edge" else None
        rows = linear_rows(o, v["dz"], v["W"], types, transpose=True)
        return {"dh": segment_sum(o, rows, g["edge_src"], len(g["node_type"]))}

    return Case(name, ir, reference)


def weight_grad(from_, index, width_in, width_out, heads):
    """dW[k] = Σ_{rows i of type k} x_{from(i)}ᵀ ⊗ dy_i."""
    shape = slice_shape(width_in, width_out, heads)
    x_type = edge(width_in, heads) if from_ == "edge" else node(width_in, heads)
    dy_type = node(width_out, heads) if from_ == "node" else edge(width_out, heads)
    name = f"weight_grad_{from_}_{index}_{width_in}_{width_out}_{heads}"
    body = (f"  %dW = hgraph.weight_grad %x from {from_}, %dy : {x_type}, {dy_type} -> "
            f"{weight(index, *shape)}\n")
    ir = _func(name, [("x", x_type), ("dy", dy_type)], [("dW", weight(index, *shape))], body)

    def reference(v, g, o):
        n, e, r, t = sizes(g)
        x = v["x"]
        if from_ in ("src", "dst"):
            x = x[g["edge_src" if from_ == "src" else "edge_dst"]]
        types, count = None, 1
        if index == "edge":
            types, count = g["edge_type"], r
        elif index == "node":
            types, count = g["node_type"], t
        return {"dW": outer_sum(o, x, v["dy"], types, count, shape)}

    return Case(name, ir, reference)


def weight_grad_compact(from_, width):
    """The gradient rows are a compact-materialized value (one row per
    (source, edge type) pair): every edge still counts once."""
    name = f"weight_grad_compact_{from_}_{width}"
    w = weight("edge", width, width)
    body = (f"  %dz = hgraph.typed_linear %V, %x from src "
            f"{{hgraph.materialization = #hgraph.materialization<compact>}} : "
            f"{w}, {node(width)} -> {edge(width)}\n"
            f"  %dW = hgraph.weight_grad %x from {from_}, %dz : {node(width)}, {edge(width)} -> {w}\n")
    ir = _func(name, [("x", node(width)), ("V", w)], [("dW", w)], body)

    def reference(v, g, o):
        r = len(g["etype_offsets"]) - 1
        dz = linear_rows(o, v["x"][g["edge_src"]], v["V"], g["edge_type"])
        x = v["x"][g["edge_src" if from_ == "src" else "edge_dst"]]
        return {"dW": outer_sum(o, x, dz, g["edge_type"], r, (width, width))}

    return Case(name, ir, reference)


def type_sum(index, domain, width, heads):
    """w[k] = Σ_{rows i of type k} x_i (a row expression, so it is fused)."""
    x_type = edge(width, heads) if domain == "edge" else node(width, heads)
    name = f"type_sum_{index}_{domain}_{width}_{heads}"
    body = (f"  %y = hgraph.const_scale %x by 2.0 : {x_type}\n"
            f"  %w = hgraph.type_sum %y : {x_type} -> {weight(index, width)}\n")
    ir = _func(name, [("x", x_type)], [("w", weight(index, width))], body)

    def reference(v, g, o):
        n, e, r, t = sizes(g)
        x = 2.0 * v["x"]
        if index == "single":
            return {"w": o.total(x)}
        types = g["edge_type"] if index == "edge" else g["node_type"]
        return {"w": segment_sum(o, x, types, r if index == "edge" else t)}

    return Case(name, ir, reference)


def zeros(width):
    """Zeros of every kind, returned and used."""
    name = f"zeros_{width}"
    wz = weight("edge", width, 4)
    body = (f"  %zn = hgraph.zeros : {node(width)}\n"
            f"  %ze = hgraph.zeros : {edge(width, 2)}\n"
            f"  %zw = hgraph.zeros : {wz}\n"
            f"  %zv = hgraph.zeros : {weight('single', width)}\n"
            f"  %zp = hgraph.zeros : {weight('node', 2, width // 2, 2)}\n"
            f"  %zl = hgraph.typed_linear %zw, %h from src : {wz}, {node(width)} -> {edge(4)}\n"
            f"  %s = hgraph.add %h, %zn : {node(width)}\n")
    ir = _func(name, [("h", node(width))],
               [("zn", node(width)), ("ze", edge(width, 2)), ("zw", wz),
                ("zv", weight("single", width)), ("zp", weight("node", 2, width // 2, 2)),
                ("zl", edge(4)), ("s", node(width))], body)

    def reference(v, g, o):
        n, e, r, t = sizes(g)
        return {"zn": o.zeros(n, width), "ze": o.zeros(e, width),
                "zw": o.zeros(r, width, 4), "zv": o.zeros(width),
                "zp": o.zeros(t, 2, width // 2, 2), "zl": o.zeros(e, 4),
                "s": v["h"]}

    return Case(name, ir, reference)


def degree_norm(width):
    """1 / in-degree of the destination, returned and used for a mean."""
    name = f"degree_norm_{width}"
    body = (f"  %d = hgraph.degree_norm %g : !hgraph.graph -> {edge(1)}\n"
            f"  %s = hgraph.scale %d, %x : {edge(1)}, {edge(width)} -> {edge(width)}\n"
            f"  %m = hgraph.aggregate sum %s : {edge(width)} -> {node(width)}\n")
    ir = _func(name, [("x", edge(width))], [("d", edge(1)), ("m", node(width))], body)

    def reference(v, g, o):
        n = len(g["node_type"])
        deg = in_degree(o, g)
        d = 1.0 / deg[g["edge_dst"]]
        return {"d": d[:, None], "m": segment_sum(o, v["x"] * d[:, None], g["edge_dst"], n)}

    return Case(name, ir, reference)


def slices(width, heads, offset, out_width):
    """Columns offset .. offset + w - 1 of every head block; a per-head slice."""
    name = f"slice_{width}_{heads}_{offset}_{out_width}"
    hw = width // heads
    body = (f"  %s = hgraph.slice %x offset {offset} : {edge(width, heads)} -> "
            f"{edge(out_width * heads, heads)}\n"
            f"  %c = hgraph.slice %h offset {hw - 1} : {node(width, heads)} -> {node(heads, heads)}\n"
            f"  %y = hgraph.scale %c, %h : {node(heads, heads)}, {node(width, heads)} -> "
            f"{node(width, heads)}\n")
    ir = _func(name, [("x", edge(width, heads)), ("h", node(width, heads))],
               [("s", edge(out_width * heads, heads)), ("y", node(width, heads))], body)

    def reference(v, g, o):
        x, h = v["x"], v["h"]
        s = x.reshape(len(x), heads, hw)[:, :, offset:offset + out_width].reshape(len(x), -1)
        last = h.reshape(len(h), heads, hw)[:, :, hw - 1]
        y = (h.reshape(len(h), heads, hw) * last[:, :, None]).reshape(len(h), -1)
        return {"s": s, "y": y}

    return Case(name, ir, reference)


def equal(width):
    """1 where x == relu(x) (x >= 0), else 0; on nodes and on edges."""
    name = f"equal_{width}"
    body = (f"  %r = hgraph.relu %x : {node(width)}\n"
            f"  %q = hgraph.equal %x, %r : {node(width)}\n"
            f"  %xs = hgraph.gather %x from src : {node(width)} -> {edge(width)}\n"
            f"  %xd = hgraph.gather %x from dst : {node(width)} -> {edge(width)}\n"
            f"  %qe = hgraph.equal %xs, %xd : {edge(width)}\n")
    ir = _func(name, [("x", node(width))], [("q", node(width)), ("qe", edge(width))], body)

    def reference(v, g, o):
        x = v["x"]
        return {"q": o.indicator(x >= 0),
                "qe": o.indicator(x[g["edge_src"]] == x[g["edge_dst"]])}

    return Case(name, ir, reference)


def leaky_relu_grad(width, heads, alpha):
    """grad where x > 0, else alpha * grad."""
    name = f"leaky_relu_grad_{width}_{heads}_{str(alpha).replace('.', 'p')}"
    body = (f"  %d = hgraph.leaky_relu_grad %dy, %x alpha {alpha:e} : {edge(width, heads)}\n"
            f"  %a = hgraph.aggregate sum %d : {edge(width, heads)} -> {node(width, heads)}\n")
    ir = _func(name, [("dy", edge(width, heads)), ("x", edge(width, heads))],
               [("d", edge(width, heads)), ("a", node(width, heads))], body)

    def reference(v, g, o):
        dy, x = v["dy"], v["x"]
        d = o.where(x > 0, dy, alpha * dy)
        return {"d": d, "a": segment_sum(o, d, g["edge_dst"], len(g["node_type"]))}

    return Case(name, ir, reference)


def weight_sums(width):
    """Sums of weights (a weight used twice): gradient GEMMs accumulate into
    the result, zeros add nothing, other weights are copied and added."""
    name = f"weight_sum_{width}"
    w = weight("edge", width, 4)
    body = (f"  %g1 = hgraph.weight_grad %h from src, %dz : {node(width)}, {edge(4)} -> {w}\n"
            f"  %g2 = hgraph.weight_grad %h from dst, %dq : {node(width)}, {edge(4)} -> {w}\n"
            f"  %s = hgraph.add %g1, %g2 : {w}\n"
            f"  %z = hgraph.zeros : {w}\n"
            f"  %t = hgraph.add %s, %z : {w}\n"
            f"  %u = hgraph.add %t, %W : {w}\n"
            f"  %v = hgraph.add %W, %W : {w}\n"
            f"  %zz = hgraph.add %z, %z : {w}\n")
    ir = _func(name, [("h", node(width)), ("dz", edge(4)), ("dq", edge(4)), ("W", w)],
               [("u", w), ("v", w), ("zz", w)], body)

    def reference(v, g, o):
        r = len(g["etype_offsets"]) - 1
        g1 = outer_sum(o, v["h"][g["edge_src"]], v["dz"], g["edge_type"], r, (width, 4))
        g2 = outer_sum(o, v["h"][g["edge_dst"]], v["dq"], g["edge_type"], r, (width, 4))
        W = v["W"]
        return {"u": g1 + g2 + W, "v": 2 * W, "zz": o.zeros(*W.shape)}

    return Case(name, ir, reference)


def type_groups(width, heads):
    """The softmax of each (destination, edge type) group (`edge_softmax
    by_type`, of a fused row expression) and `group_sum`, also of the stored
    softmax (1 in every group). The reference sums over a group with a
    segment sum over the ids dst·R + type (so it needs N·R·width floats,
    hence narrow rows) and skips the max shift (random normal scores)."""
    name = f"type_groups_{width}_{heads}"
    t = edge(width, heads)
    body = (f"  %y = hgraph.const_scale %x by 2.0 : {t}\n"
            f"  %a = hgraph.edge_softmax %y by_type : {t}\n"
            f"  %s = hgraph.group_sum %z : {t}\n"
            f"  %sa = hgraph.group_sum %a : {t}\n")
    ir = _func(name, [("x", t), ("z", t)], [("a", t), ("s", t), ("sa", t)], body)

    def reference(v, g, o):
        n, e, r, _ = sizes(g)
        group = g["edge_dst"] * r + g["edge_type"]

        def group_sum(x):
            return segment_sum(o, x, group, n * r)[group]

        ex = math.e ** (2.0 * v["x"])
        a = ex / group_sum(ex)
        return {"a": a, "s": group_sum(v["z"]), "sa": group_sum(a)}

    return Case(name, ir, reference)


def cases():
    """Every case, over several widths and head counts."""
    out = []
    for from_, index in (("node", "node"), ("node", "single"), ("src", "edge"),
                         ("dst", "edge"), ("edge", "edge"), ("src", "node"),
                         ("dst", "single"), ("edge", "single")):
        for wi, wo, h in ((16, 8, 1), (32, 64, 4)):
            out.append(typed_linear_transpose(from_, index, wi, wo, h))
    for w, h in ((16, 1), (64, 4), (4, 4)):
        out.append(aggregate_to_src(w, h))
    for index in ("edge", "single"):
        for wi, wo, h in ((16, 8, 1), (64, 32, 2)):
            out.append(scatter_to_src(index, wi, wo, h))
    for from_, index in (("src", "edge"), ("dst", "edge"), ("edge", "edge"),
                         ("node", "node"), ("node", "single"), ("src", "single"),
                         ("edge", "single")):
        for wi, wo, h in ((8, 16, 1), (64, 32, 4)):
            out.append(weight_grad(from_, index, wi, wo, h))
    out += [weight_grad_compact("src", 16), weight_grad_compact("dst", 8)]
    for index, domain in (("edge", "edge"), ("node", "node"), ("single", "edge"),
                          ("single", "node")):
        for w, h in ((16, 1), (64, 4), (2, 2)):
            out.append(type_sum(index, domain, w, h))
    out += [zeros(8), zeros(32), degree_norm(8), degree_norm(1)]
    out += [slices(16, 1, 3, 5), slices(32, 4, 2, 4), equal(16)]
    out += [leaky_relu_grad(16, 1, 0.2), leaky_relu_grad(8, 2, 0.0)]
    out += [weight_sums(8), weight_sums(32)]
    out += [type_groups(4, 4), type_groups(3, 1)]
    return out


# ---- the training ABI --------------------------------------------------------------

def training_module(width):
    """An inference function and hand-written training entries of
    out = Σ_{e→t} (h_src · W_φ) with a compact saved tensor, in the shape
    hgraph-autodiff gives them (docs/compilation.md)."""
    w = weight("edge", width, width)
    compact = "hgraph.materialization = #hgraph.materialization<compact>"
    forward = (f"  %saved0 = hgraph.typed_linear %W, %h from src {{{compact}}} : "
               f"{w}, {node(width)} -> {edge(width)}\n"
               f"  %result0 = hgraph.aggregate sum %saved0 : {edge(width)} -> {node(width)}\n")
    f = _func("f", [("h", node(width)), ("W", w)], [("result0", node(width))], forward)
    fwd = _func("f_fwd", [("h", node(width)), ("W", w)],
                [("result0", node(width), 'hgraph.role = "output"'),
                 ("saved0", edge(width), f'hgraph.role = "saved", {compact}')],
                forward, 'hgraph.kind = "training_forward", hgraph.primal = "f"')
    backward = (f"  %dz = hgraph.gather %d_result0 from dst : {node(width)} -> {edge(width)}\n"
                f"  %t = hgraph.typed_linear %W, %dz from edge transpose : {w}, {edge(width)} -> "
                f"{edge(width)}\n"
                f"  %d_h = hgraph.aggregate sum %t to src : {edge(width)} -> {node(width)}\n"
                f"  %d_W = hgraph.weight_grad %h from src, %dz : {node(width)}, {edge(width)} -> {w}\n"
                f"  %check = hgraph.aggregate sum %saved0 : {edge(width)} -> {node(width)}\n")
    bwd = _func("f_bwd",
                [("h", node(width)), ("W", w),
                 ("saved0", edge(width), f'hgraph.role = "saved", {compact}'),
                 ("d_result0", node(width), 'hgraph.role = "grad_output"')],
                [("d_h", node(width), 'hgraph.role = "grad"'),
                 ("d_W", w, 'hgraph.role = "grad"'),
                 ("check", node(width))],
                backward, 'hgraph.kind = "training_backward", hgraph.primal = "f"')
    return f + fwd + bwd


def training_reference(v, g, o):
    """Forward, saved compact rows, and the gradients of training_module."""
    n = len(g["node_type"])
    h, W, dout = v["h"], v["W"], v["d_result0"]
    z = linear_rows(o, h[g["edge_src"]], W, g["edge_type"])
    out = segment_sum(o, z, g["edge_dst"], n)
    pairs = linear_rows(o, h[g["compact_src"]], W,
                        o.repeat(o.arange(len(g["compact_offsets"]) - 1),
                                 o.diff(g["compact_offsets"])))
    dz = dout[g["edge_dst"]]
    d_h = segment_sum(o, linear_rows(o, dz, W, g["edge_type"], transpose=True), g["edge_src"], n)
    d_W = outer_sum(o, h[g["edge_src"]], dz, g["edge_type"], len(g["etype_offsets"]) - 1,
                    W.shape[1:])
    return {"result0": out, "saved0": pairs, "d_h": d_h, "d_W": d_W, "check": out}

"""An interpreter of hgraph functions in NumPy, op by op, written from the op
definitions (docs/dialects/HGraphDialect.md), with a reverse-mode
vector-Jacobian product of every differentiable op.

It reads the text of an `hgraph.func` in the custom assembly hectorc prints
(one op per line) and evaluates it on a graph given as the user gives one:
`node_type[N]`, edges `src[E] -> dst[E]` of type `etype[E]` in the user's
order, `T` node types and `R` edge types. Nothing here comes from hectorc or
from the model references (test/reference): no preprocessing arrays, no
canonical edge order, no fused kernels. Values are NumPy arrays in the dtype
asked for (float64 for the reference; float32 to estimate how much rounding
alone moves a result):

- node-wise `[N, width]`, edge-wise `[E, width]` (user edge order), or
  `[P, width]` for an argument or result marked compact (one row per unique
  (source, edge type) pair, sorted by type, then source);
- weights `[K, *slice]` with `K = T` (node), `R` (edge), or just `slice`
  (single), where a slice is `[n]`, `[in, out]` or `[H, in/H, out/H]`.

    func = parse_function(text)                 # one hgraph.func
    run = evaluate(func, graph, inputs)         # inputs: {argument name: array}
    run.results                                 # [array per result]
    grads = vjp(func, graph, run, cotangents)   # {argument name: gradient}

The gradient of `aggregate max` at ties is shared evenly among the edges that
attain the maximum (torch's `amax` convention, which docs/training.md gives
for hectorc's rule); away from ties and kinks every gradient is the exact
derivative, checked against finite differences in test_random_programs.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

import dropout_reference


# ---- types --------------------------------------------------------------------

@dataclass(frozen=True)
class Feature:
    """`!hgraph.node<W x f32, heads = H>` or `!hgraph.edge<...>`."""
    domain: str           # "node" | "edge"
    width: int
    heads: int = 1

    @property
    def head_width(self) -> int:
        return self.width // self.heads

    def text(self) -> str:
        heads = f", heads = {self.heads}" if self.heads != 1 else ""
        return f"!hgraph.{self.domain}<{self.width}xf32{heads}>"


@dataclass(frozen=True)
class Weight:
    """`!hgraph.weight<single|node|edge, SHAPE x f32>`."""
    index: str            # "single" | "node" | "edge"
    shape: Tuple[int, ...]

    @property
    def is_vector(self) -> bool:
        return len(self.shape) == 1

    @property
    def is_per_head(self) -> bool:
        return len(self.shape) == 3

    @property
    def in_width(self) -> int:
        return self.shape[0] * self.shape[1] if self.is_per_head else self.shape[0]

    @property
    def out_width(self) -> int:
        return self.shape[0] * self.shape[2] if self.is_per_head else self.shape[-1]

    def text(self) -> str:
        return f"!hgraph.weight<{self.index}, {'x'.join(map(str, self.shape))}xf32>"


@dataclass(frozen=True)
class GraphT:
    def text(self) -> str:
        return "!hgraph.graph"


@dataclass(frozen=True)
class SeedT:
    """`!hgraph.seed`: an int64 [1] argument (hgraph.dropout's mask)."""

    def text(self) -> str:
        return "!hgraph.seed"


_TYPE = re.compile(r"!hgraph\.(graph|seed|node|edge|weight)(?:<([^>]*)>)?")


def parse_type(text: str):
    m = _TYPE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not an hgraph type: {text!r}")
    kind, body = m.group(1), m.group(2)
    if kind == "graph":
        return GraphT()
    if kind == "seed":
        return SeedT()
    if kind in ("node", "edge"):
        fields = [f.strip() for f in body.split(",")]
        width = int(fields[0].split("x")[0])
        if not fields[0].endswith("xf32"):
            raise ValueError(f"only f32 values are interpreted: {text!r}")
        heads = 1
        for extra in fields[1:]:
            key, value = (s.strip() for s in extra.split("="))
            assert key == "heads", text
            heads = int(value)
        return Feature(kind, width, heads)
    index, shape = (s.strip() for s in body.split(",", 1))
    dims = shape.split("x")
    if dims[-1] != "f32":
        raise ValueError(f"only f32 weights are interpreted: {text!r}")
    return Weight(index, tuple(int(d) for d in dims[:-1]))


def _split_top(text: str, sep: str = ",") -> List[str]:
    """Splits at `sep` outside <...>, (...), {...} and strings."""
    parts, depth, start, in_string = [], 0, 0, False
    for i, c in enumerate(text):
        if c == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif c in "<({[":
            depth += 1
        elif c in ">)}]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


# ---- parsing ------------------------------------------------------------------

@dataclass
class Op:
    result: Optional[str]          # SSA name without '%', None for return
    name: str                      # "typed_linear", ...
    operands: List[str]
    attrs: Dict[str, object]
    result_type: object
    operand_types: List[object]


@dataclass
class Function:
    name: str
    args: List[Tuple[str, object, Dict[str, str]]]   # (ssa name, type, attributes)
    result_types: List[object]
    ops: List[Op]
    results: List[str] = field(default_factory=list)
    # Results with `hgraph.materialization = #hgraph.materialization<compact>`.
    compact_results: List[bool] = field(default_factory=list)

    def arg_compact(self, index: int) -> bool:
        """An edge-wise argument given as one row per (source, edge type) pair."""
        return "compact" in self.args[index][2]

    def arg_name(self, index: int) -> str:
        """The entry point's name of argument `index` (hgraph.name, else arg<k>)."""
        ssa, _, attrs = self.args[index]
        return attrs.get("hgraph.name", f"arg{index}")


_ARG = re.compile(r"%([\w$.-]+)\s*:\s*(!hgraph\.\w+(?:<[^>]*>)?)\s*(\{[^}]*\})?")
_NAMED_STR = re.compile(r'([\w.]+)\s*=\s*"([^"]*)"')
_COMPACT = "#hgraph.materialization<compact>"


def parse_functions(text: str) -> List[Function]:
    """Every hgraph.func of a module's text."""
    functions, current = [], None
    lines = iter(_join_signatures(text))
    for line in lines:
        line = re.sub(r"\s*loc\(.*\)\s*$", "", line.strip())
        if not line or line.startswith("//"):
            continue
        if line.startswith("hgraph.func"):
            current = _parse_signature(line)
            functions.append(current)
        elif line.startswith("hgraph.return"):
            body = line[len("hgraph.return"):].split(":")[0]
            current.results = [t.strip()[1:] for t in _split_top(body)]
        elif line.startswith("%"):
            current.ops.append(_parse_op(line))
    return functions


def parse_function(text: str) -> Function:
    functions = parse_functions(text)
    assert len(functions) == 1, f"expected one hgraph.func, got {len(functions)}"
    return functions[0]


def _join_signatures(text: str) -> List[str]:
    """Lines, with a function signature spread over several lines joined."""
    out, pending = [], None
    for line in text.splitlines():
        if pending is not None:
            pending += " " + line.strip()
            if pending.rstrip().endswith("{"):
                out.append(pending)
                pending = None
            continue
        if line.strip().startswith("hgraph.func") and not line.rstrip().endswith("{"):
            pending = line.strip()
            continue
        out.append(line)
    return out


def _parse_signature(line: str) -> Function:
    m = re.match(r"hgraph\.func\s+(?:\w+\s+)?@([\w$.-]+)\s*\(", line)
    if not m:
        raise ValueError(f"cannot parse the signature {line!r}")
    depth, close = 1, None
    for i in range(m.end(), len(line)):
        if line[i] in "(<{[":
            depth += 1
        elif line[i] in ")>}]":
            depth -= 1
            if depth == 0:
                close = i
                break
    args = []
    for arg in _split_top(line[m.end():close]):
        am = _ARG.fullmatch(arg)
        if not am:
            raise ValueError(f"cannot parse the argument {arg!r}")
        attrs = dict(_NAMED_STR.findall(am.group(3) or ""))
        if _COMPACT in (am.group(3) or ""):
            attrs["compact"] = "true"
        args.append((am.group(1), parse_type(am.group(2)), attrs))
    rest = line[close + 1:].strip()
    rest = re.sub(r"\s*attributes\s*\{.*\}\s*\{$", "{", rest)[:-1].strip()
    results, compact = [], []
    if rest.startswith("->"):
        text = rest[2:].strip()
        if text.startswith("("):
            text = text[1:-1]
        for t in _split_top(text):
            results.append(parse_type(re.sub(r"\s*\{[^}]*\}$", "", t)))
            compact.append(_COMPACT in t)
    return Function(m.group(1), args, results, [], compact_results=compact)


def _parse_op(line: str) -> Op:
    m = re.match(r"%([\w$.-]+)\s*=\s*hgraph\.(\w+)\s*(.*)$", line)
    if not m:
        raise ValueError(f"cannot parse the op {line!r}")
    result, name, rest = m.groups()
    # The trailing types start at the last ' : ' outside brackets.
    body, types = _split_types(rest)
    body = re.sub(r"\{[^}]*\}", "", body)         # discardable attributes
    if "->" in types:
        operand_text, result_text = types.rsplit("->", 1)
        operand_types = [parse_type(t) for t in _split_top(operand_text)]
        result_type = parse_type(result_text)
    else:
        operand_types = [parse_type(t) for t in _split_top(types)]
        result_type = operand_types[0]
    operands = re.findall(r"%([\w$.-]+)", body)
    words = re.sub(r"%[\w$.-]+", " ", body).replace(",", " ").split()
    attrs: Dict[str, object] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("from", "to", "node_of"):
            attrs[word] = words[i + 1]
            i += 2
        elif word in ("alpha", "by", "p"):
            attrs[word] = float(words[i + 1])
            i += 2
        elif word in ("offset", "heads"):
            attrs[word] = int(words[i + 1])
            i += 2
        elif word in ("transpose", "by_type"):
            attrs[word] = True
            i += 1
        elif word in ("sum", "mean", "max") and name == "aggregate":
            attrs["kind"] = word
            i += 1
        else:
            raise ValueError(f"unexpected {word!r} in {line!r}")
    return Op(result, name, operands, attrs, result_type, operand_types)


def _split_types(rest: str) -> Tuple[str, str]:
    """(operands and attributes, types): split at the last ':' outside brackets."""
    depth = 0
    scan = rest.replace("->", "  ")
    for i in range(len(scan) - 1, -1, -1):
        c = scan[i]
        if c in ">)}]":
            depth += 1
        elif c in "<({[":
            depth -= 1
        elif c == ":" and depth == 0:
            return rest[:i], rest[i + 1:]
    raise ValueError(f"no types in {rest!r}")


# ---- the graph ----------------------------------------------------------------

@dataclass
class Graph:
    node_type: np.ndarray     # [N]
    src: np.ndarray           # [E], user order
    dst: np.ndarray
    etype: np.ndarray
    num_node_types: int
    num_edge_types: int

    def __post_init__(self):
        for name in ("node_type", "src", "dst", "etype"):
            setattr(self, name, np.asarray(getattr(self, name), np.int64))

    @property
    def N(self) -> int:
        return len(self.node_type)

    @property
    def E(self) -> int:
        return len(self.src)

    def count(self, ids: np.ndarray, n: int) -> np.ndarray:
        return np.bincount(ids, minlength=n)[:n]

    def pairs(self) -> Tuple[np.ndarray, np.ndarray]:
        """The unique (source, edge type) pairs sorted by (type, source): the
        rows of a compact value. Returns (pair of each edge, first edge of
        each pair)."""
        key = self.etype * max(self.N, 1) + self.src
        _, first, pair = np.unique(key, return_index=True, return_inverse=True)
        return pair.reshape(-1), first


def _domain_rows(graph: Graph, domain: str) -> int:
    return graph.N if domain == "node" else graph.E


def _type_count(graph: Graph, index: str) -> int:
    return graph.num_node_types if index == "node" else graph.num_edge_types


# ---- helpers ------------------------------------------------------------------

def _as_matrices(weight: np.ndarray, wtype: Weight) -> np.ndarray:
    """The slices of a matrix or per-head weight as full matrices [K, in, out]
    (a single weight as K = 1); per-head slices block-diagonal."""
    w = weight if wtype.index != "single" else weight[None]
    if not wtype.is_per_head:
        return w
    k, heads, a, b = w.shape
    full = np.zeros((k, heads * a, heads * b), w.dtype)
    for h in range(heads):
        full[:, h * a:(h + 1) * a, h * b:(h + 1) * b] = w[:, h]
    return full


def _from_matrices(full: np.ndarray, wtype: Weight) -> np.ndarray:
    """The inverse of _as_matrices for a gradient: per-head slices keep the
    diagonal blocks only."""
    if wtype.is_per_head:
        heads, a, b = wtype.shape
        full = np.stack([full[:, h * a:(h + 1) * a, h * b:(h + 1) * b]
                         for h in range(heads)], axis=1)
    return full[0] if wtype.index == "single" else full


def _rows(graph: Graph, frm: str):
    """(number of rows, input row of each, node type of that row's input
    node, edge type of each row) for `from node|src|dst|edge`."""
    if frm == "node":
        return graph.N, np.arange(graph.N), graph.node_type, None
    if frm == "src":
        return graph.E, graph.src, graph.node_type[graph.src], graph.etype
    if frm == "dst":
        return graph.E, graph.dst, graph.node_type[graph.dst], graph.etype
    assert frm == "edge", frm
    return graph.E, np.arange(graph.E), None, graph.etype


def _slice_of_rows(graph: Graph, frm: str, index: str) -> np.ndarray:
    """Which weight slice each row of a typed_linear/weight_grad uses."""
    count, _, ntype, etype = _rows(graph, frm)
    if index == "single":
        return np.zeros(count, np.int64)
    if index == "node":
        assert ntype is not None, "a node-typed weight needs a node per row"
        return ntype
    assert etype is not None, "an edge-typed weight needs an edge per row"
    return etype


def _linear(x, weight, wtype: Weight, graph: Graph, frm: str, transpose: bool):
    count, source, _, _ = _rows(graph, frm)
    mats = _as_matrices(weight, wtype)
    if transpose:
        mats = np.swapaxes(mats, 1, 2)
    k = _slice_of_rows(graph, frm, wtype.index)
    y = np.zeros((count, mats.shape[2]), x.dtype)
    for t in np.unique(k):
        rows = np.nonzero(k == t)[0]
        y[rows] = x[source[rows]] @ mats[t]
    return y


def _linear_weight_grad(x, dy, wtype: Weight, graph: Graph, frm: str, transpose: bool,
                        dtype):
    """Σ over rows of x_{source(row)}ᵀ ⊗ dy_row per slice, in the weight's layout."""
    _, source, _, _ = _rows(graph, frm)
    k = _slice_of_rows(graph, frm, wtype.index)
    slices = 1 if wtype.index == "single" else _type_count(graph, wtype.index)
    full = np.zeros((slices, wtype.in_width, wtype.out_width), dtype)
    for t in np.unique(k):
        rows = np.nonzero(k == t)[0]
        outer = x[source[rows]].T @ dy[rows]
        full[t] += outer.T if transpose else outer
    return _from_matrices(full, wtype)


def _vector_rows(graph: Graph, wtype: Weight, domain: str) -> np.ndarray:
    if wtype.index == "single":
        return np.zeros(_domain_rows(graph, domain), np.int64)
    return graph.node_type if wtype.index == "node" else graph.etype


def _heads_view(x: np.ndarray, heads: int) -> np.ndarray:
    return x.reshape(x.shape[0], heads, x.shape[1] // heads)


def _segment_max(values, segments, n):
    out = np.full((n, values.shape[1]), -np.inf, values.dtype)
    np.maximum.at(out, segments, values)
    return out


def _aggregate(x, graph: Graph, kind: str, to: str):
    target = graph.dst if to == "dst" else graph.src
    n = graph.N
    if kind == "max":
        out = _segment_max(x, target, n)
        out[np.isneginf(out)] = 0.0
        return out
    out = np.zeros((n, x.shape[1]), x.dtype)
    np.add.at(out, target, x)
    if kind == "mean":
        degree = graph.count(target, n)
        out = out / np.maximum(degree, 1)[:, None].astype(x.dtype)
    return out


def _softmax_groups(graph: Graph, by_type: bool):
    """(group of every edge, group count): its destination, or with
    `by_type` its (destination, edge type) pair."""
    if not by_type:
        return graph.dst, graph.N
    key = graph.dst * max(graph.num_edge_types, 1) + graph.etype
    _, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.reshape(-1)
    return inverse, int(inverse.max(initial=-1)) + 1


def _group_sum(x, group, count):
    total = np.zeros((count, x.shape[1]), x.dtype)
    np.add.at(total, group, x)
    return total[group]


def _edge_softmax(x, graph: Graph, by_type: bool = False):
    group, count = _softmax_groups(graph, by_type)
    peak = _segment_max(x, group, count)
    e = np.exp(x - peak[group])
    return e / _group_sum(e, group, count)


def _relation_norm(graph: Graph, dtype):
    key = graph.dst * max(graph.num_edge_types, 1) + graph.etype
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return (1.0 / counts[inverse.reshape(-1)]).astype(dtype)[:, None]


def _degree_norm(graph: Graph, dtype):
    degree = graph.count(graph.dst, graph.N)
    return (1.0 / degree[graph.dst]).astype(dtype)[:, None]


def _as_2d(weight: np.ndarray, wtype: Weight, left: bool) -> np.ndarray:
    """Slices as [K, rows, cols] matrices; a vector is a row on the left and a
    column on the right."""
    if wtype.is_vector:
        w = weight if wtype.index != "single" else weight[None]
        return w[:, None, :] if left else w[:, :, None]
    return _as_matrices(weight, wtype)


def _weight_product(a, atype: Weight, b, btype: Weight, rtype: Weight, graph: Graph,
                    node_of: Optional[str]):
    ma, mb = _as_2d(a, atype, True), _as_2d(b, btype, False)
    if rtype.index == "single":
        prod = ma @ mb
    else:
        k = _type_count(graph, rtype.index)

        def per_type(m, wtype):
            if wtype.index == "single":
                return np.repeat(m, k, axis=0)
            if wtype.index == rtype.index:
                return m
            raise NotImplementedError("node-typed times edge-typed weights (node_of "
                                      f"{node_of}) need typed endpoints")
        prod = per_type(ma, atype) @ per_type(mb, btype)
    if rtype.is_vector:
        out = prod.reshape(prod.shape[0], -1)
    else:
        out = _from_matrices(prod, Weight("node", rtype.shape))
    return out[0] if rtype.index == "single" else out


def _head_columns(u, n: int):
    """[k, m, H] -> [k, m, n]: column j reads column head(j) = j // (n / H)."""
    return np.repeat(u, n // u.shape[2], axis=2)


def _per_type(xs, types):
    """The operands with a leading type axis (a single weight gets one)."""
    if len({t.index for t in types}) != 1:
        raise NotImplementedError("'heads' products of weights indexed differently")
    return [x[None] if t.index == "single" else x for x, t in zip(xs, types)]


def _head_product(xs, types, rtype: Weight):
    """weight_product with `heads H`: [m, n] · v[n] -> [m, H], R[i][h] = sum over
    head block h of A[i][j] v[j]; or [m, H] · A[m, n] -> [n], R[j] = sum_i
    U[i][head(j)] A[i][j]."""
    a, b = _per_type(xs, types)
    if types[1].is_vector:
        heads = rtype.shape[1]
        k, m, n = a.shape
        out = (a * b[:, None, :]).reshape(k, m, heads, n // heads).sum(axis=3)
    else:
        out = (_head_columns(a, b.shape[2]) * b).sum(axis=1)
    return out[0] if rtype.index == "single" else out


def _head_product_vjp(xs, types, dy) -> list:
    """Gradients of R = A · v cut into heads, R[i][h] = sum_{head(j)=h} A[i][j] v[j]:
    dA[i][j] = dR[i][head(j)] v[j], dv[j] = sum_i dR[i][head(j)] A[i][j]."""
    (a, v), single = _per_type(xs, types), types[0].index == "single"
    d = _head_columns(dy[None] if single else dy, v.shape[1])
    grads = [d * v[:, None, :], (d * a).sum(axis=1)]
    return [g[0] for g in grads] if single else grads


def _weight_product_vjp(xs, types, rtype: Weight, dy, graph: Graph) -> list:
    """Gradients of R = A · B as matrices (dA = dR · Bᵀ, dB = Aᵀ · dR), each
    back in its operand's layout: a vector flattened, a per-head slice's
    diagonal blocks, a single weight applied to every type summed over them."""
    (a, b), (atype, btype) = xs, types
    ma, mb = _as_2d(a, atype, True), _as_2d(b, btype, False)
    if rtype.is_vector:   # a row (vector · matrix) or a column (matrix · vector)
        d = dy if rtype.index != "single" else dy[None]
        d = d[:, None, :] if atype.is_vector else d[:, :, None]
    else:
        d = _as_matrices(dy, rtype)
    grads = []
    for full, wtype in ((d @ np.swapaxes(mb, 1, 2), atype), (np.swapaxes(ma, 1, 2) @ d, btype)):
        if wtype.index == "single" and full.shape[0] > 1:
            full = full.sum(axis=0, keepdims=True)
        if wtype.is_vector:
            full = full.reshape(full.shape[0], -1)
            grads.append(full[0] if wtype.index == "single" else full)
        else:
            grads.append(_from_matrices(full, wtype))
    return grads


# ---- evaluation ---------------------------------------------------------------

ELEMENTWISE = {"add", "sub", "mul", "div", "neg", "exp", "relu", "tanh", "sigmoid",
               "gelu", "leaky_relu", "const_scale", "equal", "leaky_relu_grad", "gelu_grad"}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _normal_cdf(x):
    """Φ(x) = (1 + erf(x/√2)) / 2, in x's dtype."""
    return (0.5 * (1 + _erf(np.asarray(x, np.float64) / math.sqrt(2)))).astype(x.dtype)


def _gelu_slope(x):
    """d/dx x·Φ(x) = Φ(x) + x·φ(x), φ the standard normal density."""
    return _normal_cdf(x) + x * np.exp(-0.5 * x * x) / x.dtype.type(math.sqrt(2 * math.pi))


@dataclass
class Run:
    values: Dict[str, np.ndarray]
    results: List[np.ndarray]
    dtype: object


def evaluate(func: Function, graph: Graph, inputs: Dict[str, np.ndarray],
             dtype=np.float64) -> Run:
    """Evaluates `func`; `inputs` maps entry-point argument names to arrays."""
    values: Dict[str, np.ndarray] = {}
    pair, first = graph.pairs()
    for index, (ssa, type_, _) in enumerate(func.args):
        if isinstance(type_, GraphT):
            continue
        if isinstance(type_, SeedT):
            values[ssa] = np.asarray(inputs[func.arg_name(index)], np.int64)
            continue
        values[ssa] = np.asarray(inputs[func.arg_name(index)], dtype)
        if func.arg_compact(index):   # one row per pair: every edge reads its pair's
            values[ssa] = values[ssa][pair]
    # Overflow is not an error here: callers judge the values (inf included).
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for op in func.ops:
            values[op.result] = _forward(op, [values.get(o) for o in op.operands], graph,
                                         dtype)
    results = [values[r][first] if compact else values[r]
               for r, compact in zip(func.results, _compact_results(func))]
    return Run(values, results, dtype)


def _compact_results(func: Function) -> List[bool]:
    return func.compact_results or [False] * len(func.results)


def _dropout_mask(op: Op, seed, graph: Graph) -> np.ndarray:
    """hgraph.dropout's mask over the user's edges (dropout_reference.py)."""
    return dropout_reference.keep_mask(int(seed[0]), graph.E, op.result_type.width,
                                       op.attrs["p"])


def _forward(op: Op, xs: list, graph: Graph, dtype):
    name, a = op.name, op.attrs
    t = op.result_type
    if name == "dropout":
        return dropout_reference.apply(xs[0], _dropout_mask(op, xs[1], graph), a["p"])
    if name == "add":
        return xs[0] + xs[1]
    if name == "sub":
        return xs[0] - xs[1]
    if name == "mul":
        return xs[0] * xs[1]
    if name == "div":
        return xs[0] / xs[1]
    if name == "neg":
        return -xs[0]
    if name == "exp":
        return np.exp(xs[0])
    if name == "relu":
        return np.maximum(xs[0], 0)
    if name == "tanh":
        return np.tanh(xs[0])
    if name == "sigmoid":
        return 1 / (1 + np.exp(-xs[0]))
    if name == "gelu":
        return xs[0] * _normal_cdf(xs[0])
    if name == "gelu_grad":
        return xs[0] * _gelu_slope(xs[1])
    if name == "leaky_relu":
        return np.where(xs[0] > 0, xs[0], dtype(a["alpha"]) * xs[0])
    if name == "leaky_relu_grad":
        return np.where(xs[1] > 0, xs[0], dtype(a["alpha"]) * xs[0])
    if name == "const_scale":
        return xs[0] * dtype(a["by"])
    if name == "equal":
        return (xs[0] == xs[1]).astype(dtype)
    if name == "zeros":
        if isinstance(t, Weight):
            lead = () if t.index == "single" else (_type_count(graph, t.index),)
            return np.zeros(lead + t.shape, dtype)
        return np.zeros((_domain_rows(graph, t.domain), t.width), dtype)
    if name == "gather":
        return xs[0][graph.src if a["from"] == "src" else graph.dst]
    if name == "typed_linear":
        return _linear(xs[1], xs[0], op.operand_types[0], graph, a["from"],
                       a.get("transpose", False))
    if name == "typed_vector":
        wtype = op.operand_types[0]
        if wtype.index == "single":
            return np.repeat(xs[0][None], _domain_rows(graph, t.domain), axis=0)
        return xs[0][_vector_rows(graph, wtype, t.domain)]
    if name == "type_sum":
        slices = 1 if t.index == "single" else _type_count(graph, t.index)
        out = np.zeros((slices, t.shape[0]), dtype)
        np.add.at(out, _vector_rows(graph, t, op.operand_types[0].domain), xs[0])
        return out[0] if t.index == "single" else out
    if name == "weight_grad":
        return _linear_weight_grad(xs[0], xs[1], t, graph, a["from"], False, dtype)
    if name == "weight_product":
        if "heads" in a:
            return _head_product(xs, op.operand_types, t)
        return _weight_product(xs[0], op.operand_types[0], xs[1], op.operand_types[1], t,
                               graph, a.get("node_of"))
    if name == "weight_outer":
        u, v = (x if t.index != "single" else x[None] for x in xs)
        if "heads" in a:   # u[k, m, H]: R[i][j] = u[i][head(j)] v[j]
            out = _head_columns(u, v.shape[1]) * v[:, None, :]
            return out[0] if t.index == "single" else out
        return _from_matrices(u[:, :, None] * v[:, None, :], t)
    if name == "aggregate":
        return _aggregate(xs[0], graph, a["kind"], a.get("to", "dst"))
    if name == "edge_softmax":
        return _edge_softmax(xs[0], graph, a.get("by_type", False))
    if name == "group_sum":
        return _group_sum(xs[0], *_softmax_groups(graph, True))
    if name == "relation_norm":
        return _relation_norm(graph, dtype)
    if name == "degree_norm":
        return _degree_norm(graph, dtype)
    if name == "dot":
        h = t.heads
        return (_heads_view(xs[0], h) * _heads_view(xs[1], h)).sum(axis=2)
    if name == "scale":
        s, x = xs
        heads = op.operand_types[1].heads
        view = _heads_view(x, heads) * s[:, :, None]
        return view.reshape(x.shape)
    if name == "concat":
        h = t.heads
        return np.concatenate([_heads_view(x, h) for x in xs], axis=2).reshape(
            xs[0].shape[0], t.width)
    if name == "slice":
        h = t.heads
        view = _heads_view(xs[0], h)[:, :, a["offset"]:a["offset"] + t.head_width]
        return view.reshape(xs[0].shape[0], t.width)
    raise NotImplementedError(f"hgraph.{name}")


# ---- reverse mode ---------------------------------------------------------------

NOT_DIFFERENTIABLE = {"equal", "zeros", "relation_norm", "degree_norm"}


def vjp(func: Function, graph: Graph, run: Run, cotangents: List[np.ndarray]
        ) -> Dict[str, np.ndarray]:
    """The gradient of Σ_i <cotangents[i], results[i]> with respect to every
    non-graph argument, by entry-point argument name (zeros where a result
    does not depend on it)."""
    dtype = run.dtype
    grads: Dict[str, np.ndarray] = {}

    def add(name, g):
        grads[name] = grads[name] + g if name in grads else np.asarray(g, dtype).copy()

    pair, first = graph.pairs()
    for name, cot, compact in zip(func.results, cotangents, _compact_results(func)):
        cot = np.asarray(cot, dtype)
        if compact:   # a pair's row is the value at any of its edges: take the first
            edges = np.zeros((graph.E,) + cot.shape[1:], dtype)
            edges[first] = cot
            cot = edges
        add(name, cot)
    for op in reversed(func.ops):
        dy = grads.get(op.result)
        if dy is None or op.name in NOT_DIFFERENTIABLE:
            continue
        xs = [run.values.get(o) for o in op.operands]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            contributions = _backward(op, xs, run.values[op.result], dy, graph, dtype)
        for operand, g in zip(op.operands, contributions):
            if g is not None:
                add(operand, g)
    out = {}
    for index, (ssa, type_, _) in enumerate(func.args):
        if isinstance(type_, (GraphT, SeedT)):   # a seed has no gradient
            continue
        grad = grads.get(ssa, np.zeros_like(run.values[ssa]))
        if func.arg_compact(index):   # every edge of a pair read the pair's row
            per_pair = np.zeros((len(first),) + grad.shape[1:], dtype)
            np.add.at(per_pair, pair, grad)
            grad = per_pair
        out[func.arg_name(index)] = grad
    return out


def _backward(op: Op, xs: list, y, dy, graph: Graph, dtype) -> list:
    """One contribution per operand (None: none)."""
    name, a = op.name, op.attrs
    if name == "dropout":   # linear: the same mask on the gradient
        return [dropout_reference.apply(dy, _dropout_mask(op, xs[1], graph), a["p"]), None]
    if name == "add":
        return [dy, dy]
    if name == "sub":
        return [dy, -dy]
    if name == "mul":
        return [dy * xs[1], dy * xs[0]]
    if name == "div":
        return [dy / xs[1], -dy * xs[0] / (xs[1] * xs[1])]
    if name == "neg":
        return [-dy]
    if name == "exp":
        return [dy * y]
    if name == "relu":
        return [np.where(xs[0] > 0, dy, 0)]
    if name == "tanh":
        return [dy * (1 - y * y)]
    if name == "sigmoid":
        return [dy * y * (1 - y)]
    if name == "gelu":
        return [dy * _gelu_slope(xs[0])]
    if name == "leaky_relu":
        return [np.where(xs[0] > 0, dy, dtype(a["alpha"]) * dy)]
    if name == "const_scale":
        return [dy * dtype(a["by"])]
    if name == "gather":
        target = graph.src if a["from"] == "src" else graph.dst
        dx = np.zeros_like(xs[0])
        np.add.at(dx, target, dy)
        return [dx]
    if name == "typed_linear":
        wtype: Weight = op.operand_types[0]
        frm, transpose = a["from"], a.get("transpose", False)
        count, source, _, _ = _rows(graph, frm)
        mats = _as_matrices(xs[0], wtype)
        if transpose:
            mats = np.swapaxes(mats, 1, 2)
        k = _slice_of_rows(graph, frm, wtype.index)
        dx = np.zeros_like(xs[1])
        for t in np.unique(k):
            rows = np.nonzero(k == t)[0]
            np.add.at(dx, source[rows], dy[rows] @ mats[t].T)
        dw = _linear_weight_grad(xs[1], dy, wtype, graph, frm, transpose, dtype)
        return [dw, dx]
    if name == "typed_vector":
        wtype = op.operand_types[0]
        dw = np.zeros((1 if wtype.index == "single" else _type_count(graph, wtype.index),
                       wtype.shape[0]), dtype)
        np.add.at(dw, _vector_rows(graph, wtype, op.result_type.domain), dy)
        return [dw[0] if wtype.index == "single" else dw]
    if name == "aggregate":
        kind, to = a["kind"], a.get("to", "dst")
        target = graph.dst if to == "dst" else graph.src
        if kind == "sum":
            return [dy[target]]
        if kind == "mean":
            degree = graph.count(target, graph.N)
            return [dy[target] / degree[target][:, None].astype(dtype)]
        hit = (xs[0] == y[target]).astype(dtype)
        ties = np.zeros_like(y)
        np.add.at(ties, target, hit)
        return [dy[target] * hit / np.maximum(ties[target], 1)]
    if name == "edge_softmax":
        p = y * dy
        return [p - y * _group_sum(p, *_softmax_groups(graph, a.get("by_type", False)))]
    if name == "group_sum":
        return [_group_sum(dy, *_softmax_groups(graph, True))]
    if name == "dot":
        h = op.result_type.heads
        dyv = dy[:, :, None]
        shape = xs[0].shape
        return [(dyv * _heads_view(xs[1], h)).reshape(shape),
                (dyv * _heads_view(xs[0], h)).reshape(shape)]
    if name == "scale":
        s, x = xs
        heads = op.operand_types[1].heads
        dyv, xv = _heads_view(dy, heads), _heads_view(x, heads)
        dx = (dyv * s[:, :, None]).reshape(x.shape)
        ds = (dyv * xv).sum(axis=2)
        if s.shape[1] == 1:
            ds = ds.sum(axis=1, keepdims=True)
        return [ds, dx]
    if name == "weight_product":
        if "heads" in op.attrs:
            if not op.operand_types[1].is_vector:
                raise NotImplementedError("no gradient of the 'heads' product of two matrices")
            return _head_product_vjp(xs, op.operand_types, dy)
        return _weight_product_vjp(xs, op.operand_types, op.result_type, dy, graph)
    if name == "concat":
        h = op.result_type.heads
        view = _heads_view(dy, h)
        out, offset = [], 0
        for x in xs:
            w = x.shape[1] // h
            out.append(view[:, :, offset:offset + w].reshape(x.shape))
            offset += w
        return out
    if name == "slice":
        h = op.result_type.heads
        dx = np.zeros_like(xs[0])
        view = _heads_view(dx, h)
        view[:, :, a["offset"]:a["offset"] + op.result_type.head_width] = _heads_view(dy, h)
        return [view.reshape(xs[0].shape)]
    raise NotImplementedError(f"no gradient of hgraph.{name} in the interpreter")

"""The single-layer RGCN, RGAT and HGT models of BRIEF.md §4 as hgraph IR text.

    from hector import models
    text = models.generate("rgat", width=64, heads=4)   # an hgraph module, as a str
    lib = hector.compile(text, target="cpu")

`examples/generate.py` is the command-line front end of this module, and
`examples/{rgcn,rgat,hgt}.mlir` are its output with the defaults (a lit test
checks that they still are). hector.nn builds its layers from the same
generator, so `python3 -m hector.aot` can build the libraries the layers
will ask for (the cache key is a hash of this text).

Weights are stored [in, out] and applied to row vectors (x · W), as in
PyTorch Geometric. Argument names (`h`, `W`, `a`, ...) become the names of
the compiled entry point's arguments in its manifest.
"""

from __future__ import annotations

import math
import re

__all__ = ["MODELS", "generate", "stack", "spec", "parse_spec", "from_spec", "rgcn", "rgat",
           "hgt"]


def _feature(kind, width, heads=1):
    suffix = f", heads = {heads}" if heads != 1 else ""
    return f"!hgraph.{kind}<{width}xf32{suffix}>"


def _weight(index, *shape):
    return f"!hgraph.weight<{index}, {'x'.join(map(str, shape))}xf32>"


def _arg(name, type_):
    """A function argument named for the compiled entry point's manifest."""
    return f'%{name}: {type_} {{hgraph.name = "{name}"}}'


def _float(value: float) -> str:
    """An MLIR float literal that parses back to exactly `value` (as f64):
    the 7-digit exponent form where that is exact (0.2 -> 2.000000e-01,
    the committed examples' spelling), else Python's shortest exact repr."""
    text = f"{value:.6e}"
    return text if float(text) == value else repr(float(value))


def rgcn(width_in, width_out, heads=1, aggr="mean"):
    if heads != 1:
        raise ValueError("RGCN has no heads")
    h, o = _feature("node", width_in), _feature("node", width_out)
    msg, norm = _feature("edge", width_out), _feature("edge", 1)
    w, w0 = _weight("edge", width_in, width_out), _weight("single", width_in, width_out)
    if aggr == "sum":  # PyG's aggr='add': every message counts once
        coefficient = "1"
        messages = f"""  %agg = hgraph.aggregate sum %msg : {msg} -> {o}
"""
    else:
        coefficient = "1 / |{e' = (s'→t) : φ(e') = φ(e)}|"
        messages = f"""  %norm = hgraph.relation_norm %g : !hgraph.graph -> {norm}
  %scaled = hgraph.scale %norm, %msg : {norm}, {msg} -> {msg}
  %agg = hgraph.aggregate sum %scaled : {msg} -> {o}
"""
    return f"""// RGCN (BRIEF.md §4):
//   h'_t = W_0ᵀ h_t + Σ_{{e=(s→t)}} c_e · W_φ(e)ᵀ h_s,
//   c_e  = {coefficient}
hgraph.func @rgcn(%g: !hgraph.graph, {_arg("h", h)},
                  {_arg("W", w)}, {_arg("W0", w0)}) -> {o} {{
  %msg = hgraph.typed_linear %W, %h from src : {w}, {h} -> {msg}
{messages}  %self = hgraph.typed_linear %W0, %h from node : {w0}, {h} -> {o}
  %out = hgraph.add %self, %agg : {o}
  hgraph.return %out : {o}
}}
"""


def rgat(width_in, width_out, heads=1, negative_slope=0.2, mode="additive", mod="none",
         edge_dim=0, alpha="no", within=0, dropout=0.0):
    """RGAT with PyG's RGATConv options (hector.nn.RGATConv):

    mode      "additive": score = LeakyReLU(s_src + s_dst [+ s_edge]);
              "multiplicative": score = s_src · s_dst [· s_edge] (no LeakyReLU)
    mod       PyG's cardinality preservation: "none"; "additive"
              (h'_t += w ⊙ Σ_e z_e, w a single [out] vector); "scaled"
              (h'_t ⊙= MLP(deg_t) = relu(deg_t·l1 + b1)·l2 + b2, l1 [1, out/H],
              b1 [out/H], l2 [out/H, out], b2 [out]: the caller tiles PyG's
              [C, C] l2 and [C] b2 over the heads); "f-additive" (α + 1 where
              α > 0); "f-scaled" (α · deg_t). deg_t is t's in-degree over all
              relations.
    edge_dim  > 0: an edge-wise input `ea` [E, edge_dim], projected by a single
              weight `We` [edge_dim, out] and scored per head against the
              relation's vector `c` [R, out]: s_edge = c_φ(e) · (ea_e We).
    alpha     "yes": α (before mod) is a second, edge-wise result.
    within    R > 0: PyG's attention_mechanism='within-relation' for R
              relations: the softmax runs over the incoming edges of t of the
              edge's relation, `hgraph.edge_softmax ... by_type` (O(E·H); the
              IR does not depend on R, which the spec keeps for the layer).
    dropout   p in (0, 1]: PyG's attention dropout in training, α_e dropped
              with probability p and scaled by 1/(1−p) before it weights the
              messages (mod "none" only, as PyG), by `hgraph.dropout` with a
              seed argument `seed` (int64 [1]) that the caller draws per
              call; the mask is a hash of (seed, edge, head) that
              docs/dialects/HGraphDialect.md spells out. α returned with
              alpha="yes" is before dropout (PyG's _alpha)."""
    h = _feature("node", width_in)
    z, o = _feature("edge", width_out, heads), _feature("node", width_out, heads)
    s = _feature("edge", heads, heads)
    w, v = _weight("edge", width_in, width_out), _weight("edge", width_out)
    c = width_out // heads
    args = [_arg("h", h), _arg("W", w), _arg("a", v), _arg("b", v)]
    score_terms = "a_φ(e)·z_e", "b_φ(e)·(W_φ(e)ᵀ h_t)"
    body = f"""  %z = hgraph.typed_linear %W, %h from src : {w}, {h} -> {z}
  %zt = hgraph.typed_linear %W, %h from dst : {w}, {h} -> {z}
  %av = hgraph.typed_vector %a : {v} -> {z}
  %bv = hgraph.typed_vector %b : {v} -> {z}
  %sa = hgraph.dot %z, %av : {z} -> {s}
  %sb = hgraph.dot %zt, %bv : {z} -> {s}
"""
    combine = "mul" if mode == "multiplicative" else "add"
    body += f"  %sum = hgraph.{combine} %sa, %sb : {s}\n"
    last = "sum"
    if edge_dim:
        ea, we = _feature("edge", edge_dim), _weight("single", edge_dim, width_out)
        args += [_arg("ea", ea), _arg("We", we), _arg("c", v)]
        score_terms += ("c_φ(e)·(ea_e We)",)
        body += f"""  %ze = hgraph.typed_linear %We, %ea from edge : {we}, {ea} -> {z}
  %cv = hgraph.typed_vector %c : {v} -> {z}
  %sc = hgraph.dot %ze, %cv : {z} -> {s}
  %sum1 = hgraph.{combine} %sum, %sc : {s}
"""
        last = "sum1"
    if mode == "multiplicative":
        rule = "".join(f"({term})" for term in score_terms)
        score = last
    else:
        rule = f"LeakyReLU_{negative_slope:g}({' + '.join(score_terms)})"
        body += f"  %score = hgraph.leaky_relu %{last} alpha {_float(negative_slope)} : {s}\n"
        score = "score"
    group = "t"
    if not within:
        body += f"  %alpha = hgraph.edge_softmax %{score} : {s}\n"
    else:
        group = "t of relation φ(e)"
        body += f"  %alpha = hgraph.edge_softmax %{score} by_type : {s}\n"
    one = _feature("edge", 1)
    degree = f"""  %zero1 = hgraph.zeros : {one}
  %one1 = hgraph.exp %zero1 : {one}
  %deg = hgraph.aggregate sum %one1 : {one} -> {_feature("node", 1)}
"""
    weights = "α_e"
    attended = "alpha"
    if dropout:
        if mod != "none":
            raise ValueError(f"dropout needs mod 'none' (PyG drops α only without mod), "
                             f"got mod {mod!r}")
        args.append(_arg("seed", "!hgraph.seed"))
        weights = "dropout_p(α_e)"
        body += f"  %alphad = hgraph.dropout %alpha, %seed p {_float(dropout)} : {s}\n"
        attended = "alphad"
    if mod == "f-additive":  # PyG: α + 1 where α > 0 (α = 0 only where exp underflows)
        weights = "(α_e + [α_e > 0])"
        body += f"""  %zero = hgraph.zeros : {s}
  %one = hgraph.exp %zero : {s}
  %nil = hgraph.equal %alpha, %zero : {s}
  %pos = hgraph.sub %one, %nil : {s}
  %coef = hgraph.add %alpha, %pos : {s}
  %msg = hgraph.scale %coef, %z : {s}, {z} -> {z}
"""
    else:
        body += f"  %msg = hgraph.scale %{attended}, %z : {s}, {z} -> {z}\n"
    tail = ""
    if mod == "none" or mod == "f-additive":
        body += f"  %out = hgraph.aggregate sum %msg : {z} -> {o}\n"
    else:
        body += f"  %agg = hgraph.aggregate sum %msg : {z} -> {o}\n"
    if mod == "additive":
        wv = _weight("single", width_out)
        args.append(_arg("w", wv))
        tail = " + w ⊙ Σ_e z_e"
        body += f"""  %zsum = hgraph.aggregate sum %z : {z} -> {o}
  %wv = hgraph.typed_vector %w : {wv} -> {o}
  %wz = hgraph.mul %wv, %zsum : {o}
  %out = hgraph.add %agg, %wz : {o}
"""
    elif mod == "scaled":
        n1, nc = _feature("node", 1), _feature("node", c)
        l1, b1 = _weight("single", 1, c), _weight("single", c)
        l2, b2 = _weight("single", c, width_out), _weight("single", width_out)
        args += [_arg("l1", l1), _arg("b1", b1), _arg("l2", l2), _arg("b2", b2)]
        tail = " ⊙ (relu(deg_t·l1 + b1)·l2 + b2)"
        body += degree + f"""  %d1 = hgraph.typed_linear %l1, %deg from node : {l1}, {n1} -> {nc}
  %b1v = hgraph.typed_vector %b1 : {b1} -> {nc}
  %d1b = hgraph.add %d1, %b1v : {nc}
  %d1r = hgraph.relu %d1b : {nc}
  %d2 = hgraph.typed_linear %l2, %d1r from node : {l2}, {nc} -> {o}
  %b2v = hgraph.typed_vector %b2 : {b2} -> {o}
  %d2b = hgraph.add %d2, %b2v : {o}
  %out = hgraph.mul %agg, %d2b : {o}
"""
    elif mod == "f-scaled":
        weights = "α_e · deg_t"
        body += degree + f"  %out = hgraph.scale %deg, %agg : {_feature('node', 1)}, {o} -> {o}\n"
    if alpha == "yes":
        results, ret = f"({o}, {s})", f"  hgraph.return %out, %alpha : {o}, {s}\n"
    else:
        results, ret = o, f"  hgraph.return %out : {o}\n"
    notes = [f"//   {k}: {v}\n" for k, v in (
        ("mod", mod), ("edge input", f"ea [E, {edge_dim}]" if edge_dim else "none"),
        ("results", "h', α" if alpha == "yes" else "h'"),
        ("softmax groups", f"(destination, relation) of {within} relations"
         if within else "none"),
        ("attention dropout", f"p = {dropout:g}, seed [1] int64" if dropout else "none"))
        if v not in ("none", "h'")]
    lines = [args[0]] + [", ".join(args[i:i + 3]) for i in range(1, len(args), 3)]
    signature = ",\n                  ".join(lines)
    return f"""// RGAT (BRIEF.md §4), {heads} head(s) of {c} features:
//   z_e     = W_φ(e)ᵀ h_s
//   score_e = {rule}   (per head)
//   α_e     = softmax of score over the incoming edges of {group}
//   h'_t    = Σ_e {weights} z_e{tail}
{"".join(notes)}hgraph.func @rgat(%g: !hgraph.graph, {signature}) -> {results} {{
{body}{ret}}}
"""


def hgt(width_in, width_out, heads=1, residual="auto", form="brief"):
    """HGT with input width `width_in` and output width `width_out` = d.

    form="brief" is BRIEF.md §4's HGT. form="pyg" is PyTorch Geometric's
    HGTConv: K/Q/V and the output linear A get per-node-type biases (bK,
    bQ, bV, bA), the aggregated messages pass through the exact GELU before
    A, and the residual is gated per node type by σ(skip_τ):
    h'_t = σ(skip)·a_t + (1 − σ(skip))·h_t, written a_t + σ(−skip)·(h_t − a_t).

    residual="auto" adds the residual (plain or gated) when width_in ==
    width_out and nothing otherwise (PyG's HGTConv keeps the skip connection
    only for a node type whose input width is out_channels).
    residual="separate" adds an argument `r` of width_out features instead
    (h'_t = ... + r_t; with form="pyg" also a node-typed 0/1 vector `keep`
    [T, 1] that says which node types have the gated residual at all), so
    that a caller whose node types have different input widths (padded to
    width_in) can choose the residual per node type (hector.nn.HGTConv)."""
    d, a = width_out, width_out // heads
    pyg = form == "pyg"
    h, o = _feature("node", width_in), _feature("node", d)
    nh, eh = _feature("node", d, heads), _feature("edge", d, heads)
    s, n1 = _feature("edge", heads, heads), _feature("node", 1)
    wi, wo = _weight("node", width_in, d), _weight("node", d, d)
    wh, mu = _weight("edge", heads, a, a), _weight("edge", heads)
    wb, w1 = _weight("node", d), _weight("node", 1)
    # repr() of a float is the shortest exact form; MLIR parses it back exactly.
    inv_sqrt = float(1.0 / math.sqrt(a))
    inputs = _arg("h", h)
    residual_of = "h"
    if residual == "separate":
        inputs += ", " + _arg("r", o)
        residual_of = "r"
    has_residual = residual == "separate" or width_in == width_out
    weights = [_arg("K", wi), _arg("Q", wi), _arg("V", wi), _arg("A", wo), _arg("Watt", wh),
               _arg("Wmsg", wh), _arg("mu", mu)]
    if pyg:
        weights += [_arg("bK", wb), _arg("bQ", wb), _arg("bV", wb), _arg("bA", wb)]
        if has_residual:
            weights.append(_arg("skip", w1))
        if residual == "separate":
            weights.append(_arg("keep", w1))
    projections = ""
    for name, weight in (("k", "K"), ("q", "Q"), ("v", "V")):
        if pyg:
            projections += f"""  %{name}0 = hgraph.typed_linear %{weight}, %h from node : {wi}, {h} -> {nh}
  %{name}b = hgraph.typed_vector %b{weight} : {wb} -> {nh}
  %{name} = hgraph.add %{name}0, %{name}b : {nh}
"""
        else:
            projections += f"""  %{name} = hgraph.typed_linear %{weight}, %h from node : {wi}, {h} -> {nh}
"""
    if pyg:
        output = f"""  %act = hgraph.gelu %agg : {nh}
  %a0 = hgraph.typed_linear %A, %act from node : {wo}, {nh} -> {o}
  %ab = hgraph.typed_vector %bA : {wb} -> {o}
  %out0 = hgraph.add %a0, %ab : {o}
"""
        lines = [
            "//   k_s = K_τ(s) h_s + bK_τ(s),  q_t = Q_τ(t) h_t + bQ_τ(t),  "
            "v_s = V_τ(s) h_s + bV_τ(s)",
            "//   score_e = (k_s W^att_φ(e) · q_t) · μ_φ(e) / √" + str(a)
            + "        (per head)",
            "//   α = softmax over the incoming edges of t",
            "//   m_e = v_s W^msg_φ(e)",
            "//   a_t = A_τ(t) GELU(Σ_e α_e m_e) + bA_τ(t)"]
        if has_residual:
            keep = " (keep_τ(t) = 0: h'_t = a_t)" if residual == "separate" else ""
            lines.append(f"//   h'_t = σ(skip_τ(t))·a_t + (1 − σ(skip_τ(t)))·{residual_of}_t{keep}")
            gate = f"""  %sv = hgraph.typed_vector %skip : {w1} -> {n1}
  %nsv = hgraph.neg %sv : {n1}
"""
            if residual == "separate":
                gate += f"""  %rest0 = hgraph.sigmoid %nsv : {n1}
  %keepv = hgraph.typed_vector %keep : {w1} -> {n1}
  %rest = hgraph.mul %rest0, %keepv : {n1}
"""
            else:
                gate += f"  %rest = hgraph.sigmoid %nsv : {n1}\n"
            tail = gate + f"""  %diff = hgraph.sub %{residual_of}, %out0 : {o}
  %mix = hgraph.scale %rest, %diff : {n1}, {o} -> {o}
  %out = hgraph.add %out0, %mix : {o}
  hgraph.return %out : {o}
"""
        else:
            lines.append("//   h'_t = a_t        (in ≠ out: no residual)")
            tail = f"  hgraph.return %out0 : {o}\n"
        header = "".join(line + "\n" for line in
                         [f"// HGT as PyG's HGTConv, {heads} head(s) of {a} features:"] + lines)
    else:
        output = f"""  %out0 = hgraph.typed_linear %A, %agg from node : {wo}, {nh} -> {o}
"""
        if has_residual:
            rule, tail = f"+ {residual_of}_t", f"""  %out = hgraph.add %out0, %{residual_of} : {o}
  hgraph.return %out : {o}
"""
        else:  # no skip connection where the widths differ, as in PyG
            rule, tail = "(in ≠ out: no residual)", f"""  hgraph.return %out0 : {o}
"""
        header = f"""// HGT (BRIEF.md §4), {heads} head(s) of {a} features:
//   k_s = K_τ(s) h_s,  q_t = Q_τ(t) h_t,  v_s = V_τ(s) h_s
//   score_e = (k_s W^att_φ(e) · q_t) · μ_φ(e) / √{a}        (per head)
//   α = softmax over the incoming edges of t
//   m_e = v_s W^msg_φ(e)
//   h'_t = A_τ(t) Σ_e α_e m_e {rule}
"""
    lines = [", ".join(weights[i:i + 4]) for i in range(0, len(weights), 4)]
    signature = ",\n                 ".join([inputs] + lines)
    return f"""{header}hgraph.func @hgt(%g: !hgraph.graph, {signature}) -> {o} {{
{projections}  %katt = hgraph.typed_linear %Watt, %k from src : {wh}, {nh} -> {eh}
  %qt = hgraph.gather %q from dst : {nh} -> {eh}
  %dot = hgraph.dot %katt, %qt : {eh} -> {s}
  %muv = hgraph.typed_vector %mu : {mu} -> {s}
  %prior = hgraph.mul %dot, %muv : {s}
  %score = hgraph.const_scale %prior by {inv_sqrt!r} : {s}
  %alpha = hgraph.edge_softmax %score : {s}
  %m = hgraph.typed_linear %Wmsg, %v from src : {wh}, {nh} -> {eh}
  %msg = hgraph.scale %alpha, %m : {s}, {eh} -> {eh}
  %agg = hgraph.aggregate sum %msg : {eh} -> {nh}
{output}{tail}}}
"""


MODELS = {"rgcn": rgcn, "rgat": rgat, "hgt": hgt}

# Options a model takes beyond the widths and heads, with their defaults.
OPTIONS = {"rgcn": {"aggr": "mean"},
           "rgat": {"negative_slope": 0.2, "mode": "additive", "mod": "none", "edge_dim": 0,
                    "alpha": "no", "within": 0, "dropout": 0.0},
           "hgt": {"residual": "auto", "form": "brief"}}
# The values a word-valued option takes.
CHOICES = {"aggr": ("mean", "sum"), "residual": ("auto", "separate"), "form": ("brief", "pyg"),
           "mode": ("additive", "multiplicative"),
           "mod": ("none", "additive", "scaled", "f-additive", "f-scaled"),
           "alpha": ("no", "yes")}


def generate(model: str, width: int = 64, out_width=None, heads: int = 1, **options) -> str:
    """The hgraph IR of one layer of `model` ("rgcn", "rgat" or "hgt").

    width is the input feature width, out_width the output width (default:
    width), heads the number of attention heads (it must divide both).
    Raises ValueError for an unknown model or option, or sizes that do not fit.
    """
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; known: {', '.join(sorted(MODELS))}")
    unknown = sorted(set(options) - set(OPTIONS[model]))
    if unknown:
        raise ValueError(f"{model} has no option {unknown[0]!r}"
                         + (f" (options: {', '.join(OPTIONS[model])})" if OPTIONS[model] else ""))
    out_width = width if out_width is None else out_width
    for name, value in (("width", width), ("out_width", out_width), ("heads", heads)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if width <= 0 or out_width <= 0 or heads <= 0:
        raise ValueError("widths and heads must be positive")
    if out_width % heads:  # the input width is free: heads split the output features
        raise ValueError(f"heads = {heads} must divide the output width {out_width}")
    for name, allowed in CHOICES.items():
        if name in options and options[name] not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, "
                             f"got {options[name]!r}")
    if "negative_slope" in options:
        slope = options["negative_slope"]
        if isinstance(slope, bool) or not isinstance(slope, (int, float)) \
                or not math.isfinite(slope):
            raise ValueError(f"negative_slope must be a finite number, got {slope!r}")
        options["negative_slope"] = float(slope)
    if "dropout" in options:
        p = options["dropout"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout must be a probability in [0, 1], got {p!r}")
        options["dropout"] = float(p)
    for name, zero in (("edge_dim", "no edge input"), ("within", "across-relation")):
        value = options.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer (0: {zero}), "
                             f"got {value!r}")
    return MODELS[model](width, out_width, heads, **options)


_SIGNATURE = re.compile(r"hgraph\.func @\w+\(%g: !hgraph\.graph, (?P<args>.*?)\) -> (?P<out>!hgraph\.\w+<[^>]*>) \{\n",
                        re.S)
_ARGUMENT = re.compile(r"%(\w+): (.*?) \{hgraph\.name = \"\w+\"\}")
_VALUE = re.compile(r"%([A-Za-z_][\w.]*)")


def stack(model: str, layers: int, width: int = 64, heads: int = 1,
          activation: str = "relu", **options) -> str:
    """The hgraph IR of `layers` layers of `model` in one function `@<model>_<layers>`:
    layer i reads `activation` of layer i-1's output (none: the output as
    is) and has its own weights, named `<weight>_<i>` (`W_0`, `a_1`, ...);
    the input is `h`. Compiled with ``hectorc --training``, one training
    step covers the whole stack, which is what offload scheduling plans over.
    Every layer maps `width` features to `width` features."""
    if isinstance(layers, bool) or not isinstance(layers, int) or layers <= 0:
        raise ValueError(f"layers must be a positive integer, got {layers!r}")
    if activation not in ("relu", "none"):
        raise ValueError(f"activation must be 'relu' or 'none', got {activation!r}")
    text = generate(model, width, width, heads, **options)
    match = _SIGNATURE.search(text)
    if match is None or "!hgraph.edge" in match["args"]:
        raise ValueError(f"{model} with options {options} has edge-wise inputs or several "
                         f"results: stack() chains one node-wise result into the next layer "
                         f"only")
    args = _ARGUMENT.findall(match["args"])
    out_type = match["out"]
    body = text[match.end():text.index("  hgraph.return")]
    feature = _feature("node", width)
    if out_type != feature:
        raise ValueError(f"{model} with {heads} heads returns {out_type}, which its next layer "
                         f"cannot read as {feature}: stack it with heads=1")
    weights = [(name, type_) for name, type_ in args if name != "h"]
    params = [_arg("h", feature)] + [_arg(f"{name}_{i}", type_)
                                     for i in range(layers) for name, type_ in weights]
    lines, current = [], "h"
    for i in range(layers):
        if i and activation == "relu":
            lines.append(f"  %x_{i} = hgraph.relu %{current} : {feature}\n")
            current = f"x_{i}"
        names = {"g": "g", "h": current, **{name: f"{name}_{i}" for name, _ in weights}}
        lines.append(_VALUE.sub(lambda m: "%" + names.get(m[1], f"{m[1]}_{i}"), body))
        current = f"out_{i}"
    header = (f"// {layers} layers of {model} (BRIEF.md §4), width {width}, {heads} head(s), "
              f"{activation} between layers\n")
    return (header + f"hgraph.func @{model}_{layers}(%g: !hgraph.graph, {', '.join(params)})"
            f" -> {feature} {{\n" + "".join(lines)
            + f"  hgraph.return %{current} : {feature}\n}}\n")


def spec(model: str, width: int = 64, out_width=None, heads: int = 1, **options) -> str:
    """The canonical text of one model configuration, as hector.aot takes it:
    "rgat:width=64,out_width=64,heads=4" (options that differ from their
    defaults follow). generate() must accept the same arguments."""
    generate(model, width, out_width, heads, **options)  # validates
    out_width = width if out_width is None else out_width
    fields = [f"width={width}", f"out_width={out_width}", f"heads={heads}"]
    fields += [f"{k}={options[k] if isinstance(options[k], str) else repr(options[k])}"
               for k in sorted(options) if options[k] != OPTIONS[model][k]]
    return f"{model}:{','.join(fields)}"


def parse_spec(text: str) -> dict:
    """"rgat:width=64,heads=4" -> {"model": "rgat", "width": 64, "heads": 4}:
    the arguments of generate(). Raises ValueError on malformed text."""
    model, _, rest = text.partition(":")
    if model not in MODELS:
        raise ValueError(f"model spec {text!r}: unknown model {model!r}; known: "
                         f"{', '.join(sorted(MODELS))}")
    args = {"model": model}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ValueError(f"model spec {text!r}: expected key=value, got {item!r}")
        if key in args:
            raise ValueError(f"model spec {text!r}: {key} given twice")
        if key in CHOICES:
            args[key] = value
            continue
        try:
            args[key] = int(value)
        except ValueError:
            try:
                args[key] = float(value)
            except ValueError:
                raise ValueError(f"model spec {text!r}: {key} must be a number, "
                                 f"got {value!r}") from None
    return args


def from_spec(text: str) -> str:
    """The IR of a model spec ("rgat:width=64,heads=4")."""
    args = parse_spec(text)
    try:
        return generate(args.pop("model"), **args)
    except (TypeError, ValueError) as err:  # TypeError: an unknown keyword of generate()
        raise ValueError(f"model spec {text!r}: {err}") from None

#!/usr/bin/env python3
"""Writes the single-layer RGCN, RGAT and HGT models of BRIEF.md §4 in the
hgraph inter-operator IR, for any feature width and head count.

    python3 examples/generate.py rgat --width 64 --heads 4 > rgat-64x4.mlir

The committed examples/{rgcn,rgat,hgt}.mlir are this script's output with the
defaults (in = out = 64, one head); a lit test checks that they still are.
"""

import argparse
import math
import sys


def feature(kind, width, heads=1):
    suffix = f", heads = {heads}" if heads != 1 else ""
    return f"!hgraph.{kind}<{width}xf32{suffix}>"


def weight(index, *shape):
    return f"!hgraph.weight<{index}, {'x'.join(map(str, shape))}xf32>"


def arg(name, type_):
    """A function argument named for the compiled entry point's manifest."""
    return f'%{name}: {type_} {{hgraph.name = "{name}"}}'


def rgcn(width_in, width_out, heads):
    if heads != 1:
        raise ValueError("RGCN has no heads")
    h, o = feature("node", width_in), feature("node", width_out)
    msg, norm = feature("edge", width_out), feature("edge", 1)
    w, w0 = weight("edge", width_in, width_out), weight("single", width_in, width_out)
    return f"""// RGCN (BRIEF.md §4):
//   h'_t = W_0ᵀ h_t + Σ_{{e=(s→t)}} c_e · W_φ(e)ᵀ h_s,
//   c_e  = 1 / |{{e' = (s'→t) : φ(e') = φ(e)}}|
hgraph.func @rgcn(%g: !hgraph.graph, {arg("h", h)},
                  {arg("W", w)}, {arg("W0", w0)}) -> {o} {{
  %msg = hgraph.typed_linear %W, %h from src : {w}, {h} -> {msg}
  %norm = hgraph.relation_norm %g : !hgraph.graph -> {norm}
  %scaled = hgraph.scale %norm, %msg : {norm}, {msg} -> {msg}
  %agg = hgraph.aggregate sum %scaled : {msg} -> {o}
  %self = hgraph.typed_linear %W0, %h from node : {w0}, {h} -> {o}
  %out = hgraph.add %self, %agg : {o}
  hgraph.return %out : {o}
}}
"""


def rgat(width_in, width_out, heads):
    h = feature("node", width_in)
    z, o = feature("edge", width_out, heads), feature("node", width_out, heads)
    s = feature("edge", heads, heads)
    w, v = weight("edge", width_in, width_out), weight("edge", width_out)
    return f"""// RGAT (BRIEF.md §4), {heads} head(s) of {width_out // heads} features:
//   z_e     = W_φ(e)ᵀ h_s
//   score_e = LeakyReLU_0.2(a_φ(e)·z_e + b_φ(e)·(W_φ(e)ᵀ h_t))   (per head)
//   α_e     = softmax of score over the incoming edges of t
//   h'_t    = Σ_e α_e z_e
hgraph.func @rgat(%g: !hgraph.graph, {arg("h", h)},
                  {arg("W", w)}, {arg("a", v)}, {arg("b", v)}) -> {o} {{
  %z = hgraph.typed_linear %W, %h from src : {w}, {h} -> {z}
  %zt = hgraph.typed_linear %W, %h from dst : {w}, {h} -> {z}
  %av = hgraph.typed_vector %a : {v} -> {z}
  %bv = hgraph.typed_vector %b : {v} -> {z}
  %sa = hgraph.dot %z, %av : {z} -> {s}
  %sb = hgraph.dot %zt, %bv : {z} -> {s}
  %sum = hgraph.add %sa, %sb : {s}
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : {s}
  %alpha = hgraph.edge_softmax %score : {s}
  %msg = hgraph.scale %alpha, %z : {s}, {z} -> {z}
  %out = hgraph.aggregate sum %msg : {z} -> {o}
  hgraph.return %out : {o}
}}
"""


def hgt(width_in, width_out, heads):
    if width_in != width_out:
        raise ValueError("HGT's residual h'_t = ... + h_t needs in == out")
    d, a = width_in, width_in // heads
    h = feature("node", d)
    nh, eh = feature("node", d, heads), feature("edge", d, heads)
    s = feature("edge", heads, heads)
    wn, wh, mu = weight("node", d, d), weight("edge", heads, a, a), weight("edge", heads)
    # repr() of a float is the shortest exact form; MLIR parses it back exactly.
    inv_sqrt = float(1.0 / math.sqrt(a))
    return f"""// HGT (BRIEF.md §4), {heads} head(s) of {a} features:
//   k_s = K_τ(s) h_s,  q_t = Q_τ(t) h_t,  v_s = V_τ(s) h_s
//   score_e = (k_s W^att_φ(e) · q_t) · μ_φ(e) / √{a}        (per head)
//   α = softmax over the incoming edges of t
//   m_e = v_s W^msg_φ(e)
//   h'_t = A_τ(t) Σ_e α_e m_e + h_t
hgraph.func @hgt(%g: !hgraph.graph, {arg("h", h)},
                 {arg("K", wn)}, {arg("Q", wn)}, {arg("V", wn)}, {arg("A", wn)},
                 {arg("Watt", wh)}, {arg("Wmsg", wh)}, {arg("mu", mu)}) -> {h} {{
  %k = hgraph.typed_linear %K, %h from node : {wn}, {h} -> {nh}
  %q = hgraph.typed_linear %Q, %h from node : {wn}, {h} -> {nh}
  %v = hgraph.typed_linear %V, %h from node : {wn}, {h} -> {nh}
  %katt = hgraph.typed_linear %Watt, %k from src : {wh}, {nh} -> {eh}
  %qt = hgraph.gather %q from dst : {nh} -> {eh}
  %dot = hgraph.dot %katt, %qt : {eh} -> {s}
  %muv = hgraph.typed_vector %mu : {mu} -> {s}
  %prior = hgraph.mul %dot, %muv : {s}
  %score = hgraph.const_scale %prior by {inv_sqrt!r} : {s}
  %alpha = hgraph.edge_softmax %score : {s}
  %m = hgraph.typed_linear %Wmsg, %v from src : {wh}, {nh} -> {eh}
  %msg = hgraph.scale %alpha, %m : {s}, {eh} -> {eh}
  %agg = hgraph.aggregate sum %msg : {eh} -> {nh}
  %out0 = hgraph.typed_linear %A, %agg from node : {wn}, {nh} -> {h}
  %out = hgraph.add %out0, %h : {h}
  hgraph.return %out : {h}
}}
"""


MODELS = {"rgcn": rgcn, "rgat": rgat, "hgt": hgt}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--width", type=int, default=64,
                        help="input feature width (default 64)")
    parser.add_argument("--out-width", type=int, default=None,
                        help="output feature width (default: --width)")
    parser.add_argument("--heads", type=int, default=1,
                        help="attention heads, must divide the widths (default 1)")
    args = parser.parse_args(argv)
    out_width = args.out_width or args.width
    if args.width <= 0 or out_width <= 0 or args.heads <= 0:
        parser.error("widths and heads must be positive")
    if out_width % args.heads or args.width % args.heads:
        parser.error(f"--heads {args.heads} must divide the widths")
    try:
        sys.stdout.write(MODELS[args.model](args.width, out_width, args.heads))
    except ValueError as err:
        parser.error(str(err))


if __name__ == "__main__":
    main()

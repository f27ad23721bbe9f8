"""Long and deeply shared hgraph programs, for the compile-time tests
(test/hectorc/compile-time.mlir) and their numerical checks
(test/python/test_long_programs_cpu.py).

Every program is one layer: v0 = typed_linear W, h from src (an edge-typed
weight), then `steps` row-wise steps on edges, then `aggregate sum` into
the destinations:

  add      v' = add v, v            (each value read twice: 2^steps paths)
  swish    v' = mul v, sigmoid(v)   (x * sigmoid(x), repeated)
  residual v' = 0.5 * (v + tanh(v)) (v read twice; values and gradients stay
                                     near their start however long it is)
  chain    v' = tanh / neg / sigmoid / relu of v, in turn (a plain chain)
  linear   v' = typed_linear W, v from edge (GEMMs; compaction marks every
                                     map, the gradient is a chain of maps)

With --compact the last step is marked compact-materialized, so that the
verifier checks the whole chain depends only on (source, edge type).

    python3 test/long_programs.py swish 12 [--width 8] [--compact]
"""

from __future__ import annotations

import argparse

KINDS = ("add", "swish", "residual", "chain", "linear")
CHAIN_OPS = ("tanh", "neg", "sigmoid", "relu")


def program(kind: str, steps: int, width: int = 8, compact: bool = False) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    edge = f"!hgraph.edge<{width}xf32>"
    node = f"!hgraph.node<{width}xf32>"
    weight = f"!hgraph.weight<edge, {width}x{width}xf32>"
    lines = [f'hgraph.func @f(%g: !hgraph.graph, %h: {node} {{hgraph.name = "h"}}, '
             f'%W: {weight} {{hgraph.name = "W"}}) -> {node} {{',
             f"  %v0 = hgraph.typed_linear %W, %h from src : {weight}, {node} -> {edge}"]
    for k in range(steps):
        mark = (" {hgraph.materialization = #hgraph.materialization<compact>}"
                if compact and k == steps - 1 else "")
        if kind == "add":
            lines.append(f"  %v{k + 1} = hgraph.add %v{k}, %v{k}{mark} : {edge}")
        elif kind == "swish":
            lines.append(f"  %s{k} = hgraph.sigmoid %v{k} : {edge}")
            lines.append(f"  %v{k + 1} = hgraph.mul %v{k}, %s{k}{mark} : {edge}")
        elif kind == "residual":
            lines.append(f"  %t{k} = hgraph.tanh %v{k} : {edge}")
            lines.append(f"  %s{k} = hgraph.add %v{k}, %t{k} : {edge}")
            lines.append(f"  %v{k + 1} = hgraph.const_scale %s{k} by 0.5{mark} : {edge}")
        elif kind == "linear":
            lines.append(f"  %v{k + 1} = hgraph.typed_linear %W, %v{k} from edge{mark} : "
                         f"{weight}, {edge} -> {edge}")
        else:
            op = CHAIN_OPS[k % len(CHAIN_OPS)]
            lines.append(f"  %v{k + 1} = hgraph.{op} %v{k}{mark} : {edge}")
    lines.append(f"  %out = hgraph.aggregate sum %v{steps} : {edge} -> {node}")
    lines.append(f"  hgraph.return %out : {node}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def reference(kind: str, steps: int, v):
    """The row-wise steps of `program` applied to torch tensor `v` (not for
    "linear")."""
    import torch

    if kind == "linear":
        raise ValueError("no reference for 'linear' programs")
    for k in range(steps):
        if kind == "add":
            v = v + v
        elif kind == "swish":
            v = v * torch.sigmoid(v)
        elif kind == "residual":
            v = 0.5 * (v + torch.tanh(v))
        else:
            op = CHAIN_OPS[k % len(CHAIN_OPS)]
            v = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "neg": torch.neg,
                 "relu": torch.relu}[op](v)
    return v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("steps", type=int)
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--compact", action="store_true")
    args = parser.parse_args()
    print(program(args.kind, args.steps, args.width, args.compact), end="")


if __name__ == "__main__":
    main()

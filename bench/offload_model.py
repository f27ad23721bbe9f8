#!/usr/bin/env python3
"""The offload planner's memory model against what a CPU library holds.

hgraph-offload-scheduling (docs/offload.md) plans with a model of a training
step's memory: what the lowering allocates (the values it stores, from their
producer to their last reader, the per-pair sums, the softmax's per-node
scratch) and the caller's buffers (results, saved values); not the
arguments. This script compares its "step peak kept" (nothing moved) with a
measurement of the same step, compiled for the CPU (the hgraph and htmpl
stages, hence the temporaries, are the GPU's) with the backward the pass
reorders (--offload=auto under a capacity nothing exceeds: nothing moves):

    measured = max(forward: its temporaries' peak + its results (saved included),
                   backward: its temporaries' peak + the saved values + its results)

arguments left out on both sides. The temporaries' peak is what the CPU
runtime counts (CompiledLibrary.peak_temporary_bytes; blocks at their
capacity). A model below the measurement under-counts: the capacity a plan
keeps to is then exceeded by that much.

    python3 bench/offload_model.py --models rgat,hgt --layers 2 --width 64 \\
        --graphs bgs:0.25,mutag:1 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from repo_paths import REPO
from hector import compiled, graph as hgraph, models
from hector.datasets import synthetic

MIB = 2.0 ** 20
BUILD = os.environ.get("HECTOR_BUILD_DIR", os.path.join(REPO, "build"))
# A capacity no measured step reaches: the pass reorders the backward (as it
# does before any plan) and moves nothing.
NOTHING_MOVES_MIB = 1000000


def modelled_peak(source: str, pre, directory: str) -> float:
    """The planner's step peak with every saved value kept, in bytes."""
    path = os.path.join(directory, "model.mlir")
    with open(path, "w") as f:
        f.write(source)
    sizes = f"N={pre.N},E={pre.E},P={pre.P},R={pre.R},T={pre.T}"
    hgraph_ir = subprocess.run(
        [os.path.join(BUILD, "bin", "hectorc"), path, "--training", f"--graph-sizes={sizes}",
         "--emit=hgraph"], check=True, capture_output=True, text=True).stdout
    options = (f"mode=auto capacity-mib={NOTHING_MOVES_MIB} report=true num-nodes={pre.N} "
               f"num-edges={pre.E} num-pairs={pre.P} num-edge-types={pre.R} "
               f"num-node-types={pre.T}")
    report = subprocess.run(
        [os.path.join(BUILD, "bin", "hector-opt"), f"--hgraph-offload-scheduling={options}"],
        input=hgraph_ir, check=True, capture_output=True, text=True).stderr
    match = re.search(r"step peak ([0-9.]+) MiB kept", report)
    if not match:
        raise RuntimeError("no plan report from hgraph-offload-scheduling:\n" + report)
    return float(match.group(1)) * MIB


def measured_peak(library, name: str, pre, seed: int) -> dict:
    """One training step on the CPU; bytes of temporaries, results, saved."""
    forward, backward = library.training_entries(name)
    symbols = {"N": pre.N, "E": pre.E, "P": pre.P, "R": pre.R, "T": pre.T}
    rng = np.random.default_rng(seed)
    arrays, values = pre.arrays(), {}

    def shape(arg):
        dims = []
        for dim in arg.shape:
            if isinstance(dim, int):
                dims.append(dim)
            else:
                base, _, plus = dim.partition("+")
                dims.append(symbols[base] + (int(plus) if plus else 0))
        return tuple(dims)

    def call(entry):
        args, results = {}, 0
        for arg in entry.arguments:
            if arg.role == "graph":
                args[arg.name] = arrays[arg.name]
            elif arg.is_output:
                values[arg.name] = args[arg.name] = np.zeros(shape(arg), np.float32)
                results += values[arg.name].nbytes
            else:
                if arg.name not in values:
                    values[arg.name] = (0.1 * rng.standard_normal(shape(arg))).astype(np.float32)
                args[arg.name] = values[arg.name]
        library.peak_temporary_bytes(reset=True)
        entry(**args)
        return library.peak_temporary_bytes(), results

    forward_temporaries, forward_results = call(forward)
    saved = sum(values[a.name].nbytes for a in forward.arguments if a.role == "saved")
    backward_temporaries, backward_results = call(backward)
    return {"forward_temporaries": forward_temporaries, "forward_results": forward_results,
            "saved": saved, "backward_temporaries": backward_temporaries,
            "backward_results": backward_results,
            "peak": max(forward_temporaries + forward_results,
                        backward_temporaries + saved + backward_results)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="rgat,hgt,rgcn")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--graphs", default="bgs:0.25,mutag:1",
                    help="NAME:SCALE of the synthetic benchmark graphs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    rows = []
    print(f"{'model':>8} {'graph':>10} {'N':>8} {'E':>9} {'P':>8} {'model MiB':>10} "
          f"{'measured MiB':>13} {'model/measured':>15}")
    for spec in args.graphs.split(","):
        name, _, scale = spec.partition(":")
        g = synthetic.generate(name, seed=args.seed, scale=float(scale or 1))
        pre = hgraph.preprocess(g.node_type, g.src, g.dst, g.etype, g.num_node_types,
                                g.num_edge_types)
        for model in args.models.split(","):
            source = models.stack(model, args.layers, args.width)
            with tempfile.TemporaryDirectory() as directory:
                model_bytes = modelled_peak(source, pre, directory)
                library_path = os.path.join(directory, "lib.so")
                sizes = f"N={pre.N},E={pre.E},P={pre.P},R={pre.R},T={pre.T}"
                with open(os.path.join(directory, "model.mlir"), "w") as f:
                    f.write(source)
                subprocess.run([os.path.join(BUILD, "bin", "hectorc"),
                                os.path.join(directory, "model.mlir"), "--target=cpu",
                                "--training", f"--graph-sizes={sizes}", "--offload=auto",
                                f"--offload-capacity-mib={NOTHING_MOVES_MIB}", "-o",
                                library_path], check=True)
                measured = measured_peak(compiled.load(library_path),
                                         f"{model}_{args.layers}", pre, args.seed)
            row = {"model": model, "layers": args.layers, "width": args.width, "graph": spec,
                   "N": pre.N, "E": pre.E, "P": pre.P, "model_bytes": model_bytes, **measured}
            rows.append(row)
            print(f"{model:>8} {spec:>10} {pre.N:>8} {pre.E:>9} {pre.P:>8} "
                  f"{model_bytes / MIB:>10.1f} {measured['peak'] / MIB:>13.1f} "
                  f"{model_bytes / measured['peak']:>15.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compiles RGAT with hectorc and runs its forward pass on the bundled Debian
package graph (examples/data/debian-packages.npz): on the GPU when torch sees
one, else with the CPU backend. Prints the graph, the compile and run times,
and a summary of the output.

    python3 examples/forward_debian.py [--hectorc build/bin/hectorc] [--width 64] [--heads 4]
    python3 examples/forward_debian.py --library librgat.so   # prebuilt (no hectorc here)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from hector import compiled, graph as hgraph
from hector.datasets.debian import load_debian_graph

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cuda_available():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def compile_rgat(args, target):
    workdir = tempfile.mkdtemp(prefix="hector-")
    source = subprocess.run([sys.executable, os.path.join(REPO, "examples", "generate.py"),
                             "rgat", "--width", str(args.width), "--heads", str(args.heads)],
                            capture_output=True, text=True, check=True).stdout
    model, lib_path = os.path.join(workdir, "rgat.mlir"), os.path.join(workdir, "librgat.so")
    with open(model, "w") as f:
        f.write(source)
    start = time.perf_counter()
    subprocess.run([args.hectorc, model, f"--target={target}", "-o", lib_path], check=True)
    print(f"hectorc --target={target}: {time.perf_counter() - start:.2f} s -> {lib_path}")
    return compiled.load(lib_path)["rgat"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hectorc", default=os.path.join(REPO, "build", "bin", "hectorc"))
    parser.add_argument("--width", type=int, default=64, help="feature width (hashed bag of words)")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--library", help="use this library (built by hectorc for RGAT with "
                        "--width/--heads) instead of compiling")
    args = parser.parse_args()

    g = load_debian_graph(feature_dim=args.width)
    print(f"graph: {g.num_nodes} nodes, {len(g.src)} edges, {g.num_node_types} node types, "
          f"{g.num_edge_types} edge types")

    target = "cuda" if cuda_available() else "cpu"
    if args.library:
        lib = compiled.load(args.library)
        target = lib.target
        entry = lib["rgat"]
    else:
        entry = compile_rgat(args, target)


    rng = np.random.default_rng(args.seed)
    r, d = g.num_edge_types, args.width
    weights = {"W": rng.uniform(-1, 1, (r, d, d)) * np.sqrt(3.0 / d),
               "a": rng.uniform(-1, 1, (r, d)), "b": rng.uniform(-1, 1, (r, d))}
    values = {k: v.astype(np.float32) for k, v in weights.items()}
    values["h"] = np.ascontiguousarray(g.features, dtype=np.float32)
    values["result0"] = np.zeros((g.num_nodes, d), np.float32)

    start = time.perf_counter()
    if target == "cuda":
        import torch
        device = torch.device("cuda")
        pre = hgraph.preprocess(g.node_type, g.src, g.dst, g.etype, g.num_node_types,
                                g.num_edge_types, device=device)
        values = {k: torch.from_numpy(v).to(device) for k, v in values.items()}
    else:
        pre = hgraph.preprocess(g.node_type, g.src, g.dst, g.etype, g.num_node_types,
                                g.num_edge_types)
    print(f"preprocessing ({target}): {time.perf_counter() - start:.2f} s, "
          f"{pre.P} unique (source, type) pairs = {pre.P / max(pre.E, 1):.2f} of the edges")
    values.update(pre.arrays())
    call = {a.name: values[a.name] for a in entry.arguments}
    for attempt in ("first", "second"):
        start = time.perf_counter()
        entry(**call)
        print(f"forward ({attempt} call): {1e3 * (time.perf_counter() - start):.1f} ms")
    out = values["result0"]
    out = out.cpu().numpy() if hasattr(out, "cpu") else out
    receiving = np.diff(pre.csr_row_ptr.cpu().numpy() if hasattr(pre.csr_row_ptr, "cpu")
                        else pre.csr_row_ptr) > 0
    print(f"output: {out.shape}, finite: {bool(np.isfinite(out).all())}, mean |h'| over "
          f"nodes with in-edges: {np.abs(out[receiving]).mean():.4f}, rows of nodes without: "
          f"{'all zero' if not np.abs(out[~receiving]).any() else 'NONZERO'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Forward-pass (or training-step) time of RGCN, RGAT and HGT compiled by
`hectorc --target=cpu`.

    python3 bench/cpu_forward.py [--hectorc build/bin/hectorc] [--width 64]
        [--heads 1] [--threads 1,2] [--repeat 5] [--graphs debian,bgs:0.25]
        [--models rgcn,rgat,hgt] [--hectorc-flag=--opt-level=3 ...]
        [--training] [--json out.json]

Graphs: `debian` is the bundled Debian package graph
(examples/data/debian-packages.npz); `NAME:SCALE` is the synthetic graph
shaped like benchmark dataset NAME (python/hector/datasets), at SCALE times
its node and edge counts. Each model is compiled once; each (model, graph,
thread count) runs one warm-up call and then --repeat timed calls; the table
shows the median in ms, wall clock and CPU time of the process (on a
machine shared with other jobs the CPU time of a one-thread run is the
steadier measure of the code). Thread counts are passed to the library
through HECTOR_NUM_THREADS, set before each call.

GFLOP/s is an estimate from the formulas of BRIEF.md section 4 as written
(a multiply-add counts 2; edge-wise terms once per edge):
  rgcn: E (2 d^2 + 2 d) + N (2 d^2 + d)
  rgat: E (4 d^2 + 6 d)                       (z_e, W h_t, two dots, sum)
  hgt:  N (8 d^2 + d) + E (4 d^2 / H + 4 d)   (K, Q, V, A; Watt, Wmsg per edge)
It is the same count for every implementation, not what Hector executes.

--training compiles with `hectorc --training` and times one forward plus
backward through hector.autograd (torch): loss = sum(out * G) for a fixed
random G, gradients of h and of every weight. Its GFLOP/s counts 3x the
forward's FLOPs (the usual estimate of a training step).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from repo_paths import REPO  # noqa: E402  (sets the import paths)

import numpy as np  # noqa: E402

from hector import compiled, graph as hgraph  # noqa: E402
from reference import params  # noqa: E402


def model_flops(model, n, e, d, heads):
    if model == "rgcn":
        return e * (2 * d * d + 2 * d) + n * (2 * d * d + d)
    if model == "rgat":
        return e * (4 * d * d + 6 * d)
    return n * (8 * d * d + d) + e * (4 * d * d // heads + 4 * d)


def load_graph(spec, width):
    """(name, dict with node_type/src/dst/etype/num_*_types, features)."""
    if spec == "debian":
        from hector.datasets.debian import load_debian_graph
        g = load_debian_graph(feature_dim=width)
        features = np.ascontiguousarray(g.features, dtype=np.float32)
    else:
        from hector.datasets.synthetic import generate
        name, _, scale = spec.partition(":")
        g = generate(name, scale=float(scale or 1.0), seed=0)
        features = np.random.default_rng(1).uniform(-1, 1, (g.num_nodes, width)).astype(np.float32)
    graph = {"node_type": g.node_type, "src": g.src, "dst": g.dst, "etype": g.etype,
             "num_node_types": g.num_node_types, "num_edge_types": g.num_edge_types}
    return spec, graph, features


def compile_model(hectorc, model, width, heads, flags, workdir, training=False):
    source = subprocess.run([sys.executable, os.path.join(REPO, "examples", "generate.py"),
                             model, "--width", str(width), "--heads", str(heads)],
                            capture_output=True, text=True, check=True).stdout
    path = os.path.join(workdir, f"{model}.mlir")
    with open(path, "w") as f:
        f.write(source)
    lib = os.path.join(workdir, f"lib{model}.so")
    start = time.perf_counter()
    subprocess.run([hectorc, path, "--target=cpu", "-o", lib, *flags,
                    *(["--training"] if training else [])], check=True)
    library = compiled.load(lib)
    return (library if training else library[model]), time.perf_counter() - start


def training_step(library, model, pre, values):
    """A callable running forward + backward once (torch autograd)."""
    import torch
    from hector import autograd
    leaves = {k: torch.tensor(v, requires_grad=True) for k, v in values.items()}
    cotangent = torch.from_numpy(np.random.default_rng(2).standard_normal(
        (pre.N, values["h"].shape[1])).astype(np.float32))

    def step():
        for leaf in leaves.values():
            leaf.grad = None
        out, = autograd.run(library, model, pre, check_indices=False, **leaves)
        (out * cotangent).sum().backward()
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    build = os.environ.get("HECTOR_BUILD_DIR") or os.path.join(REPO, "build")
    parser.add_argument("--hectorc", default=os.path.join(build, "bin", "hectorc"))
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--heads", type=int, default=1)
    parser.add_argument("--threads", default="",
                        help="comma-separated thread counts (default: the library's default)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--graphs", default="debian,bgs:0.25")
    parser.add_argument("--models", default="rgcn,rgat,hgt")
    parser.add_argument("--hectorc-flag", action="append", default=[],
                        help="extra hectorc option (repeatable)")
    parser.add_argument("--training", action="store_true",
                        help="time forward + backward (hectorc --training, torch autograd)")
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args()

    threads = [int(t) for t in args.threads.split(",") if t] or [None]
    workdir = tempfile.mkdtemp(prefix="hector-bench-")
    print(f"# {platform.node()}: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; "
          f"hectorc {args.hectorc} {' '.join(args.hectorc_flag)}; width {args.width}, "
          f"heads {args.heads}, {'training step' if args.training else 'forward'}, "
          f"median of {args.repeat}")
    entries = {}
    for model in args.models.split(","):
        entries[model], seconds = compile_model(args.hectorc, model, args.width, args.heads,
                                                args.hectorc_flag, workdir, args.training)
        print(f"# compiled {model} in {seconds:.1f} s")
    rows = []
    print(f"{'graph':<14} {'N':>8} {'E':>9} {'model':<5} {'threads':>7} {'ms':>9} "
          f"{'cpu ms':>9} {'GFLOP/s':>8}")
    for spec in args.graphs.split(","):
        name, graph, features = load_graph(spec, args.width)
        pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                                graph["num_node_types"], graph["num_edge_types"])
        n, e = pre.N, pre.E
        for model, entry in entries.items():
            weights = params.make_params(model, graph, args.width, args.width, args.heads)
            values = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
            if args.training:
                run = training_step(entry, model, pre, dict(values, h=features))
            else:
                values.update(pre.arrays(), h=features,
                              result0=np.zeros((n, args.width), np.float32))
                call = {a.name: values[a.name] for a in entry.arguments}
                run = lambda: entry(**call)  # noqa: E731
            for count in threads:
                if count is not None:
                    os.environ["HECTOR_NUM_THREADS"] = str(count)
                run()  # warm-up: page faults of the temporaries, caches
                times, cpu_times = [], []
                for _ in range(args.repeat):
                    start, cpu_start = time.perf_counter(), time.process_time()
                    run()
                    times.append(time.perf_counter() - start)
                    cpu_times.append(time.process_time() - cpu_start)
                ms = 1e3 * float(np.median(times))
                cpu_ms = 1e3 * float(np.median(cpu_times))
                flops = model_flops(model, n, e, args.width, args.heads)
                gflops = (3 if args.training else 1) * flops / (ms * 1e6)
                label = "default" if count is None else str(count)
                print(f"{name:<14} {n:>8} {e:>9} {model:<5} {label:>7} {ms:>9.1f} "
                      f"{cpu_ms:>9.1f} {gflops:>8.2f}", flush=True)
                rows.append({"graph": name, "N": n, "E": e, "model": model, "threads": count,
                             "ms": ms, "cpu_ms": cpu_ms, "gflops": gflops,
                             "times_ms": [1e3 * t for t in times]})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"width": args.width, "heads": args.heads, "flags": args.hectorc_flag,
                       "training": args.training, "hectorc": args.hectorc,
                       "cpus": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

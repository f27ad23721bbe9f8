"""Activation offload of a whole model's training step, against its peers.

A stack of layers (hector.models.stack: L layers of RGAT, HGT or RGCN in one
training program) on a benchmark graph shape, one training step per call,
with every contender in the same run:

  keep         the library built to keep every saved value on the GPU
  keep_again   the same, run again: its gradients' difference from keep's is
               the run-to-run spread (atomic sums in another order)
  reorder      built with --offload=auto and no capacity: the planner's
               reordering of the backward, and only moves that hide
  host, disk   built with hectorc --offload=host|disk: the plan's evictions
               and prefetches go through the runtime's tensor cache
  auto         built with --offload=auto under --auto-capacity-mib
  hooks        the keep library under hector.offload (saved_tensors_hooks
               into the same cache, host tier)
  save_on_cpu  the keep library under torch.autograd.graph.save_on_cpu(pin_memory=True)
  checkpoint   the keep library under torch.utils.checkpoint (the forward
               runs again in the backward: recompute everything)

For each: the median step time, the peak GPU memory of the step
(torch.cuda.max_memory_allocated: Hector's temporaries come from torch's
allocator), the bytes the plan moves per tier (from the manifest's shapes),
and the largest relative difference of the gradients from keep's.

The GPU machines have no compiler: build the libraries here first,

    python3 bench/offload.py --build DIR --model rgat --layers 3 --width 64 --dataset am

then, on the GPU machine,

    python3 bench/offload.py --libs DIR --model rgat --layers 3 --width 64 --dataset am \\
        --cache-dir /tmp --out OUT

With --digest-dir, each contender's gradients are saved (weights in full,
the input's gradient as its norm and 4 random projections), so that runs on
different machines can be compared: `--compare A.npz B.npz` prints the
normwise relative difference of every gradient.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import repo_paths  # noqa: E402,F401  (sets the import paths)
from repo_paths import REPO  # noqa: E402

CONTENDERS = ("keep", "keep_again", "reorder", "host", "disk", "auto", "hooks", "save_on_cpu",
              "checkpoint")
PLANS = {"keep": (), "reorder": ("--offload=auto",), "host": ("--offload=host",),
         "disk": ("--offload=disk",)}


def library_name(args, plan: str) -> str:
    return f"lib{args.model}_{args.layers}x{args.width}_h{args.heads}_{plan}.so"


def graph_of(args):
    from hector.datasets.synthetic import generate
    return generate(args.dataset, scale=args.scale, seed=args.seed)


def build(args) -> None:
    """Compiles the keep, host, disk and auto libraries (CUDA) into --build."""
    from hector import models
    from hector.datasets.heterograph import compaction_ratio
    os.makedirs(args.build, exist_ok=True)
    g = graph_of(args)
    pairs = int(round(compaction_ratio(g) * g.num_edges))
    sizes = (f"--graph-sizes=N={g.num_nodes},E={g.num_edges},P={max(pairs, 1)},"
             f"R={g.num_edge_types},T={g.num_node_types}")
    source = os.path.join(args.build, f"{args.model}_{args.layers}x{args.width}.mlir")
    with open(source, "w") as f:
        f.write(models.stack(args.model, args.layers, width=args.width, heads=args.heads))
    hectorc = os.path.join(os.environ.get("HECTOR_BUILD_DIR", os.path.join(REPO, "build")),
                           "bin", "hectorc")
    auto = ["--offload=auto", f"--offload-capacity-mib={args.auto_capacity_mib}"]
    if args.offload_rates:
        auto.append(f"--offload-rates={args.offload_rates}")
    plans = dict(PLANS, auto=tuple(auto))
    for plan, options in plans.items():
        if plan not in args.plans:
            continue
        out = os.path.join(args.build, library_name(args, plan))
        subprocess.run([hectorc, source, "--target=cuda", "--training", sizes, *options,
                        "-o", out], check=True)
        print(f"built {out}")


def moved_bytes(entry, symbols) -> dict:
    """Bytes the forward's plan evicts, per tier (float32 rows)."""
    moved = {"host": 0, "disk": 0}
    for value in entry.offloaded:
        if value.direction == "evict":
            count = 4
            for dim in value.shape:
                count *= symbols[dim] if isinstance(dim, str) else dim
            moved[value.tier] += count
    return moved


def run(args) -> dict:
    # The tensor cache in the runtime the libraries use (hectorc copied it
    # beside them): one copy in the process.
    os.environ.setdefault("HECTOR_RUNTIME_LIB", os.path.join(args.libs, "libhector_runtime.so"))
    import numpy as np
    import torch

    from hector import autograd, compiled
    from hector.compiled import LaunchError
    from hector import graph as hgraph
    from hector.offload import offload
    from hector.tensor_cache import TensorCache

    device = torch.device("cuda")
    torch.cuda.init()  # the driver loaded, so that the cache's host pool is pinned
    cache = TensorCache(host_capacity=args.host_gib << 30, directory=args.cache_dir,
                        pinned=True, checksum=args.checksum)
    if args.pool_gib:
        # Pinned in the background while the graph loads and the first steps
        # run: no step waits for it (puts before their block is ready take
        # pageable memory, counted in puts_unready).
        cache.reserve_pool(args.pool_gib << 30)
        if args.pool_wait:
            cache.pool_wait()
    g = graph_of(args)
    pre = hgraph.preprocess(g.node_type, g.src, g.dst, g.etype, g.num_node_types,
                            g.num_edge_types, device=device)
    symbols = {k: int(getattr(pre, k)) for k in ("N", "E", "T", "R", "P")}
    name = f"{args.model}_{args.layers}"
    rng = np.random.default_rng(args.seed)
    keep = compiled.load(os.path.join(args.libs, library_name(args, "keep")))
    params = {}
    for arg in keep[name].arguments:
        if arg.role in ("input", "weight"):
            shape = autograd._shape(keep[name], arg, symbols)
            scale = 1.0 if arg.role == "input" else 1.0 / np.sqrt(max(shape[-1], 1))
            params[arg.name] = torch.tensor(
                (rng.standard_normal(shape) * scale).astype(np.float32), device=device)
    d_out = torch.tensor(rng.standard_normal((symbols["N"], args.width)).astype(np.float32),
                         device=device)

    def step(library, wrap=None):
        tensors = {k: v.detach().requires_grad_() for k, v in params.items()}

        def forward():
            return autograd.run(library, name, pre, synchronize=False, offload_cache=cache,
                                **tensors)[0]
        if wrap == "checkpoint":
            from torch.utils.checkpoint import checkpoint
            out = checkpoint(lambda *_: forward(), *tensors.values(), use_reentrant=False)
        elif wrap == "save_on_cpu":
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                out = forward()
        elif wrap == "hooks":
            with offload(cache, tier="host"):
                out = forward()
        else:
            out = forward()
        (out * d_out).sum().backward()
        return [tensors[k].grad for k in params]

    results, reference = {}, None
    for contender in args.contenders:
        plan = contender if contender in ("reorder", "host", "disk", "auto") else "keep"
        path = os.path.join(args.libs, library_name(args, plan))
        if not os.path.exists(path):
            print(f"{contender}: {path} missing, skipped", flush=True)
            continue
        library = compiled.load(path)
        capacity = cap_memory(args, contender, library)
        checksum_failures = cache.stats()["checksum_failures"]
        wrap = contender if contender in ("hooks", "save_on_cpu", "checkpoint") else None
        try:
            grads = None
            warmup = []  # the first steps pay for pinning host blocks, when no pool has them
            for _ in range(args.warmup):
                start = time.perf_counter()
                grads = step(library, wrap)
                torch.cuda.synchronize()
                warmup.append(time.perf_counter() - start)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            times = []
            for _ in range(args.steps):
                start = time.perf_counter()
                grads = step(library, wrap)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
            peak = torch.cuda.max_memory_allocated() - base
        except (torch.cuda.OutOfMemoryError, LaunchError) as err:
            if isinstance(err, LaunchError) and "memory" not in str(err).lower():
                raise
            results[contender] = {"error": "out of memory: " + str(err).splitlines()[0][:200],
                                  "capacity_gib": capacity}
            print(f"{contender}: out of memory ({str(err).splitlines()[0][:200]})", flush=True)
            grads = None
            gc.collect()
            torch.cuda.empty_cache()
            continue
        if reference is None and contender == "keep":
            reference = [g.detach().clone() for g in grads]
        diff = None
        if reference is not None:
            diff = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
                       for a, b in zip(grads, reference))
        results[contender] = {
            "step_ms": 1e3 * statistics.median(times), "steps_ms": [1e3 * t for t in times],
            "warmup_ms": [1e3 * t for t in warmup],
            "peak_gib": peak / 2**30, "moved_bytes": moved_bytes(library[f"{name}_fwd"], symbols),
            "grad_rel_diff_vs_keep": diff, "capacity_gib": capacity,
            "checksum_failures": cache.stats()["checksum_failures"] - checksum_failures}
        if args.digest_dir:
            save_digest(os.path.join(args.digest_dir, f"{contender}.npz"), list(params), grads)
        r = results[contender]
        first = f", first step {r['warmup_ms'][0]:.1f} ms" if r["warmup_ms"] else ""
        print(f"{contender}: {r['step_ms']:.2f} ms{first}, peak {r['peak_gib']:.3f} GiB, moved "
              f"{r['moved_bytes']}, grad diff {diff}", flush=True)
    stats, pool = cache.stats(), cache.pool_stats()
    if args.pool_gib:
        print(f"host pool: {pool['bytes_ready'] / 2**30:.1f} of {pool['bytes'] / 2**30:.1f} GiB "
              f"ready, {pool['bytes_pinned'] / 2**30:.1f} pinned in {pool['pin_ns'] / 1e9:.2f} s "
              f"(background); puts from it {pool['puts_pooled']}, before ready "
              f"{pool['puts_unready']}, no room {pool['puts_no_room']}", flush=True)
    cache.close()
    return {"graph": {"dataset": args.dataset, "scale": args.scale, **symbols},
            "model": {"model": args.model, "layers": args.layers, "width": args.width,
                      "heads": args.heads},
            "gpu": torch.cuda.get_device_name(), "cache_stats": stats, "pool_stats": pool,
            "results": results}


def cap_memory(args, contender: str, library):
    """Caps the GPU memory of this contender's steps (None: uncapped).

    Torch's memory fraction bounds everything torch's allocator holds (the
    libraries' temporaries come from it too); the runtime's cap on the
    libraries' temporaries applies on top, at the same size.
    """
    import torch
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    if not args.capacity_gib or contender in args.uncapped:
        torch.cuda.set_per_process_memory_fraction(1.0)
        library.set_temporary_cap(None)
        return None
    torch.cuda.set_per_process_memory_fraction(min(1.0, args.capacity_gib * 2**30 / total))
    library.set_temporary_cap(int(args.capacity_gib * 2**30))
    return args.capacity_gib


def save_digest(path: str, names, grads) -> None:
    """Small gradients in full; larger ones as norm and 4 fixed projections."""
    import numpy as np
    import torch
    os.makedirs(os.path.dirname(path), exist_ok=True)
    out = {}
    for name, g in zip(names, grads):
        g = g.detach().double().reshape(-1)
        if g.numel() <= 1 << 16:
            out[name] = g.cpu().numpy()
        else:
            # The projections in slices: a [4, numel] float64 matrix of a
            # large input's gradient would take gigabytes of device memory.
            gen = torch.Generator(device=g.device).manual_seed(7)
            sums = torch.zeros(4, dtype=g.dtype, device=g.device)
            for start in range(0, g.numel(), 1 << 24):
                part = g[start:start + (1 << 24)]
                proj = torch.randn(4, part.numel(), generator=gen, device=g.device, dtype=g.dtype)
                sums += proj @ part
            out[name] = torch.cat([g.norm().reshape(1), sums]).cpu().numpy()
    np.savez(path, **out)


def compare(a: str, b: str) -> int:
    import numpy as np
    x, y = np.load(a), np.load(b)
    worst = 0.0
    for name in sorted(y.files):
        d = float(np.linalg.norm(x[name] - y[name]) / max(np.linalg.norm(y[name]), 1e-300))
        worst = max(worst, d)
        print(f"{name}: {d:.3e}")
    print(f"largest normwise relative difference: {worst:.3e}")
    return 0


def report(data: dict) -> str:
    keep = data["results"].get("keep", {})
    lines = [f"# Offload: {data['model']} on {data['graph']} ({data['gpu']})", "",
             "| contender | capacity GiB | step ms | vs keep | first step ms | peak GiB | vs keep "
             "| moved to host / disk (MiB) | grad rel. diff | checksum failures |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in data["results"].items():
        if "error" in r:
            lines.append(f"| {name} | {r.get('capacity_gib') or ''} | {r['error']} | | | | | | | |")
            continue
        speed = keep.get("step_ms", 0) / r["step_ms"] if keep else float("nan")
        memory = r["peak_gib"] / keep["peak_gib"] if keep.get("peak_gib") else float("nan")
        moved = r["moved_bytes"]
        first = f"{r['warmup_ms'][0]:.1f}" if r.get("warmup_ms") else ""
        lines.append(f"| {name} | {r.get('capacity_gib') or 'none'} | {r['step_ms']:.2f} | "
                     f"{speed:.2f}x | {first} | {r['peak_gib']:.3f} | {memory:.2f} | "
                     f"{moved['host'] / 2**20:.0f} / {moved['disk'] / 2**20:.0f} "
                     f"| {r['grad_rel_diff_vs_keep']} | {r.get('checksum_failures', '')} |")
    pool = data.get("pool_stats") or {}
    if pool.get("bytes"):
        lines += ["", f"Host pool: {pool['bytes'] / 2**30:.1f} GiB, {pool['bytes_pinned'] / 2**30:.1f} "
                  f"GiB pinned in {pool['pin_ns'] / 1e9:.2f} s on its background thread; puts from "
                  f"it {pool['puts_pooled']}, before it was ready {pool['puts_unready']}, no room "
                  f"{pool['puts_no_room']}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", help="compile the libraries into this directory and stop")
    ap.add_argument("--libs", help="directory of the libraries (--build's)")
    ap.add_argument("--model", default="rgat", choices=("rgcn", "rgat", "hgt"))
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--dataset", default="am")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--auto-capacity-mib", type=int, default=4096)
    ap.add_argument("--offload-rates", default="",
                    help="with --build: hectorc --offload-rates for the auto plan (the rates "
                         "measured on the GPU machine)")
    ap.add_argument("--plans", default=",".join((*PLANS, "auto")),
                    help="with --build: the libraries to compile")
    ap.add_argument("--capacity-gib", type=float, default=0,
                    help="cap the GPU memory of every contender but --uncapped's (torch's "
                         "memory fraction and the runtime's cap on temporaries)")
    ap.add_argument("--uncapped", default="keep",
                    help="contenders run without --capacity-gib (keep-all's real peak)")
    ap.add_argument("--checksum", action="store_true",
                    help="the tensor cache hashes every value and checks every reload")
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--host-gib", type=int, default=64)
    ap.add_argument("--cache-dir", default=None, help="the disk tier's directory")
    ap.add_argument("--pool-gib", type=int, default=0,
                    help="reserve a pinned host pool of this size in the background at start")
    ap.add_argument("--pool-wait", action="store_true",
                    help="wait for the host pool before the first step")
    ap.add_argument("--out", help="directory for offload.json and offload.md")
    ap.add_argument("--digest-dir", help="save each contender's gradient digest here")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two digests")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    args.plans = args.plans.split(",")
    args.uncapped = args.uncapped.split(",")
    if args.build:
        build(args)
        return 0
    if not args.libs:
        ap.error("--libs (or --build) is required")
    args.contenders = [c for c in args.contenders.split(",") if c]
    unknown = sorted(set(args.contenders) - set(CONTENDERS))
    if unknown:
        ap.error(f"unknown contender {unknown[0]}; known: {', '.join(CONTENDERS)}")
    data = run(args)
    text = report(data)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "offload.json"), "w") as f:
            json.dump(data, f, indent=1)
        with open(os.path.join(args.out, "offload.md"), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

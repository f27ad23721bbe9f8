#!/usr/bin/env python3
"""GPU validation of the compiled forward passes (run on an H100/H200).

Runs the libraries that test/gpu/build_models.sh compiled (hectorc
--target=cuda) against the PyTorch fp32 references of test/reference with
TF32 off:

1. the CPU test matrix: RGCN/RGAT/HGT x widths 16..128 x 1 or 4 heads on the
   edge-case graphs of test/python/model_cases.py;
2. the 8 benchmark graph shapes of BRIEF.md §5 (hector.datasets.synthetic,
   full size) at width 64, one head.

The graph arrays are built on the GPU (hector.graph.preprocess(device=...))
and must equal the runtime's host build bit for bit.

A case passes when max|out - ref| / max|ref| < 1e-4 and every output is
finite. Out-of-memory and launch errors are reported as results. Prints a
pass/fail table (last) and writes JSON with --json.

    python3 test/gpu/models_gpu.py --libs build/gpu-models [--libs-tmpl build/gpu-models/tmpl]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import gpu_paths  # noqa: E402,F401  (sets the import paths)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from hector import compiled, graph as hgraph  # noqa: E402
from hector.datasets import synthetic  # noqa: E402
from model_cases import CONFIGS, GRAPHS, library_name  # noqa: E402
from reference import models_torch, params  # noqa: E402

TOLERANCE = 1e-4
DATASETS = ("aifb", "mutag", "bgs", "am", "fb15k", "biokg", "wikikg2", "mag")


def as_dict(graph):
    if isinstance(graph, dict):
        return graph
    return {"node_type": graph.node_type, "src": graph.src, "dst": graph.dst,
            "etype": graph.etype, "num_node_types": graph.num_node_types,
            "num_edge_types": graph.num_edge_types}


def run_case(lib, model, graph, width, heads, seed, timing):
    """Compiled vs reference on one graph; returns a result dict."""
    device = torch.device("cuda")
    graph_args = (graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                  graph["num_node_types"], graph["num_edge_types"])
    # The arrays are built on the GPU; the host build must agree bit for bit.
    pre = hgraph.preprocess(*graph_args, device=device)
    host = hgraph.preprocess(*graph_args)
    same_arrays = all(np.array_equal(getattr(pre, k).cpu().numpy(), v)
                      for k, v in host.arrays().items())
    rng = np.random.default_rng(seed)
    n = len(graph["node_type"])
    h = torch.from_numpy(rng.standard_normal((n, width)).astype(np.float32)).to(device)
    weights = params.make_params(model, graph, width, width, heads, seed=seed)
    tw = {k: torch.from_numpy(v).to(device) for k, v in weights.items()}
    arrays = pre.arrays()
    out = torch.full((n, width), float("nan"), device=device)
    entry = lib[model]
    values = dict(arrays, h=h, result0=out, **tw)
    call_args = {a.name: values[a.name] for a in entry.arguments}

    torch.cuda.reset_peak_memory_stats()
    lib.peak_temporary_bytes(reset=True)
    entry(**call_args)
    torch.cuda.synchronize()
    # torch's tensors plus the temporaries the library allocates itself.
    peak = torch.cuda.max_memory_allocated() + (
        0 if lib.temporaries_in_torch else lib.peak_temporary_bytes())
    result = {"peak_bytes": int(peak)}
    if timing:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(3):
            start.record()
            entry(**call_args, synchronize=False, check_indices=False)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        result["ms"] = float(np.median(times))

    tg = models_torch.TorchGraph(graph, device=device, float_dtype=torch.float32)
    with torch.no_grad():
        expected = models_torch.forward(model, tg, h, tw, heads)
    finite = bool(torch.isfinite(out).all())
    scale = float(expected.abs().max().clamp_min(1e-30))
    error = float((out - expected).abs().max()) / scale if finite else float("inf")
    result.update(error=error, device_preprocessing=same_arrays,
                  passed=finite and error < TOLERANCE and same_arrays)
    return result


def guarded(fn, *args):
    try:
        return fn(*args)
    except torch.cuda.OutOfMemoryError as err:
        torch.cuda.empty_cache()
        return {"passed": False, "status": "out of memory", "detail": str(err)[:200]}
    except (compiled.LaunchError, ValueError, TypeError, RuntimeError) as err:
        torch.cuda.empty_cache()
        return {"passed": False, "status": type(err).__name__, "detail": str(err)[:300]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libs", required=True, help="directory of build_models.sh")
    parser.add_argument("--label", default="loops", help="variant name of --libs in the table")
    parser.add_argument("--libs-tmpl", help="its tmpl/ directory (htmpl-to-gpu kernels)")
    parser.add_argument("--json", help="write all results here")
    parser.add_argument("--skip-datasets", action="store_true")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    args = parser.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    variants = [(args.label, args.libs)] + ([("templates", args.libs_tmpl)] if args.libs_tmpl else [])
    results = []

    for variant, directory in variants:
        libs = {}
        for model, width, heads in CONFIGS:
            path = os.path.join(directory, library_name(model, width, heads))
            if not os.path.exists(path):
                continue
            libs[(model, width, heads)] = lib = compiled.load(path)
            for kind, make in sorted(GRAPHS.items()):
                graph = make(np.random.default_rng([width, heads, len(kind)]))
                r = guarded(run_case, lib, model, graph, width, heads, width + heads, False)
                r.update(variant=variant, model=model, width=width, heads=heads, graph=kind)
                results.append(r)
                print(json.dumps(r), flush=True)
        if args.skip_datasets:
            continue
        for name in args.datasets.split(","):
            t0 = time.time()
            graph = as_dict(synthetic.generate(name, seed=0))
            print(f"# {name}: generated in {time.time() - t0:.1f} s", flush=True)
            for model in ("rgcn", "rgat", "hgt"):
                lib = libs.get((model, 64, 1))
                if lib is None:
                    continue
                r = guarded(run_case, lib, model, graph, 64, 1, 1, True)
                r.update(variant=variant, model=model, width=64, heads=1, graph=name)
                results.append(r)
                print(json.dumps(r), flush=True)
            torch.cuda.empty_cache()

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "tolerance": TOLERANCE, "results": results}, f, indent=1)

    # The table, last.
    print(f"\nGPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"TF32 off, tolerance {TOLERANCE:g} (normwise relative)")
    print("| variant | model | width | heads | graph | result | rel. error | peak MiB | ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        status = "pass" if r["passed"] else r.get("status", "FAIL")
        err = f"{r['error']:.1e}" if "error" in r else "-"
        peak = f"{r['peak_bytes'] / 2**20:.0f}" if "peak_bytes" in r else "-"
        ms = f"{r['ms']:.2f}" if "ms" in r else "-"
        print(f"| {r['variant']} | {r['model']} | {r['width']} | {r['heads']} | {r['graph']} "
              f"| {status} | {err} | {peak} | {ms} |")
    failed = sum(not r["passed"] for r in results)
    print(f"\n{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

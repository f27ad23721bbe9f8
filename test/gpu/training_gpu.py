#!/usr/bin/env python3
"""GPU validation of the compiled training steps (run on an H100/H200).

Runs `<model>_fwd` and `<model>_bwd` of libraries built with
`hectorc --training --target=cuda` (test/gpu/build_models.sh, `tmpl/`) and
compares the forward result and the gradient of the input features and of
every weight with PyTorch autograd on the references of test/reference in
float64 on the GPU (the reference), and reports for context how far PyTorch
itself lands from it in float32 (TF32 off): gradients that sum many terms of
both signs (an edge softmax's gradient sums to zero at each destination)
lose digits in any float32 code.

1. the CPU test matrix of test/python/test_training_cpu.py (edge-case graphs,
   plus two large graphs for RGAT and HGT at width 64);
   for RGAT, the edges whose attention pre-activation sits at LeakyReLU's
   kink (no gradient there; test/reference/kinks.py) are removed first, and
   their count is reported;
2. the 8 benchmark graph shapes of BRIEF.md §5 at full size, width 64, for
   RGCN, RGAT and HGT: one full training step each, timed (forward +
   backward, CUDA events, median of 3 after a warm-up) with its peak memory
   (torch's allocations, which hold every argument, output and saved tensor,
   plus the library's own temporaries).

A case passes when every gradient and the result are finite and within 1e-4
(normwise relative) of torch's. Out-of-memory is reported as a result.
Prints a table (last) and writes JSON with --json.

    python3 test/gpu/training_gpu.py --libs build/gpu-models/tmpl
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
from model_cases import (GRAPHS, LARGE_GRAPHS, TRAINING_CONFIGS as CONFIGS,  # noqa: E402
                         library_name)
from models_gpu import DATASETS, as_dict, guarded  # noqa: E402
from reference import kinks, models_torch, params  # noqa: E402

TOLERANCE = 1e-4


def allocate(entry, sizes, device):
    """Caller-allocated outputs of `entry` (roles output, saved, grad), NaN-filled."""
    return {a.name: torch.full([sizes[s] if isinstance(s, str) else s for s in a.shape],
                               float("nan"), device=device)
            for a in entry.arguments if a.is_output}


def relative_error(actual, expected):
    if not bool(torch.isfinite(actual).all()):
        return float("inf")
    scale = float(expected.abs().max().clamp_min(1e-30))
    return float((actual.double() - expected.double()).abs().max()) / scale


def torch_reference(model, graph, inputs, heads, dtype):
    """Result and gradients by torch autograd, in `dtype` on the GPU."""
    device = torch.device("cuda")
    tg = models_torch.TorchGraph(graph, device=device, float_dtype=dtype)
    leaves = {k: v.to(device, dtype).requires_grad_(True) for k, v in inputs.items()
              if k != "d_out"}
    out = models_torch.forward(model, tg, leaves["h"],
                               {k: leaves[k] for k in params.PARAM_NAMES[model]}, heads)
    (out * inputs["d_out"].to(device, dtype)).sum().backward()
    result = {"result0": out.detach()}
    result.update({f"d_{k}": v.grad for k, v in leaves.items()})
    return result


def run_case(lib, model, graph, width, heads, seed, timing):
    device = torch.device("cuda")
    removed = 0
    if model == "rgat":  # no gradient at LeakyReLU's kink (reference/kinks.py)
        rng = np.random.default_rng(seed)
        n = len(graph["node_type"])
        h = torch.from_numpy(rng.standard_normal((n, width)).astype(np.float32)).to(device)
        w = params.make_params(model, graph, width, width, heads, seed=seed)
        graph, removed = kinks.without_kink_edges(graph, h, w["W"], w["a"], w["b"], heads)
        del h
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"], device=device)
    arrays = pre.arrays()
    n = len(graph["node_type"])
    sizes = {"N": n, "E": len(graph["src"]), "R": graph["num_edge_types"],
             "T": graph["num_node_types"], "P": int(arrays["compact_src"].shape[0])}
    rng = np.random.default_rng(seed)
    h = torch.from_numpy(rng.standard_normal((n, width)).astype(np.float32)).to(device)
    d_out = torch.from_numpy(rng.standard_normal((n, width)).astype(np.float32)).to(device)
    weights = {k: torch.from_numpy(v).to(device) for k, v in
               params.make_params(model, graph, width, width, heads, seed=seed).items()}
    forward, backward = lib[f"{model}_fwd"], lib[f"{model}_bwd"]

    torch.cuda.reset_peak_memory_stats()
    lib.peak_temporary_bytes(reset=True)
    values = dict(arrays, h=h, d_result0=d_out, **weights)
    values.update(allocate(forward, sizes, device))
    values.update(allocate(backward, sizes, device))

    def step(synchronize=True):
        # Timed steps (synchronize=False) skip the graph checks, as hector.nn does.
        forward(**{a.name: values[a.name] for a in forward.arguments}, synchronize=synchronize,
                check_indices=synchronize)
        backward(**{a.name: values[a.name] for a in backward.arguments},
                 synchronize=synchronize, check_indices=synchronize)

    step()
    torch.cuda.synchronize()
    result = {"kink_edges_removed": removed,
              "peak_bytes": int(torch.cuda.max_memory_allocated()
                                 + (0 if lib.temporaries_in_torch else lib.peak_temporary_bytes())),
              "saved_bytes": int(sum(values[a.name].numel() * 4 for a in forward.arguments
                                     if a.role == "saved"))}
    if timing:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(3):
            start.record()
            step(synchronize=False)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        result["ms"] = float(np.median(times))

    # Hector's results leave the GPU so that the references have its memory.
    ours = {a.name: values[a.name].cpu() for a in forward.arguments + backward.arguments
            if a.role in ("output", "grad")}
    inputs = {k: v.cpu() for k, v in dict(weights, h=h, d_out=d_out).items()}
    del values, weights, h, d_out
    torch.cuda.empty_cache()
    expected = torch_reference(model, graph, inputs, heads, torch.float64)
    errors = {k: relative_error(ours[k].to(device), v) for k, v in expected.items()}
    single = torch_reference(model, graph, inputs, heads, torch.float32)
    torch_errors = {k: relative_error(v, expected[k]) for k, v in single.items()}
    result["torch_fp32_error"] = max(torch_errors.values())
    del expected, single
    torch.cuda.empty_cache()
    worst = max(errors, key=errors.get)
    result.update(error=errors[worst], worst=worst, errors=errors, torch_fp32_errors=torch_errors,
                  passed=all(e < TOLERANCE for e in errors.values()))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libs", required=True, help="directory of --training cuda libraries")
    parser.add_argument("--json", help="write all results here")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--skip-matrix", action="store_true")
    parser.add_argument("--models", default="rgcn,rgat,hgt")
    parser.add_argument("--no-large", action="store_true",
                        help="the matrix without its two large graphs (for compute-sanitizer)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    results = []
    libs = {}
    for model, width, heads in CONFIGS:
        path = os.path.join(args.libs, library_name(model, width, heads))
        if os.path.exists(path):
            libs[(model, width, heads)] = compiled.load(path)
    if not args.skip_matrix:
        for (model, width, heads), lib in libs.items():
            large = width == 64 and model != "rgcn" and not args.no_large
            graphs = dict(GRAPHS, **(LARGE_GRAPHS if large else {}))
            for kind, make in sorted(graphs.items()):
                graph = make(np.random.default_rng([width, heads, len(kind), 11]))
                r = guarded(run_case, lib, model, graph, width, heads, width + heads, False)
                r.update(model=model, width=width, heads=heads, graph=kind)
                results.append(r)
                print(json.dumps(r), flush=True)
    for name in filter(None, args.datasets.split(",")):
        t0 = time.time()
        graph = as_dict(synthetic.generate(name, seed=0))
        print(f"# {name}: generated in {time.time() - t0:.1f} s", flush=True)
        for model in args.models.split(","):
            lib = libs.get((model, 64, 1))
            if lib is None:
                continue
            r = guarded(run_case, lib, model, graph, 64, 1, 1, True)
            r.update(model=model, width=64, heads=1, graph=name)
            results.append(r)
            print(json.dumps(r), flush=True)
            torch.cuda.empty_cache()

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "tolerance": TOLERANCE, "results": results}, f, indent=1)
    print(f"\nGPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, TF32 off; "
          f"reference: torch autograd in float64; tolerance {TOLERANCE:g} (normwise relative, "
          f"worst of the result and all gradients); torch fp32: the same measure for torch "
          f"in float32")
    print("| model | width | heads | graph | result | worst rel. error (of) | torch fp32 "
          "| peak MiB | saved MiB | fwd+bwd ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        status = "pass" if r["passed"] else r.get("status", "FAIL")
        err = f"{r['error']:.1e} ({r['worst']})" if "error" in r else "-"
        peak = f"{r['peak_bytes'] / 2**20:.0f}" if "peak_bytes" in r else "-"
        saved = f"{r['saved_bytes'] / 2**20:.0f}" if "saved_bytes" in r else "-"
        ms = f"{r['ms']:.2f}" if "ms" in r else "-"
        fp32 = f"{r['torch_fp32_error']:.1e}" if "torch_fp32_error" in r else "-"
        if r.get("kink_edges_removed"):
            status += f" ({r['kink_edges_removed']} kink edges removed)"
        print(f"| {r['model']} | {r['width']} | {r['heads']} | {r['graph']} | {status} | {err} "
              f"| {fp32} | {peak} | {saved} | {ms} |")
    failed = sum(not r["passed"] for r in results)
    print(f"\n{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

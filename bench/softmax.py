"""The stitched edge softmax against the split one on the GPU (issue #8, item 3).

Stitched (the default): one node traversal; each destination walks its
incoming edges once, stores the scores and keeps the running maximum and
sum of exponentials in registers. Split (`hectorc --split-softmax`): fills
of the per-destination max and sum, an edge traversal for the scores and
the max, a second one for the sum. Everything else is the same library
(`--variant=both`, width 64, `--training`; HGT with `--typed-endpoints`,
which every synthetic graph satisfies).

For RGAT and HGT with 1 and 4 heads on the graphs shaped like the 8
benchmark datasets it times the inference forward and the training step
(bench/hector_step.py, CUDA events, median), records the step's peak memory
(outputs, saved values and temporaries, above what was allocated before),
the largest in-degree of the graph (one warp walks a destination's edges, so a
hub is one long walk) and how far the stitched output is from the split
one.

    # here (the GPU machines have no compiler):
    python3 bench/softmax.py build --out build/gpu-models/softmax
    # on the GPU machine (carry the directory):
    python3 bench/softmax.py run --libs build/gpu-models/softmax --out OUT
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time

from repo_paths import REPO as _REPO  # noqa: E402  (sets the import paths)

from hector import compiled, models  # noqa: E402
from hector import graph as hgraph  # noqa: E402
from hector.datasets.shapes import DATASETS  # noqa: E402
from hector.datasets.synthetic import generate  # noqa: E402

MODELS = ("rgat", "hgt")
HEADS = (1, 4)
WIDTH = 64
# Both without the softmax fused into its aggregation (hectorc
# --fuse-softmax-aggregate, off by default; its A/B is bench/layers.py's).
LOWERINGS = {"split": ["--split-softmax"], "stitched": []}
MODES = ("inference", "training")


def library_name(model, heads, lowering):
    return f"lib{model}_h{heads}_{lowering}.so"


def build(args):
    os.makedirs(args.out, exist_ok=True)
    for model in MODELS:
        for heads in HEADS:
            source = os.path.join(args.out, f"{model}_h{heads}.mlir")
            with open(source, "w", encoding="utf-8") as f:
                f.write(models.generate(model, WIDTH, heads=heads))
            typed = ["--typed-endpoints"] if model == "hgt" else []
            for lowering, flags in LOWERINGS.items():
                out = os.path.join(args.out, library_name(model, heads, lowering))
                subprocess.run([args.hectorc, source, "--target=cuda", "--training",
                                *typed, *flags, "-o", out], check=True)
                print("built", out, flush=True)


def run(args):
    import torch

    import measure
    from hector_step import HectorStep
    from reference import make_params

    dev = torch.device("cuda")
    results = []
    for ds in args.datasets:
        g = generate(ds, scale=args.scale, seed=args.seed)
        pre = hgraph.preprocess(g.node_type, g.src, g.dst, g.etype, g.num_node_types,
                                g.num_edge_types, device=dev)
        max_in_degree = int(torch.diff(pre.csr_row_ptr.long()).max()) if g.num_edges else 0
        print(f"# {ds}: N={g.num_nodes} E={g.num_edges} max in-degree {max_in_degree}",
              flush=True)
        gen = torch.Generator(device=dev).manual_seed(args.seed)
        h = torch.randn(g.num_nodes, WIDTH, generator=gen, device=dev)
        labels = torch.randint(0, WIDTH, (g.num_nodes,), generator=gen, device=dev)
        for model in args.models:
            for heads in HEADS:
                params = {k: torch.as_tensor(v, device=dev)
                          for k, v in make_params(model, g, WIDTH, WIDTH, heads=heads,
                                                  seed=args.seed).items()}
                for mode in MODES:
                    outs = {}
                    for lowering in LOWERINGS:
                        lib = compiled.load(os.path.join(
                            args.libs, library_name(model, heads, lowering)))
                        rec = {"dataset": ds, "model": model, "heads": heads, "mode": mode,
                               "softmax": lowering, "max_in_degree": max_in_degree}
                        try:
                            measure.free(dev)
                            # The step's own memory: outputs, saved values,
                            # temporaries (not the graph, inputs or the
                            # other lowering's output kept for comparison).
                            base = measure.allocated(dev)
                            step = HectorStep(lib, model, pre, h, params, labels, mode)
                            fn = step.forward if mode == "inference" else step.train_step
                            measure.reset_peak(dev)
                            lib.peak_temporary_bytes(reset=True)
                            fn()
                            measure.sync(dev)
                            outs[lowering] = step.out.detach().clone()
                            ms, n = measure.time_calls(fn, dev, warmup=args.warmup,
                                                       max_iters=args.iters,
                                                       budget_s=args.budget_s)
                            rec.update(median_ms=ms, samples=n,
                                       step_bytes=measure.peak(dev) - base
                                       + lib.peak_temporary_bytes())
                        except Exception as err:  # recorded; the run goes on
                            rec.update(status="oom" if measure.is_oom(err) else "error",
                                       note=f"{type(err).__name__}: {err}"[:300])
                        step = fn = None
                        results.append(rec)
                    if len(outs) == 2:
                        ref = outs["split"]
                        results[-1]["rel_diff_vs_split"] = float(
                            (outs["stitched"] - ref).abs().max() / max(1.0, float(ref.abs().max())))
                    split, stitched = results[-2], results[-1]
                    print(f"  {model} h{heads} {mode:9s} split {split.get('median_ms', '-')!s:>8.8}"
                          f"  stitched {stitched.get('median_ms', '-')!s:>8.8}"
                          f"  diff {stitched.get('rel_diff_vs_split', '-')}", flush=True)
        del pre, h, labels
        measure.free(dev)
    meta = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "python": platform.python_version(), "scale": args.scale, "seed": args.seed,
            "width": WIDTH, "date": time.strftime("%Y-%m-%d")}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "softmax.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    table = markdown(results, meta)
    with open(os.path.join(args.out, "softmax.md"), "w", encoding="utf-8") as f:
        f.write(table)
    print(table)


def markdown(results, meta):
    rows = {}
    for r in results:
        rows.setdefault((r["model"], r["heads"], r["dataset"], r["mode"]), {})[r["softmax"]] = r
    lines = [f"ms, median; {meta['gpu']}; width {meta['width']}; stitched / split < 1 is faster",
             "", "| model | heads | dataset | max in-degree | mode | split | stitched "
             "| stitched / split | step MiB split | step MiB stitched | max rel diff |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(rec, key, scale=1.0, fmt="{:.3f}"):
        if "median_ms" not in rec:
            return rec.get("status", "-")
        return fmt.format(rec[key] / scale)

    for (model, heads, ds, mode), pair in rows.items():
        split, stitched = pair.get("split", {}), pair.get("stitched", {})
        ratio = ("{:.2f}".format(stitched["median_ms"] / split["median_ms"])
                 if "median_ms" in split and "median_ms" in stitched else "-")
        diff = stitched.get("rel_diff_vs_split")
        lines.append(
            f"| {model} | {heads} | {ds} | {stitched.get('max_in_degree', '-')} | {mode} "
            f"| {cell(split, 'median_ms')} | {cell(stitched, 'median_ms')} | {ratio} "
            f"| {cell(split, 'step_bytes', 2**20, '{:.0f}')} "
            f"| {cell(stitched, 'step_bytes', 2**20, '{:.0f}')} "
            f"| {'-' if diff is None else f'{diff:.1e}'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile the libraries (needs hectorc)")
    b.add_argument("--out", default=os.path.join(_REPO, "build", "gpu-models", "softmax"))
    b.add_argument("--hectorc", default=os.path.join(
        os.environ.get("HECTOR_BUILD_DIR", os.path.join(_REPO, "build")), "bin", "hectorc"))
    r = sub.add_parser("run", help="time them on the GPU")
    r.add_argument("--libs", default=os.path.join(_REPO, "build", "gpu-models", "softmax"))
    r.add_argument("--out", default=os.environ.get("OUT", "."))
    r.add_argument("--datasets", type=lambda s: s.split(","), default=list(DATASETS))
    r.add_argument("--models", type=lambda s: s.split(","), default=list(MODELS))
    r.add_argument("--scale", type=float, default=1.0)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--iters", type=int, default=20)
    r.add_argument("--budget-s", type=float, default=1.0)
    args = ap.parse_args(argv)
    (build if args.command == "build" else run)(args)


if __name__ == "__main__":
    main()

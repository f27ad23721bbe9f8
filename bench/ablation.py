"""Ablation of the hgraph-level optimisations: U / C / R / C+R / tuned (issue #8, item 5).

For RGAT and HGT (width 64, one head) on the synthetic graphs shaped like the
8 benchmark datasets, and for each variant of `hectorc --variant`

    U = unopt, C = compact, R = reorder, C+R = both

it measures the median time of an inference forward (the `<model>` entry)
and of a training step (`<model>_fwd`, torch's NLL loss on its output,
`<model>_bwd`), with CUDA events after warm-up; the peak memory (torch's peak
plus the temporaries the library allocates through the runtime); the bytes
of the tensors the forward saves for the backward; out-of-memory as a
result. Then "tuned": the variant that `hector.tune` picks for that graph
and model (its own timed trial on this device), or, where the tuner cannot
run, the fastest of the variants just measured; the output says which.
Next to the memory of C against U it prints the graph's compaction ratio
P / E (the criterion of the issue: the memory saved by compaction tracks
the compaction ratio).

Two steps, since the GPU machines have no compiler:

    # here, where hectorc runs (bench/build_ablation.sh does this):
    python3 bench/ablation.py build --out build/gpu-models/ablation
    # on the GPU machine:
    python3 bench/ablation.py run --libs build/gpu-models/ablation --out OUT

`build` makes a hector.compile cache directory (DIR/cache) holding, for
every (model, dataset), exactly the libraries that `hector.tune.prebuild`
would: the four variants compiled with the graph's `--graph-sizes` and, for
R and C+R, `--typed-endpoints` when the graph has typed endpoints (every
synthetic graph has: each edge type joins one source type to one
destination type). The variant libraries measured are these same
libraries, so "tuned" is one of the four measured columns. Libraries whose
hgraph IR after the passes is the same (`hectorc --emit=hgraph`) are built
once and shared by their cache keys, and the runtime is kept once beside
the cache (DIR/libhector_runtime.so), which keeps DIR small. DIR/plan.json
records what was built; `run` reads it (datasets, scale, seed, width).
"""

from __future__ import annotations

import argparse
import datetime
import filecmp
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import repo_paths  # noqa: E402,F401  (sets the import paths)

import numpy as np  # noqa: E402

from hector import compiler, models, tune  # noqa: E402
from hector import graph as hgraph  # noqa: E402
from hector.datasets.shapes import DATASETS  # noqa: E402
from hector.datasets.synthetic import generate  # noqa: E402
# One variant's library on one graph: the inference call or the training step.
from hector_step import HectorStep as VariantRunner, entry_shape, graph_sizes  # noqa: E402

MODELS = ("rgat", "hgt")
# Column name -> hectorc --variant.
VARIANTS = {"U": "unopt", "C": "compact", "R": "reorder", "C+R": "both"}
MODES = ("inference", "training")
PLAN = "plan.json"
PLAN_LAYOUT = 1
RUNTIME = "libhector_runtime.so"
MIB = float(1 << 20)


def _csv(text):
    return [x for x in text.split(",") if x]


def _check_subset(parser, what, got, known):
    bad = [x for x in got if x not in known]
    if bad:
        parser.error(f"unknown {what}: {', '.join(bad)} (known: {', '.join(known)})")


def _source(model, width, heads):
    return models.generate(model, width, heads=heads)


def _graph(dataset, scale, seed):
    return generate(dataset, scale=scale, seed=seed)


def _preprocess(g, device=None):
    return hgraph.preprocess(g.node_type, g.src, g.dst, g.etype, g.num_node_types,
                             g.num_edge_types, device=device)


# ============================================================================ build

def _emit_hgraph(hectorc, text, target, gpu_arch, flags, training):
    """The hgraph IR after the passes: what the rest of the pipeline sees.
    --graph-sizes and --typed-endpoints act only on those passes, so equal
    IR here means equal libraries."""
    with tempfile.TemporaryDirectory(prefix="hector-ablation-") as tmp:
        model = os.path.join(tmp, "model.mlir")
        with open(model, "w", encoding="utf-8") as f:
            f.write(text)
        argv = [hectorc, model, f"--target={target}", "--emit=hgraph", *flags]
        if gpu_arch:
            argv.append(f"--gpu-arch={gpu_arch}")
        if training:
            argv.append("--training")
        result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise compiler.CompileError(f"{' '.join(argv[2:])}: hectorc failed:\n{result.stderr.strip()}")
    return result.stdout


def _share_artifact(cache, key, kept_key, description):
    """Points the cache index entry of `key` at the artifact of `kept_key`
    (the documented layout: <cache>/index/<key> names the artifact)."""
    with open(os.path.join(cache, "index", kept_key), encoding="utf-8") as f:
        entry = json.load(f)
    entry["description"] = description
    path = os.path.join(cache, "index", key)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(entry, f)
    os.replace(path + ".tmp", path)


def _keep_one_runtime(out, cache):
    """Moves the runtime copies hectorc puts beside each CUDA library to one
    file, out/libhector_runtime.so (run() points hector at it)."""
    kept = os.path.join(out, RUNTIME)
    lib_root = os.path.join(cache, "lib")
    for artifact in sorted(os.listdir(lib_root)) if os.path.isdir(lib_root) else []:
        copy = os.path.join(lib_root, artifact, RUNTIME)
        if not os.path.exists(copy):
            continue
        if not os.path.exists(kept):
            shutil.copy2(copy, kept)
        if filecmp.cmp(copy, kept, shallow=False):
            os.remove(copy)


def _tree_bytes(root):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files)


def build(args):
    """Compiles every library the run needs into args.out; writes the plan."""
    hectorc = compiler.find_compiler(args.hectorc)
    if hectorc is None:
        sys.exit("ablation build: no hectorc found ($HECTOR_BUILD_DIR/bin, PATH, build/bin); "
                 "build it (scripts/build.sh hectorc) or pass --hectorc")
    gpu_arch = (args.gpu_arch or compiler.DEFAULT_GPU_ARCH) if args.target == "cuda" else None
    cache = os.path.join(args.out, "cache")
    os.makedirs(cache, exist_ok=True)
    t0 = time.perf_counter()
    trainings = (True, False) if args.inference_tuning else (True,)
    plan = {"layout": PLAN_LAYOUT, "target": args.target, "gpu_arch": gpu_arch,
            "width": args.width, "heads": args.heads, "scale": args.scale, "seed": args.seed,
            "models": args.models, "datasets": args.datasets,
            "inference_tuning": args.inference_tuning,
            "hectorc": compiler.compiler_identity(hectorc),
            "created": datetime.datetime.now().isoformat(timespec="seconds"), "graphs": {}}
    texts = {m: _source(m, args.width, args.heads) for m in args.models}
    groups = {}  # (training, IR after the passes) -> [(model, key, flags, description)]
    for ds in args.datasets:
        t = time.perf_counter()
        g = _graph(ds, args.scale, args.seed)
        pre = _preprocess(g)
        info = {"sizes": graph_sizes(pre), "typed_endpoints": tune.typed_endpoints(pre),
                "fingerprint": tune.fingerprint(pre), "flags": {}}
        for v, variant in VARIANTS.items():
            info["flags"][v] = tune.variant_flags(pre, variant)
        plan["graphs"][ds] = info
        del g, pre
        for model in args.models:
            for training in trainings:
                for v, flags in info["flags"].items():
                    key = compiler.key_of(texts[model], args.target, training=training,
                                          gpu_arch=gpu_arch, flags=flags)
                    ir = _emit_hgraph(hectorc, texts[model], args.target, gpu_arch, flags, training)
                    what = (f"ablation {model} w{args.width} h{args.heads} {ds} {v}"
                            + (" training" if training else ""))
                    groups.setdefault((training, ir), []).append((model, key, flags, what))
        print(f"{ds}: sizes {info['sizes']}, typed endpoints {info['typed_endpoints']} "
              f"({time.perf_counter() - t:.1f} s)", flush=True)
    for n, ((training, _), members) in enumerate(groups.items(), 1):
        model, key, flags, what = members[0]
        t = time.perf_counter()
        compiler.compile(texts[model], args.target, training=training, gpu_arch=gpu_arch,
                         flags=flags, cache_dir=cache, compiler=hectorc, description=what)
        for _, other, _, other_what in members[1:]:
            if other != key:
                _share_artifact(cache, other, key, other_what)
        print(f"[{n}/{len(groups)}] built {what} ({' '.join(flags)}), shared by "
              f"{len(members)} key(s) ({time.perf_counter() - t:.1f} s)", flush=True)
    _keep_one_runtime(args.out, cache)
    with open(os.path.join(args.out, PLAN), "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=1)
    print(f"ablation build: {len(groups)} libraries for "
          f"{len(args.models) * len(args.datasets) * len(VARIANTS) * len(trainings)} keys in "
          f"{args.out} ({_tree_bytes(args.out) / MIB:.1f} MiB, "
          f"{time.perf_counter() - t0:.0f} s)", flush=True)


# ============================================================================== run

def _is_oom(err):
    import measure
    from hector import _runtime
    return measure.is_oom(err) or getattr(err, "status", None) == _runtime.OUT_OF_MEMORY


def saved_bytes(lib, model, sizes):
    """Bytes of the tensors `<model>_fwd` saves for the backward, at these sizes."""
    entry = lib[f"{model}_fwd"]
    return sum(np.dtype(a.dtype).itemsize * int(np.prod(entry_shape(a, sizes), dtype=np.int64))
               for a in entry.arguments if a.role == "saved")


class Ablation:
    def __init__(self, args, plan):
        import torch
        self.args, self.plan, self.torch = args, plan, torch
        self.device = torch.device(args.device)
        self.cache = os.path.join(args.libs, "cache")
        self.t0 = time.perf_counter()
        self.results, self.tuned, self.graphs = [], [], {}
        self.meta = {
            "command": "python3 bench/ablation.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "device_name": (torch.cuda.get_device_name(self.device) if self.device.type == "cuda"
                            else f"CPU ({platform.processor() or platform.machine()})"),
            "torch": torch.__version__, "numpy": np.__version__,
            "target": plan["target"], "width": plan["width"], "heads": plan["heads"],
            "scale": plan["scale"], "seed": plan["seed"], "libs": os.path.abspath(args.libs),
            "built_with": plan["hectorc"], "warmup": args.warmup, "iters": args.iters,
            "budget_s": args.budget_s,
        }

    def elapsed(self):
        return time.perf_counter() - self.t0

    def out_of_time(self):
        return self.args.deadline_s is not None and self.elapsed() > self.args.deadline_s

    # ---- output ----------------------------------------------------------------

    def write(self):
        os.makedirs(self.args.out, exist_ok=True)
        data = {"meta": self.meta, "graphs": self.graphs, "results": self.results,
                "tuned": self.tuned}
        with open(os.path.join(self.args.out, "ablation.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
        text = markdown(data)
        with open(os.path.join(self.args.out, "ablation.md"), "w", encoding="utf-8") as f:
            f.write(text)
        return text

    # ---- the run ---------------------------------------------------------------

    def run(self):
        import measure
        a = self.args
        print(f"device: {self.meta['device_name']}; torch {self.torch.__version__}; "
              f"libraries {a.libs} ({self.plan['target']})", flush=True)
        for ds in a.datasets:
            if self.out_of_time():
                self._skip(ds, "deadline")
                continue
            t = time.perf_counter()
            g = _graph(ds, self.plan["scale"], self.plan["seed"])
            pre = _preprocess(g, device=self.device)
            sizes = graph_sizes(pre)
            built = self.plan["graphs"][ds]
            self.graphs[ds] = {**sizes, "compaction_ratio": sizes["P"] / max(1, sizes["E"]),
                               "typed_endpoints": built["typed_endpoints"],
                               "same_sizes_as_build": sizes == built["sizes"]}
            print(f"== {ds}: N={sizes['N']} E={sizes['E']} P={sizes['P']} R={sizes['R']} "
                  f"T={sizes['T']}, P/E {self.graphs[ds]['compaction_ratio']:.3f} "
                  f"({time.perf_counter() - t:.1f} s)", flush=True)
            if sizes != built["sizes"]:
                print(f"   note: the build saw sizes {built['sizes']}; the variants run the "
                      "libraries built for those", flush=True)
            for model in a.models:
                self._model(ds, model, g, pre, sizes)
                self.write()
            del g, pre
            measure.free(self.device)
        text = self.write()
        print(f"done in {self.elapsed():.0f} s; wrote {a.out}/ablation.json, ablation.md\n", flush=True)
        print(text, flush=True)

    def _skip(self, ds, why):
        for model in self.args.models:
            for mode in self.args.modes:
                for v in VARIANTS:
                    self.results.append(self._record(model, ds, mode, v, status="skipped", note=why))

    def _record(self, model, ds, mode, v, **kw):
        rec = {"model": model, "dataset": ds, "mode": mode, "variant": v,
               "hectorc_variant": VARIANTS[v], "status": "ok", "median_ms": None, "samples": 0,
               "peak_bytes": None, "layer_bytes": None, "temporary_bytes": None,
               "saved_bytes": None, "max_rel_err_vs_U": None, "flags": None, "note": ""}
        rec.update(kw)
        return rec

    def _load(self, model, ds, v, training):
        flags = self.plan["graphs"][ds]["flags"][v]
        lib = compiler.compile(_source(model, self.plan["width"], self.plan["heads"]),
                               self.plan["target"], training=training,
                               gpu_arch=self.plan["gpu_arch"], flags=flags,
                               cache_dir=self.cache, compiler=False)
        return lib, flags

    def _model(self, ds, model, g, pre, sizes):
        import torch

        import measure
        from reference import make_params
        a, dev, width, heads = self.args, self.device, self.plan["width"], self.plan["heads"]
        gen = torch.Generator(device=dev).manual_seed(self.plan["seed"] + width)
        h = torch.randn(g.num_nodes, width, generator=gen, device=dev)
        labels = torch.randint(0, width, (g.num_nodes,), generator=gen, device=dev)
        params = {k: torch.as_tensor(v, device=dev)
                  for k, v in make_params(model, g, width, width, heads=heads,
                                          seed=self.plan["seed"]).items()}
        for mode in a.modes:
            ref = None
            for v in VARIANTS:
                rec = self._variant(model, ds, mode, v, pre, sizes, h, params, labels, ref)
                if v == "U" and mode == "inference":
                    ref = rec.pop("_out", None)
                rec.pop("_out", None)
                self.results.append(rec)
                print(f"   {model} {ds} {mode} {v:>3}: " + _progress(rec) +
                      f"  ({self.elapsed():.0f} s)", flush=True)
            del ref
            measure.free(dev)
            self.tuned.append(self._tune(model, ds, mode, pre))
            t = self.tuned[-1]
            print(f"   {model} {ds} {mode} tuned: {t['variant'] or '-'} via {t['how']}"
                  + (f" ({t['note']})" if t["note"] else ""), flush=True)

    def _variant(self, model, ds, mode, v, pre, sizes, h, params, labels, ref):
        import measure
        a, dev = self.args, self.device
        rec = self._record(model, ds, mode, v)
        if self.out_of_time():
            rec.update(status="skipped", note="deadline")
            return rec
        runner = None
        try:
            lib, rec["flags"] = self._load(model, ds, v, training=True)
            if mode == "training":
                rec["saved_bytes"] = saved_bytes(lib, model, sizes)
            measure.free(dev)
            base = measure.allocated(dev)
            runner = VariantRunner(lib, model, pre, h, params, labels, mode)
            fn = runner.forward if mode == "inference" else runner.train_step
            measure.reset_peak(dev)
            lib.peak_temporary_bytes(reset=True)
            fn()  # first call: module loads, launch errors
            measure.sync(dev)
            if mode == "inference":
                out = runner.out.detach().clone()
                rec["_out"] = out if v == "U" else None
                if ref is not None:
                    rec["max_rel_err_vs_U"] = float((out - ref).abs().max()
                                                    / max(1.0, float(ref.abs().max())))
                del out
            ms, n = measure.time_calls(fn, dev, warmup=max(0, a.warmup - 1), max_iters=a.iters,
                                       budget_s=a.budget_s)
            rec.update(median_ms=ms, samples=n)
            if dev.type == "cuda":
                temps = lib.peak_temporary_bytes()
                outside = 0 if lib.temporaries_in_torch else temps  # else torch's peak has them
                rec.update(temporary_bytes=temps, peak_bytes=measure.peak(dev) + outside,
                           layer_bytes=measure.peak(dev) - base + outside)
        except compiler.MissingArtifactError as err:
            rec.update(status="missing", note=str(err)[:300])
        except Exception as err:  # recorded as a result: the run goes on
            text = str(err).strip().splitlines()[0] if str(err).strip() else ""
            rec.update(status="oom" if _is_oom(err) else "error",
                       note=f"{type(err).__name__}: {text}"[:300])
        runner = None
        measure.free(dev)
        return rec

    def _tune(self, model, ds, mode, pre):
        """hector.tune's choice for this graph, or the fastest measured variant."""
        import measure
        training = mode == "training"
        rec = {"model": model, "dataset": ds, "mode": mode, "variant": None, "how": None,
               "tuner_ms": None, "median_ms": None, "note": ""}
        measured = {r["variant"]: r["median_ms"] for r in self.results
                    if (r["model"], r["dataset"], r["mode"]) == (model, ds, mode)
                    and r["status"] == "ok"}
        why = None
        if self.out_of_time():
            why = "deadline"
        elif training or self.plan.get("inference_tuning"):
            try:
                result = tune.tune(_source(model, self.plan["width"], self.plan["heads"]), pre,
                                   self.plan["target"], training=training,
                                   gpu_arch=self.plan["gpu_arch"], warmup=1,
                                   repeat=self.args.tune_repeat, seed=self.plan["seed"],
                                   cache_dir=self.cache, compiler=False, retune=True)
                by_name = {name: v for v, name in VARIANTS.items()}
                rec.update(variant=by_name[result.variant], how="hector.tune",
                           tuner_ms={by_name[k]: s * 1e3 for k, s in result.seconds.items()})
            except Exception as err:  # e.g. a library the build did not make
                text = str(err).strip().splitlines()[0] if str(err).strip() else ""
                why = f"hector.tune failed: {type(err).__name__}: {text}"[:300]
                if _is_oom(err):
                    why = "hector.tune ran out of memory"
            measure.free(self.device)
        else:
            why = "no inference libraries for the tuner (build without --no-inference-tuning)"
        if rec["variant"] is None and measured:
            rec.update(variant=min(measured, key=measured.get), how="fastest measured", note=why)
        elif rec["variant"] is None:
            rec.update(how="none", note=(why or "") + "; no variant ran")
        rec["median_ms"] = measured.get(rec["variant"])
        return rec


def _progress(rec):
    if rec["status"] != "ok":
        return f"{rec['status'].upper()} {rec['note']}"
    line = f"{rec['median_ms']:.3g} ms ({rec['samples']} samples)"
    if rec["peak_bytes"] is not None:
        line += f", peak {rec['peak_bytes'] / MIB:.1f} MiB (layer {rec['layer_bytes'] / MIB:.1f})"
    if rec["saved_bytes"] is not None:
        line += f", saved {rec['saved_bytes'] / MIB:.1f} MiB"
    if rec["max_rel_err_vs_U"] is not None:
        line += f", vs U {rec['max_rel_err_vs_U']:.1e}"
    return line


# ========================================================================== report

def _cell(rec, what):
    if rec is None:
        return "-"
    if rec["status"] != "ok":
        return {"oom": "OOM", "skipped": "skip", "missing": "missing"}.get(rec["status"], "error")
    value = rec[what]
    if value is None:
        return "n/a"
    return f"{value:.3g}" if what == "median_ms" else f"{value / MIB:.1f}"


def _ratio(num, den):
    if num is None or den is None or den <= 0:
        return "-"
    return f"{num / den:.2f}"


def markdown(data):
    meta, graphs = data["meta"], data["graphs"]
    by = {(r["model"], r["dataset"], r["mode"], r["variant"]): r for r in data["results"]}
    tuned = {(t["model"], t["dataset"], t["mode"]): t for t in data["tuned"]}
    cases = []
    for r in data["results"]:
        if (r["model"], r["dataset"], r["mode"]) not in cases:
            cases.append((r["model"], r["dataset"], r["mode"]))
    cols = list(VARIANTS)
    lines = [f"# Ablation: compaction and reordering ({meta['device_name']}, width "
             f"{meta['width']}, {meta['heads']} head(s))", "",
             f"`{meta['command']}` — {meta['date']}, torch {meta['torch']}, numpy {meta['numpy']}.",
             "U = `--variant=unopt`, C = `compact`, R = `reorder`, C+R = `both`; every library "
             "built with the graph's `--graph-sizes`, and R / C+R with `--typed-endpoints` "
             "where the graph has typed endpoints (column TE). Times are medians of "
             f"{meta['iters']} calls at most after warm-up (CUDA events on a GPU).", "",
             "## Time (ms)", "",
             "| model | dataset | mode | TE | " + " | ".join(cols) + " | tuned | tuned vs U |",
             "|---|---|---|---|" + "---:|" * len(cols) + "---|---:|"]
    for model, ds, mode in cases:
        recs = [by.get((model, ds, mode, v)) for v in cols]
        t = tuned.get((model, ds, mode))
        choice = "-" if t is None or t["variant"] is None else \
            f"{t['variant']} ({'tuner' if t['how'] == 'hector.tune' else 'fastest measured'})"
        u = recs[0]["median_ms"] if recs[0] and recs[0]["status"] == "ok" else None
        speed = _ratio(u, t["median_ms"] if t else None)
        te = "yes" if graphs.get(ds, {}).get("typed_endpoints") else "no"
        lines.append(f"| {model} | {ds} | {mode} | {te} | "
                     + " | ".join(_cell(r, "median_ms") for r in recs)
                     + f" | {choice} | {speed + 'x' if speed != '-' else '-'} |")
    lines += ["", "## Memory (MiB): peak = torch's peak + the library's temporaries", "",
              "Layer memory is the part the call or step adds (peak minus the graph, inputs "
              "and weights allocated before it): outputs, saved tensors, gradients, "
              "temporaries. Compaction stores pair rows instead of edge rows, so where all "
              "edge-wise memory is compactable, C/U of the layer memory would equal P/E.", "",
              "| model | dataset | mode | P/E | " + " | ".join(f"{c} peak" for c in cols)
              + " | layer U | layer C | layer C/U | saved U | saved C | saved C/U |",
              "|---|---|---|---:|" + "---:|" * len(cols) + "---:|---:|---:|---:|---:|---:|"]
    for model, ds, mode in cases:
        recs = [by.get((model, ds, mode, v)) for v in cols]
        u, c = recs[0], recs[1]
        ok = lambda r, k: r[k] if r and r["status"] == "ok" else None  # noqa: E731
        pe = graphs.get(ds, {}).get("compaction_ratio")
        lu, lc = ok(u, "layer_bytes"), ok(c, "layer_bytes")
        su, sc = (r["saved_bytes"] if r else None for r in (u, c))
        mib = lambda x: "-" if x is None else f"{x / MIB:.1f}"  # noqa: E731
        lines.append(f"| {model} | {ds} | {mode} | {'-' if pe is None else f'{pe:.2f}'} | "
                     + " | ".join(_cell(r, "peak_bytes") for r in recs)
                     + f" | {mib(lu)} | {mib(lc)} | {_ratio(lc, lu)} | {mib(su)} | {mib(sc)} | "
                     f"{_ratio(sc, su)} |")
    notes = [t for t in data["tuned"] if t["note"]]
    if notes:
        lines += ["", "Tuned choices not made by hector.tune:", ""]
        lines += [f"- {t['model']} {t['dataset']} {t['mode']}: {t['note']}" for t in notes]
    failed = [r for r in data["results"] if r["status"] not in ("ok", "skipped")]
    if failed:
        lines += ["", "Failures (recorded as results):", ""]
        lines += [f"- {r['model']} {r['dataset']} {r['mode']} {r['variant']}: {r['status']} "
                  f"{r['note']}" for r in failed]
    return "\n".join(lines) + "\n"


# ============================================================================= main

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile the libraries (where hectorc runs)")
    b.add_argument("--out", required=True, help="directory to fill (a cache, plan.json, the runtime)")
    b.add_argument("--models", type=_csv, default=list(MODELS))
    b.add_argument("--datasets", type=_csv, default=list(DATASETS))
    b.add_argument("--target", choices=compiler.TARGETS, default="cuda")
    b.add_argument("--gpu-arch", default=None, help=f"default {compiler.DEFAULT_GPU_ARCH}")
    b.add_argument("--width", type=int, default=64)
    b.add_argument("--heads", type=int, default=1)
    b.add_argument("--scale", type=float, default=1.0, help="dataset scale (1 = published counts)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--no-inference-tuning", dest="inference_tuning", action="store_false",
                   help="skip the libraries without --training that hector.tune times for "
                   "inference (the tuned inference column is then the fastest measured)")
    b.add_argument("--hectorc", default=None, help="default: $HECTOR_BUILD_DIR/bin, PATH, build/bin")

    r = sub.add_parser("run", help="measure (on the GPU machine)")
    r.add_argument("--libs", required=True, help="the directory `build` filled")
    r.add_argument("--out", required=True, help="output directory (ablation.json, ablation.md)")
    r.add_argument("--models", type=_csv, default=None, help="default: all the build made")
    r.add_argument("--datasets", type=_csv, default=None, help="default: all the build made")
    r.add_argument("--modes", type=_csv, default=list(MODES))
    r.add_argument("--device", default=None, help="default: cuda for cuda libraries, else cpu")
    r.add_argument("--warmup", type=int, default=2)
    r.add_argument("--iters", type=int, default=10, help="at most this many timed calls")
    r.add_argument("--budget-s", type=float, default=0.5,
                   help="stop timing once the timed calls add up to this (>= 1 call)")
    r.add_argument("--tune-repeat", type=int, default=3, help="hector.tune's timed calls per variant")
    r.add_argument("--deadline-s", type=float, default=420.0,
                   help="skip what is left after this many seconds (0: no deadline)")
    args = ap.parse_args(argv)

    if args.command == "build":
        _check_subset(ap, "models", args.models, MODELS)
        _check_subset(ap, "datasets", args.datasets, DATASETS)
        if args.width < 1 or args.heads < 1 or args.width % args.heads:
            ap.error("--width must be a positive multiple of --heads")
        return args, None
    plan_path = os.path.join(args.libs, PLAN)
    try:
        with open(plan_path, encoding="utf-8") as f:
            plan = json.load(f)
    except FileNotFoundError:
        ap.error(f"{plan_path} not found: build the libraries first "
                 "(bash bench/build_ablation.sh, or bench/ablation.py build)")
    if plan.get("layout") != PLAN_LAYOUT:
        ap.error(f"{plan_path}: layout {plan.get('layout')!r}, this script reads {PLAN_LAYOUT}; "
                 "build again")
    args.models = args.models or plan["models"]
    args.datasets = args.datasets or plan["datasets"]
    _check_subset(ap, "models", args.models, plan["models"])
    _check_subset(ap, "datasets (of the build)", args.datasets, plan["datasets"])
    _check_subset(ap, "modes", args.modes, MODES)
    if args.device is None:
        args.device = "cuda" if plan["target"] == "cuda" else "cpu"
    if (args.device.split(":")[0] == "cuda") != (plan["target"] == "cuda"):
        ap.error(f"the libraries are for target {plan['target']}; --device {args.device} "
                 "does not fit")
    if args.deadline_s is not None and args.deadline_s <= 0:
        args.deadline_s = None
    return args, plan


def main(argv=None):
    args, plan = parse_args(argv)
    if args.command == "build":
        build(args)
        return
    runtime = os.path.join(args.libs, RUNTIME)
    if os.path.exists(runtime) and not os.environ.get("HECTOR_RUNTIME_LIB"):
        # The libraries' runtime, kept once by `build` (hector loads it when a
        # library's own copy is not beside it).
        os.environ["HECTOR_RUNTIME_LIB"] = os.path.abspath(runtime)
    Ablation(args, plan).run()


if __name__ == "__main__":
    main()

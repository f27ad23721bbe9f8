"""Benchmark one RGCN / RGAT / HGT layer against its peers on the synthetic benchmark graphs.

For every case (model x dataset x mode x width) and contender it records the
median time (CUDA events, after warm-up), the peak memory, out-of-memory as a
result, and the roofline: the minimum bytes the layer must move
(bytes_model.py) over the copy bandwidth, the minimum typed-GEMM FLOPs
(flops_model.py) over the cuBLAS GEMM peak at the run's precision, both peaks
measured at the start of the run; bound = the larger; `roofline_fraction` =
bound / time. Each contender's time is also compared with the fastest peer
(torch eager, torch.compile, PyG) of the case. Writes JSON, markdown and PNG
plots.

Fairness: every contender's training step uses the same loss code
(bench/train_loss.py; --loss=compiled|eager) and the same float32 matmul
precision (--precision=fp32|tf32; at tf32 the Hector rows come from
--hector-libs-tf32, libraries built with `hectorc --precision=tf32`).

    python3 bench/layers.py --out results/                       # everything (hours)
    python3 bench/layers.py --widths 64 --modes inference --out r/ --case-budget-s 1
    python3 bench/layers.py --datasets am --widths 64 --hector-libs base=DIR1,new=DIR2 --out r/
    python3 bench/layers.py --device cpu --datasets aifb --widths 32 --out /tmp/r   # plumbing check
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import shlex
import sys
import time

import repo_paths  # noqa: E402,F401  (sets the import paths)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import flops_model  # noqa: E402
import measure  # noqa: E402
import report  # noqa: E402
import roofline  # noqa: E402
import train_loss  # noqa: E402
from contenders import Shared, Skip, contenders_for, is_hector, torch_geometric  # noqa: E402
from hector.datasets.shapes import DATASETS  # noqa: E402
from hector.datasets.synthetic import generate  # noqa: E402
from reference import make_params  # noqa: E402

MODELS = ("rgcn", "rgat", "hgt")
MODES = ("inference", "training")
WIDTHS = (32, 64, 128)


@dataclasses.dataclass
class Case:
    model: str
    dataset: str
    mode: str
    width: int
    heads: int
    device: torch.device
    graph: object
    h: torch.Tensor
    params: dict
    labels: torch.Tensor
    input_bytes: int
    loss_grad: object = None  # (out, labels) -> (loss, d_out): bench/train_loss.py
    ref_out: object = None  # eager reference output (inference), for the contenders' checks


def make_case(model, dataset, mode, width, heads, device, graph, seed, loss_grad=None):
    """The inputs of one case, seeded as every script times them: h, params, labels."""
    gen = torch.Generator(device=device).manual_seed(seed + width)  # fast, seeded, made on the device
    h = torch.randn(graph.num_nodes, width, generator=gen, device=device)
    labels = torch.randint(0, width, (graph.num_nodes,), generator=gen, device=device)
    params = {k: torch.as_tensor(v, device=device)
              for k, v in make_params(model, graph, width, width, heads=heads, seed=seed).items()}
    inputs = h.numel() * 4 + sum(p.numel() * 4 for p in params.values()) + labels.numel() * 8
    return Case(model, dataset, mode, width, heads, device, graph, h, params, labels, inputs,
                loss_grad=loss_grad)


def parse_libs(values, parser=None):
    """--hector-libs values, each 'DIR' or 'NAME=DIR' or a comma list of those -> {NAME: DIR}.

    A bare DIR is named 'hector' (the contender 'hector'); NAME=DIR gives the
    contender 'hector-NAME'."""
    libs = {}
    for value in values or []:
        for item in (x for x in value.split(",") if x):
            name, sep, path = item.partition("=")
            if not sep:
                name, path = "hector", item
            name = name.strip()
            bad = (not name or not path or name in libs or "," in name
                   or any(c.isspace() for c in name))
            if bad:
                message = f"bad or repeated --hector-libs entry {item!r} (use NAME=DIR, names unique)"
                if parser is not None:
                    parser.error(message)
                raise ValueError(message)
            libs[name] = path
    return libs


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    csv = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    ap.add_argument("--models", type=csv, default=list(MODELS))
    ap.add_argument("--datasets", type=csv, default=list(DATASETS))
    ap.add_argument("--modes", type=csv, default=list(MODES))
    ap.add_argument("--widths", type=lambda s: [int(x) for x in csv(s)], default=list(WIDTHS))
    ap.add_argument("--contenders", type=csv, default=None, help="subset of contender names (default: all)")
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="dataset scale (1 = published counts)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20, help="at most this many timed calls per contender")
    ap.add_argument("--case-budget-s", type=float, default=2.0,
                    help="stop timing a contender once its timed calls add up to this (>= 1 call)")
    ap.add_argument("--compile-budget-s", type=float, default=600.0,
                    help="skip torch.compile once its compile times add up to this")
    ap.add_argument("--compile-datasets", type=csv, default=None,
                    help="run torch.compile only on these datasets (compiling is slow; default: all)")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="skip what is left after this many seconds, then write the results")
    ap.add_argument("--no-check", action="store_true", help="skip the output checks against the reference")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--hector-libs", action="append", default=None, metavar="[NAME=]DIR[,...]",
                    help="libraries of test/gpu/build_models.sh (build/gpu-models/tmpl), fp32 builds. "
                         "DIR alone is the contender 'hector'; NAME=DIR pairs (repeat the option or "
                         "separate with commas) are contenders 'hector-NAME' in the same run, "
                         "e.g. base=DIR1,new=DIR2")
    ap.add_argument("--hector-libs-tf32", action="append", default=None, metavar="[NAME=]DIR[,...]",
                    help="the same for --precision=tf32: libraries built with hectorc --precision=tf32 "
                         "(without them Hector is skipped at tf32, with a note)")
    ap.add_argument("--loss", choices=train_loss.KINDS, default="compiled",
                    help="the training loss and its gradient, the same code for every contender: "
                         "torch.compile'd (default; eager where torch.compile is unavailable) or eager")
    ap.add_argument("--precision", choices=measure.PRECISIONS, default="fp32",
                    help="float32 matmuls of every contender: fp32 (no TF32 anywhere, the default) or "
                         "tf32 (TF32 allowed for the peers, Hector from --hector-libs-tf32)")
    args = ap.parse_args(argv)
    args.hector_libs = parse_libs(args.hector_libs, ap)
    args.hector_libs_tf32 = parse_libs(args.hector_libs_tf32, ap)
    for what, got, known in (("models", args.models, MODELS), ("datasets", args.datasets, DATASETS),
                             ("modes", args.modes, MODES)):
        bad = [x for x in got if x not in known]
        if bad:
            ap.error(f"unknown {what}: {', '.join(bad)} (known: {', '.join(known)})")
    if any(w < 1 or w % args.heads for w in args.widths):
        ap.error(f"every width must be a positive multiple of --heads={args.heads}")
    return args


class Bench:
    def __init__(self, args):
        self.args = args
        self.device = torch.device(args.device)
        self.t0 = time.perf_counter()
        self.compile_spent = 0.0
        self.results = []
        self.datasets = {}
        self.meta = {
            "command": "python3 bench/layers.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "device_name": (torch.cuda.get_device_name(self.device) if self.device.type == "cuda"
                            else f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} threads)"),
            "torch": torch.__version__,
            "torch_geometric": getattr(torch_geometric, "__version__", None),
            "pyg_segment_matmul": bool(getattr(getattr(torch_geometric, "typing", None), "WITH_SEGMM", False)),
            "heads": args.heads,
            "scale": args.scale,
            "seed": args.seed,
            "precision": args.precision,
            "loss": args.loss,
            "hector_libs": args.hector_libs,
            "hector_libs_tf32": args.hector_libs_tf32,
        }
        self.loss_kind = args.loss
        self.hector_libs, self.hector_missing = hector_selection(args)

    def elapsed(self):
        return time.perf_counter() - self.t0

    def out_of_time(self):
        return self.args.deadline_s is not None and self.elapsed() > self.args.deadline_s

    def write(self, plots=False):
        data = {"meta": self.meta, "datasets": self.datasets, "results": self.results}
        return report.write_all(data, self.args.out, plots=plots and not self.args.no_plots)

    def run(self):
        a = self.args
        os.makedirs(a.out, exist_ok=True)
        print(f"device: {self.meta['device_name']}; torch {torch.__version__}; "
              f"torch_geometric {self.meta['torch_geometric']}", flush=True)
        self.meta["precision_settings"] = measure.set_precision(a.precision)
        if self.device.type == "cuda":
            self.meta["hbm_bytes_per_s"] = measure.measure_bandwidth(self.device)
        else:
            self.meta["hbm_bytes_per_s"] = measure.measure_bandwidth(self.device, nbytes=1 << 28, reps=5)
        peaks = {p: measure.measure_gemm_peak(self.device, p) for p in measure.PRECISIONS}
        self.meta["gemm_flops_per_s"] = peaks
        self.meta["gemm_peak_flops_per_s"] = peaks[a.precision]  # the one the bounds use
        _, self.meta["loss"] = train_loss.make(a.loss)
        print(f"memory bandwidth (copy, read + write): {self.meta['hbm_bytes_per_s'] / 1e9:.0f} GB/s; "
              "GEMM peak (float32 matmul): " +
              ", ".join(f"{p} {report.rate(v)}" for p, v in peaks.items()) +
              f"; precision {a.precision}; loss {self.meta['loss']}", flush=True)
        if self.hector_missing:
            print(f"note: {self.hector_missing}", flush=True)

        total = len(a.datasets) * len(a.models) * len(a.widths) * len(a.modes)
        done = 0
        for ds in a.datasets:
            if self.out_of_time():
                self._skip_rest(ds, "deadline")
                done += len(a.models) * len(a.widths) * len(a.modes)
                continue
            t = time.perf_counter()
            g = generate(ds, scale=a.scale, seed=a.seed)
            counts = flops_model.graph_counts(g)
            ratio = counts["P"] / counts["E"] if counts["E"] else 1.0  # = compaction_ratio(g)
            self.datasets[ds] = {"nodes": g.num_nodes, "edges": g.num_edges, "node_types": g.num_node_types,
                                 "edge_types": g.num_edge_types, "compaction_ratio": ratio,
                                 "pairs": counts["P"], "typed_endpoints": counts["typed_endpoints"],
                                 "max_in_degree": int(np.bincount(g.dst, minlength=g.num_nodes).max())}
            print(f"== {ds}: {g.num_nodes} nodes, {g.num_edges} edges, compaction {ratio:.2f} "
                  f"(generated in {time.perf_counter() - t:.1f} s)", flush=True)
            shared = Shared(g, self.device)
            shared.counts = counts
            for model in a.models:
                for width in a.widths:
                    for mode in a.modes:
                        done += 1
                        self._case(shared, model, ds, mode, width, done, total)
                        self.write()
            shared.clear()
            measure.free(self.device)
        paths = self.write(plots=True)
        print(f"done in {self.elapsed():.0f} s; wrote {a.out}/layers.json, layers.md" +
              (", " + ", ".join(os.path.basename(p) for p in paths) if paths else ""), flush=True)

    def _skip_rest(self, ds, why):
        for model in self.args.models:
            for width in self.args.widths:
                for mode in self.args.modes:
                    for name in self._contenders(model):
                        self.results.append(self._record(model, ds, mode, width, name, None, status="skipped",
                                                         note=why))

    def _contenders(self, model):
        table = contenders_for(model, self.hector_libs, self.hector_missing)
        return {n: f for n, f in table.items() if selected(n, self.args.contenders)}

    def _record(self, model, ds, mode, width, name, counts, **kw):
        rec = {"model": model, "dataset": ds, "mode": mode, "width": width, "heads": self.args.heads,
               "contender": name, "status": "ok", "median_ms": None, "samples": 0, "peak_mem_bytes": None,
               "compile_s": None, "min_bytes": None, "bw_fraction": None, "max_rel_err": None,
               "precision": self.args.precision, "loss": self.meta.get("loss"),
               "min_flops": None, "flops_variant": None,
               "bound_bytes_ms": None, "bound_flops_ms": None, "bound_ms": None,
               "roofline_fraction": None, "vs_best_peer": None, "best_peer": None, "note": ""}
        if counts is not None:
            rec.update(roofline.bound(model, mode, width, self.args.heads, counts, self.meta))
        rec.update(kw)
        return rec

    def _case(self, shared, model, ds, mode, width, done, total):
        a, dev = self.args, self.device
        # Fresh torch.compile caches (no recompile limit carried over from
        # earlier shapes), then this case's loss function, shared by every contender.
        train_loss.reset_compiler()
        loss_grad, _ = train_loss.make(self.loss_kind)
        case = make_case(model, ds, mode, width, a.heads, dev, shared.graph, a.seed, loss_grad)
        line, recs = [], []
        for name, make in self._contenders(model).items():
            rec = self._contender(case, shared, name, make)
            recs.append(rec)
            self.results.append(rec)
        compare_with_best_peer(recs)
        for rec in recs:
            line.append(f"{rec['contender']} " + (
                f"{rec['median_ms']:.3g}ms" + (f" ({100 * rec['roofline_fraction']:.2g}% roof)"
                                               if rec.get("roofline_fraction") is not None else "")
                if rec["status"] == "ok" else rec["status"]))
        print(f"[{done}/{total}] {model} {ds} {mode} w{width}: " + " | ".join(line) +
              f"  ({self.elapsed():.0f}s)", flush=True)
        case.ref_out = None
        del case, recs
        measure.free(dev)

    def _contender(self, case, shared, name, make):
        a, dev = self.args, self.device
        rec = self._record(case.model, case.dataset, case.mode, case.width, name, shared.counts)
        if self.out_of_time():
            rec.update(status="skipped", note="deadline")
            return rec
        if name == "torch-compile":
            if self.compile_spent > a.compile_budget_s:
                rec.update(status="skipped", note=f"compile budget of {a.compile_budget_s:.0f} s spent")
                return rec
            if a.compile_datasets is not None and case.dataset not in a.compile_datasets:
                rec.update(status="skipped", note="not in --compile-datasets")
                return rec
        measure.free(dev)
        runner = None
        first_call_done = False
        try:
            runner = make(case, shared)
            fn = runner.forward if case.mode == "inference" else runner.train_step
            measure.reset_peak(dev)
            base = measure.allocated(dev)
            t = time.perf_counter()
            out = fn()
            measure.sync(dev)
            first = time.perf_counter() - t
            first_call_done = True
            if runner.compiles:
                rec["compile_s"] = first
                self.compile_spent += first
            if case.mode == "inference" and not a.no_check:
                if name == "torch-eager":
                    case.ref_out = out.detach()
                rec["max_rel_err"] = runner.check(out)
            out = None
            ms, n = measure.time_calls(fn, dev, warmup=max(0, a.warmup - 1), max_iters=a.iters,
                                       budget_s=a.case_budget_s)
            rec.update(median_ms=ms, samples=n)
            if dev.type == "cuda":  # not measured on a CPU
                rec["peak_mem_bytes"] = (case.input_bytes + runner.own_bytes() + measure.peak(dev)
                                         - base + getattr(runner, "extra_peak_bytes", lambda: 0)())
            rec["bw_fraction"] = rec["min_bytes"] / (ms / 1e3) / self.meta["hbm_bytes_per_s"]
            if rec["bound_ms"] is not None:
                rec["roofline_fraction"] = rec["bound_ms"] / ms
        except Skip as why:
            rec.update(status="skipped", note=str(why))
        except Exception as err:  # recorded as a result: the run goes on
            msg = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"[:300]
            if measure.is_oom(err):
                rec.update(status="oom", note=msg)
            elif runner is not None and runner.compiles and not first_call_done:
                rec.update(status="compile-error", note=msg)
            else:
                rec.update(status="error", note=msg)
        runner = None
        measure.free(dev)
        return rec


def hector_selection(args):
    """(libraries {label: dir}, reason to skip them or None) for the run's precision."""
    if args.precision == "fp32":
        return args.hector_libs, None
    if args.hector_libs_tf32:
        return args.hector_libs_tf32, None
    return (args.hector_libs, "Hector skipped at --precision=tf32: no --hector-libs-tf32 "
            "(libraries built with hectorc --precision=tf32); --hector-libs are fp32 builds")


def selected(name, wanted):
    """--contenders filter: exact names; 'hector' selects every Hector contender."""
    return wanted is None or name in wanted or ("hector" in wanted and is_hector(name))


def compare_with_best_peer(recs):
    """vs_best_peer = the fastest peer's time / this contender's (> 1: faster than every peer).

    Peers are the contenders that are not Hector's (torch eager, torch.compile, PyG)."""
    peers = [r for r in recs if r["status"] == "ok" and not is_hector(r["contender"])]
    if not peers:
        return
    best = min(peers, key=lambda r: r["median_ms"])
    for r in recs:
        if r["status"] == "ok":
            r["vs_best_peer"] = best["median_ms"] / r["median_ms"]
            r["best_peer"] = best["contender"]


def main(argv=None):
    args = parse_args(argv)
    Bench(args).run()


if __name__ == "__main__":
    main()

"""Profile one layer call or training step: per-kernel GPU time, launches, registers, occupancy.

The implementation of `bench/profile.py` (that file only runs this: under
its own name it would shadow the standard library's `profile` module, which
cProfile and torch import, for every script run from bench/).

For one model and graph (the synthetic graphs of bench/layers.py) and one
contender (Hector's library by default, or the torch references, e.g. the
torch.compile contender for comparison), it

1. builds the case exactly as bench/layers.py times it (same inputs, same
   loss function: bench/train_loss.py, same precision), warms it up and
   times it with CUDA events (median);
2. runs `--steps` calls under torch.profiler, each a range `profile.step.<i>`
   ending in a synchronisation, and prints per kernel the GPU time (sum,
   count, mean), registers per thread and the profiler's occupancy
   estimate where it reports them, then per step the kernel launches, the
   total kernel time against the wall time, the GPU idle time before the
   first kernel, and the host time of each Hector entry call (`hector::<entry>`);
3. with `--ncu`, re-runs itself under Nsight Compute (one step, after an
   unprofiled warm-up: `--profile-from-start off` and cudaProfilerStart/Stop
   around the step) with the LaunchStats, Occupancy, SpeedOfLight and
   WarpStateStats sections and the per-reason warp-stall metrics, and prints
   per kernel: registers/thread, theoretical and achieved occupancy, DRAM%,
   SM%, duration, the top stall reasons;
4. writes everything to `--out`/profile.json (and trace.json, the profiler's
   chrome trace; ncu.ncu-rep and ncu.csv with --ncu).

Hector's CUDA kernels are named after their function in the cubin:
`<model>_kernel` (inference), `<model>_fwd_kernel`, `<model>_bwd_kernel`;
several kernels of one function share that name, so a kernel is identified
by its name and its launch order among the kernels of that name in one
step (`rgcn_bwd_kernel#3`), the same in both profilers.

    # on the GPU machine, with the libraries of test/gpu/build_models.sh
    python3 bench/profile.py --lib-dir build/gpu-models/tmpl --model rgcn --dataset am \\
        --mode training --out OUT [--ncu]
    python3 bench/profile.py --contender torch-compile --model rgcn --dataset am --mode training --out OUT
    # plumbing check on a CPU (a CPU library; host ranges and CPU ops only)
    python3 bench/profile.py --device cpu --lib-dir DIR --model rgcn --dataset mutag --scale 0.005 \\
        --width 16 --mode training --out /tmp/p
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gc
import glob
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
from collections import OrderedDict

import repo_paths  # noqa: E402,F401  (sets the import paths)

import torch  # noqa: E402

import flops_model  # noqa: E402
import layers  # noqa: E402
import roofline  # noqa: E402
import measure  # noqa: E402
import train_loss  # noqa: E402
from contenders import PEERS, HECTOR, Shared, Skip, hector  # noqa: E402
from hector.datasets.shapes import DATASETS  # noqa: E402
from hector.datasets.synthetic import generate  # noqa: E402

STEP = "profile.step."
HOST_RANGE = "hector::"
NCU_SECTIONS = ("LaunchStats", "Occupancy", "SpeedOfLight", "WarpStateStats")
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
NCU_STALL_METRICS = "regex:^" + STALL_PREFIX + ".*" + re.escape(STALL_SUFFIX) + "$"
# Kineto's kernel arguments worth keeping, under shorter names.
KERNEL_ARGS = {"registers per thread": "registers_per_thread", "shared memory": "shared_memory_bytes",
               "grid": "grid", "block": "block", "blocks per SM": "blocks_per_sm",
               "warps per SM": "warps_per_sm", "est. achieved occupancy %": "est_occupancy_pct"}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    peers = sorted({n for table in PEERS.values() for n in table})
    ap.add_argument("--contender", default=HECTOR, choices=[HECTOR] + peers,
                    help="what to profile (default: Hector's library from --lib-dir)")
    ap.add_argument("--lib-dir", default=None,
                    help="Hector libraries as built by test/gpu/build_models.sh (build/gpu-models/tmpl): "
                         "lib<model>_<width>_<heads>.so")
    ap.add_argument("--model", required=True, choices=layers.MODELS)
    ap.add_argument("--dataset", required=True, choices=list(DATASETS))
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--mode", default="inference", choices=layers.MODES)
    ap.add_argument("--scale", type=float, default=1.0, help="dataset scale (1 = published counts)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--loss", choices=train_loss.KINDS, default="compiled",
                    help="the training loss, as in bench/layers.py")
    ap.add_argument("--precision", choices=measure.PRECISIONS, default="fp32",
                    help="float32 matmul precision, as in bench/layers.py (pass TF32 libraries in --lib-dir)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls first (the first one compiles)")
    ap.add_argument("--iters", type=int, default=10, help="calls timed with CUDA events (median)")
    ap.add_argument("--steps", type=int, default=5, help="calls under torch.profiler")
    ap.add_argument("--top", type=int, default=40, help="kernels printed (all are in the JSON)")
    ap.add_argument("--ncu", action="store_true", help="then re-run under Nsight Compute (one step)")
    ap.add_argument("--ncu-path", default=None, help="the ncu binary (default: PATH, then CUDA's usual places)")
    ap.add_argument("--ncu-steps", type=int, default=1, help="steps profiled by ncu")
    ap.add_argument("--ncu-timeout-s", type=float, default=540.0)
    ap.add_argument("--kernel-regex", default=None,
                    help="kernels ncu profiles (and the profiler's 'matched' total); default for Hector: "
                         "^<model>.*_kernel; for the torch contenders: every kernel")
    ap.add_argument("--out", required=False, default=None, help="output directory (profile.json, trace.json)")
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.width < 1 or args.width % args.heads:
        ap.error(f"--width must be a positive multiple of --heads={args.heads}")
    if args.contender == HECTOR and not args.lib_dir:
        ap.error("--lib-dir is needed to profile Hector (or pass --contender torch-compile)")
    if not args.ncu_child and not args.out:
        ap.error("--out is required")
    if args.contender not in PEERS[args.model] and args.contender != HECTOR:
        ap.error(f"{args.contender} is not a contender for {args.model} "
                 f"(known: {', '.join([HECTOR] + list(PEERS[args.model]))})")
    if args.kernel_regex is None and args.contender == HECTOR:
        args.kernel_regex = f"^{re.escape(args.model)}.*_kernel"
    return args


# ------------------------------------------------------------------ the case
def build(args, device):
    """(runner, fn, case, counts): the contender's call or step, ready to run."""
    measure.set_precision(args.precision)
    g = generate(args.dataset, scale=args.scale, seed=args.seed)
    counts = flops_model.graph_counts(g)
    train_loss.reset_compiler()
    loss_grad, loss_kind = train_loss.make(args.loss)
    case = layers.make_case(args.model, args.dataset, args.mode, args.width, args.heads, device, g,
                            args.seed, loss_grad)
    shared = Shared(g, device)
    make = hector(args.lib_dir) if args.contender == HECTOR else PEERS[args.model][args.contender]
    runner = make(case, shared)
    if args.contender == HECTOR:
        runner.step.annotate = True
    fn = runner.forward if args.mode == "inference" else runner.train_step
    return runner, fn, case, counts, loss_kind


def warm_up(fn, device, n):
    for _ in range(max(1, n)):
        fn()
    measure.sync(device)


# ------------------------------------------------------------- torch.profiler
def profile_steps(fn, device, steps, trace_path):
    """Run fn `steps` times under torch.profiler, each in a range profile.step.<i> that ends
    with a synchronisation; write the chrome trace to trace_path and return its events."""
    from torch.profiler import ProfilerActivity, profile, record_function
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        for i in range(steps):
            with record_function(f"{STEP}{i}"):
                fn()
                measure.sync(device)
    prof.export_chrome_trace(trace_path)
    with open(trace_path, encoding="utf-8") as f:
        return trace_events(json.load(f))


def trace_events(trace):
    """The complete ('X') events of a chrome trace: Kineto's {'traceEvents': [...]} or a bare list."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e]


def _cat(e):
    return str(e.get("cat") or "").lower()


def _on_host(e):
    cat = _cat(e)
    return not (cat.startswith("gpu") or cat in ("kernel", "memcpy", "memset"))


def kernel_key(name, ordinal, repeats):
    return f"{name}#{ordinal}" if repeats > 1 else name


def summarize_trace(events, kernel_regex=None):
    """Per-step and per-kernel figures from trace events (see the module docstring).

    A kernel belongs to step i when it starts inside the host range
    profile.step.<i> (each step ends with a synchronisation, so its kernels
    also end inside it). Times in the result are milliseconds, per-kernel
    means microseconds.
    """
    matcher = re.compile(kernel_regex) if kernel_regex else None
    steps = sorted((e for e in events if _on_host(e) and str(e.get("name", "")).startswith(STEP)),
                   key=lambda e: e["ts"])
    kernels = sorted((e for e in events if _cat(e) == "kernel"), key=lambda e: e["ts"])
    copies = [e for e in events if _cat(e) in ("gpu_memcpy", "gpu_memset")]
    host = [e for e in events if _on_host(e) and str(e.get("name", "")).startswith(HOST_RANGE)]
    cpu_ops = [e for e in events if _on_host(e) and str(e.get("name", "")).startswith("aten::")]

    def inside(e, s):
        return s["ts"] <= e["ts"] <= s["ts"] + s["dur"]

    per_step, per_kernel = [], OrderedDict()
    for i, s in enumerate(steps):
        mine = [k for k in kernels if inside(k, s)]
        names = [k["name"] for k in mine]
        seen = {}
        for k in mine:
            ordinal = seen.get(k["name"], 0)
            seen[k["name"]] = ordinal + 1
            key = kernel_key(k["name"], ordinal, names.count(k["name"]))
            rec = per_kernel.setdefault(key, {"kernel": key, "name": k["name"], "ordinal": ordinal,
                                              "durations_us": [], "steps": 0})
            rec["durations_us"].append(float(k["dur"]))
            rec["steps"] = i + 1
            for src, dst in KERNEL_ARGS.items():
                if src in k.get("args", {}):
                    rec[dst] = k["args"][src]
        mine_copies = [c for c in copies if inside(c, s)]
        first = min((k["ts"] for k in mine), default=None)
        last = max((k["ts"] + k["dur"] for k in mine), default=None)
        step = {"step": i, "wall_ms": s["dur"] / 1e3, "launches": len(mine),
                "kernel_ms": sum(k["dur"] for k in mine) / 1e3,
                "copies": len(mine_copies), "copy_ms": sum(c["dur"] for c in mine_copies) / 1e3,
                "gpu_span_ms": (last - first) / 1e3 if mine else 0.0,
                "idle_before_first_kernel_ms": (first - s["ts"]) / 1e3 if mine else None,
                "host_ranges_ms": {}}
        if matcher is not None:
            hits = [k for k in mine if matcher.search(k["name"])]
            step["matched_launches"] = len(hits)
            step["matched_kernel_ms"] = sum(k["dur"] for k in hits) / 1e3
        for h in host:
            if inside(h, s):
                step["host_ranges_ms"][h["name"]] = step["host_ranges_ms"].get(h["name"], 0.0) + h["dur"] / 1e3
        per_step.append(step)

    n = max(1, len(per_step))
    total_kernel_us = sum(sum(r["durations_us"]) for r in per_kernel.values()) or 1.0
    kernel_rows = []
    for r in per_kernel.values():
        d = r.pop("durations_us")
        r.update(count=len(d), calls_per_step=len(d) / n, sum_us=sum(d), mean_us=statistics.mean(d),
                 per_step_ms=sum(d) / n / 1e3, share=sum(d) / total_kernel_us,
                 matched=bool(matcher.search(r["name"])) if matcher else None)
        kernel_rows.append(r)
    kernel_rows.sort(key=lambda r: -r["sum_us"])

    by_name = OrderedDict()
    for r in kernel_rows:
        b = by_name.setdefault(r["name"], {"name": r["name"], "kernels": 0, "count": 0, "sum_us": 0.0})
        b["kernels"] += 1
        b["count"] += r["count"]
        b["sum_us"] += r["sum_us"]
    for b in by_name.values():
        b["mean_us"] = b["sum_us"] / b["count"]
        b["per_step_ms"] = b["sum_us"] / n / 1e3

    ops = OrderedDict()
    for e in cpu_ops:
        if any(inside(e, s) for s in steps):
            o = ops.setdefault(e["name"], {"name": e["name"], "count": 0, "sum_us": 0.0})
            o["count"] += 1
            o["sum_us"] += float(e["dur"])
    cpu_rows = sorted(ops.values(), key=lambda o: -o["sum_us"])[:30]

    def med(key):
        vals = [s[key] for s in per_step if s.get(key) is not None]
        return statistics.median(vals) if vals else None

    host_names = sorted({k for s in per_step for k in s["host_ranges_ms"]})
    summary = {"steps": len(per_step), "launches_per_step": med("launches"),
               "kernel_ms_per_step": med("kernel_ms"), "wall_ms_per_step": med("wall_ms"),
               "gpu_span_ms_per_step": med("gpu_span_ms"),
               "idle_before_first_kernel_ms": med("idle_before_first_kernel_ms"),
               "copies_per_step": med("copies"), "copy_ms_per_step": med("copy_ms"),
               "host_ranges_ms_per_step": {h: statistics.median([s["host_ranges_ms"].get(h, 0.0)
                                                                 for s in per_step]) for h in host_names}}
    if matcher is not None:
        summary["matched_launches_per_step"] = med("matched_launches")
        summary["matched_kernel_ms_per_step"] = med("matched_kernel_ms")
    return {"summary": summary, "steps": per_step, "kernels": kernel_rows,
            "by_name": list(by_name.values()), "cpu_ops": cpu_rows}


# ----------------------------------------------------------------- Nsight Compute
def find_ncu(path=None):
    if path:
        return path if os.access(path, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    patterns = ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu", "/usr/local/cuda*/nsight-compute*/ncu",
                "/opt/nvidia/nsight-compute/*/ncu", "/usr/bin/ncu")
    for pattern in patterns:
        for candidate in sorted(glob.glob(pattern), reverse=True):
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def child_argv(args):
    """This script's arguments for the run under ncu: the same case, one profiled step."""
    argv = ["--contender", args.contender, "--model", args.model, "--dataset", args.dataset,
            "--width", str(args.width), "--heads", str(args.heads), "--mode", args.mode,
            "--scale", repr(args.scale), "--seed", str(args.seed), "--device", args.device,
            "--loss", args.loss, "--precision", args.precision, "--warmup", str(args.warmup),
            "--ncu-steps", str(args.ncu_steps), "--ncu-child"]
    if args.lib_dir:
        argv += ["--lib-dir", os.path.abspath(args.lib_dir)]
    return argv


def ncu_command(ncu, args, report_base, stall_metrics=True):
    cmd = [ncu, "--target-processes", "all", "--profile-from-start", "off"]
    if args.kernel_regex:
        cmd += ["--kernel-name", f"regex:{args.kernel_regex}"]
    for section in NCU_SECTIONS:
        cmd += ["--section", section]
    if stall_metrics:
        cmd += ["--metrics", NCU_STALL_METRICS]
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile.py")
    cmd += ["-f", "-o", report_base, sys.executable, script, *child_argv(args)]
    return cmd


def _number(text):
    text = (text or "").strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


# Label variants across ncu versions, for the fields the table prints.
NCU_FIELDS = {
    "registers_per_thread": ("Registers Per Thread",),
    "theoretical_occupancy_pct": ("Theoretical Occupancy",),
    "achieved_occupancy_pct": ("Achieved Occupancy",),
    "dram_pct": ("DRAM Throughput", "DRAM Throughput [%]"),
    "sm_pct": ("Compute (SM) Throughput", "Compute (SM) [%]", "SM [%]", "SM Throughput"),
    "memory_pct": ("Memory Throughput", "Memory [%]"),
    "warp_cycles_per_issue": ("Warp Cycles Per Issued Instruction",),
    "block_limit_registers": ("Block Limit Registers",),
    "waves_per_sm": ("Waves Per SM",),
}
TIME_UNITS_US = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
                 "second": 1e6, "s": 1e6}


def parse_ncu_csv(text):
    """Per-kernel records, in launch order, from `ncu --import R --csv --page details`."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    kernels = OrderedDict()
    for row in csv.DictReader(lines[start:]):
        kid = row.get("ID")
        if kid is None or row.get("Kernel Name") is None:
            continue
        k = kernels.setdefault(kid, {"id": int(_number(kid) or 0), "name": row["Kernel Name"],
                                     "grid": row.get("Grid Size"), "block": row.get("Block Size"),
                                     "metrics": {}})
        name, unit, value = row.get("Metric Name"), row.get("Metric Unit") or "", row.get("Metric Value")
        if name:
            k["metrics"][name] = (value, unit)
    out, seen = [], {}
    names = [k["name"] for k in kernels.values()]
    for k in kernels.values():
        ordinal = seen.get(k["name"], 0)
        seen[k["name"]] = ordinal + 1
        rec = {"kernel": kernel_key(k["name"], ordinal, names.count(k["name"])), "name": k["name"],
               "ordinal": ordinal, "id": k["id"], "grid": k["grid"], "block": k["block"]}
        metrics = k["metrics"]
        for field, labels in NCU_FIELDS.items():
            rec[field] = next((_number(metrics[lab][0]) for lab in labels if lab in metrics), None)
        if "Duration" in metrics:
            value, unit = metrics["Duration"]
            scale = TIME_UNITS_US.get(unit.strip().lower())
            rec["duration_us"] = _number(value) * scale if scale and _number(value) is not None else None
        stalls = {}
        for name, (value, _) in metrics.items():
            if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX):
                reason = name[len(STALL_PREFIX):-len(STALL_SUFFIX)]
                if reason != "selected" and _number(value) is not None:  # 'selected' is issuing
                    stalls[reason] = _number(value)
        rec["stalls"] = stalls
        rec["top_stalls"] = sorted(stalls.items(), key=lambda kv: -kv[1])[:3]
        out.append(rec)
    return out


def run_ncu(args, out_dir):
    """Profile one step under ncu; returns {'command', 'kernels' or 'error', ...}."""
    ncu = find_ncu(args.ncu_path)
    if ncu is None:
        return {"error": "ncu not found (PATH, /usr/local/cuda*/bin, /opt/nvidia/nsight-compute); "
                         "pass --ncu-path"}
    report_base = os.path.join(os.path.abspath(out_dir), "ncu")
    result = {}
    for stall_metrics in (True, False):  # without the stall metrics if ncu refuses them
        cmd = ncu_command(ncu, args, report_base, stall_metrics)
        print("ncu: " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.ncu_timeout_s)
        except subprocess.TimeoutExpired:
            return {"command": cmd, "error": f"ncu ran past --ncu-timeout-s={args.ncu_timeout_s:.0f}"}
        log = (proc.stdout + proc.stderr)[-4000:]
        result = {"command": cmd, "returncode": proc.returncode, "log_tail": log}
        if proc.returncode == 0 and os.path.exists(report_base + ".ncu-rep"):
            break
        print(f"ncu failed (rc {proc.returncode}):\n{log}", flush=True)
    else:
        result["error"] = "ncu did not write a report (see log_tail)"
        return result
    for extra in (["--print-units", "base"], []):
        imp = subprocess.run([ncu, "--import", report_base + ".ncu-rep", "--csv", "--page", "details",
                              *extra], capture_output=True, text=True, timeout=300)
        if imp.returncode == 0:
            break
    if imp.returncode != 0:
        result["error"] = f"ncu --import failed: {imp.stderr[-2000:]}"
        return result
    with open(os.path.join(out_dir, "ncu.csv"), "w", encoding="utf-8") as f:
        f.write(imp.stdout)
    result["kernels"] = parse_ncu_csv(imp.stdout)
    if not result["kernels"]:
        result["error"] = ("ncu profiled no kernel (is --kernel-regex right? "
                           f"{args.kernel_regex!r}; can this user read the GPU's performance "
                           "counters? ERR_NVGPUCTRPERM in the log says no)")
    return result


def ncu_child(args):
    """Under ncu: warm up unprofiled, then profile --ncu-steps steps between
    cudaProfilerStart and cudaProfilerStop."""
    device = torch.device(args.device)
    _, fn, _, _, _ = build(args, device)
    warm_up(fn, device, args.warmup)
    torch.cuda.profiler.start()
    for _ in range(args.ncu_steps):
        fn()
    measure.sync(device)
    torch.cuda.profiler.stop()


# ------------------------------------------------------------------- printing
def _fmt(x, spec=".3g"):
    return "-" if x is None else format(x, spec)


def print_report(result, top):
    s, meta = result["summary"], result["meta"]
    print(f"\n== {meta['contender']} {meta['model']} {meta['dataset']} {meta['mode']} w{meta['width']} "
          f"h{meta['heads']} ({meta['device_name']}, {meta['precision']}, loss {meta['loss']})")
    clock = "CUDA events" if meta["device_name"] and not meta["device_name"].startswith("CPU") else "perf_counter"
    print(f"median {_fmt(result.get('event_ms'))} ms ({clock}, {result.get('event_samples')} calls); "
          f"roofline bound {_fmt(result['roofline'].get('bound_ms'))} ms "
          f"(bytes {_fmt(result['roofline'].get('bound_bytes_ms'))}, "
          f"FLOPs {_fmt(result['roofline'].get('bound_flops_ms'))}, variant {result['roofline'].get('flops_variant')})")
    print(f"per step (median of {s['steps']}): {_fmt(s['launches_per_step'], 'g')} kernel launches, "
          f"kernel time {_fmt(s['kernel_ms_per_step'])} ms, wall {_fmt(s['wall_ms_per_step'])} ms "
          f"(with the final sync), GPU span {_fmt(s['gpu_span_ms_per_step'])} ms, "
          f"GPU idle before the first kernel {_fmt(s['idle_before_first_kernel_ms'])} ms, "
          f"{_fmt(s['copies_per_step'], 'g')} memcpy/memset ({_fmt(s['copy_ms_per_step'])} ms)")
    if s.get("matched_launches_per_step") is not None:
        print(f"kernels matching {meta['kernel_regex']!r}: {_fmt(s['matched_launches_per_step'], 'g')} "
              f"launches, {_fmt(s['matched_kernel_ms_per_step'])} ms per step")
    for name, ms in s["host_ranges_ms_per_step"].items():
        print(f"host call {name}: {ms:.3g} ms per step")
    rows = result["kernels"][:top]
    if rows:
        print(f"\n{'kernel':44s} {'calls/step':>10s} {'mean us':>9s} {'ms/step':>8s} {'share':>6s} "
              f"{'regs':>5s} {'grid':>16s} {'block':>12s} {'occ%':>5s}")
        for r in rows:
            print(f"{r['kernel'][:44]:44s} {r['calls_per_step']:10.3g} {r['mean_us']:9.1f} "
                  f"{r['per_step_ms']:8.3f} {100 * r['share']:5.1f}% {_fmt(r.get('registers_per_thread'), 'g'):>5s} "
                  f"{str(r.get('grid', '-')):>16s} {str(r.get('block', '-')):>12s} "
                  f"{_fmt(r.get('est_occupancy_pct'), 'g'):>5s}")
        if len(result["kernels"]) > top:
            print(f"... {len(result['kernels']) - top} more kernels in profile.json")
    elif result.get("cpu_ops"):
        print("\nno GPU kernels (a CPU run); CPU ops by inclusive time:")
        for o in result["cpu_ops"][:top]:
            print(f"  {o['name'][:50]:50s} {o['count']:6d} calls {o['sum_us'] / 1e3:9.3f} ms")
    if result.get("ncu"):
        n = result["ncu"]
        if n.get("error"):
            print(f"\nncu: {n['error']}")
            if n.get("log_tail"):
                print("ncu output (last lines):\n" + "\n".join(n["log_tail"].splitlines()[-15:]))
        if n.get("kernels"):
            print(f"\nNsight Compute ({len(n['kernels'])} kernels):")
            print(f"{'kernel':44s} {'regs':>5s} {'theo%':>6s} {'ach%':>6s} {'DRAM%':>6s} {'SM%':>6s} "
                  f"{'us':>9s}  top stalls (warp cycles per issue)")
            for k in n["kernels"]:
                stalls = ", ".join(f"{r} {v:.2g}" for r, v in k["top_stalls"]) or "-"
                print(f"{k['kernel'][:44]:44s} {_fmt(k['registers_per_thread'], 'g'):>5s} "
                      f"{_fmt(k['theoretical_occupancy_pct'], '.1f'):>6s} "
                      f"{_fmt(k['achieved_occupancy_pct'], '.1f'):>6s} "
                      f"{_fmt(k['dram_pct'], '.1f'):>6s} {_fmt(k['sm_pct'], '.1f'):>6s} "
                      f"{_fmt(k.get('duration_us'), '.1f'):>9s}  {stalls}")


# ----------------------------------------------------------------------- main
def main(argv=None):
    args = parse_args(argv)
    if args.ncu_child:
        ncu_child(args)
        return 0
    device = torch.device(args.device)
    os.makedirs(args.out, exist_ok=True)
    result = profile_case(args, device)
    path = os.path.join(args.out, "profile.json")

    def write():
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)

    write()  # kept if the ncu run below is cut short
    if result.get("status") != "ok":
        print(f"{args.contender}: {result['status']}: {result.get('note')}; wrote {path}", flush=True)
        return 2
    if args.ncu:
        gc.collect()
        measure.free(device)  # the ncu run is another process on the same GPU
        if device.type != "cuda":
            result["ncu"] = {"error": "--ncu needs a CUDA device"}
        else:
            result["ncu"] = run_ncu(args, args.out)
        write()
    print_report(result, args.top)
    print(f"\nwrote {path}, {os.path.join(args.out, 'trace.json')}"
          + (f", {os.path.join(args.out, 'ncu.ncu-rep')}, ncu.csv" if (result.get("ncu") or {}).get("kernels")
             else ""))
    return 0


def profile_case(args, device):
    meta = {"command": "python3 bench/profile.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "device_name": (torch.cuda.get_device_name(device) if device.type == "cuda"
                            else f"CPU ({platform.processor() or platform.machine()})"),
            "torch": torch.__version__, "contender": args.contender, "model": args.model,
            "dataset": args.dataset, "width": args.width, "heads": args.heads, "mode": args.mode,
            "scale": args.scale, "seed": args.seed, "precision": args.precision,
            "lib_dir": args.lib_dir, "kernel_regex": args.kernel_regex}
    result = {"meta": meta, "status": "ok"}
    try:
        runner, fn, case, counts, meta["loss"] = build(args, device)
    except Skip as why:
        meta["loss"] = args.loss
        result.update(status="skipped", note=str(why))
        return result
    meta["graph"] = counts
    warm_up(fn, device, args.warmup)
    result["event_ms"], result["event_samples"] = measure.time_calls(
        fn, device, warmup=0, max_iters=args.iters, budget_s=10.0)
    # The roofline of this case, with peaks measured now (as bench/layers.py does).
    peaks = {"hbm_bytes_per_s": measure.measure_bandwidth(device) if device.type == "cuda"
             else measure.measure_bandwidth(device, nbytes=1 << 26, reps=3),
             "gemm_peak_flops_per_s": measure.measure_gemm_peak(device, args.precision)}
    measure.set_precision(args.precision)
    result["roofline"] = dict(peaks, **roofline.bound(args.model, args.mode, args.width, args.heads,
                                                       counts, peaks))
    if result["roofline"].get("bound_ms") and result["event_ms"]:
        result["roofline"]["fraction"] = result["roofline"]["bound_ms"] / result["event_ms"]
    events = profile_steps(fn, device, args.steps, os.path.join(args.out, "trace.json"))
    result.update(summarize_trace(events, args.kernel_regex))
    return result  # the case dies here, before an ncu run


if __name__ == "__main__":
    sys.exit(main())

"""Markdown tables and PNG plots from bench/layers.py JSON results; also merges several runs.

    python3 bench/report.py run1.json run2.json --out DIR   # writes DIR/layers.{json,md} and plots
    python3 bench/report.py old.json --recompute-roofline --out DIR   # today's roofline models
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections import OrderedDict

GIB = 1 << 30


def is_hector(name):
    return name == "hector" or name.startswith("hector-")


def cell(r):
    """One contender's result as a short table cell: ms · GiB · fraction of the roofline bound."""
    if r["status"] == "ok":
        text = f"{r['median_ms']:.3g} ms"
        if r.get("peak_mem_bytes") is not None:
            text += f" · {r['peak_mem_bytes'] / GIB:.2f} GiB"
        if r.get("roofline_fraction") is not None:
            text += f" · {100 * r['roofline_fraction']:.2g}%"
        elif r.get("bw_fraction") is not None:  # results from before the roofline column
            text += f" · {100 * r['bw_fraction']:.2g}% bw"
        return text
    if r["status"] == "oom":
        return "OOM"
    return r["status"]


def speedup_cell(row, name="hector"):
    """A Hector contender's speed-up over the fastest peer that ran, e.g. '2.10x vs torch-compile'."""
    mine = row.get(name)
    peers = [r for c, r in row.items() if not is_hector(c) and r["status"] == "ok"]
    if not mine or mine["status"] != "ok" or not peers:
        return "-"
    best = min(peers, key=lambda r: r["median_ms"])
    return f"{best['median_ms'] / mine['median_ms']:.2f}x vs {best['contender']}"


def bound_cell(r):
    """'bound ms (bytes ms / FLOPs ms)' of a case, or '-' where the peaks were not measured."""
    if r.get("bound_ms") is None:
        return "-"
    which = "F" if r["bound_flops_ms"] >= r["bound_bytes_ms"] else "B"
    return f"{r['bound_ms']:.3g} {which} ({r['bound_bytes_ms']:.2g} / {r['bound_flops_ms']:.2g})"


def _groups(results):
    """results grouped as {(mode, width, heads, precision, model): {dataset: {contender: record}}},
    in run order."""
    out = OrderedDict()
    for r in results:
        key = (r["mode"], r["width"], r.get("heads", 1), r.get("precision", "fp32"), r["model"])
        out.setdefault(key, OrderedDict()).setdefault(r["dataset"], OrderedDict())[r["contender"]] = r
    return out


def rate(flops_per_s):
    return (f"{flops_per_s / 1e12:.1f} TFLOP/s" if flops_per_s >= 1e12
            else f"{flops_per_s / 1e9:.1f} GFLOP/s")


def summary(results):
    """Per Hector contender and precision, over the cases where it and torch-compile both ran:
    the geometric mean of torch-compile's time over its own, how many cases it is faster in,
    the same against the fastest peer, its lowest fraction of the roofline bound, and how
    many cases its peak memory is at most torch-compile's (issue 15's criteria)."""
    cases = OrderedDict()
    for r in results:
        key = (r.get("precision", "fp32"), r["model"], r["dataset"], r["mode"], r["width"], r.get("heads", 1))
        cases.setdefault(key, {})[r["contender"]] = r
    names = list(OrderedDict.fromkeys((k[0], c) for k, row in cases.items() for c in row if is_hector(c)))
    if not names:
        return []
    lines = ["## Summary", "",
             "| precision | contender | cases | vs torch-compile: geomean, faster in | vs best peer: geomean,"
             " faster in | lowest % of roofline | peak memory <= torch-compile's |",
             "|---|---|---:|---|---|---|---|"]
    for precision, name in names:
        ratios, best, fracs, mem = [], [], [], []
        for key, row in cases.items():
            mine = row.get(name)
            if key[0] != precision or not mine or mine["status"] != "ok":
                continue
            tc = row.get("torch-compile")
            if tc and tc["status"] == "ok":
                ratios.append(tc["median_ms"] / mine["median_ms"])
                if mine.get("peak_mem_bytes") is not None and tc.get("peak_mem_bytes") is not None:
                    mem.append(mine["peak_mem_bytes"] <= tc["peak_mem_bytes"])
            if mine.get("vs_best_peer") is not None:
                best.append(mine["vs_best_peer"])
            if mine.get("roofline_fraction") is not None:
                fracs.append((mine["roofline_fraction"], f"{key[1]} {key[2]} {key[3]} w{key[4]} h{key[5]}"))
        n = sum(1 for k, row in cases.items() if k[0] == precision and (row.get(name) or {}).get("status") == "ok")

        def geo(xs):
            if not xs:
                return "-"
            return (f"{math.exp(sum(math.log(x) for x in xs) / len(xs)):.2f}x, "
                    f"{sum(x > 1 for x in xs)}/{len(xs)}")

        low = min(fracs) if fracs else None
        lines.append(f"| {precision} | {name} | {n} | {geo(ratios)} | {geo(best)} | "
                     + (f"{100 * low[0]:.2g}% ({low[1]})" if low else "-") + " | "
                     + (f"{sum(mem)}/{len(mem)}" if mem else "-") + " |")
    return lines + [""]


def _peaks_line(meta):
    peaks = meta.get("gemm_flops_per_s")
    if not peaks:
        return []
    return ["- measured GEMM peak (cuBLAS float32 matmul, 8192^3 on a GPU): " +
            ", ".join(f"{p} {rate(v)}" for p, v in peaks.items()) +
            f"; the bounds use {meta.get('precision', 'fp32')}"]


def markdown(data) -> str:
    meta = data["meta"]
    lines = [
        "# Layer benchmark: Hector and its peers",
        "",
        f"- device: {meta.get('device_name')}; torch {meta.get('torch')}; "
        f"torch_geometric {meta.get('torch_geometric')}",
        f"- measured memory bandwidth (device-to-device copy, read + write): "
        f"{meta.get('hbm_bytes_per_s', 0) / 1e9:.0f} GB/s",
        *_peaks_line(meta),
        f"- precision: {meta.get('precision', 'fp32 (default)')}; training loss: "
        f"{meta.get('loss', 'per contender (before bench/train_loss.py)')}, the same for every contender",
        f"- command: `{meta.get('command')}`",
        "- cell: median time · peak memory (inputs + the contender's own structures + working memory)"
        " · fraction of the roofline bound (bound / time)",
        "- bound: max(minimum bytes / bandwidth, minimum typed-GEMM FLOPs / GEMM peak) in ms,"
        " B or F for the side that binds, then (bytes ms / FLOPs ms): bench/bytes_model.py, bench/flops_model.py",
        "- `X vs best peer`: the fastest of torch-eager, torch-compile and the PyG layers, over X's time"
        " (> 1: X is faster)",
        "",
    ]
    lines += summary(data["results"])
    notes = []
    for (mode, width, heads, precision, model), by_ds in _groups(data["results"]).items():
        contenders = list(OrderedDict.fromkeys(c for row in by_ds.values() for c in row))
        mine = [c for c in contenders if is_hector(c)]
        lines += [f"## {model}, {mode}, width {width}, {heads} head{'s' if heads != 1 else ''}, {precision}", "",
                  "| dataset | bound ms | " + " | ".join(contenders) + " |"
                  + "".join(f" {c} vs best peer |" for c in mine),
                  "|---|---:|" + "---|" * len(contenders) + "---|" * len(mine)]
        for ds, row in by_ds.items():
            any_r = next(iter(row.values()))
            cells = []
            for c in contenders:
                r = row.get(c)
                cells.append(cell(r) if r else "")
                if r and r["status"] not in ("ok",) and r.get("note"):
                    notes.append(f"- {model} {mode} w{width} {ds} {c}: {r['status']}: {r['note']}")
                if r and r.get("max_rel_err") is not None and r["max_rel_err"] > 1e-3:
                    notes.append(f"- {model} {mode} w{width} {ds} {c}: max relative error {r['max_rel_err']:.2g}")
            lines.append(f"| {ds} | {bound_cell(any_r)} | " + " | ".join(cells) + " |"
                         + "".join(f" {speedup_cell(row, c)} |" for c in mine))
        lines.append("")
    if notes:
        lines += ["## Notes on failures and skips", ""] + list(OrderedDict.fromkeys(notes)) + [""]
    compile_times = [r for r in data["results"] if r.get("compile_s") is not None]
    if compile_times:
        lines += ["## torch.compile: first-call (compile) seconds", "",
                  "| model | mode | width | dataset | compile s |", "|---|---|---:|---|---:|"]
        lines += [f"| {r['model']} | {r['mode']} | {r['width']} | {r['dataset']} | {r['compile_s']:.1f} |"
                  for r in compile_times]
        lines.append("")
    return "\n".join(lines)


def plot(data, out_dir):
    """One PNG per (mode, width): a panel per model, bars per dataset and contender (log time).
    Nothing (and a note) where matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        print("report: matplotlib is not installed; no plots", flush=True)
        return []

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(data["results"])
    written = []
    for mode, width, heads, prec in OrderedDict.fromkeys(k[:4] for k in groups):
        models = [k[4] for k in groups if k[:4] == (mode, width, heads, prec)]
        fig, axes = plt.subplots(len(models), 1, figsize=(11, 3.6 * len(models)), squeeze=False)
        for ax, model in zip(axes[:, 0], models):
            by_ds = groups[(mode, width, heads, prec, model)]
            datasets = list(by_ds)
            contenders = list(OrderedDict.fromkeys(c for row in by_ds.values() for c in row))
            bar_w = 0.8 / max(1, len(contenders))
            for j, c in enumerate(contenders):
                for i, ds in enumerate(datasets):
                    r = by_ds[ds].get(c)
                    x = i + (j - (len(contenders) - 1) / 2) * bar_w
                    if r and r["status"] == "ok":
                        ax.bar(x, r["median_ms"], bar_w, color=f"C{j}", label=c if i == 0 else None)
                    elif r:
                        label = {"oom": "OOM", "skipped": "skip"}.get(r["status"], "err")
                        ax.text(x, 0.02, label, rotation=90, ha="center", va="bottom", fontsize=7,
                                color=f"C{j}", transform=ax.get_xaxis_transform())
            ax.set_yscale("log")
            ax.set_xlim(-0.5, len(datasets) - 0.5)
            ax.set_xticks(range(len(datasets)))
            ax.set_xticklabels(datasets)
            ax.set_ylabel("median ms (log)")
            ax.set_title(f"{model} {mode}, width {width}, {heads} head(s), {prec}")
            handles = [plt.Rectangle((0, 0), 1, 1, color=f"C{j}") for j in range(len(contenders))]
            ax.legend(handles, contenders, fontsize=8, ncol=len(contenders), loc="upper left")
        fig.suptitle(f"{data['meta'].get('device_name')}: one layer, {mode}, width {width}")
        fig.tight_layout()
        suffix = (f"_h{heads}" if heads != 1 else "") + (f"_{prec}" if prec != "fp32" else "")
        path = os.path.join(out_dir, f"layers_{mode}_w{width}{suffix}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_all(data, out_dir, stem="layers", plots=True):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(out_dir, f"{stem}.md"), "w") as f:
        f.write(markdown(data))
    return plot(data, out_dir) if plots else []


def merge(paths):
    """Concatenate the results of several runs; the first run's meta wins, the others' commands are kept."""
    datas = [json.load(open(p)) for p in paths]
    meta = dict(datas[0]["meta"])
    meta["command"] = " ; ".join(d["meta"].get("command", "") for d in datas)
    return {"meta": meta, "datasets": {k: v for d in datas for k, v in d.get("datasets", {}).items()},
            "results": [r for d in datas for r in d["results"]]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--stem", default="layers", help="file names DIR/STEM.{json,md}")
    ap.add_argument("--recompute-roofline", action="store_true",
                    help="recompute the roofline columns with the current bytes and FLOPs models "
                         "(the times and the measured peaks stay)")
    args = ap.parse_args(argv)
    data = merge(args.json)
    if args.recompute_roofline:
        import roofline  # numpy, through flops_model
        roofline.recompute(data)
    for path in write_all(data, args.out, stem=args.stem):
        print("wrote", path)


if __name__ == "__main__":
    main()

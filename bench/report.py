"""Markdown tables and PNG plots from bench/layers.py JSON results; also merges several runs.

    python3 bench/report.py run1.json run2.json --out DIR   # writes DIR/layers.{json,md} and plots
"""

from __future__ import annotations

import argparse
import json
import os
from collections import OrderedDict

GIB = 1 << 30


def cell(r):
    """One contender's result as a short table cell."""
    if r["status"] == "ok":
        text = f"{r['median_ms']:.3g} ms"
        if r.get("peak_mem_bytes") is not None:
            text += f" · {r['peak_mem_bytes'] / GIB:.2f} GiB"
        if r.get("bw_fraction") is not None:
            text += f" · {100 * r['bw_fraction']:.2g}%"
        return text
    if r["status"] == "oom":
        return "OOM"
    return r["status"]


def speedup_cell(row):
    """Hector's speed-up over the fastest peer that ran, e.g. '2.1x vs torch-compile'."""
    mine = row.get("hector")
    peers = [r for c, r in row.items() if c != "hector" and r["status"] == "ok"]
    if not mine or mine["status"] != "ok" or not peers:
        return "-"
    best = min(peers, key=lambda r: r["median_ms"])
    return f"{best['median_ms'] / mine['median_ms']:.2f}x vs {best['contender']}"


def _groups(results):
    """results grouped as {(mode, width, model): {dataset: {contender: record}}}, in run order."""
    out = OrderedDict()
    for r in results:
        key = (r["mode"], r["width"], r["model"])
        out.setdefault(key, OrderedDict()).setdefault(r["dataset"], OrderedDict())[r["contender"]] = r
    return out


def markdown(data) -> str:
    meta = data["meta"]
    lines = [
        "# Layer benchmark: Hector and its peers",
        "",
        f"- device: {meta.get('device_name')}; torch {meta.get('torch')}; torch_geometric {meta.get('torch_geometric')}",
        f"- measured memory bandwidth (device-to-device copy, read + write): "
        f"{meta.get('hbm_bytes_per_s', 0) / 1e9:.0f} GB/s",
        f"- command: `{meta.get('command')}`",
        "- cell: median time · peak memory (inputs + the contender's own structures + working memory)"
        " · fraction of the measured bandwidth reached by the minimum bytes",
        "",
    ]
    notes = []
    for (mode, width, model), by_ds in _groups(data["results"]).items():
        contenders = list(OrderedDict.fromkeys(c for row in by_ds.values() for c in row))
        has_hector = "hector" in contenders
        speedup_header = " hector vs best peer |" if has_hector else ""
        lines += [f"## {model}, {mode}, width {width}", "",
                  "| dataset | min bytes | " + " | ".join(contenders) + " |" + speedup_header,
                  "|---|---:|" + "---|" * len(contenders) + ("---|" if has_hector else "")]
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
            speedup = f" {speedup_cell(row)} |" if has_hector else ""
            lines.append(f"| {ds} | {any_r['min_bytes'] / 1e6:.1f} MB | " + " | ".join(cells) + " |"
                         + speedup)
        lines.append("")
    if notes:
        lines += ["## Notes on failures and skips", ""] + notes + [""]
    compile_times = [r for r in data["results"] if r.get("compile_s") is not None]
    if compile_times:
        lines += ["## torch.compile: first-call (compile) seconds", "",
                  "| model | mode | width | dataset | compile s |", "|---|---|---:|---|---:|"]
        lines += [f"| {r['model']} | {r['mode']} | {r['width']} | {r['dataset']} | {r['compile_s']:.1f} |"
                  for r in compile_times]
        lines.append("")
    return "\n".join(lines)


def plot(data, out_dir):
    """One PNG per (mode, width): a panel per model, bars per dataset and contender (log time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(data["results"])
    written = []
    for mode, width in OrderedDict.fromkeys((m, w) for m, w, _ in groups):
        models = [m for (mm, ww, m) in groups if (mm, ww) == (mode, width)]
        fig, axes = plt.subplots(len(models), 1, figsize=(11, 3.6 * len(models)), squeeze=False)
        for ax, model in zip(axes[:, 0], models):
            by_ds = groups[(mode, width, model)]
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
            ax.set_title(f"{model} {mode}, width {width}")
            handles = [plt.Rectangle((0, 0), 1, 1, color=f"C{j}") for j in range(len(contenders))]
            ax.legend(handles, contenders, fontsize=8, ncol=len(contenders), loc="upper left")
        fig.suptitle(f"{data['meta'].get('device_name')}: one layer, {mode}, width {width}")
        fig.tight_layout()
        path = os.path.join(out_dir, f"layers_{mode}_w{width}.png")
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
    args = ap.parse_args(argv)
    for path in write_all(merge(args.json), args.out):
        print("wrote", path)


if __name__ == "__main__":
    main()

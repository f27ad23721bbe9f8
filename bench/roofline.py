"""The roofline bound of one case: minimum bytes (bytes_model) and minimum FLOPs (flops_model)
at the peaks measured in the same run (measure.py), and the fraction of it a time reaches.

bench/layers.py and bench/kernel_profile.py compute it while they measure; `recompute`
applies the current models to the results of an earlier run (`bench/report.py
--recompute-roofline`), whose times and measured peaks stay as they were.
"""

from __future__ import annotations

import bytes_model
import flops_model


def bound(model, mode, width, heads, counts, meta):
    """The case's minimum bytes and FLOPs and the bound they give at the run's measured peaks."""
    c = dict(counts, width=width, heads=heads)
    min_bytes = bytes_model.min_bytes(model, mode, num_nodes=c["N"], num_edges=c["E"],
                                      num_node_types=c["T"], num_edge_types=c["R"], din=width,
                                      dout=width, heads=heads)
    flops, variant = flops_model.min_flops(model, mode, **c)
    out = {"min_bytes": min_bytes, "min_flops": flops, "flops_variant": variant}
    bw, peak = meta.get("hbm_bytes_per_s"), meta.get("gemm_peak_flops_per_s")
    if bw and peak:
        out["bound_bytes_ms"] = min_bytes / bw * 1e3
        out["bound_flops_ms"] = flops / peak * 1e3
        out["bound_ms"] = max(out["bound_bytes_ms"], out["bound_flops_ms"])
    return out


def counts_of(dataset):
    """The graph counts of a dataset entry of a results JSON (bench/layers.py's "datasets")."""
    return {"N": dataset["nodes"], "E": dataset["edges"], "P": dataset["pairs"],
            "R": dataset["edge_types"], "T": dataset["node_types"],
            "typed_endpoints": dataset["typed_endpoints"]}


def recompute(data):
    """Every record's roofline columns from the current models, in place; returns data."""
    meta = data["meta"]
    for rec in data["results"]:
        dataset = data.get("datasets", {}).get(rec["dataset"])
        if dataset is None:
            continue
        rec.update(bound(rec["model"], rec["mode"], rec["width"], rec["heads"],
                         counts_of(dataset), meta))
        ms = rec.get("median_ms")
        if rec["status"] == "ok" and ms:
            rec["bw_fraction"] = rec["min_bytes"] / (ms / 1e3) / meta["hbm_bytes_per_s"]
            if rec.get("bound_ms") is not None:
                rec["roofline_fraction"] = rec["bound_ms"] / ms
    meta["roofline_recomputed"] = ("roofline columns recomputed from the measured times and "
                                   "peaks with bench/bytes_model.py and bench/flops_model.py "
                                   "of a later commit (bench/report.py --recompute-roofline)")
    return data

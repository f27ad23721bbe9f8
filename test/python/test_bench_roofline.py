"""The fair layer benchmark on the CPU (issue 15): the FLOP model of the roofline bound
against a brute-force count, the shared training loss against autograd, and
bench/layers.py end to end with two Hector library directories, the roofline
and best-peer columns, and the precision switch. Nothing here asserts how
fast anything is.

The brute-force count is an implementation of each layer in float64 torch
whose typed GEMMs go through one counting matmul (its backward counts the
input and the weight gradient it computes). It is checked against the
reference (test/reference/models_torch.py), outputs and gradients, so the
count is that of a real implementation of the variant, not of the formula.
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hectorc_support import REPO, hectorc  # noqa: E402
from hector import models  # noqa: E402
from hector.datasets.synthetic import generate  # noqa: E402
from reference import make_params  # noqa: E402
from reference import models_torch as mt  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
import flops_model  # noqa: E402
import layers  # noqa: E402
import report  # noqa: E402
import roofline  # noqa: E402
import train_loss  # noqa: E402

pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")

# mutag's shape at 0.5%: 136 nodes, 740 edges, 5 node types, 50 edge types.
DATASET, SCALE, WIDTH = "mutag", 0.005, 8


# ------------------------------------------------------------ brute-force count
class Count:
    def __init__(self):
        self.forward = self.backward = 0

    def mm(self, x, w):
        """x [M, K] @ w [K, N], counting M K N multiply-adds, and in the backward one
        more M K N for each operand whose gradient is computed."""
        count = self

        class MatMul(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                count.forward += x.shape[0] * x.shape[1] * w.shape[1]
                return x @ w

            @staticmethod
            def backward(ctx, g):
                x, w = ctx.saved_tensors
                macs = x.shape[0] * x.shape[1] * w.shape[1]
                dx = dw = None
                if ctx.needs_input_grad[0]:
                    dx, count.backward = g @ w.t(), count.backward + macs
                if ctx.needs_input_grad[1]:
                    dw, count.backward = x.t() @ g, count.backward + macs
                return dx, dw

        return MatMul.apply(x, w)

    def typed(self, x, types, weights):
        """Row i of x times weights[types[i]]: one counted GEMM per type's rows."""
        types = torch.as_tensor(types)
        parts, rows = [], []
        for t in torch.unique(types).tolist():
            idx = (types == t).nonzero().flatten()
            parts.append(self.mm(torch.index_select(x, 0, idx), weights(t)))
            rows.append(idx)
        rows = torch.cat(rows)
        inverse = torch.empty_like(rows)
        inverse[rows] = torch.arange(rows.numel())
        return torch.index_select(torch.cat(parts), 0, inverse)


class Graph:
    def __init__(self, g):
        self.g = g
        self.N, self.E = g.num_nodes, g.num_edges
        self.R, self.T = g.num_edge_types, g.num_node_types
        self.src, self.dst = torch.as_tensor(g.src).long(), torch.as_tensor(g.dst).long()
        self.etype, self.ntype = torch.as_tensor(g.etype).long(), torch.as_tensor(g.node_type).long()
        key = self.src * self.R + self.etype
        uniq, self.pair_of_edge = torch.unique(key, return_inverse=True)
        self.pair_src, self.pair_type = uniq // self.R, uniq % self.R
        self.P = uniq.numel()
        # RGCN's c_e: 1 / in-edges of e's (destination, type).
        _, which, count = torch.unique(self.dst * self.R + self.etype, return_inverse=True,
                                       return_counts=True)
        self.norm = 1.0 / count[which].double()
        # Source node type of each edge type (typed endpoints; 0 for a type without edges).
        self.src_type = [int(self.ntype[self.src[self.etype == r][0]]) if (self.etype == r).any() else 0
                         for r in range(self.R)]

    def rows(self, compact):
        """(source node, type, row of each edge) of an edge-typed map from the source."""
        if compact:
            return self.pair_src, self.pair_type, self.pair_of_edge
        return self.src, self.etype, torch.arange(self.E)

    def scatter(self, msg):
        return msg.new_zeros((self.N,) + tuple(msg.shape[1:])).index_add(0, self.dst, msg)

    def softmax(self, score):
        """Per destination over its in-edges, per head (score [E, H])."""
        peak = torch.full((self.N, score.shape[1]), -math.inf, dtype=score.dtype)
        peak = peak.scatter_reduce(0, self.dst[:, None].expand_as(score), score.detach(), "amax")
        ex = torch.exp(score - peak[self.dst])
        return ex / self.scatter(ex)[self.dst]


def counted_forward(model, variant, G, h, p, heads, count):
    compact, reorder = "C" in variant, "R" in variant
    d = h.shape[1]
    dh = d // heads
    src_rows, row_type, row_of_edge = G.rows(compact)
    if model == "rgcn":
        z = count.typed(torch.index_select(h, 0, src_rows), row_type, lambda r: p["W"][r])
        msg = torch.index_select(z, 0, row_of_edge) * G.norm[:, None]
        return count.mm(h, p["W0"]) + G.scatter(msg)
    if model == "rgat":
        z = count.typed(torch.index_select(h, 0, src_rows), row_type, lambda r: p["W"][r])
        ze = torch.index_select(z, 0, row_of_edge).view(G.E, heads, dh)
        a, b = p["a"][G.etype].view(G.E, heads, dh), p["b"][G.etype].view(G.E, heads, dh)
        s_src = (ze * a).sum(2)
        if reorder:
            # h_t . (W_phi[:, head] b_phi[head]): weight-vector products, not counted.
            wb = torch.einsum("rihj,rhj->rih", p["W"].view(G.R, d, heads, dh), p["b"].view(G.R, heads, dh))
            s_dst = torch.einsum("ei,eih->eh", h[G.dst], wb[G.etype])
        else:
            zt = count.typed(torch.index_select(h, 0, G.dst), G.etype, lambda r: p["W"][r])
            s_dst = (zt.view(G.E, heads, dh) * b).sum(2)
        alpha = G.softmax(torch.nn.functional.leaky_relu(s_src + s_dst, 0.2))
        return G.scatter((alpha[:, :, None] * ze).reshape(G.E, d))

    def node_typed(x, w):
        return count.typed(x, G.ntype, lambda t: w[t])

    def chain(node_w, edge_w):
        """Rows of X (pairs or edges) of h_s node_w_tau edge_w_phi, per head, [X, H, dh]."""
        if reorder and G.typed_endpoints:
            def product(r):  # K_tau(phi) W_phi, head by head: the weight-only product
                return torch.cat([count.mm(node_w[G.src_type[r]][:, k * dh:(k + 1) * dh], edge_w[r, k])
                                  for k in range(heads)], dim=1)
            products = [product(r) for r in range(G.R)]
            y = count.typed(torch.index_select(h, 0, src_rows), row_type, lambda r: products[r])
            return y.view(-1, heads, dh)
        x = torch.index_select(node_typed(h, node_w), 0, src_rows)
        return torch.stack([count.typed(x[:, k * dh:(k + 1) * dh], row_type, lambda r: edge_w[r, k])
                            for k in range(heads)], dim=1)

    q = node_typed(h, p["Q"]).view(G.N, heads, dh)
    k_att = torch.index_select(chain(p["K"], p["Watt"]), 0, row_of_edge)
    score = (k_att * q[G.dst]).sum(2) * p["mu"][G.etype] / math.sqrt(dh)
    alpha = G.softmax(score)
    m = torch.index_select(chain(p["V"], p["Wmsg"]), 0, row_of_edge)
    agg = G.scatter((alpha[:, :, None] * m).reshape(G.E, d))
    return node_typed(agg, p["A"]) + h


@pytest.fixture(scope="module")
def graph():
    g = generate(DATASET, scale=SCALE, seed=0)
    G = Graph(g)
    G.typed_endpoints = flops_model.graph_counts(g)["typed_endpoints"]
    return g, G


def _inputs(model, g, heads):
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
              for k, v in make_params(model, g, WIDTH, WIDTH, heads=heads, seed=1, dtype=np.float64).items()}
    h = torch.randn(g.num_nodes, WIDTH, dtype=torch.float64, generator=torch.Generator().manual_seed(2),
                    requires_grad=True)
    return h, params


def _grads(out, h, params, d_out):
    out.backward(d_out)
    grads = [h.grad.clone()] + [params[k].grad.clone() for k in sorted(params)]
    h.grad = None
    for v in params.values():
        v.grad = None
    return grads


@pytest.mark.parametrize("model", ["rgcn", "rgat", "hgt"])
@pytest.mark.parametrize("heads", [1, 2])
def test_flop_model_counts_what_an_implementation_of_each_variant_multiplies(graph, model, heads):
    g, G = graph
    counts = dict(flops_model.graph_counts(g), width=WIDTH, heads=heads)
    assert (counts["N"], counts["E"], counts["P"]) == (G.N, G.E, G.P)
    assert counts["typed_endpoints"]  # synthetic graphs: one source type per edge type
    h, params = _inputs(model, g, heads)
    tg = mt.TorchGraph(g, "cpu", float_dtype=torch.float64)
    ref = mt.forward(model, tg, h, params, heads=heads)
    d_out = torch.randn(ref.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    ref_grads = _grads(ref, h, params, d_out)
    counted = {}
    for v in flops_model.VARIANTS:
        count = Count()
        out = counted_forward(model, v, G, h, params, heads, count)
        torch.testing.assert_close(out, ref.detach(), rtol=1e-9, atol=1e-9)
        forward = count.forward
        for got, want in zip(_grads(out, h, params, d_out), ref_grads):
            torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-9)
        assert forward == sum(flops_model.terms(model, v, **counts).values())
        # Every counted GEMM gets both its gradients: training = 3x the forward.
        assert count.backward == 2 * forward
        assert forward == flops_model.variant_macs(model, v, "inference", **counts)
        assert forward + count.backward == flops_model.variant_macs(model, v, "training", **counts)
        counted[v] = forward
    for mode, factor in (("inference", 1), ("training", 3)):
        macs, variant = flops_model.min_macs(model, mode, **counts)
        assert macs == factor * min(counted.values())
        assert macs == factor * counted[variant]
        assert flops_model.min_flops(model, mode, **counts) == (2 * macs, variant)


def test_flop_model_closed_forms_and_legality():
    c = dict(N=1000, E=8000, P=3000, R=10, T=3, width=16)
    d = 16
    # RGCN: pairs and nodes; RGAT one head: pairs only (the destination GEMM reordered away).
    assert flops_model.min_macs("rgcn", "inference", heads=1, **c) == ((3000 + 1000) * d * d, "C")
    assert flops_model.min_macs("rgat", "inference", heads=1, **c) == (3000 * d * d, "C+R")
    # RGAT with several heads: head-block reordering removes the per-edge destination GEMM too;
    # without it (C) that GEMM stays.
    assert flops_model.min_macs("rgat", "training", heads=4, **c) == (3 * 3000 * d * d, "C+R")
    assert flops_model.variant_macs("rgat", "C", "training", heads=4, **c) == 3 * (3000 + 8000) * d * d
    # HGT: the reordered chain needs typed endpoints.
    hgt = flops_model.terms("hgt", "C+R", heads=2, **c)
    assert hgt["key: K_tau W_att_phi (weights only)"] == 10 * d ** 3 // 2
    untyped = flops_model.terms("hgt", "C+R", heads=2, typed_endpoints=False, **c)
    assert untyped == flops_model.terms("hgt", "C", heads=2, **c)
    with pytest.raises(ValueError):
        flops_model.terms("rgat", "C", heads=3, **c)


def test_graph_counts_sees_edge_types_that_mix_source_types():
    class G:
        node_type = np.array([0, 1, 0])
        src, dst, etype = np.array([0, 1, 2, 2]), np.array([1, 2, 0, 0]), np.array([0, 0, 1, 1])
        num_node_types, num_edge_types = 2, 2

    counts = flops_model.graph_counts(G)
    assert counts == {"N": 3, "E": 4, "P": 3, "R": 2, "T": 2, "typed_endpoints": False}


# ------------------------------------------------------------------ the loss
def test_loss_and_gradient_equal_autograd_of_the_reference_loss():
    gen = torch.Generator().manual_seed(0)
    out = torch.randn(37, 11, dtype=torch.float64, generator=gen) * 3
    labels = torch.randint(0, 11, (37,), generator=gen)
    leaf = out.clone().requires_grad_()
    want = mt.nll_loss(leaf, labels)
    want.backward()
    for kind in train_loss.KINDS:
        fn, ran = train_loss.make(kind)
        loss, grad = fn(out, labels)
        torch.testing.assert_close(loss, want.detach(), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad, leaf.grad, rtol=1e-12, atol=1e-12)
        assert ran == kind or (kind == "compiled" and ran.startswith("eager (torch.compile unavailable"))
    with pytest.raises(ValueError):
        train_loss.make("fused")


# -------------------------------------------------------- bench/layers.py
@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    """Two directories of CPU libraries (the same build twice) for the Hector contenders."""
    root = tmp_path_factory.mktemp("bench-libs")
    import subprocess
    for name in ("base", "new"):
        os.makedirs(root / name)
        for model in ("rgcn", "rgat", "hgt"):
            src = root / f"{model}.mlir"
            src.write_text(models.generate(model, WIDTH, heads=1))
            subprocess.run([hectorc(), str(src), "--target=cpu", "--training",
                            "-o", str(root / name / f"lib{model}_{WIDTH}_1.so")], check=True)
    return str(root)


FAST = ["--device", "cpu", "--datasets", DATASET, "--scale", str(SCALE), "--widths", str(WIDTH),
        "--warmup", "1", "--iters", "2", "--case-budget-s", "0.01", "--no-plots"]


def _run(out, *extra):
    layers.main([*FAST, "--out", str(out), *extra])
    with open(os.path.join(str(out), "layers.json"), encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(str(out), "layers.md"), encoding="utf-8") as f:
        return data, f.read()


def test_layers_times_two_hector_builds_against_the_peers_with_a_roofline(libs, tmp_path):
    data, md = _run(tmp_path, "--hector-libs", f"base={libs}/base", "--hector-libs", f"new={libs}/new")
    meta = data["meta"]
    assert meta["precision"] == "fp32" and meta["hector_libs"] == {"base": f"{libs}/base",
                                                                   "new": f"{libs}/new"}
    assert meta["precision_settings"]["float32_matmul_precision"] == "highest"
    assert not meta["precision_settings"]["cuda.matmul.allow_tf32"]
    assert set(meta["gemm_flops_per_s"]) == {"fp32", "tf32"} and meta["gemm_peak_flops_per_s"] > 0
    assert meta["loss"].startswith("compiled") or meta["loss"].startswith("eager")
    results = data["results"]
    by = {(r["model"], r["mode"], r["contender"]): r for r in results}
    for model in ("rgcn", "rgat", "hgt"):
        for mode in ("inference", "training"):
            for name in ("hector-base", "hector-new", "torch-eager"):
                r = by[(model, mode, name)]
                assert r["status"] == "ok", r["note"]
                assert r["bound_ms"] == max(r["bound_bytes_ms"], r["bound_flops_ms"]) > 0
                assert r["roofline_fraction"] == pytest.approx(r["bound_ms"] / r["median_ms"])
                assert r["best_peer"] == "torch-eager"  # the only peer that runs here
                assert r["vs_best_peer"] == pytest.approx(by[(model, mode, "torch-eager")]["median_ms"]
                                                          / r["median_ms"])
                macs, variant = flops_model.min_macs(model, mode, **dict(
                    flops_model.graph_counts(generate(DATASET, scale=SCALE, seed=0)), width=WIDTH, heads=1))
                assert (r["min_flops"], r["flops_variant"]) == (2 * macs, variant)
            if mode == "inference":
                assert by[(model, mode, "hector-new")]["max_rel_err"] < 1e-4
    assert "| dataset | bound ms | torch-eager | hector-base | hector-new |" in md
    assert "hector-base vs best peer | hector-new vs best peer |" in md
    assert "x vs torch-eager" in md


def test_layers_skips_hector_at_tf32_without_tf32_libraries(libs, tmp_path):
    data, md = _run(tmp_path / "a", "--precision", "tf32", "--models", "rgcn", "--hector-libs", f"{libs}/base")
    assert data["meta"]["precision_settings"]["cuda.matmul.allow_tf32"]
    hector = [r for r in data["results"] if r["contender"] == "hector"]
    assert hector and all(r["status"] == "skipped" and "--hector-libs-tf32" in r["note"] for r in hector)
    assert "## rgcn, inference, width 8, 1 head, tf32" in md
    data, _ = _run(tmp_path / "b", "--precision", "tf32", "--models", "rgcn", "--contenders", "hector",
                   "--hector-libs", f"{libs}/base", "--hector-libs-tf32", f"t={libs}/new")
    assert {r["contender"] for r in data["results"]} == {"hector-t"}
    assert all(r["status"] == "ok" and r["precision"] == "tf32" for r in data["results"])
    torch.backends.cuda.matmul.allow_tf32 = False  # what the other tests expect
    torch.set_float32_matmul_precision("highest")


def test_hector_libs_parsing():
    assert layers.parse_libs(["d1"]) == {"hector": "d1"}
    assert layers.parse_libs(["a=d1,b=d2", "c=d3"]) == {"a": "d1", "b": "d2", "c": "d3"}
    for bad in (["a=d1,a=d2"], ["=d1"], ["a="]):
        with pytest.raises(ValueError):
            layers.parse_libs(bad)


def test_report_reads_results_from_before_the_roofline_column():
    old = {"meta": {"device_name": "x", "hbm_bytes_per_s": 1e12, "command": "c"},
           "results": [{"model": "rgcn", "dataset": "aifb", "mode": "inference", "width": 64,
                        "contender": c, "status": "ok", "median_ms": ms, "peak_mem_bytes": None,
                        "bw_fraction": 0.01, "min_bytes": 1e6}
                       for c, ms in (("torch-eager", 2.0), ("hector", 1.0))]}
    md = report.markdown(old)
    assert "1 ms · 1% bw" in md and "2.00x vs torch-eager" in md


def test_report_summary_counts_the_issue_criteria():
    def rec(contender, ms, dataset, frac=None, mem=None, best=None):
        return {"model": "rgcn", "dataset": dataset, "mode": "training", "width": 64, "heads": 1,
                "precision": "fp32", "contender": contender, "status": "ok", "median_ms": ms,
                "peak_mem_bytes": mem, "roofline_fraction": frac, "vs_best_peer": best}

    results = [rec("torch-compile", 4.0, "am", mem=10), rec("hector-new", 2.0, "am", 0.3, 8, 2.0),
               rec("torch-compile", 1.0, "bgs", mem=10), rec("hector-new", 2.0, "bgs", 0.1, 12, 0.5),
               rec("hector-new", 1.0, "mag", 0.2)]  # torch-compile did not run on mag
    lines = report.summary(results)
    assert lines[4] == ("| fp32 | hector-new | 3 | 1.00x, 1/2 | 1.00x, 1/2 | "
                        "10% (rgcn bgs training w64 h1) | 1/2 |")


def test_report_recomputes_the_roofline_of_an_earlier_run_with_todays_models(tmp_path):
    """--recompute-roofline keeps the times and peaks and replaces the model-derived columns:
    here a run recorded with a FLOPs bound that counted RGAT's per-edge destination GEMM."""
    dataset = {"nodes": 1000, "edges": 8000, "pairs": 3000, "edge_types": 10, "node_types": 3,
               "typed_endpoints": True}
    meta = {"device_name": "x", "command": "c", "hbm_bytes_per_s": 2e12, "gemm_peak_flops_per_s": 5e13}
    counts = roofline.counts_of(dataset)
    stale = {"min_flops": 2 * 3 * (3000 + 8000) * 64 * 64, "flops_variant": "C", "bound_ms": 1.0,
             "roofline_fraction": 0.5}
    old = {"meta": meta, "datasets": {"biokg": dataset},
           "results": [dict(stale, model="rgat", dataset="biokg", mode="training", width=64, heads=4,
                            contender="hector", status="ok", median_ms=2.0, peak_mem_bytes=None,
                            precision="fp32")]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    report.main([str(path), "--recompute-roofline", "--stem", "new", "--out", str(tmp_path / "out")])
    rec = json.loads((tmp_path / "out" / "new.json").read_text())["results"][0]
    macs, variant = flops_model.min_macs("rgat", "training", width=64, heads=4, **counts)
    assert (rec["min_flops"], rec["flops_variant"]) == (2 * macs, variant) == (2 * 3 * 3000 * 64 * 64, "C+R")
    assert rec["bound_flops_ms"] == pytest.approx(rec["min_flops"] / 5e13 * 1e3)
    assert rec["bound_ms"] == max(rec["bound_flops_ms"], rec["bound_bytes_ms"])
    assert rec["roofline_fraction"] == pytest.approx(rec["bound_ms"] / 2.0)
    assert rec["median_ms"] == 2.0  # the measurement stays
    assert rec == dict(rec, **roofline.bound("rgat", "training", 64, 4, counts, meta))

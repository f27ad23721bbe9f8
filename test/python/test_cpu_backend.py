"""The CPU backend's own code generation, run through `hectorc --target=cpu`:
vectorised GEMMs (hector-cpu-gemm), COO traversals partitioned by destination
(hector-cpu-traversal), the thread pool (hector-cpu-parallel + the CPU runtime)
and the per-CPU versions of the code.

Every result is compared with an independent numpy reference, with several
thread counts (HECTOR_NUM_THREADS is read at every parallel loop), on shapes
that exercise the edge cases of each lowering: column tiles with remainders,
row-scale blocks inside head blocks, rows outside the segments, empty
segments, outer-product chunks that split a segment, hub nodes that receive
half of the edges (a race in an accumulation would show there), edges that
are not in canonical order (the partitioned traversal must fall back).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from hector import compiled, graph as hgraph
from hectorc_support import REPO, build
from model_cases import reference, relative_error
from reference import params

THREADS = (1, 3)


@pytest.fixture
def threads(monkeypatch):
    """Sets HECTOR_NUM_THREADS for the calls that follow."""
    def set_threads(count):
        monkeypatch.setenv("HECTOR_NUM_THREADS", str(count))
    return set_threads


def _memref(shape, element, dynamic_first=True):
    dims = ["?" if (i == 0 and dynamic_first) else str(d) for i, d in enumerate(shape)]
    return "memref<" + "".join(d + "x" for d in dims) + element + ">"


_ELEMENT = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}


def _gemm_library(tmp_path, name, operands, outputs, op_text):
    """A library with one entry @gemm(<operands>) holding `op_text`. Operands
    are (name, array); the first dimension of each is dynamic."""
    args = []
    for arg, array in operands:
        role = "output" if arg in outputs else "input"
        args.append(f"%{arg}: {_memref(array.shape, _ELEMENT[array.dtype])} "
                    f"{{hector.arg = {{role = \"{role}\", name = \"{arg}\"}}}}")
    types = {arg: _memref(array.shape, _ELEMENT[array.dtype]) for arg, array in operands}
    source = (f"func.func @gemm({', '.join(args)}) attributes {{hector.entry}} {{\n"
              f"  {op_text.format(**types)}\n  return\n}}\n")
    return compiled.load(build(tmp_path, source, "--target=cpu", name=f"lib{name}.so"))["gemm"]


# ---- GEMM, row mode ----------------------------------------------------------

def _types_of_rows(seg, rows):
    types = np.full(rows, -1)
    if seg is None:
        types[:] = 0
    else:
        for t in range(len(seg) - 1):
            types[seg[t]:seg[t + 1]] = t
    return types


def _row_reference(lhs, rhs, out, seg, lrows, orows, scale, transpose, accumulate, atomic,
                   heads):
    rows = len(lrows) if lrows is not None else lhs.shape[0]
    x = (lhs[lrows] if lrows is not None else lhs).astype(np.float64)
    types = _types_of_rows(seg, rows)
    width = out.shape[1]
    y = np.zeros((rows, width))
    for t in np.unique(types[types >= 0]):
        sel = types == t
        w = (rhs[t] if seg is not None else rhs).astype(np.float64)
        if heads:
            kh = x.shape[1] // heads
            nh = width // heads
            for h in range(heads):
                block = w[h].T if transpose else w[h]
                y[sel, h * nh:(h + 1) * nh] = x[sel, h * kh:(h + 1) * kh] @ block
        else:
            y[sel] = x[sel] @ (w.T if transpose else w)
    if scale is not None:
        y *= scale[:, None] if scale.ndim == 1 else np.repeat(scale, width // scale.shape[1], 1)
    valid = types >= 0
    o = (orows if orows is not None else np.arange(rows))[valid]
    result = out.astype(np.float64)
    if atomic and not accumulate:
        result[o] = 0
    if atomic or accumulate:
        np.add.at(result, o, y[valid])
    else:
        result[o] = y[valid]
    return result


def _segments(rng, rows, types):
    cuts = np.sort(rng.integers(0, rows + 1, size=types - 1))
    seg = np.concatenate([[0], cuts, [rows]])
    if types > 2:
        seg[2] = seg[1]  # an empty type
        seg = np.maximum.accumulate(seg)
    return seg.astype(np.int32)


ROW_CASES = {
    # 130 columns: tiles of 64, 64 and 2; gathered rows of 5 types.
    "wide_typed_gather": dict(rows=300, k=70, n=130, types=5, gather=True),
    # Scattered atomic adds that overwrite, a per-row scale.
    "scatter_atomic_scale": dict(rows=257, k=33, n=100, types=3, scatter=40, atomic=True,
                                 scale="row"),
    # Two heads of 9 columns under a 6-head row scale: tiles of 3 columns.
    "heads_scale_blocks": dict(rows=200, k=12, n=18, heads=2, scale=6, accumulate=True,
                               scatter="unique"),
    # Transposed slices, k in tiles of 64 and 6, scattered atomic accumulation.
    "transposed": dict(rows=150, k=70, n=9, types=3, transpose=True, scatter=20, atomic=True,
                       accumulate=True, gather=True),
    "transposed_heads_scale": dict(rows=100, k=140, n=10, heads=2, transpose=True, scale=2),
    # Rows before the first and after the last segment belong to no type.
    "rows_outside_segments": dict(rows=90, k=8, n=16, types=2, trim=True, index=np.int64),
    "no_rows": dict(rows=0, k=8, n=16, types=3),
}


@pytest.mark.parametrize("case", sorted(ROW_CASES))
def test_row_gemm(tmp_path, threads, case):
    cfg = ROW_CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    rows, k, n, heads, types = cfg["rows"], cfg["k"], cfg["n"], cfg.get("heads"), cfg.get("types")
    index = cfg.get("index", np.int32)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    lhs = f32(rows + 7 if cfg.get("gather") else rows, k)
    block = (n, k) if cfg.get("transpose") else (k, n)
    if heads:
        kh, nh = k // heads, n // heads
        block = (heads, nh, kh) if cfg.get("transpose") else (heads, kh, nh)
    rhs = f32(*(((types,) if types else ()) + block))
    operands = [("lhs", lhs)]
    text = "htmpl.gemm lhs(%lhs : {lhs}"
    lrows = orows = seg = scale = None
    if cfg.get("gather"):
        lrows = rng.integers(0, rows + 7, rows).astype(index)
        operands.append(("lrows", lrows))
        text += "[%lrows : {lrows}]"
    text += ") rhs(%rhs : {rhs}) out(%out : {out}"
    operands.append(("rhs", rhs))
    out_count = rows
    if cfg.get("scatter") == "unique":
        out_count = rows + 5
        orows = rng.permutation(out_count)[:rows].astype(index)
    elif cfg.get("scatter"):
        out_count = cfg["scatter"]
        orows = rng.integers(0, out_count, rows).astype(index)
    if orows is not None:
        operands.append(("orows", orows))
        text += "[%orows : {orows}]"
    text += ")"
    if types:
        seg = _segments(rng, rows, types).astype(index)
        if cfg.get("trim"):
            seg = np.array([10, 40, rows - 10], dtype=index)
        operands.append(("seg", seg))
        text += " segments(%seg : {seg})"
    if cfg.get("scale") == "row":
        scale = f32(rows)
    elif cfg.get("scale"):
        scale = f32(rows, cfg["scale"])
    if scale is not None:
        operands.append(("scale", scale))
        text += " row_scale(%scale : {scale})"
    flags = [f for f in ("transpose_rhs", "accumulate", "atomic") if cfg.get(f.split("_")[0])]
    if flags:
        text += " {{" + ", ".join(flags) + "}}"
    out0 = f32(out_count, n)
    operands.append(("out", out0))
    entry = _gemm_library(tmp_path, case, operands, {"out"}, text)
    want = _row_reference(lhs, rhs, out0, seg, lrows, orows, scale, cfg.get("transpose", False),
                          cfg.get("accumulate", False), cfg.get("atomic", False), heads)
    results = []
    for count in THREADS:
        threads(count)
        out = out0.copy()
        entry(**dict(operands, out=out))
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
        results.append(out)
    # No atomics in row mode (scatters run per owner of the output rows, in
    # row order): the thread count does not change a bit.
    np.testing.assert_array_equal(results[0], results[1])


# ---- GEMM, outer-product mode --------------------------------------------------

def _outer_reference(lhs, rhs, out, seg, lrows, rrows, scale, accumulate, heads):
    rows = len(lrows) if lrows is not None else lhs.shape[0]
    x = (lhs[lrows] if lrows is not None else lhs).astype(np.float64)
    y = (rhs[rrows] if rrows is not None else rhs).astype(np.float64)
    if scale is not None:
        y = y * (scale[:, None] if scale.ndim == 1
                 else np.repeat(scale, y.shape[1] // scale.shape[1], 1))
    types = _types_of_rows(seg, rows)
    result = out.astype(np.float64)
    for t in range(len(seg) - 1 if seg is not None else 1):
        sel = types == t
        if heads:
            kh, nh = x.shape[1] // heads, y.shape[1] // heads
            total = np.stack([x[sel, h * kh:(h + 1) * kh].T @ y[sel, h * nh:(h + 1) * nh]
                              for h in range(heads)])
        else:
            total = x[sel].T @ y[sel]
        if seg is None:
            result = result + total if accumulate else total
        else:
            result[t] = result[t] + total if accumulate else total
    return result


OUTER_CASES = {
    # 1500 rows: three chunks of 512 whose edges split the segments; 70
    # columns in tiles of 64 and 6; gathers on both sides; an empty type.
    "typed_chunks": dict(rows=1500, k=10, n=70, types=4, gather=True, scale="row"),
    # One weight over three chunks: every chunk adds atomically.
    "single_weight_chunks": dict(rows=1100, k=6, n=8, accumulate=True),
    "heads_scale": dict(rows=700, k=8, n=12, types=3, heads=2, scale="head", accumulate=True),
    # Rows outside [segments[0], segments[T]) belong to no type.
    "rows_outside_segments": dict(rows=1000, k=4, n=5, types=2, trim=True),
    "no_rows": dict(rows=0, k=4, n=5, types=2),
}


@pytest.mark.parametrize("case", sorted(OUTER_CASES))
def test_outer_product_gemm(tmp_path, threads, case):
    cfg = OUTER_CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)) + 1)
    rows, k, n, heads, types = cfg["rows"], cfg["k"], cfg["n"], cfg.get("heads"), cfg.get("types")
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    gather = cfg.get("gather")
    lhs = f32(rows + 3 if gather else rows, k)
    rhs = f32(rows + 5 if gather else rows, n)
    operands = [("lhs", lhs)]
    text = "htmpl.gemm lhs(%lhs : {lhs}"
    lrows = rrows = seg = scale = None
    if gather:
        lrows = rng.integers(0, rows + 3, rows).astype(np.int32)
        rrows = rng.integers(0, rows + 5, rows).astype(np.int32)
        operands.append(("lrows", lrows))
        text += "[%lrows : {lrows}]"
    operands.append(("rhs", rhs))
    text += ") rhs(%rhs : {rhs}"
    if gather:
        operands.append(("rrows", rrows))
        text += "[%rrows : {rrows}]"
    text += ") out(%out : {out})"
    if types:
        seg = _segments(rng, rows, types)
        if cfg.get("trim"):
            seg = np.array([100, 300, 900], dtype=np.int32)
        operands.append(("seg", seg))
        text += " segments(%seg : {seg})"
    if cfg.get("scale") == "row":
        scale = f32(rows)
    elif cfg.get("scale") == "head":
        scale = f32(rows, heads)
    if scale is not None:
        operands.append(("scale", scale))
        text += " row_scale(%scale : {scale})"
    flags = ["transpose_lhs"] + (["accumulate"] if cfg.get("accumulate") else [])
    text += " {{" + ", ".join(flags) + "}}"
    block = (heads, k // heads, n // heads) if heads else (k, n)
    out0 = f32(*(((types,) if types else ()) + block))
    operands.append(("out", out0))
    entry = _gemm_library(tmp_path, "outer_" + case, operands, {"out"}, text)
    want = _outer_reference(lhs, rhs, out0, seg, lrows, rrows, scale,
                            cfg.get("accumulate", False), heads)
    for count in THREADS:
        threads(count)
        out = out0.copy()
        entry(**dict(operands, out=out))
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


# ---- models on several threads -------------------------------------------------

def hub_graph(rng, nodes=3000, edges=40000):
    """Half of the edges go into node 7, a tenth come out of node 11; self
    loops, duplicates, an edge type without edges."""
    t, r = 3, 7
    src = rng.integers(0, nodes, edges)
    dst = rng.integers(0, nodes, edges)
    dst[: edges // 2] = 7
    src[edges // 2: edges // 2 + edges // 10] = 11
    src[-100:] = dst[-100:]
    src[-300:-200], dst[-300:-200] = src[-400:-300], dst[-400:-300]
    etype = rng.choice([0, 1, 2, 4, 5, 6], edges)
    return {"node_type": rng.integers(0, t, nodes), "src": src, "dst": dst, "etype": etype,
            "num_node_types": t, "num_edge_types": r}


MODELS = [("rgcn", 32, 1), ("rgat", 32, 2), ("hgt", 32, 2)]


@pytest.fixture(scope="module")
def model_libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cpu_models")
    libraries = {}
    for model, width, heads in MODELS:
        source = subprocess.run(
            [sys.executable, os.path.join(REPO, "examples", "generate.py"), model,
             "--width", str(width), "--heads", str(heads)],
            capture_output=True, text=True, check=True).stdout
        path = build(directory, source, "--target=cpu", name=f"lib{model}.so")
        libraries[model] = (path, compiled.load(path)[model])
    return libraries


def _model_call(model, width, heads, graph, seed=0):
    rng = np.random.default_rng(seed)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    h = rng.standard_normal((pre.N, width)).astype(np.float32)
    weights = params.make_params(model, graph, width, width, heads, seed=seed)
    values = dict(pre.arrays(), h=h, **{k: v.astype(np.float32) for k, v in weights.items()})
    return values, reference(model, graph, h, weights, heads)


def _run(entry, values, width):
    out = np.full((values["h"].shape[0], width), np.nan, np.float32)
    entry(**{a.name: (out if a.name == "result0" else values[a.name]) for a in entry.arguments})
    return out


@pytest.mark.parametrize("model,width,heads", MODELS)
def test_models_with_threads_on_a_hub(model_libraries, threads, model, width, heads):
    graph = hub_graph(np.random.default_rng(5))
    values, want = _model_call(model, width, heads, graph)
    entry = model_libraries[model][1]
    for count in (1, 2, 4, 8):
        threads(count)
        out = _run(entry, values, width)
        assert relative_error(out, want) < 1e-5, f"{count} threads"


def _shuffle_within_types(values, rng):
    """The graph arrays with the edges of each type renumbered in random
    order: the type segments still hold, (type, destination) order does not.
    Edge-indexed arrays move with their edges, edge ids are renamed."""
    order = np.arange(values["edge_src"].shape[0])
    offsets = values["etype_offsets"]
    for t in range(len(offsets) - 1):
        order[offsets[t]:offsets[t + 1]] = rng.permutation(order[offsets[t]:offsets[t + 1]])
    shuffled = dict(values)
    for name in ("edge_src", "edge_dst", "edge_type", "edge_norm", "compact_map", "edge_perm"):
        if name in values:
            shuffled[name] = np.ascontiguousarray(values[name][order])
    position = np.empty_like(order)
    position[order] = np.arange(order.shape[0])
    for name in ("csr_eid", "pair_eid"):
        if name in values:
            shuffled[name] = position[values[name]].astype(values[name].dtype)
    return shuffled


def test_unsorted_edges_fall_back_to_atomics(model_libraries, threads):
    # RGAT's result does not depend on the order of edges inside a type.
    graph = hub_graph(np.random.default_rng(6))
    values, want = _model_call("rgat", 32, 2, graph, seed=1)
    shuffled = _shuffle_within_types(values, np.random.default_rng(2))
    assert np.any(np.diff(shuffled["edge_dst"][:1000]) < 0)
    entry = model_libraries["rgat"][1]
    for count in (1, 4):
        threads(count)
        assert relative_error(_run(entry, shuffled, 32), want) < 1e-5


def test_concurrent_callers(model_libraries, threads):
    # Two application threads in one library: one gets the pool, the other
    # runs its loops alone; both results are right.
    threads(4)
    graph = hub_graph(np.random.default_rng(8), nodes=2000, edges=20000)
    values, want = _model_call("hgt", 32, 2, graph, seed=3)
    entry = model_libraries["hgt"][1]
    results = [None] * 4

    def work(k):
        results[k] = [_run(entry, values, 32) for _ in range(3)]

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for outs in results:
        for out in outs:
            assert relative_error(out, want) < 1e-5


def test_temporaries_of_changing_sizes(model_libraries, threads):
    # Large temporaries are kept for the next call and reused for requests of
    # their size or up to 1/8 smaller; calls alternate between graph sizes.
    threads(2)
    entry = model_libraries["rgat"][1]
    cases = []
    for edges, seed in ((30000, 1), (20000, 2), (29000, 3), (30000, 4)):
        graph = hub_graph(np.random.default_rng(seed), nodes=2500, edges=edges)
        cases.append(_model_call("rgat", 32, 2, graph, seed=seed))
    for values, want in cases + cases[::-1]:
        assert relative_error(_run(entry, values, 32), want) < 1e-5


_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    sys.path[:0] = {paths!r}
    from hector import compiled
    import test_cpu_backend as t
    from model_cases import relative_error
    entry = compiled.load({library!r})["rgat"]
    graph = t.hub_graph(np.random.default_rng(9), nodes=1500, edges=15000)
    values, want = t._model_call("rgat", 32, 2, graph, seed=4)
    assert relative_error(t._run(entry, values, 32), want) < 1e-5
    if {fork!r}:
        pid = os.fork()
        if pid == 0:   # the pool's workers do not exist in the child
            ok = relative_error(t._run(entry, values, 32), want) < 1e-5
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
    print("ok")
""")


def _child(library, env, fork=False):
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [here, os.path.join(REPO, "test")]   # the helpers; hector as this process finds it
    code = _CHILD.format(paths=paths, library=library, fork=fork)
    result = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("level", ["0", "3"])
def test_every_cpu_version(model_libraries, level):
    # HECTOR_CPU_LEVEL caps the version the entry points pick: 0 is the
    # baseline x86-64 code, 3 the x86-64-v3 one (the best one is what the
    # other tests run on this machine).
    _child(model_libraries["rgat"][0], {"HECTOR_CPU_LEVEL": level, "HECTOR_NUM_THREADS": "3"})


def test_threads_from_omp_num_threads_and_fork(model_libraries):
    env = {"OMP_NUM_THREADS": "3,2", "HECTOR_NUM_THREADS": ""}
    _child(model_libraries["rgat"][0], env, fork=True)


# ---- traversals -------------------------------------------------------------------

_TRAVERSALS = """
func.func @trav(%src: {e} {{hector.arg = {{role = "graph", name = "edge_src"}}}},
                %dst: {e} {{hector.arg = {{role = "graph", name = "edge_dst"}}}},
                %ety: {e} {{hector.arg = {{role = "graph", name = "edge_type"}}}},
                %x: {f} {{hector.arg = {{role = "input", name = "x"}}}},
                %y: {f} {{hector.arg = {{role = "input", name = "y"}}}},
                %out: {f} {{hector.arg = {{role = "output", name = "out"}}}},
                %back: {f} {{hector.arg = {{role = "output", name = "back"}}}},
                %ga: {f} {{hector.arg = {{role = "output", name = "ga"}}}})
    attributes {{hector.entry}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // Destination sums (partitioned by destination) and source maxima (atomic).
  htmpl.traversal edges coo(%src, %dst, %ety : {e}, {e}, {e})
      ins(%x : {f} as src, %y : {f} as dst) outs(%out : {f} as dst, %back : {f} as src) {{
  ^bb0(%i: index, %rx: index, %ry: index, %ro: index, %rb: index):
    scf.for %f = %c0 to %c4 step %c1 {{
      %a = memref.load %x[%rx, %f] : {f}
      %b = memref.load %y[%ry, %f] : {f}
      %p = arith.mulf %a, %b : f32
      htmpl.accumulate add %p, %out[%ro, %f] : f32, {f}
      htmpl.accumulate max %p, %back[%rb, %f] : f32, {f}
    }}
  }}
  // Per-type sums (partitioned by edge type).
  htmpl.traversal edges coo(%src, %dst, %ety : {e}, {e}, {e})
      ins(%x : {f} as src, %y : {f} as dst) outs(%ga : {f} as etype) {{
  ^bb0(%i: index, %rx: index, %ry: index, %rt: index):
    scf.for %f = %c0 to %c4 step %c1 {{
      %a = memref.load %x[%rx, %f] : {f}
      %b = memref.load %y[%ry, %f] : {f}
      %p = arith.mulf %a, %b : f32
      htmpl.accumulate add %p, %ga[%rt, %f] : f32, {f}
    }}
  }}
  return
}}
"""


@pytest.mark.parametrize("shuffle", [False, True])
def test_partitioned_traversals(tmp_path, threads, shuffle):
    rng = np.random.default_rng(11)
    graph = hub_graph(rng, nodes=2000, edges=30000)
    pre = hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                            graph["num_node_types"], graph["num_edge_types"])
    arrays = pre.arrays()
    if shuffle:  # not in (type, destination) order: the atomic fallback
        arrays = _shuffle_within_types(arrays, rng)
    source = _TRAVERSALS.format(e="memref<?xi32>", f="memref<?x4xf32>")
    entry = compiled.load(build(tmp_path, source, "--target=cpu", name="libtrav.so"))["trav"]
    n, r = pre.N, pre.R
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = rng.standard_normal((n, 4)).astype(np.float32)
    src, dst, ety = (arrays[k].astype(np.int64) for k in ("edge_src", "edge_dst", "edge_type"))
    p = x[src].astype(np.float64) * y[dst]
    out0 = rng.standard_normal((n, 4)).astype(np.float32)
    back0 = rng.standard_normal((n, 4)).astype(np.float32)
    ga0 = rng.standard_normal((r, 4)).astype(np.float32)
    want_out, want_back, want_ga = out0.astype(np.float64), back0.astype(np.float64), \
        ga0.astype(np.float64)
    np.add.at(want_out, dst, p)
    np.maximum.at(want_back, src, p.astype(np.float32))
    np.add.at(want_ga, ety, p)
    results = []
    for count in (1, 3):
        threads(count)
        out, back, ga = out0.copy(), back0.copy(), ga0.copy()
        entry(edge_src=arrays["edge_src"], edge_dst=arrays["edge_dst"],
              edge_type=arrays["edge_type"], x=x, y=y, out=out, back=back, ga=ga)
        np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(back, want_back.astype(np.float32))
        np.testing.assert_allclose(ga, want_ga, rtol=1e-4, atol=1e-3)
        results.append((out, ga))
    if not shuffle:
        # Partitioned sums add in edge order whatever the thread count.
        for a, b in zip(*results):
            np.testing.assert_array_equal(a, b)

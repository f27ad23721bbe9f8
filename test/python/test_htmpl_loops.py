"""Numeric CPU tests of the htmpl-to-loops lowering.

Each test writes a module with one htmpl instance over random inputs
(embedded as constant globals, passed to the instance as dynamically shaped
memrefs), lowers it with `hector-opt --htmpl-to-loops` and upstream passes to
the LLVM dialect, runs it with `mlir-runner` and compares the printed outputs
with numpy references written from the op semantics in
include/hector/Dialect/HTmpl/IR/HTmplOps.td.

Needs hector-opt (from $HECTOR_OPT, $HECTOR_BUILD_DIR/bin or build/bin) and
LLVM 22's mlir-runner with its runner-utils libraries; skipped without them.
"""

import os
import re
import subprocess
import zlib

import numpy as np
import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LLVM = "/usr/lib/llvm-22"
_RUNNER = os.path.join(_LLVM, "bin", "mlir-runner")
_LIBS = [os.path.join(_LLVM, "lib", name)
         for name in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so")]
_PIPELINE = ["--htmpl-to-loops", "--convert-scf-to-cf", "--convert-to-llvm",
             "--reconcile-unrealized-casts"]


def _hector_opt():
    candidates = [os.environ.get("HECTOR_OPT")]
    if os.environ.get("HECTOR_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["HECTOR_BUILD_DIR"], "bin", "hector-opt"))
    candidates.append(os.path.join(_REPO, "build", "bin", "hector-opt"))
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    return None


HECTOR_OPT = _hector_opt()
pytestmark = pytest.mark.skipif(
    HECTOR_OPT is None or not os.access(_RUNNER, os.X_OK)
    or not all(os.path.exists(lib) for lib in _LIBS),
    reason="needs hector-opt and LLVM 22's mlir-runner")

_MLIR_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32",
               np.dtype(np.int64): "i64"}
_PRINTERS = {"f32": "printMemrefF32", "i32": "printMemrefI32", "i64": "printMemrefI64"}


def _memref_type(shape, element, dynamic):
    """`memref<?x4xf32>`: with dynamic="first" only dim 0 is dynamic, "all" every dim."""
    dims = [("?" if (dynamic == "all" or (dynamic == "first" and i == 0)) else str(d))
            for i, d in enumerate(shape)]
    return "memref<" + "".join(d + "x" for d in dims) + element + ">"


def _dense(array):
    """A dense literal holding exactly the array's bytes (little endian)."""
    if array.size == 0:
        return "dense<>"
    return 'dense<"0x' + np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes().hex().upper() + '">'


def run_instance(op_text, inputs, outputs, dynamic="first"):
    """Runs `op_text` (one htmpl instance naming its operands %<name>) on
    `inputs` and on `outputs` (initial values) and returns the final outputs.
    Every operand is passed with the dims chosen by `dynamic` made dynamic."""
    arrays = dict(inputs)
    arrays.update(outputs)
    lines, args, arg_types, main = [], [], [], []
    for name, array in arrays.items():
        element = _MLIR_TYPES[array.dtype]
        static = _memref_type(array.shape, element, "none")
        dyn = _memref_type(array.shape, element, dynamic)
        lines.append(f'memref.global "private" constant @g_{name} : {static} = {_dense(array)}')
        main.append(f"  %{name}_g = memref.get_global @g_{name} : {static}")
        if name in outputs:
            main.append(f"  %{name}_s = memref.alloc() : {static}")
            main.append(f"  memref.copy %{name}_g, %{name}_s : {static} to {static}")
        else:
            main.append(f"  %{name}_s = memref.cast %{name}_g : {static} to {static}")
        main.append(f"  %{name} = memref.cast %{name}_s : {static} to {dyn}")
        args.append(f"%{name}: {dyn}")
        arg_types.append(dyn)
    for element, printer in _PRINTERS.items():
        lines.append(f"func.func private @{printer}(memref<*x{element}>) "
                     "attributes {llvm.emit_c_interface}")
    lines.append(f"func.func @kernel({', '.join(args)}) {{\n{op_text}\n  return\n}}")
    call_args = ", ".join(f"%{name}" for name in arrays)
    main.append(f"  call @kernel({call_args}) : ({', '.join(arg_types)}) -> ()")
    for name, array in outputs.items():
        element = _MLIR_TYPES[array.dtype]
        static = _memref_type(array.shape, element, "none")
        main.append(f"  %{name}_u = memref.cast %{name}_s : {static} to memref<*x{element}>")
        main.append(f"  call @{_PRINTERS[element]}(%{name}_u) : (memref<*x{element}>) -> ()")
    lines.append("func.func @main() {\n" + "\n".join(main) + "\n  return\n}")
    module = "\n".join(lines)

    lowered = subprocess.run([HECTOR_OPT, *_PIPELINE], input=module, text=True,
                             capture_output=True)
    assert lowered.returncode == 0, lowered.stderr + "\n" + module
    ran = subprocess.run([_RUNNER, "-e", "main", "-entry-point-result=void",
                          "-shared-libs=" + ",".join(_LIBS)],
                         input=lowered.stdout, text=True, capture_output=True)
    assert ran.returncode == 0, ran.stderr
    return _parse_printed(ran.stdout, outputs)


_NUMBER = re.compile(r"-?(?:inf|nan|\d+(?:\.\d*)?(?:e[+-]?\d+)?)")


def _parse_printed(text, outputs):
    chunks = text.split("Unranked Memref")[1:]
    assert len(chunks) == len(outputs), text
    results = {}
    for chunk, (name, array) in zip(chunks, outputs.items()):
        if array.size == 0:  # printMemref prints one stray value for empty memrefs
            results[name] = array.copy()
            continue
        data = chunk.split("data =", 1)[1]
        values = [float(v) for v in _NUMBER.findall(data)]
        assert len(values) == array.size, (name, chunk)
        results[name] = np.array(values).reshape(array.shape).astype(array.dtype)
    return results


def _close(actual, expected):
    # printMemrefF32 prints 6 significant digits.
    np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=1e-5)


def _t(name, array, dynamic="first"):
    """`%name : type` of an operand as the kernel sees it."""
    return f"%{name} : {_memref_type(array.shape, _MLIR_TYPES[array.dtype], dynamic)}"


# ---------------------------------------------------------------------------
# GEMM, row mode
# ---------------------------------------------------------------------------

def _segments(rng, rows, types, empty_type=True):
    """A [T+1] offset table over `rows`; one type is left empty when asked."""
    cuts = np.sort(rng.integers(0, rows + 1, size=types - 1))
    seg = np.concatenate([[0], cuts, [rows]]).astype(np.int32)
    if empty_type and types > 2:
        seg[2] = seg[1]
        seg = np.maximum.accumulate(seg)
    return seg


def _row_gemm_reference(lhs, rhs, out, seg, lhs_rows, out_rows, scale,
                        transpose_rhs, accumulate, per_head, atomic):
    """out[o(i)] (+)= s(i) lhs[l(i)] op(rhs[t(i)]), rows of no type skipped."""
    out = out.astype(np.float64).copy()
    rows = len(lhs_rows) if lhs_rows is not None else lhs.shape[0]
    contribution = {}
    for i in range(rows):
        if seg is not None:
            types = [t for t in range(len(seg) - 1) if seg[t] <= i < seg[t + 1]]
            if not types:
                continue
            weight = rhs[types[0]]
        else:
            weight = rhs
        if per_head:
            blocks = [w.T if transpose_rhs else w for w in weight]
            k = blocks[0].shape[0]
            x = lhs[lhs_rows[i] if lhs_rows is not None else i].astype(np.float64)
            y = np.concatenate([x[h * k:(h + 1) * k] @ blocks[h] for h in range(len(blocks))])
        else:
            w = weight.T if transpose_rhs else weight
            y = lhs[lhs_rows[i] if lhs_rows is not None else i].astype(np.float64) @ w
        if scale is not None:
            if scale.ndim == 1:
                y = y * scale[i]
            else:
                y = y * np.repeat(scale[i], len(y) // scale.shape[1])
        o = out_rows[i] if out_rows is not None else i
        contribution.setdefault(o, []).append(y)
    for o, ys in contribution.items():
        total = np.sum(ys, axis=0)
        if accumulate:
            out[o] += total
        elif atomic:
            out[o] = total
        else:
            assert len(ys) == 1, "a non-atomic scatter must not repeat rows"
            out[o] = total
    return out


GEMM_ROW_CASES = {
    # name: rows, K, N, types, heads, gather, scatter, scale, transpose, accumulate, atomic, index dtype
    "plain": dict(rows=5, k=4, n=3),
    "typed_gather": dict(rows=9, k=6, n=5, types=4, gather=True),
    "typed_gather_i64": dict(rows=9, k=6, n=5, types=3, gather=True, index=np.int64),
    "scatter_atomic_accumulate_scale": dict(rows=11, k=4, n=6, scatter=True, atomic=True,
                                            accumulate=True, scale="row"),
    "scatter_atomic_overwrite": dict(rows=11, k=4, n=6, types=3, scatter=True, atomic=True),
    "scatter_unique_accumulate": dict(rows=7, k=3, n=4, scatter="unique", accumulate=True),
    "per_head_head_scale": dict(rows=8, k=8, n=6, types=3, heads=2, scale="head"),
    "per_head_single_weight": dict(rows=6, k=6, n=9, heads=3, gather=True),
    "transpose_typed_atomic": dict(rows=10, k=5, n=7, types=3, transpose=True, scatter=True,
                                   atomic=True),
    "transpose_per_head": dict(rows=6, k=4, n=6, types=2, heads=2, transpose=True,
                               scale="head4"),
    "rows_outside_segments": dict(rows=8, k=3, n=2, types=2, trim=True),
}


@pytest.mark.parametrize("dynamic", ["first", "all"])
@pytest.mark.parametrize("case", sorted(GEMM_ROW_CASES))
def test_gemm_row_mode(case, dynamic):
    cfg = GEMM_ROW_CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    rows, k, n = cfg["rows"], cfg["k"], cfg["n"]
    types, heads = cfg.get("types"), cfg.get("heads")
    index = cfg.get("index", np.int32)
    src_rows = rows + 3
    lhs = rng.standard_normal((src_rows if cfg.get("gather") else rows, k)).astype(np.float32)
    slice_shape = (n, k) if cfg.get("transpose") else (k, n)
    if heads:
        kh, nh = k // heads, n // heads
        slice_shape = (heads, nh, kh) if cfg.get("transpose") else (heads, kh, nh)
    rhs = rng.standard_normal(((types,) if types else ()) + slice_shape).astype(np.float32)
    seg = None
    if types:
        seg = _segments(rng, rows, types).astype(index)
        if cfg.get("trim"):
            seg = np.array([2, 4, rows - 2], dtype=index)
    lhs_rows = rng.integers(0, src_rows, size=rows).astype(index) if cfg.get("gather") else None
    out_count = rows
    out_rows = None
    if cfg.get("scatter") == "unique":
        out_count = rows + 2
        out_rows = rng.permutation(out_count)[:rows].astype(index)
    elif cfg.get("scatter"):
        out_count = 4
        out_rows = rng.integers(0, out_count, size=rows).astype(index)
    out = rng.standard_normal((out_count, n)).astype(np.float32)
    scale = None
    if cfg.get("scale") == "row":
        scale = rng.standard_normal(rows).astype(np.float32)
    elif cfg.get("scale") == "head":
        scale = rng.standard_normal((rows, heads)).astype(np.float32)
    elif cfg.get("scale") == "head4":  # more scale heads than weight heads
        scale = rng.standard_normal((rows, 3)).astype(np.float32)

    inputs = {"lhs": lhs, "rhs": rhs}
    text = f"  htmpl.gemm lhs({_t('lhs', lhs, dynamic)}"
    if lhs_rows is not None:
        inputs["lrows"] = lhs_rows
        text += f"[{_t('lrows', lhs_rows, dynamic)}]"
    text += f") rhs({_t('rhs', rhs, dynamic)}) out({_t('out', out, dynamic)}"
    if out_rows is not None:
        inputs["orows"] = out_rows
        text += f"[{_t('orows', out_rows, dynamic)}]"
    text += ")"
    if seg is not None:
        inputs["seg"] = seg
        text += f" segments({_t('seg', seg, dynamic)})"
    if scale is not None:
        inputs["scale"] = scale
        text += f" row_scale({_t('scale', scale, dynamic)})"
    flags = [f for f in ("transpose_rhs", "accumulate", "atomic")
             if cfg.get(f.split("_")[0])]
    if flags:
        text += " {" + ", ".join(flags) + "}"

    got = run_instance(text, inputs, {"out": out}, dynamic)["out"]
    want = _row_gemm_reference(lhs, rhs, out, seg, lhs_rows, out_rows, scale,
                               cfg.get("transpose", False), cfg.get("accumulate", False),
                               bool(heads), cfg.get("atomic", False))
    _close(got, want)


# ---------------------------------------------------------------------------
# GEMM, outer-product mode (weight gradients)
# ---------------------------------------------------------------------------

def _outer_reference(lhs, rhs, out, seg, lhs_rows, rhs_rows, scale, accumulate, heads):
    out = out.astype(np.float64).copy()
    rows = len(lhs_rows) if lhs_rows is not None else lhs.shape[0]
    groups = [(t, seg[t], seg[t + 1]) for t in range(len(seg) - 1)] if seg is not None \
        else [(None, 0, rows)]
    for t, begin, end in groups:
        total = np.zeros(out.shape[1:] if t is not None else out.shape)
        for i in range(begin, end):
            x = lhs[lhs_rows[i] if lhs_rows is not None else i].astype(np.float64)
            y = rhs[rhs_rows[i] if rhs_rows is not None else i].astype(np.float64)
            if scale is not None:
                y = y * (scale[i] if scale.ndim == 1
                         else np.repeat(scale[i], len(y) // scale.shape[1]))
            if heads:
                kh, nh = len(x) // heads, len(y) // heads
                total += np.stack([np.outer(x[h * kh:(h + 1) * kh], y[h * nh:(h + 1) * nh])
                                   for h in range(heads)])
            else:
                total += np.outer(x, y)
        if t is None:
            out = out + total if accumulate else total
        else:
            out[t] = out[t] + total if accumulate else total
    return out


OUTER_CASES = {
    "plain": dict(rows=6, k=3, n=4),
    "typed_gathers_scale": dict(rows=12, k=4, n=5, types=4, gather=True, scale="row"),
    "typed_accumulate_atomic_i64": dict(rows=9, k=3, n=3, types=3, gather=True,
                                        accumulate=True, atomic=True, index=np.int64),
    "per_head_head_scale": dict(rows=10, k=6, n=4, types=2, heads=2, scale="head"),
    "per_head_untyped": dict(rows=5, k=4, n=4, heads=2, accumulate=True),
}


@pytest.mark.parametrize("dynamic", ["first", "all"])
@pytest.mark.parametrize("case", sorted(OUTER_CASES))
def test_gemm_outer_product(case, dynamic):
    cfg = OUTER_CASES[case]
    rng = np.random.default_rng(zlib.crc32(b"outer" + case.encode()))
    rows, k, n = cfg["rows"], cfg["k"], cfg["n"]
    types, heads = cfg.get("types"), cfg.get("heads")
    index = cfg.get("index", np.int32)
    gather = cfg.get("gather")
    lhs = rng.standard_normal((rows + 2 if gather else rows, k)).astype(np.float32)
    rhs = rng.standard_normal((rows + 4 if gather else rows, n)).astype(np.float32)
    lhs_rows = rng.integers(0, rows + 2, size=rows).astype(index) if gather else None
    rhs_rows = rng.integers(0, rows + 4, size=rows).astype(index) if gather else None
    block = (heads, k // heads, n // heads) if heads else (k, n)
    out = rng.standard_normal(((types,) if types else ()) + block).astype(np.float32)
    seg = _segments(rng, rows, types).astype(index) if types else None
    scale = None
    if cfg.get("scale") == "row":
        scale = rng.standard_normal(rows).astype(np.float32)
    elif cfg.get("scale") == "head":
        scale = rng.standard_normal((rows, heads)).astype(np.float32)

    inputs = {"lhs": lhs, "rhs": rhs}
    text = f"  htmpl.gemm lhs({_t('lhs', lhs, dynamic)}"
    if gather:
        inputs["lrows"] = lhs_rows
        text += f"[{_t('lrows', lhs_rows, dynamic)}]"
    text += f") rhs({_t('rhs', rhs, dynamic)}"
    if gather:
        inputs["rrows"] = rhs_rows
        text += f"[{_t('rrows', rhs_rows, dynamic)}]"
    text += f") out({_t('out', out, dynamic)})"
    if seg is not None:
        inputs["seg"] = seg
        text += f" segments({_t('seg', seg, dynamic)})"
    if scale is not None:
        inputs["scale"] = scale
        text += f" row_scale({_t('scale', scale, dynamic)})"
    flags = ["transpose_lhs"] + [f for f in ("accumulate", "atomic") if cfg.get(f)]
    text += " {" + ", ".join(flags) + "}"

    got = run_instance(text, inputs, {"out": out}, dynamic)["out"]
    want = _outer_reference(lhs, rhs, out, seg, lhs_rows, rhs_rows, scale,
                            cfg.get("accumulate", False), heads)
    _close(got, want)


# ---------------------------------------------------------------------------
# Traversals
# ---------------------------------------------------------------------------

def _graph(rng, nodes, edges, etypes):
    """Random edges in canonical order (type, dst, src) with the CSR and
    compact arrays of docs/compilation.md, built independently here."""
    src = rng.integers(0, nodes, size=edges)
    dst = rng.integers(0, nodes, size=edges)
    ety = rng.integers(0, etypes, size=edges)
    order = np.lexsort((src, dst, ety))
    src, dst, ety = src[order], dst[order], ety[order]
    csr = np.argsort(dst, kind="stable")  # slots grouped by destination
    row_ptr = np.searchsorted(dst[csr], np.arange(nodes + 1))
    pairs = sorted(set(zip(ety.tolist(), src.tolist())))
    pair_id = {p: i for i, p in enumerate(pairs)}
    cmap = np.array([pair_id[(t, s)] for t, s in zip(ety, src)], dtype=np.int64)
    i32 = lambda a: np.asarray(a, dtype=np.int32)  # noqa: E731
    return dict(src=i32(src), dst=i32(dst), ety=i32(ety), row_ptr=i32(row_ptr),
                csr_src=i32(src[csr]), csr_eid=i32(csr), csr_ety=i32(ety[csr]),
                cmap=i32(cmap), pairs=len(pairs))


_EDGE_BODY = """
  ^bb0(%e: index, %rz: index, %ra: index, %rn: index, %rx: index, %rsum: index, %rmax: index, %rback: index, %rid: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cw = arith.constant {width} : index
    %c = memref.load %norm[%rn] : {norm_t}
    %ei = arith.index_cast %e : index to i64
    %ef = arith.sitofp %ei : i64 to f32
    scf.for %f = %c0 to %cw step %c1 {{
      %zv = memref.load %z[%rz, %f] : {feat_t}
      %av = memref.load %a[%ra, %f] : {feat_t}
      %xv = memref.load %x[%rx, %f] : {feat_t}
      %za = arith.mulf %zv, %av : f32
      %zac = arith.mulf %za, %c : f32
      %v = arith.addf %zac, %xv : f32
      htmpl.accumulate add %v, %sum[%rsum, %f] : f32, {feat_t}
      htmpl.accumulate max %v, %max[%rmax, %f] : f32, {feat_t}
      htmpl.accumulate add %v, %back[%rback, %f] : f32, {feat_t}
    }}
    memref.store %ef, %eid_out[%rid, %c0] : {eid_t}
"""


@pytest.mark.parametrize("dynamic", ["first", "all"])
@pytest.mark.parametrize("adjacency", ["coo", "csr"])
@pytest.mark.parametrize("nodes,edges,etypes,width,lanes", [
    (6, 20, 3, 4, 256), (13, 57, 5, 3, 256), (40, 97, 5, 3, 32), (4, 0, 2, 2, 256)])
def test_edge_traversal(adjacency, nodes, edges, etypes, width, lanes, dynamic):
    rng = np.random.default_rng(nodes * 1000 + edges + width)
    g = _graph(rng, nodes, edges, etypes)
    f32 = lambda shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    z, a, x = f32((g["pairs"], width)), f32((etypes, width)), f32((nodes, width))
    norm = f32(edges)
    sum0, back0 = f32((nodes, width)), f32((nodes, width))
    max0 = np.full((nodes, width), -np.inf, dtype=np.float32)
    eid0 = np.full((edges, 1), -1.0, dtype=np.float32)
    if adjacency == "coo":
        adj = {"src": g["src"], "dst": g["dst"], "ety": g["ety"]}
    else:
        adj = {"row_ptr": g["row_ptr"], "csr_src": g["csr_src"],
               "csr_eid": g["csr_eid"], "csr_ety": g["csr_ety"]}
    inputs = dict(adj, cmap=g["cmap"], z=z, a=a, norm=norm, x=x)
    outputs = {"sum": sum0, "max": max0, "back": back0, "eid_out": eid0}
    names = ", ".join("%" + name for name in adj)
    types = ", ".join(_memref_type(v.shape, "i32", dynamic) for v in adj.values())
    t = lambda name: _t(name, {**inputs, **outputs}[name], dynamic)  # noqa: E731
    text = (f"  htmpl.traversal edges {adjacency}({names} : {types}) "
            f"compact_map({t('cmap')}) "
            f"ins({t('z')} as compact, {t('a')} as etype, {t('norm')} as edge, {t('x')} as src) "
            f"outs({t('sum')} as dst, {t('max')} as dst, {t('back')} as src, "
            f"{t('eid_out')} as edge) launch_bounds({lanes}) {{")
    text += _EDGE_BODY.format(
        width=width, norm_t=_memref_type(norm.shape, "f32", dynamic),
        feat_t=_memref_type((1, width), "f32", dynamic),
        eid_t=_memref_type((1, 1), "f32", dynamic)) + "  }"

    got = run_instance(text, inputs, outputs, dynamic)

    src, dst, ety = g["src"], g["dst"], g["ety"]
    want_sum, want_back = sum0.astype(np.float64), back0.astype(np.float64)
    want_max = max0.astype(np.float64)
    for e in range(edges):
        v = (z[g["cmap"][e]].astype(np.float64) * a[ety[e]] * norm[e]).astype(np.float32)
        v = v.astype(np.float64) + x[src[e]]
        want_sum[dst[e]] += v
        want_max[dst[e]] = np.maximum(want_max[dst[e]], v)
        want_back[src[e]] += v
    _close(got["sum"], want_sum)
    _close(got["max"], want_max)
    _close(got["back"], want_back)
    np.testing.assert_array_equal(got["eid_out"][:, 0], np.arange(edges, dtype=np.float32))


_INT_BODY = """
  ^bb0(%e: index, %rs: index, %rd: index, %rdeg: index, %rmax: index, %rsum: index):
    %c0 = arith.constant 0 : index
    %one = arith.constant 1 : i32
    %s = arith.index_cast %rs : index to i32
    htmpl.accumulate add %one, %deg[%rdeg, %c0] : i32, {t}
    htmpl.accumulate max %s, %smax[%rmax, %c0] : i32, {t}
    htmpl.accumulate add %s, %ssum[%rs, %c0] : i32, {t}
"""


@pytest.mark.parametrize("adjacency", ["coo", "csr"])
def test_integer_accumulate(adjacency):
    """In i32: in-degree (add) and largest source (max) per destination, and
    a sum into the source rows through a `whole` output (always atomic)."""
    rng = np.random.default_rng(7)
    nodes, edges = 9, 40
    g = _graph(rng, nodes, edges, 3)
    if adjacency == "coo":
        adj = {"src": g["src"], "dst": g["dst"], "ety": g["ety"]}
    else:
        adj = {"row_ptr": g["row_ptr"], "csr_src": g["csr_src"],
               "csr_eid": g["csr_eid"], "csr_ety": g["csr_ety"]}
    col = lambda fill: np.full((nodes, 1), fill, dtype=np.int32)  # noqa: E731
    inputs = dict(adj, rows=col(0))
    outputs = {"deg": col(0), "smax": col(-1), "ssum": col(5)}
    names = ", ".join("%" + name for name in adj)
    types = ", ".join(_memref_type(v.shape, "i32", "first") for v in adj.values())
    t = lambda name: _t(name, {**inputs, **outputs}[name])  # noqa: E731
    text = (f"  htmpl.traversal edges {adjacency}({names} : {types}) "
            f"ins({t('rows')} as src, {t('rows')} as dst) "
            f"outs({t('deg')} as dst, {t('smax')} as dst, {t('ssum')} as whole) {{")
    text += _INT_BODY.format(t=_memref_type((1, 1), "i32", "first")) + "  }"
    got = run_instance(text, inputs, outputs)
    want_deg = np.bincount(g["dst"], minlength=nodes)
    want_max = np.full(nodes, -1)
    np.maximum.at(want_max, g["dst"], g["src"])
    want_sum = np.full(nodes, 5)
    np.add.at(want_sum, g["src"], g["src"])
    np.testing.assert_array_equal(got["deg"][:, 0], want_deg)
    np.testing.assert_array_equal(got["smax"][:, 0], want_max)
    np.testing.assert_array_equal(got["ssum"][:, 0], want_sum)


_NODE_BODY = """
  ^bb0(%n: index, %rx: index, %rw: index, %rb: index, %ry: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cw = arith.constant {width} : index
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f32
    scf.for %f = %c0 to %cw step %c1 {{
      %xv = memref.load %x[%rx, %f] : {t}
      %wv = memref.load %w[%rw, %f] : {t}
      %bv = memref.load %bias[%c0, %f] : {t}
      %xw = arith.mulf %xv, %wv : f32
      %xwb = arith.addf %xw, %bv : f32
      %yv = arith.addf %xwb, %nf : f32
      memref.store %yv, %y[%ry, %f] : {t}
    }}
"""


@pytest.mark.parametrize("with_node_types", [True, False])
@pytest.mark.parametrize("dynamic", ["first", "all"])
def test_node_traversal(with_node_types, dynamic):
    rng = np.random.default_rng(11)
    nodes, ntypes, width = 10, 3, 5
    x = rng.standard_normal((nodes, width)).astype(np.float32)
    w = rng.standard_normal((ntypes, width)).astype(np.float32)
    bias = rng.standard_normal((1, width)).astype(np.float32)
    node_types = rng.integers(0, ntypes, size=nodes).astype(np.int32)
    y0 = np.zeros((nodes, width), np.float32)
    inputs = {"x": x, "w": w, "bias": bias}
    outputs = {"y": y0}
    text = "  htmpl.traversal nodes "
    if with_node_types:
        inputs["nt"] = node_types
        text += f"node_types({_t('nt', node_types, dynamic)}) "
        w_scheme = "ntype"
    else:
        w_scheme = "whole"  # without node_types: rows of w by hand (row 0)
    text += (f"ins({_t('x', x, dynamic)} as node, {_t('w', w, dynamic)} as {w_scheme}, "
             f"{_t('bias', bias, dynamic)} as whole) outs({_t('y', y0, dynamic)} as node) {{")
    text += _NODE_BODY.format(width=width, t=_memref_type((1, width), "f32", dynamic)) + "  }"
    got = run_instance(text, inputs, outputs, dynamic)["y"]
    rows = w[node_types] if with_node_types else np.broadcast_to(w[0], (nodes, width))
    want = x.astype(np.float64) * rows + bias[0] + np.arange(nodes)[:, None]
    _close(got, want)

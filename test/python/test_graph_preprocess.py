"""hector.graph.preprocess (runtime/lib/graph) against a pure-numpy reference
written from the table "Graph preprocessing" of docs/compilation.md, on random
and corner-case graphs, plus every error the runtime reports."""

import ctypes

import numpy as np
import pytest

from hector import _runtime, graph
from hector.datasets import synthetic
from hector.datasets.heterograph import compaction_ratio

from test_unified_support import runtime_library


@pytest.fixture(scope="module", autouse=True)
def lib(tmp_path_factory):
    runtime_library(tmp_path_factory)
    return graph._lib()


# --------------------------------------------------------------- reference
def reference(node_type, src, dst, etype, T, R):
    """The table, straight from its definitions, with numpy sorts and uniques."""
    node_type, src, dst, etype = (np.asarray(a, dtype=np.int64) for a in (node_type, src, dst, etype))
    N, E = len(node_type), len(src)
    out = {"node_type": node_type}
    perm = np.lexsort((src, dst, etype))  # stable: ties keep the input order
    out["edge_perm"] = perm
    out["edge_src"], out["edge_dst"], out["edge_type"] = src[perm], dst[perm], etype[perm]
    out["etype_offsets"] = np.concatenate([[0], np.cumsum(np.bincount(etype, minlength=R))])
    group = out["edge_type"] * max(N, 1) + out["edge_dst"]
    _, inverse, counts = np.unique(group, return_inverse=True, return_counts=True)
    out["edge_norm"] = np.float32(1) / counts[inverse].astype(np.float32)
    # CSR: canonical ids grouped by destination, canonical order inside a row.
    csr_eid = np.argsort(out["edge_dst"], kind="stable")
    out["csr_row_ptr"] = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=N))])
    out["csr_eid"] = csr_eid
    out["csr_src"], out["csr_etype"] = out["edge_src"][csr_eid], out["edge_type"][csr_eid]
    out["ntype_perm"] = np.argsort(node_type, kind="stable")
    out["ntype_offsets"] = np.concatenate([[0], np.cumsum(np.bincount(node_type, minlength=T))])
    pair_key = etype * max(N, 1) + src
    pairs, pair_of_input = np.unique(pair_key, return_inverse=True)
    out["compact_src"] = pairs % max(N, 1)
    out["compact_offsets"] = np.concatenate(
        [[0], np.cumsum(np.bincount(pairs // max(N, 1), minlength=R))])
    out["compact_map"] = pair_of_input.reshape(-1)[perm]
    # Canonical edge ids grouped by pair, canonical order inside a pair.
    out["pair_eid"] = np.argsort(out["compact_map"], kind="stable")
    sizes = dict(N=N, E=E, T=T, R=R, P=len(pairs))
    return sizes, out


def check(node_type, src, dst, etype, T=None, R=None):
    pre = graph.preprocess(node_type, src, dst, etype, T, R)
    T = pre.T if T is None else T
    R = pre.R if R is None else R
    sizes, ref = reference(node_type, src, dst, etype, T, R)
    assert {k: getattr(pre, k) for k in sizes} == sizes
    for name in graph.ARRAY_NAMES:
        got = getattr(pre, name)
        want_dtype = np.float32 if name == "edge_norm" else np.int32
        assert got.dtype == want_dtype, name
        np.testing.assert_array_equal(got, ref[name].astype(want_dtype), err_msg=name)
    # The properties generated code relies on, stated once more directly.
    np.testing.assert_array_equal(pre.compact_src[pre.compact_map], pre.edge_src)
    # pair_eid: a permutation of the edges whose runs are the pairs, each run
    # in canonical order, and which keeps every edge type's canonical range.
    np.testing.assert_array_equal(np.sort(pre.pair_eid), np.arange(pre.E))
    pair = pre.compact_map[pre.pair_eid]
    assert np.all(np.diff(pair) >= 0)
    assert np.all(np.diff(pre.pair_eid)[np.diff(pair) == 0] > 0)
    np.testing.assert_array_equal(pre.edge_type[pre.pair_eid], pre.edge_type)
    assert pre.etype_offsets[-1] == pre.csr_row_ptr[-1] == pre.E
    assert pre.compact_offsets[-1] == pre.P
    np.testing.assert_array_equal(pre.to_canonical(np.asarray(src)), pre.edge_src)
    return pre


def random_graph(rng, N, E, T, R, dtype=np.int64):
    node_type = rng.integers(0, T, N).astype(dtype) if N else np.zeros(0, dtype)
    src = rng.integers(0, N, E).astype(dtype)
    dst = rng.integers(0, N, E).astype(dtype)
    etype = rng.integers(0, R, E).astype(dtype)
    return node_type, src, dst, etype


# ------------------------------------------------------------------ graphs
@pytest.mark.parametrize("seed,N,E,T,R", [
    (0, 10, 30, 2, 3),
    (1, 50, 400, 3, 7),
    (2, 1000, 5000, 5, 20),
    (3, 7, 200, 1, 1),        # many duplicates and self-loops
    (4, 3000, 100, 4, 50),    # sparse: isolated nodes, empty edge types
])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_random_graphs(seed, N, E, T, R, dtype):
    rng = np.random.default_rng(seed)
    check(*random_graph(rng, N, E, T, R, dtype), T, R)


def test_mixed_and_narrow_dtypes():
    rng = np.random.default_rng(5)
    nt, s, d, t = random_graph(rng, 200, 900, 3, 4)
    check(nt.astype(np.int32), s.astype(np.int64), d.astype(np.uint16), t.astype(np.int8), 3, 4)
    check(nt.tolist(), s.tolist(), d.tolist(), t.tolist(), 3, 4)
    # Strided views are accepted (copied to contiguous).
    s2, d2, t2 = (np.repeat(a, 2)[::2] for a in (s, d, t))
    check(nt, s2, d2, t2, 3, 4)


def test_empty_types_isolated_nodes_hub():
    rng = np.random.default_rng(6)
    N, E = 500, 4000
    node_type = rng.choice([1, 3], N)                      # types 0, 2, 4 have no nodes
    src = rng.integers(0, N, E)
    dst = np.where(rng.random(E) < 0.7, 17, rng.integers(0, N // 2, E))  # a giant hub; upper half isolated
    etype = rng.choice([2, 5, 6], E)                       # other edge types have no edges
    pre = check(node_type, src, dst, etype, 5, 9)
    assert pre.csr_row_ptr[18] - pre.csr_row_ptr[17] == np.sum(dst == 17)
    assert np.all(np.diff(pre.csr_row_ptr[N // 2 + 1:]) == 0)


def test_large_graph_with_hubs():
    # Hubs of many sizes: their in-edge runs start at arbitrary offsets and
    # are long enough to be radix-sorted inside the run.
    rng = np.random.default_rng(7)
    N, R = 100_000, 7
    sizes = [17, 33, 100, 1000, 5000, 16_000, 20_001, 30_000, 40_003, 65_537]
    hubs = rng.choice(N, len(sizes), replace=False)
    dst = np.concatenate([np.full(k, h) for k, h in zip(sizes, hubs)] + [rng.integers(0, N, 200_000)])
    E = len(dst)
    order = rng.permutation(E)
    dst = dst[order]
    src = rng.integers(0, N, E)
    src[rng.random(E) < 0.2] = 5  # a giant source too: many edges share (5, type) pairs
    etype = rng.integers(0, R, E)
    check(rng.integers(0, 3, N), src, dst, etype, 3, R)


@pytest.mark.parametrize("N", [200_000, 3_000_000])
def test_many_types_sparse_graph(N):
    # R * N / 64 far above E: pairs come from sorting etype * N + src keys
    # (32-bit keys for the smaller graph, 64-bit for the larger).
    rng = np.random.default_rng(8)
    E, R = 100_000, 2000
    check(np.zeros(N, np.int32), rng.integers(0, N, E), rng.integers(0, N, E),
          rng.integers(0, R, E), 1, R)


def test_self_loops_and_duplicates_keep_input_order():
    # Five copies of edge 0 -> 0 (type 0) between other edges: edge_perm keeps their order.
    src = [0, 1, 0, 0, 2, 0, 0]
    dst = [0, 0, 0, 0, 0, 0, 0]
    etype = [0, 0, 0, 0, 0, 0, 0]
    pre = check([0, 0, 0], src, dst, etype)
    np.testing.assert_array_equal(pre.edge_perm, [0, 2, 3, 5, 6, 1, 4])
    np.testing.assert_allclose(pre.edge_norm, np.float32(1 / 7))
    assert pre.P == 3


def test_pair_eid_groups_the_edges_of_a_pair():
    # Type 0: sources 0 and 1 both reach nodes 1 and 2, so in canonical order
    # (by destination) their two pairs alternate; type 1: sources 0 and 2,
    # whose edges are grouped already.
    src = [2, 1, 0, 1, 2, 0, 0]
    dst = [1, 2, 2, 1, 0, 1, 0]
    etype = [1, 0, 0, 0, 1, 0, 1]
    pre = check([0, 0, 0], src, dst, etype)
    np.testing.assert_array_equal(pre.edge_src, [0, 1, 0, 1, 0, 2, 2])
    np.testing.assert_array_equal(pre.compact_map, [0, 1, 0, 1, 2, 3, 3])
    np.testing.assert_array_equal(pre.pair_eid, [0, 2, 1, 3, 4, 5, 6])


def test_tiny_graphs():
    pre = check([0], [], [], [], 1, 3)                       # N = 1, E = 0
    assert (pre.E, pre.P, pre.pair_eid.size) == (0, 0, 0)
    np.testing.assert_array_equal(pre.etype_offsets, [0, 0, 0, 0])
    np.testing.assert_array_equal(pre.csr_row_ptr, [0, 0])
    check([0], [0], [0], [0])                                # one self-loop
    pre = check(np.zeros(0, np.int32), [], [], [], 0, 0)    # nothing at all
    assert (pre.N, pre.E, pre.T, pre.R, pre.P) == (0, 0, 0, 0, 0)
    np.testing.assert_array_equal(pre.ntype_offsets, [0])
    pre = graph.preprocess([2, 0], [1], [0], [4])            # counts default to max + 1
    assert (pre.T, pre.R) == (3, 5)


def test_synthetic_aifb():
    g = synthetic.generate("aifb", seed=1)
    pre = check(g.node_type, g.src, g.dst, g.etype, g.num_node_types, g.num_edge_types)
    assert (pre.N, pre.E) == (g.num_nodes, g.num_edges)
    assert pre.P / pre.E == pytest.approx(compaction_ratio(g))


def test_synthetic_with_empty_types_and_isolated_nodes():
    g = synthetic.generate("mutag", scale=0.1, seed=2, empty_edge_types=5, isolated_fraction=0.2)
    check(g.node_type, g.src, g.dst, g.etype, g.num_node_types, g.num_edge_types)


def test_outputs_are_read_only_copies():
    pre = graph.preprocess([0, 0], [0, 1], [1, 0], [0, 0])
    with pytest.raises(ValueError):
        pre.edge_src[0] = 5
    assert all(not a.flags.writeable for a in pre.arrays().values())
    assert list(pre.arrays()) == list(graph.ARRAY_NAMES)


# ------------------------------------------------------------------ errors
def expect_error(match, *args, status=None, **kw):
    with pytest.raises(graph.GraphInputError, match=match) as e:
        graph.preprocess(*args, **kw)
    assert isinstance(e.value, ValueError)
    if status is not None:
        assert e.value.status == status
    return str(e.value)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bad_values_name_the_first_bad_index(dtype):
    a = lambda x: np.asarray(x, dtype=dtype)  # noqa: E731
    nt = a([0, 1, 0, 1])
    ok = a([0, 1, 2, 3, 0])
    oor = _runtime.INDEX_OUT_OF_RANGE
    expect_error(r"src\[2\] = -1 is out of range: node ids must lie in \[0, 4\) \(N = 4\)", nt, a([0, 1, -1, 9, 0]), ok, ok,
                 2, 4, status=oor)
    expect_error(r"dst\[3\] = 4 is out of range: node ids must lie in \[0, 4\) \(N = 4\)", nt, ok, a([0, 1, 2, 4, 7]),
                 ok, 2, 4, status=oor)
    expect_error(r"node_type\[1\] = 2 is out of range: node types must lie in \[0, 2\) \(num_node_types = 2\)", a([0, 2, 3, 0]), ok, ok, ok,
                 2, 4, status=oor)
    expect_error(r"node_type\[0\] = -3 is out of range", a([-3, 0, 0, 0]), ok, ok, ok, 2, 4)
    expect_error(r"etype\[0\] = 0 is out of range: edge types must lie in \[0, 0\) \(num_edge_types = 0\)", nt, ok, ok, ok, 2, 0)
    expect_error(r"etype\[1\] = -2 is out of range", nt, ok, ok, a([0, -2, 0, 0, 0]), 2, 4)
    # A node with no type: T = 0 but N > 0.
    expect_error(r"node_type\[0\] = 0 is out of range: node types must lie in \[0, 0\)", nt, ok, ok, ok, 0, 4)


def test_bad_shapes_and_counts():
    bad = _runtime.INVALID_ARGUMENT
    expect_error(r"mismatched edge arrays: src has 3 elements, dst 2, etype 3",
                 [0, 0], [0, 1, 1], [0, 1], [0, 0, 0], status=bad)
    expect_error(r"dst 3, etype 1", [0, 0], [0, 1, 1], [0, 1, 0], [0])
    expect_error(r"num_node_types is negative \(-1\)", [0], [0], [0], [0], -1, 1, status=bad)
    expect_error(r"num_edge_types is negative \(-5\)", [0], [0], [0], [0], 1, -5)
    expect_error(r"num_edge_types is 2147483648; at most 2\^31 - 1", [0], [0], [0], [0], 1, 2**31)
    expect_error(r"num_node_types = 1267650600228229401496703205376 does not fit in int64",
                 [0], [0], [0], [0], 2**100, 1)
    expect_error(r"num_node_types must be an integer", [0], [0], [0], [0], 1.5, 1)
    expect_error(r"src must be one-dimensional", [0], [[0]], [0], [0])
    expect_error(r"etype must have an integer dtype, got float64", [0], [0], [0], [0.0])
    expect_error(r"dst\[1\] = 18446744073709551615 does not fit in int64",
                 [0], [0, 0], np.array([0, 2**64 - 1], np.uint64), [0, 0])


def test_c_api_argument_errors(lib):
    """What only a C caller can get wrong: NULLs, lengths, element sizes, ids."""
    def build(**kw):
        arrays = dict(node_type=graph._IndexArray(None, 0, 4, 0), src=graph._IndexArray(None, 0, 4, 0),
                      dst=graph._IndexArray(None, 0, 4, 0), etype=graph._IndexArray(None, 0, 4, 0))
        counts = dict(num_node_types=1, num_edge_types=1)
        for k, v in kw.items():
            (arrays if k in arrays else counts)[k] = v
        gin = graph._GraphInput(**arrays, **counts)
        out = ctypes.c_void_p(1234)
        status = lib.hector_graph_build(ctypes.byref(gin), ctypes.byref(out))
        assert out.value is None  # never a dangling handle on failure
        return status, lib.hector_last_error().decode()

    def fails(match, **kw):
        status, message = build(**kw)
        assert status == _runtime.INVALID_ARGUMENT, message
        assert match in message, message

    fake = ctypes.c_void_p(0x1000)  # never read: shapes are checked first
    fails("src.data is NULL but its length is 3", src=graph._IndexArray(None, 3, 4, 0))
    fails("node_type has negative length -2", node_type=graph._IndexArray(fake, -2, 4, 0))
    fails("src has negative length -1", src=graph._IndexArray(fake, -1, 8, 0))
    fails("etype.elem_bytes is 2; it must be 4 (int32) or 8 (int64)",
          etype=graph._IndexArray(fake, 0, 2, 0))
    fails("dst.reserved must be 0", dst=graph._IndexArray(None, 0, 4, 7))
    fails("src has 2147483648 elements; at most 2^31 - 1 are supported",
          src=graph._IndexArray(fake, 2**31, 4, 0))
    fails("node_type has 3000000000 elements", node_type=graph._IndexArray(fake, 3 * 10**9, 8, 0))

    out = ctypes.c_void_p()
    assert lib.hector_graph_build(None, ctypes.byref(out)) == _runtime.INVALID_ARGUMENT
    assert "in is NULL" in lib.hector_last_error().decode()
    assert lib.hector_graph_build(ctypes.byref(graph._GraphInput()), None) == _runtime.INVALID_ARGUMENT
    assert "out is NULL" in lib.hector_last_error().decode()
    assert lib.hector_graph_free(None) == _runtime.OK

    # Accessors on a real graph.
    gin = graph._GraphInput(node_type=graph._IndexArray(None, 0, 4, 0), src=graph._IndexArray(None, 0, 4, 0),
                            dst=graph._IndexArray(None, 0, 4, 0), etype=graph._IndexArray(None, 0, 4, 0),
                            num_node_types=2, num_edge_types=3)
    assert lib.hector_graph_build(ctypes.byref(gin), ctypes.byref(out)) == _runtime.OK
    try:
        data, length, dtype = ctypes.c_void_p(), ctypes.c_int64(), ctypes.c_int32()
        count = len(graph.ARRAY_NAMES)
        assert lib.hector_graph_array(out, count, ctypes.byref(data), ctypes.byref(length),
                                      ctypes.byref(dtype)) == _runtime.INVALID_ARGUMENT
        assert f"unknown array id {count} (valid: 0 .. {count - 1})" in \
            lib.hector_last_error().decode()
        assert lib.hector_graph_array(out, -1, ctypes.byref(data), ctypes.byref(length),
                                      None) == _runtime.INVALID_ARGUMENT
        assert lib.hector_graph_array(out, 4, None, ctypes.byref(length), None) == _runtime.INVALID_ARGUMENT
        assert lib.hector_graph_array(out, 4, ctypes.byref(data), ctypes.byref(length), None) == 0
        assert length.value == 4  # etype_offsets: R + 1
        assert lib.hector_graph_array(out, 5, ctypes.byref(data), ctypes.byref(length),
                                      ctypes.byref(dtype)) == 0
        assert (data.value, length.value, dtype.value) == (None, 0, 1)  # empty edge_norm, f32
        assert lib.hector_graph_get_sizes(out, None) == _runtime.INVALID_ARGUMENT
        assert lib.hector_graph_get_sizes(None, ctypes.byref(graph._GraphSizes())) == _runtime.INVALID_ARGUMENT
    finally:
        lib.hector_graph_free(out)


def test_array_names(lib):
    # Ids are ABI: a new array is appended, the others keep theirs.
    assert graph.ARRAY_NAMES.index("edge_perm") == 15 and graph.ARRAY_NAMES[-1] == "pair_eid"
    for i, name in enumerate(graph.ARRAY_NAMES):
        assert lib.hector_graph_array_name(i).decode() == name
        idx = ctypes.c_int(-5)
        assert lib.hector_graph_array_id_of(name.encode(), ctypes.byref(idx)) == 0 and idx.value == i
    assert lib.hector_graph_array_name(len(graph.ARRAY_NAMES)) is None
    assert lib.hector_graph_array_name(-1) is None
    idx = ctypes.c_int()
    assert lib.hector_graph_array_id_of(b"edge_weight", ctypes.byref(idx)) == _runtime.INVALID_ARGUMENT
    assert "unknown array name 'edge_weight'" in lib.hector_last_error().decode()
    assert lib.hector_graph_array_id_of(None, ctypes.byref(idx)) == _runtime.INVALID_ARGUMENT


def test_to_canonical_checks_rows():
    pre = graph.preprocess([0, 0], [0, 1, 1], [1, 0, 1], [0, 1, 0])
    feats = np.arange(6).reshape(3, 2)
    np.testing.assert_array_equal(pre.to_canonical(feats), feats[pre.edge_perm])
    with pytest.raises(ValueError, match="edge-wise values need 3 rows"):
        pre.to_canonical(np.zeros((2, 2)))

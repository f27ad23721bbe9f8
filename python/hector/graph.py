"""Per-graph preprocessing through libhector_runtime.so (C ABI: runtime/include/hector/graph.h).

    from hector.graph import preprocess
    pre = preprocess(node_type, src, dst, etype)        # numpy in, numpy out
    pre.edge_src, pre.csr_row_ptr, pre.compact_map, ...  # the table of docs/compilation.md
    pre.to_canonical(edge_feat)                          # user edge order -> canonical

The arrays are the table "Graph preprocessing" of docs/compilation.md, among
them `edge_perm` (canonical edge id -> the caller's edge index) and
`pair_eid` (canonical edge ids grouped by compact pair). All are int32
except `edge_norm` (float32); they are read-only copies owned by Python.
Bad input raises GraphInputError (a ValueError) with the runtime's message; a
graph whose arrays would not fit in the memory available raises MemoryError
before anything is allocated (hector._memory).
"""

from __future__ import annotations

import ctypes
import dataclasses
import operator
from typing import Dict, Optional

import numpy as np

from . import _memory, _runtime
from ._graph_table import ARRAYS
from ._graph_device import preprocess_on_device

# Table order (hector_graph_array_id in graph.h; runtime/include/hector/graph_arrays.def).
ARRAY_NAMES = tuple(array.name for array in ARRAYS)

_INT32, _FLOAT32 = 0, 1  # HECTOR_GRAPH_INT32 / HECTOR_GRAPH_FLOAT32
_MAX_INT64 = np.iinfo(np.int64).max
_MAX_INT32 = np.iinfo(np.int32).max


class GraphInputError(_runtime.HectorRuntimeError, ValueError):
    """The graph given to preprocess() is malformed; the message says where."""


class _IndexArray(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("length", ctypes.c_int64),
        ("elem_bytes", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


class _GraphInput(ctypes.Structure):
    _fields_ = [
        ("node_type", _IndexArray),
        ("src", _IndexArray),
        ("dst", _IndexArray),
        ("etype", _IndexArray),
        ("num_node_types", ctypes.c_int64),
        ("num_edge_types", ctypes.c_int64),
    ]


class _GraphSizes(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in
                ("num_nodes", "num_edges", "num_node_types", "num_edge_types", "num_pairs")]


class _PreprocessedMethods:
    def arrays(self) -> Dict[str, np.ndarray]:
        """Every array by its table name, in table order."""
        return {name: getattr(self, name) for name in ARRAY_NAMES}

    def to_canonical(self, edge_values) -> np.ndarray:
        """Rows of an edge-wise array in the caller's edge order, reordered to canonical order."""
        if hasattr(edge_values, "index_select"):  # a torch tensor, e.g. on the GPU
            return edge_values[self.edge_perm.long()]
        values = np.asarray(edge_values)
        if values.ndim < 1 or values.shape[0] != self.E:
            raise ValueError(f"edge-wise values need {self.E} rows, got shape {values.shape}")
        return values[self.edge_perm]


# The preprocessing of one graph: its sizes N, E, T, R, P and one field per
# array of the table (pre.edge_src, pre.compact_map, ...), in table order.
Preprocessed = dataclasses.make_dataclass(
    "Preprocessed",
    [(symbol, int) for symbol in "NETRP"] + [(name, np.ndarray) for name in ARRAY_NAMES],
    bases=(_PreprocessedMethods,), frozen=True)
Preprocessed.__module__ = __name__
Preprocessed.__doc__ = """The preprocessing of one graph: sizes and the arrays of the table."""


_declared = set()


def _lib() -> ctypes.CDLL:
    """The runtime library, with the graph entry points declared."""
    lib = _runtime.load()
    if id(lib) in _declared:
        return lib
    if not hasattr(lib, "hector_graph_build"):
        raise _runtime.RuntimeLibraryNotFound(
            f"the loaded {_runtime.LIB_NAME} ({lib._name}) has no graph preprocessing "
            f"(hector_graph_build): it predates it; rebuild the runtime or set {_runtime.ENV_VAR}"
        )
    c_int, c_void_p, p = ctypes.c_int, ctypes.c_void_p, ctypes.POINTER
    sig = {
        "hector_graph_build": (c_int, [p(_GraphInput), p(c_void_p)]),
        "hector_graph_free": (c_int, [c_void_p]),
        "hector_graph_get_sizes": (c_int, [c_void_p, p(_GraphSizes)]),
        "hector_graph_array": (
            c_int, [c_void_p, c_int, p(c_void_p), p(ctypes.c_int64), p(ctypes.c_int32)]),
        "hector_graph_array_name": (ctypes.c_char_p, [c_int]),
        "hector_graph_array_id_of": (c_int, [ctypes.c_char_p, p(c_int)]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _declared.add(id(lib))
    return lib


def _check(lib: ctypes.CDLL, status: int) -> None:
    if status == _runtime.OK:
        return
    message = lib.hector_last_error().decode(errors="replace")
    name = lib.hector_status_name(status).decode()
    if status in (_runtime.INVALID_ARGUMENT, _runtime.INDEX_OUT_OF_RANGE):
        raise GraphInputError(status, f"{message} [{name}]")
    if status == _runtime.OUT_OF_MEMORY:
        raise MemoryError(f"{message} [{name}]")
    raise _runtime.HectorRuntimeError(status, f"{message} [{name}]")


def _as_ids(name: str, values) -> np.ndarray:
    """A 1-D contiguous int32 or int64 array of `values` (other integer dtypes are widened)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise GraphInputError(_runtime.INVALID_ARGUMENT,
                              f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)  # np.array([]) is float64: accept an empty list
        else:
            raise GraphInputError(_runtime.INVALID_ARGUMENT,
                                  f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and arr.max() > _MAX_INT64:
        i = int(np.argmax(arr > _MAX_INT64))
        raise GraphInputError(_runtime.INDEX_OUT_OF_RANGE,
                              f"{name}[{i}] = {int(arr[i])} does not fit in int64")
    if arr.dtype not in (np.int32, np.int64):
        arr = arr.astype(np.int32 if arr.dtype.itemsize < 4 else np.int64)
    return np.ascontiguousarray(arr)


def _type_count(name: str, given, types: np.ndarray) -> int:
    if given is None:
        return int(types.max()) + 1 if types.size else 0
    try:
        value = operator.index(given)
    except TypeError:
        raise GraphInputError(_runtime.INVALID_ARGUMENT,
                              f"{name} must be an integer, got {given!r}") from None
    if not -_MAX_INT64 - 1 <= value <= _MAX_INT64:
        # ctypes would silently truncate it; the runtime checks the real range.
        raise GraphInputError(_runtime.INVALID_ARGUMENT, f"{name} = {value} does not fit in int64")
    return value


def _index_array(arr: np.ndarray) -> _IndexArray:
    return _IndexArray(arr.ctypes.data if arr.size else None, arr.shape[0], arr.itemsize, 0)


def _copy_out(lib: ctypes.CDLL, graph: ctypes.c_void_p, index: int) -> np.ndarray:
    data, length, dtype = ctypes.c_void_p(), ctypes.c_int64(), ctypes.c_int32()
    _check(lib, lib.hector_graph_array(graph, index, ctypes.byref(data), ctypes.byref(length),
                                       ctypes.byref(dtype)))
    np_dtype = np.float32 if dtype.value == _FLOAT32 else np.int32
    n = length.value
    if n == 0:
        out = np.empty(0, dtype=np_dtype)
    else:
        buf = (ctypes.c_char * (n * 4)).from_address(data.value)
        out = np.frombuffer(buf, dtype=np_dtype).copy()
    out.flags.writeable = False
    return out


def host_bytes(n: int, e: int, t: int, r: int) -> int:
    """A lower bound of the host memory preprocess() needs at its peak for N
    nodes, E edges, T node types and R edge types: the runtime's peak (as
    runtime/lib/graph/preprocess.cpp counts it) plus the copies of its
    outputs that preprocess() returns."""
    # The table's arrays but compact_src (P <= E is not known yet).
    outputs = 4 * (10 * e + 3 * n + 2 * r + t + 4)
    # The runtime's peak: all its outputs (+ the two N-sized arrays that build
    # compact_map and pair_eid), or, while it sorts the edges, two 16-byte
    # records per edge, the CSR arrays and two R-sized arrays (etype_offsets
    # and the next free slot of each type).
    runtime = max(outputs + 8 * n, 4 * (2 * r + 1) + 44 * e + 4 * (3 * n + t + 2))
    return runtime + outputs


def preprocess(node_type, src, dst, etype, num_node_types: Optional[int] = None,
               num_edge_types: Optional[int] = None, device=None) -> Preprocessed:
    """Builds the preprocessing table of one graph.

    node_type[N] gives each node's type; edge e goes from src[e] to dst[e] with type
    etype[e], in any order (int32 or int64; other integer dtypes are widened).
    num_node_types / num_edge_types default to the largest type present + 1; pass
    them when trailing types have no nodes or edges. Raises GraphInputError (a
    ValueError) naming the first bad index and value on malformed input, and
    MemoryError, before allocating, when the arrays would need more memory
    than is available (the message gives the sizes and the bytes).

    With `device` (a torch device, e.g. "cuda"), the arrays are built there with
    torch operations and returned as torch tensors on that device: the same
    values, without a round trip through host memory.
    """
    if device is not None:
        try:
            sizes, tensors = preprocess_on_device(node_type, src, dst, etype,
                                                  num_node_types, num_edge_types, device)
        except ValueError as err:
            raise GraphInputError(_runtime.INVALID_ARGUMENT, str(err)) from None
        return Preprocessed(**sizes, **tensors)
    arrays = {name: _as_ids(name, values) for name, values in
              (("node_type", node_type), ("src", src), ("dst", dst), ("etype", etype))}
    t = _type_count("num_node_types", num_node_types, arrays["node_type"])
    r = _type_count("num_edge_types", num_edge_types, arrays["etype"])
    n, e = arrays["node_type"].size, arrays["src"].size
    if 0 <= t <= _MAX_INT32 and 0 <= r <= _MAX_INT32:  # else the runtime says why not
        _memory.check_host(f"hector.graph.preprocess of a graph with N = {n}, E = {e}, "
                           f"num_node_types = {t}, num_edge_types = {r}",
                           host_bytes(n, e, t, r))
    lib = _lib()
    graph_input = _GraphInput(
        _index_array(arrays["node_type"]), _index_array(arrays["src"]),
        _index_array(arrays["dst"]), _index_array(arrays["etype"]), t, r)
    graph = ctypes.c_void_p()
    _check(lib, lib.hector_graph_build(ctypes.byref(graph_input), ctypes.byref(graph)))
    try:
        sizes = _GraphSizes()
        _check(lib, lib.hector_graph_get_sizes(graph, ctypes.byref(sizes)))
        out = {name: _copy_out(lib, graph, i) for i, name in enumerate(ARRAY_NAMES)}
    finally:
        lib.hector_graph_free(graph)
    return Preprocessed(N=sizes.num_nodes, E=sizes.num_edges, T=sizes.num_node_types,
                        R=sizes.num_edge_types, P=sizes.num_pairs, **out)

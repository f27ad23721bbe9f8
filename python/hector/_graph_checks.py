"""Checks of the graph arrays passed to a compiled entry point.

Index ranges: generated code trusts the preprocessing arrays
(docs/compilation.md): an id out of range would read or write out of bounds.
Every entry call checks them unless told not to (`check_indices=False`,
which hector.nn passes for the arrays it built itself): every id in its
range, every offset table starting at 0, never decreasing and ending at its
symbol. The statistics are reduced on the arrays' device and read back in
one copy (on a GPU that copy waits for the work queued before it).

Typed endpoints: a library built with `hectorc --typed-endpoints` is right
only on graphs whose edge types each join one source node type to one
destination node type; any valid graph can break that, so its entries
always check it, once per content of the arrays (torch tensors are
fingerprinted on their device, so a graph changed in place is checked
again however it was changed).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ._graph_table import ARRAYS

# Graph array name -> the symbol its values index (valid range [0, symbol)).
_ID_RANGES = {array.name: array.bound for array in ARRAYS if array.check == "ids"}
# Offset tables: start at 0, never decrease, end at the symbol.
_OFFSETS = {array.name: array.bound for array in ARRAYS if array.check == "offsets"}


def _statistics(values: list, offsets: list) -> list:
    """Per 1-D numpy array or torch tensor of `values`, None when empty, else
    (min, max) for an id array or (first, last, non-decreasing) for an
    offset table (`offsets[i]`): what check_graph_indices reads, one pass
    per statistic. Torch statistics are reduced on each tensor's device and
    read back in one copy per device."""
    results = [None] * len(values)
    pending = {}  # device -> [(index, [0-d int64 tensors])]
    for i, (value, ordered) in enumerate(zip(values, offsets)):
        if hasattr(value, "is_cuda"):  # torch
            if value.numel() == 0:
                continue
            import torch
            v = value.reshape(-1)
            if ordered:
                stats = [v[0], v[-1], (v[1:] >= v[:-1]).all()]
            else:
                stats = [v.min(), v.max()]
            pending.setdefault(str(v.device), []).append(
                (i, [t.to(torch.int64) for t in stats]))
        elif value.size:
            import numpy as np
            v = np.asarray(value).reshape(-1)
            results[i] = ((int(v[0]), int(v[-1]), bool(np.all(v[1:] >= v[:-1]))) if ordered
                          else (int(v.min()), int(v.max())))
    if pending:
        import torch
        for items in pending.values():
            flat = iter(torch.stack([t for _, stats in items for t in stats]).tolist())
            for i, stats in items:
                results[i] = tuple(next(flat) for _ in stats)
    return results


def check_graph_indices(entry_name: str, arguments, symbols: dict) -> None:
    """Raises ValueError naming the first graph argument whose values are out
    of range. `arguments` holds (Argument, array) pairs; `symbols` the sizes
    bound from the argument shapes (N, E, R, T, P)."""
    graph = [(arg, value) for arg, value in arguments
             if arg.role == "graph" and (arg.name in _ID_RANGES or arg.name in _OFFSETS)]
    offsets = [arg.name in _OFFSETS for arg, _ in graph]
    for (arg, value), stats in zip(graph, _statistics([v for _, v in graph], offsets)):
        what = f"{entry_name}(): graph argument '{arg.name}'"
        if arg.name in _ID_RANGES:
            if stats is None:
                continue
            low, high = stats
            symbol = _ID_RANGES[arg.name]
            bound = symbols.get(symbol)
            if low < 0:
                raise ValueError(f"{what} holds {low}; ids must be non-negative")
            if bound is not None and high >= bound:
                raise ValueError(f"{what} holds {high}, out of range [0, {bound}) "
                                 f"({symbol} = {bound})")
        else:
            if stats is None:
                raise ValueError(f"{what} is empty; an offset table has at least one entry")
            first, last, ordered = stats
            if first != 0 or not ordered:
                raise ValueError(f"{what} must start at 0 and never decrease")
            end = symbols.get(_OFFSETS[arg.name])
            if end is not None and last != end:
                raise ValueError(f"{what} ends at {last}, expected {_OFFSETS[arg.name]} = {end}")


# Contents already found to have typed endpoints: the fingerprints
# (hector._fingerprint) of node_type, etype_offsets and the endpoint array,
# at most _SEEN_CAPACITY of them, least recently used first out. Numpy
# arrays are checked at every call.
_SEEN_CAPACITY = 64
_typed_endpoints_seen: OrderedDict = OrderedDict()
_seen_lock = threading.Lock()


def _content_key(*values):
    if not all(hasattr(v, "is_cuda") for v in values):
        return None
    from ._fingerprint import fingerprints
    return tuple(fingerprints(values))


def _first_mixed_edge_type(node_type, offsets, ends):
    """The first edge type (canonical order: edges sorted by type, type r
    in [offsets[r], offsets[r+1])) whose edges meet nodes of two types at
    `ends`, with two of those types; None if there is none."""
    if hasattr(node_type, "is_cuda"):  # torch, on the arrays' device
        import torch
        counts = (offsets[1:] - offsets[:-1]).long()
        edge_type = torch.repeat_interleave(
            torch.arange(counts.numel(), device=counts.device), counts)
        types = node_type[ends.long()]
        mixed = (types[1:] != types[:-1]) & (edge_type[1:] == edge_type[:-1])
        where = torch.nonzero(mixed).flatten()
        if where.numel() == 0:
            return None
        i = int(where[0])
        return int(edge_type[i]), int(types[i]), int(types[i + 1])
    import numpy as np
    counts = np.diff(np.asarray(offsets).astype(np.int64))
    edge_type = np.repeat(np.arange(counts.size), counts)
    types = np.asarray(node_type)[np.asarray(ends)]
    mixed = (types[1:] != types[:-1]) & (edge_type[1:] == edge_type[:-1])
    where = np.flatnonzero(mixed)
    if where.size == 0:
        return None
    i = int(where[0])
    return int(edge_type[i]), int(types[i]), int(types[i + 1])


def check_typed_endpoints(entry_name: str, arguments) -> None:
    """Raises ValueError when the graph has an edge type whose sources (or
    destinations) have more than one node type. `arguments` holds
    (Argument, array) pairs; only the endpoint arrays the entry takes are
    checked (the ones its code reads types through)."""
    graph = {arg.name: value for arg, value in arguments if arg.role == "graph"}
    node_type, offsets = graph.get("node_type"), graph.get("etype_offsets")
    if node_type is None or offsets is None:
        return
    for name, word in (("edge_src", "source"), ("edge_dst", "destination")):
        ends = graph.get(name)
        if ends is None:
            continue
        key = _content_key(node_type, offsets, ends)
        with _seen_lock:
            if key is not None and key in _typed_endpoints_seen:
                _typed_endpoints_seen.move_to_end(key)
                continue
        mixed = _first_mixed_edge_type(node_type, offsets, ends)
        if mixed is not None:
            edge_type, a, b = mixed
            raise ValueError(
                f"{entry_name}(): the library was built with --typed-endpoints, which "
                f"needs every edge type to join nodes of one source type to nodes of one "
                f"destination type, but edge type {edge_type} has {word} nodes of types "
                f"{a} and {b}; build it without --typed-endpoints (hector.tune adds the "
                f"flag only for graphs that qualify)")
        if key is not None:
            with _seen_lock:
                _typed_endpoints_seen[key] = True
                while len(_typed_endpoints_seen) > _SEEN_CAPACITY:
                    _typed_endpoints_seen.popitem(last=False)

"""Checks of the graph arrays passed to a compiled entry point.

Index ranges: generated code trusts the preprocessing arrays
(docs/compilation.md): an id out of range would read or write out of bounds.
hector.graph.preprocess only builds valid arrays, so that check is off by
default; `entry(..., check_indices=True)` runs it on arrays from elsewhere
(it reads every index, and on a GPU waits for the device).

Typed endpoints: a library built with `hectorc --typed-endpoints` is right
only on graphs whose edge types each join one source node type to one
destination node type; any valid graph can break that, so its entries
always check it (once per set of torch tensors, until one is modified).
"""

from __future__ import annotations

# Graph array name -> the symbol its values index (valid range [0, symbol)).
_ID_RANGES = {
    "node_type": "T",
    "edge_src": "N", "edge_dst": "N", "csr_src": "N", "ntype_perm": "N", "compact_src": "N",
    "edge_type": "R", "csr_etype": "R",
    "csr_eid": "E", "edge_perm": "E",
    "compact_map": "P",
}
# Offset tables: start at 0, never decrease, end at the symbol.
_OFFSETS = {"etype_offsets": "E", "csr_row_ptr": "E", "ntype_offsets": "N",
            "compact_offsets": "P"}


def _stats(value):
    """(min, max, non-decreasing) of a 1-D numpy array or torch tensor."""
    if hasattr(value, "is_cuda"):  # torch
        if value.numel() == 0:
            return None, None, True
        steps = value[1:] - value[:-1]
        return int(value.min()), int(value.max()), bool((steps >= 0).all())
    if value.size == 0:
        return None, None, True
    import numpy as np
    return int(value.min()), int(value.max()), bool(np.all(np.diff(value) >= 0))


def check_graph_indices(entry_name: str, arguments, symbols: dict) -> None:
    """Raises ValueError naming the first graph argument whose values are out
    of range. `arguments` holds (Argument, array) pairs; `symbols` the sizes
    bound from the argument shapes (N, E, R, T, P)."""
    for arg, value in arguments:
        if arg.role != "graph":
            continue
        what = f"{entry_name}(): graph argument '{arg.name}'"
        low, high, increasing = _stats(value)
        if arg.name in _ID_RANGES:
            symbol = _ID_RANGES[arg.name]
            bound = symbols.get(symbol)
            if low is not None and low < 0:
                raise ValueError(f"{what} holds {low}; ids must be non-negative")
            if bound is not None and high is not None and high >= bound:
                raise ValueError(f"{what} holds {high}, out of range [0, {bound}) "
                                 f"({symbol} = {bound})")
        elif arg.name in _OFFSETS:
            end = symbols.get(_OFFSETS[arg.name])
            if low is None:
                raise ValueError(f"{what} is empty; an offset table has at least one entry")
            first = int(value[0])
            last = int(value[-1])
            if first != 0 or not increasing:
                raise ValueError(f"{what} must start at 0 and never decrease")
            if end is not None and last != end:
                raise ValueError(f"{what} ends at {last}, expected {_OFFSETS[arg.name]} = {end}")


# Torch graph arrays already found to have typed endpoints: (data pointer,
# shape, device, version counter) of node_type, etype_offsets and the
# endpoint array. An in-place change bumps the version, so it is checked
# again; numpy arrays have no such counter and are checked at every call.
_typed_endpoints_seen = set()


def _identity(value):
    if not hasattr(value, "is_cuda"):
        return None
    return (value.data_ptr(), tuple(value.shape), str(value.device), value._version)


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
        key = (_identity(node_type), _identity(offsets), _identity(ends))
        if None not in key and key in _typed_endpoints_seen:
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
        if None not in key:
            _typed_endpoints_seen.add(key)

"""Index-range checks of the graph arrays passed to a compiled entry point.

Generated code trusts the preprocessing arrays (docs/compilation.md): an id
out of range would read or write out of bounds. hector.graph.preprocess only
builds valid arrays, so the check is off by default; `entry(...,
check_indices=True)` runs it on arrays from elsewhere (it reads every index,
and on a GPU waits for the device).
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

"""The per-graph preprocessing of docs/compilation.md with torch operations,
so that it runs where the graph already is (on a GPU, for the cuda target).

It builds the same arrays as the runtime's host implementation
(runtime/lib/graph), bit for bit; test_graph_device.py checks that. Sorts are
stable sorts on combined keys, counts are bincounts, compact pairs come
from torch.unique over (edge type, source) keys, and pair_eid is a stable
sort of compact_map.
"""

from __future__ import annotations

_MAX_INT32 = 2**31 - 1


def _ids(torch, name, values, device):
    tensor = torch.as_tensor(values, device=device)
    if tensor.dim() != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {tuple(tensor.shape)}")
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex or tensor.dtype == torch.bool:
        if tensor.numel() == 0:
            return tensor.to(torch.int64)
        raise ValueError(f"{name} must have an integer dtype, got {tensor.dtype}")
    return tensor.to(torch.int64)


def _check_ranges(torch, checks):
    """Raises like the runtime, for the first (name, values, bound, what,
    symbol) of `checks` holding a value outside [0, bound): its first such
    index. The flags of all the arrays come back to the host in one copy
    (on a GPU, one wait for the queued work instead of one per array)."""
    flags = [((values < 0) | (values >= bound)).any() for _, values, bound, _, _ in checks
             if values.numel()]
    if not flags or not any(torch.stack(flags).tolist()):
        return
    for name, values, bound, what, symbol in checks:
        bad = (values < 0) | (values >= bound)
        if values.numel() and bool(bad.any()):
            i = int(torch.nonzero(bad)[0])
            raise ValueError(f"{name}[{i}] = {int(values[i])} is out of range: {what} must "
                             f"lie in [0, {bound}) ({symbol} = {bound})")


def _offsets(torch, types, count):
    zero = torch.zeros(1, dtype=torch.int64, device=types.device)
    return torch.cat([zero, torch.cumsum(torch.bincount(types, minlength=count), 0)])


def device_bytes(n: int, e: int, t: int, r: int) -> int:
    """A lower bound of the memory preprocess_on_device needs at its peak:
    seven int64 arrays per edge (edge_perm, edge_src, edge_dst, edge_type,
    csr_eid, compact_map and pair_eid live at once) and two per node; per
    edge type, the int64 offsets of one table while the other's are counted
    (bincount, cumsum) and then converted (24 bytes per type); per node type
    16."""
    return 56 * e + 16 * n + 24 * (r + 1) + 16 * (t + 1)


def preprocess_on_device(node_type, src, dst, etype, num_node_types, num_edge_types, device):
    """Returns (sizes, arrays): N, E, T, R, P and the table's tensors on `device`."""
    try:
        import torch
    except ImportError:
        raise ImportError("preprocessing on a device needs torch") from None
    node_type, src, dst, etype = (_ids(torch, name, values, device) for name, values in
                                  (("node_type", node_type), ("src", src), ("dst", dst),
                                   ("etype", etype)))
    n, e = node_type.numel(), src.numel()
    if dst.numel() != e or etype.numel() != e:
        raise ValueError(f"src, dst and etype must have one length, got {e}, {dst.numel()} "
                         f"and {etype.numel()}")
    if n > _MAX_INT32 or e > _MAX_INT32:
        raise ValueError(f"N = {n} and E = {e} must be below 2^31 (the arrays are int32)")
    t = int(node_type.max()) + 1 if num_node_types is None and n else (num_node_types or 0)
    r = int(etype.max()) + 1 if num_edge_types is None and e else (num_edge_types or 0)
    if t < 0 or r < 0:
        raise ValueError(f"type counts must be non-negative, got T = {t}, R = {r}")
    if t > _MAX_INT32 or r > _MAX_INT32:
        raise ValueError(f"T = {t} and R = {r} must be below 2^31 (the arrays are int32)")
    from . import _memory
    _memory.check_device(
        src.device, f"hector.graph.preprocess of a graph with N = {n}, E = {e}, "
        f"num_node_types = {t}, num_edge_types = {r}", device_bytes(n, e, t, r))
    _check_ranges(torch, [("node_type", node_type, t, "node types", "T"),
                          ("src", src, n, "node ids", "N"),
                          ("dst", dst, n, "node ids", "N"),
                          ("etype", etype, r, "edge types", "R")])
    if r * n * max(n, 1) >= 2**63:
        raise ValueError(f"R * N * N = {r} * {n} * {n} does not fit the 64-bit sort keys")

    # Canonical order: stable by (edge type, destination, source).
    edge_perm = torch.sort((etype * n + dst) * n + src, stable=True).indices
    edge_src, edge_dst, edge_type = src[edge_perm], dst[edge_perm], etype[edge_perm]
    # c_e: edges of one (type, destination) are one run in canonical order.
    _, run, run_length = torch.unique_consecutive(edge_type * n + edge_dst,
                                                  return_inverse=True, return_counts=True)
    edge_norm = (1.0 / run_length.to(torch.float32))[run] if e else \
        torch.zeros(0, dtype=torch.float32, device=src.device)
    # CSR by destination; a stable sort keeps each row's slots in canonical order.
    csr_eid = torch.sort(edge_dst, stable=True).indices
    ntype_perm = torch.sort(node_type, stable=True).indices
    # Unique (type, source) pairs, sorted by type then source.
    pair_keys, compact_map = torch.unique(edge_type * n + edge_src, sorted=True,
                                          return_inverse=True)
    pair_type = pair_keys // max(n, 1)
    # Canonical edge ids grouped by pair; within a pair in canonical order.
    pair_eid = torch.sort(compact_map, stable=True).indices
    arrays = {
        "node_type": node_type,
        "edge_src": edge_src, "edge_dst": edge_dst, "edge_type": edge_type,
        "etype_offsets": _offsets(torch, edge_type, r),
        "edge_norm": edge_norm,
        "csr_row_ptr": _offsets(torch, edge_dst, n),
        "csr_src": edge_src[csr_eid], "csr_eid": csr_eid, "csr_etype": edge_type[csr_eid],
        "ntype_perm": ntype_perm,
        "ntype_offsets": _offsets(torch, node_type, t),
        "compact_src": pair_keys - pair_type * n,
        "compact_offsets": _offsets(torch, pair_type, r),
        "compact_map": compact_map,
        "edge_perm": edge_perm,
        "pair_eid": pair_eid,
    }
    arrays = {name: a if a.dtype == torch.float32 else a.to(torch.int32).contiguous()
              for name, a in arrays.items()}
    sizes = {"N": n, "E": e, "T": t, "R": r, "P": int(pair_keys.numel())}
    return sizes, arrays


__all__ = ["preprocess_on_device"]

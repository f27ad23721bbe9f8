"""torch_geometric.utils: coalesce and the torch.sparse conversions the tests use."""

import torch

_MISSING = object()


def coalesce(edge_index, edge_attr=_MISSING, num_nodes=None, reduce: str = "sum",
             is_sorted: bool = False, sort_by_row: bool = True):
    """Sorts the edges by (source, destination) (sort_by_row) or by
    (destination, source), and merges duplicates, summing their edge_attr.
    Returns edge_index, or (edge_index, edge_attr) when edge_attr is given
    (even as None)."""
    if reduce != "sum":
        raise NotImplementedError("the stand-in's coalesce sums duplicates only")
    if num_nodes is None:
        num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
    major, minor = (edge_index[0], edge_index[1]) if sort_by_row else \
        (edge_index[1], edge_index[0])
    key = major * num_nodes + minor
    key, perm = torch.sort(key)  # is_sorted is only a hint
    edge_index = edge_index[:, perm]
    unique, inverse = torch.unique_consecutive(key, return_inverse=True)
    attr = None if edge_attr is _MISSING else edge_attr
    if attr is not None:
        attr = attr[perm]
    if unique.numel() != key.numel():
        first = torch.ones_like(key, dtype=torch.bool)
        first[1:] = key[1:] != key[:-1]
        edge_index = edge_index[:, first]
        if attr is not None:
            merged = attr.new_zeros((unique.numel(),) + tuple(attr.shape[1:]))
            attr = merged.index_add_(0, inverse, attr)
    return edge_index if edge_attr is _MISSING else (edge_index, attr)


def _square_or_pair(edge_index, size):
    if size is None:
        size = int(edge_index.max()) + 1
    if isinstance(size, (tuple, list)):
        rows, cols = size
        rows = int(edge_index[0].max()) + 1 if rows is None else rows
        cols = int(edge_index[1].max()) + 1 if cols is None else cols
        return rows, cols
    return size, size


def _ptr(index, n):
    """Sorted ids -> CSR offsets [n + 1]."""
    counts = torch.bincount(index, minlength=n)
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def to_torch_coo_tensor(edge_index, edge_attr=None, size=None, is_coalesced: bool = False):
    """A coalesced torch.sparse COO tensor [rows, cols (, *edge_attr dims)]
    with entry (s, t) for every edge (ones without edge_attr)."""
    size = _square_or_pair(edge_index, size)
    if not is_coalesced:
        edge_index, edge_attr = coalesce(edge_index, edge_attr, max(size))
    if edge_attr is None:
        edge_attr = torch.ones(edge_index.size(1), device=edge_index.device)
    adj = torch.sparse_coo_tensor(edge_index, edge_attr,
                                  tuple(size) + tuple(edge_attr.shape[1:]),
                                  device=edge_index.device)
    return adj._coalesced_(True)


def to_torch_csc_tensor(edge_index, edge_attr=None, size=None, is_coalesced: bool = False):
    """A torch.sparse CSC tensor [rows, cols (, *edge_attr dims)] with entry
    (s, t) for every edge (ones without edge_attr)."""
    size = _square_or_pair(edge_index, size)
    if not is_coalesced:
        edge_index, edge_attr = coalesce(edge_index, edge_attr, max(size), sort_by_row=False)
    if edge_attr is None:
        edge_attr = torch.ones(edge_index.size(1), device=edge_index.device)
    return torch.sparse_csc_tensor(_ptr(edge_index[1], size[1]), edge_index[0], edge_attr,
                                   tuple(size) + tuple(edge_attr.shape[1:]),
                                   device=edge_index.device)

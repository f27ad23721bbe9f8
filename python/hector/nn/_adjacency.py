"""The graph argument of the hector.nn layers, as PyG 2.8 takes it: an
`edge_index` [2, E] or a sparse adjacency, turned into one edge list.

PyG's sparse convention is the *transposed* adjacency `adj_t`
[num destinations, num sources]: entry (t, s) is an edge s → t. Accepted:
torch.sparse COO, CSR and CSC tensors, and torch_sparse.SparseTensor when
that package is installed. Edges are read in the order the tensor stores
them, duplicates included (a COO tensor is not coalesced: coalescing would
add up the values of duplicate edges), as PyG's `to_edge_index` does.

Values: a one-dimensional integer value per edge is its relation id when
the layer takes `edge_type` and none is given (PyG stores edge types as a
SparseTensor's values, and FastRGCNConv and RGATConv read a torch.sparse
tensor's values the same way); an explicit `edge_type` (one id per stored
edge, in the stored order) wins over the values. Values of more than one
dimension are edge features (PyG's `edge_attr`).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import torch

from ._base import check_index_tensor

__all__ = ["Edges", "edges", "is_sparse", "check_size", "with_values"]

_LAYOUTS = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc)


class Edges(NamedTuple):
    index: torch.Tensor              # [2, E] int: row 0 sources, row 1 destinations
    edge_type: Optional[torch.Tensor]  # [E] relation ids, or None
    size: Optional[Tuple[int, int]]  # (num sources, num destinations) of a sparse adjacency
    features: bool                   # the adjacency's values are edge features ([E, F])
    values: Optional[torch.Tensor] = None  # those [E, F] values, in stored order


def _sparse_tensor_class():
    """torch_sparse.SparseTensor, or None when torch_sparse does not import."""
    try:
        from torch_sparse import SparseTensor
    except (ImportError, OSError):  # OSError: a build for another torch
        return None
    return SparseTensor


def _is_sparse_tensor(adj) -> bool:
    # Only a torch_sparse object can be a SparseTensor: import the package
    # (slow) only then.
    if not type(adj).__module__.startswith("torch_sparse"):
        return False
    cls = _sparse_tensor_class()
    return cls is not None and isinstance(adj, cls)


def is_sparse(adj) -> bool:
    """A torch.sparse tensor (any layout) or a torch_sparse.SparseTensor."""
    return (isinstance(adj, torch.Tensor) and adj.layout != torch.strided) or \
        _is_sparse_tensor(adj)


def _ptr_to_index(ptr: torch.Tensor) -> torch.Tensor:
    """CSR/CSC offsets [n + 1] -> the row (column) of every stored entry."""
    ptr = ptr.to(torch.int64)
    return torch.repeat_interleave(torch.arange(ptr.numel() - 1, device=ptr.device),
                                   ptr.diff())


def _coordinates(layer: str, what: str, adj):
    """(rows, cols, values or None, (num rows, num cols)) of a sparse adjacency."""
    if _is_sparse_tensor(adj):  # always two sparse dimensions; [E, F] values are features
        row, col, value = adj.coo()
        return row, col, value, tuple(int(s) for s in adj.sparse_sizes())
    if adj.layout not in _LAYOUTS:
        raise ValueError(f"{layer}: {what} has layout {adj.layout}; sparse adjacencies "
                         "must be COO, CSR or CSC (or give edge_index [2, E])")
    if adj.sparse_dim() != 2 or adj.dim() - adj.dense_dim() != 2:
        raise ValueError(f"{layer}: {what} must be a [num destinations, num sources] "
                         f"sparse matrix, got shape {tuple(adj.shape)} with "
                         f"{adj.sparse_dim()} sparse dimensions")
    size = (int(adj.size(0)), int(adj.size(1)))
    if adj.layout == torch.sparse_coo:
        index = adj._indices()  # as stored: no coalescing (it would sum duplicates)
        return index[0], index[1], adj._values(), size
    if adj.layout == torch.sparse_csr:
        return _ptr_to_index(adj.crow_indices()), adj.col_indices(), adj.values(), size
    return adj.row_indices(), _ptr_to_index(adj.ccol_indices()), adj.values(), size


def edges(layer: str, adj, edge_type=None, *, device, typed: bool = True,
          what: str = "edge_index") -> Edges:
    """The edges of `adj` (an edge_index [2, E] or a sparse `adj_t`) for
    `layer`, with their relation ids when `typed`: `edge_type` as given,
    else a sparse adjacency's one-dimensional integer values. Raises
    TypeError or ValueError naming `what` on anything else."""
    if not is_sparse(adj):
        check_index_tensor(what, adj, rows=2, device=device)
        if typed:
            edge_type = _check_edge_type(layer, edge_type, adj.size(1), device)
        return Edges(adj, edge_type if typed else None, None, False)
    row, col, value, size = _coordinates(layer, what, adj)
    if row.device != device:
        raise ValueError(f"{what} is on {row.device} but the features are on {device}")
    index = torch.stack([col.to(torch.int64), row.to(torch.int64)])
    features = value is not None and value.dim() > 1
    if not typed:
        return Edges(index, None, (size[1], size[0]), features, value if features else None)
    if edge_type is None:
        if value is None or value.dim() != 1 or value.is_floating_point() \
                or value.is_complex() or value.dtype == torch.bool:
            got = "no values" if value is None else \
                f"values of dtype {value.dtype} and shape {tuple(value.shape)}"
            raise ValueError(
                f"{layer} needs edge_type: {what} has {got}; store one integer relation id "
                "per edge as its values (PyG's convention) or pass edge_type")
        edge_type = value.detach()
    edge_type = _check_edge_type(layer, edge_type, index.size(1), device)
    return Edges(index, edge_type, (size[1], size[0]), features, value if features else None)


def _check_edge_type(layer, edge_type, num_edges, device):
    if edge_type is None:
        raise ValueError(f"{layer} needs edge_type (the relation of every edge)")
    check_index_tensor("edge_type", edge_type, device=device)
    if edge_type.numel() != num_edges:
        raise ValueError(f"edge_type has {edge_type.numel()} entries for {num_edges} edges")
    return edge_type


def check_size(layer: str, edges_: Edges, num_src: int, num_dst: int) -> None:
    """A sparse adjacency's shape must be [num destinations, num sources] (as PyG checks)."""
    if edges_.size is not None and edges_.size != (num_src, num_dst):
        raise ValueError(
            f"{layer}: the sparse adjacency is [{edges_.size[1]}, {edges_.size[0]}] "
            f"(destinations, sources), but the inputs have {num_dst} destination and "
            f"{num_src} source nodes")


def with_values(adj, values: torch.Tensor):
    """PyG's attention-weight result for a sparse adjacency: `adj` with one
    row of `values` per stored edge, in the stored order that edges() reads.
    A torch.sparse tensor gives (the same layout with `values` as values,
    its size extended by values' trailing dimensions; a COO one coalesced),
    `values`); a torch_sparse.SparseTensor gives the SparseTensor alone."""
    if _is_sparse_tensor(adj):
        return adj.set_value(values, layout="coo")
    size = tuple(adj.shape[:2]) + tuple(values.shape[1:])
    if adj.layout == torch.sparse_coo:
        result = torch.sparse_coo_tensor(adj._indices(), values, size).coalesce()
    elif adj.layout == torch.sparse_csr:
        result = torch.sparse_csr_tensor(adj.crow_indices(), adj.col_indices(), values, size)
    else:
        result = torch.sparse_csc_tensor(adj.ccol_indices(), adj.row_indices(), values, size)
    return result, values

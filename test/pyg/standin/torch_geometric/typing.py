"""torch_geometric.typing's flags: no torch_sparse with the stand-in."""

WITH_TORCH_SPARSE = False


class SparseTensor:
    """PyG's placeholder for torch_sparse.SparseTensor when the package is
    missing: any use raises."""

    def __init__(self, *args, **kwargs):
        raise ImportError("'SparseTensor' requires 'torch-sparse'")

    @classmethod
    def from_edge_index(cls, *args, **kwargs):
        raise ImportError("'SparseTensor' requires 'torch-sparse'")

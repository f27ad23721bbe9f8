"""torch_geometric.testing: the decorators and the random graph the tests use."""

import os

import torch


def is_full_test() -> bool:
    """PyG runs its slow checks (TorchScript among them) only with FULL_TEST=1."""
    return os.getenv("FULL_TEST", "0") == "1"


def _devices():
    import pytest

    devices = [pytest.param(torch.device("cpu"), id="cpu")]
    if torch.cuda.is_available():
        devices.append(pytest.param(torch.device("cuda:0"), id="cuda:0"))
    return devices


def withCUDA(func):  # noqa: N802 (PyG's name)
    """Parametrizes `device` over the CPU and, when there is one, CUDA device 0."""
    import pytest

    return pytest.mark.parametrize("device", _devices())(func)


def withDevice(func):  # noqa: N802 (PyG's name)
    """PyG's: every available device (here the CPU and CUDA device 0)."""
    return withCUDA(func)


def get_random_edge_index(num_src_nodes: int, num_dst_nodes: int, num_edges: int,
                          dtype=None, device=None, coalesce: bool = False):
    """[2, num_edges] uniformly random sources and destinations."""
    row = torch.randint(num_src_nodes, (num_edges,), dtype=dtype, device=device)
    col = torch.randint(num_dst_nodes, (num_edges,), dtype=dtype, device=device)
    edge_index = torch.stack([row, col], dim=0)
    if coalesce:
        from .utils import coalesce as coalesce_fn

        edge_index = coalesce_fn(edge_index)
    return edge_index

"""The differentiable halo exchange of full-graph training.

Forward: every rank sends the feature rows of its owned nodes that other
ranks need (LocalGraph.send_index, grouped by destination rank) and receives
its halo rows (grouped by owner rank), in one
torch.distributed.all_to_all_single on the exchange's own process group.

Backward: the gradient of the received halo rows travels back the same way
reversed (an all_to_all_single with the split sizes swapped), and each owner
sums the gradients of a row it sent to several ranks into that row's
gradient (index_add). So d loss / d x_owned is the sum of the gradient
through the local layer and of the gradients the other ranks computed for
the copies of these rows they used.

Every rank must call the exchange the same number of times in the same
order, forward and backward (it is a collective): a rank with no owned
nodes or no halo still takes part, with empty tensors.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Optional

import torch
import torch.distributed as dist

__all__ = ["HaloExchange", "HaloStats"]


@dataclasses.dataclass
class HaloStats:
    """What the exchanges of one HaloExchange moved and how long they took
    (forward and backward together). `seconds` is measured only with
    timed=True: the exchange then waits for the device before and after
    each all_to_all, so the time is the communication alone."""
    calls: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    seconds: float = 0.0
    timed: bool = False

    def reset(self) -> None:
        self.calls = self.bytes_sent = self.bytes_received = 0
        self.seconds = 0.0


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _all_to_all(rows: torch.Tensor, send_counts, recv_counts, group, stats: HaloStats):
    """rows [sum(send_counts), F], grouped by destination rank -> the rows
    received, [sum(recv_counts), F], grouped by source rank."""
    rows = rows.contiguous()
    received = rows.new_empty((sum(recv_counts),) + tuple(rows.shape[1:]))
    if stats.timed:
        _sync(rows.device)
        start = time.perf_counter()
    dist.all_to_all_single(received, rows, output_split_sizes=list(recv_counts),
                           input_split_sizes=list(send_counts), group=group)
    if stats.timed:
        _sync(rows.device)
        stats.seconds += time.perf_counter() - start
    stats.calls += 1
    stats.bytes_sent += rows.numel() * rows.element_size()
    stats.bytes_received += received.numel() * received.element_size()
    return received


class _Exchange(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x_owned, exchange):
        ctx.exchange = exchange
        ctx.num_owned = x_owned.size(0)
        ex = exchange
        return _all_to_all(x_owned[ex.send_index], ex.send_counts, ex.recv_counts, ex.group,
                           ex.stats)

    @staticmethod
    def backward(ctx, grad_halo):
        ex = ctx.exchange
        grad_sent = _all_to_all(grad_halo, ex.recv_counts, ex.send_counts, ex.group, ex.stats)
        grad = grad_sent.new_zeros((ctx.num_owned,) + tuple(grad_sent.shape[1:]))
        return grad.index_add_(0, ex.send_index, grad_sent), None


class HaloExchange:
    """exchange(x_owned [num_owned, F]) -> the halo rows [num_halo, F] of
    this rank's LocalGraph, differentiable (see the module docstring).

    `graph` is this rank's LocalGraph (its send_index on the features'
    device); `group` the process group of the exchange, which must hold all
    graph.num_parts ranks with this rank as graph.rank (default: the
    default group; PartitionedGraph gives it a group of its own, so its
    all_to_all never queues behind another collective such as DDP's
    gradient all-reduce). The split sizes are precomputed: one call costs
    one index_select and one all_to_all_single.
    """

    def __init__(self, graph, group=None, timed: bool = False):
        world = dist.get_world_size(group)
        me = dist.get_rank(group)
        if world != graph.num_parts or me != graph.rank:
            raise ValueError(f"the local graph is rank {graph.rank} of {graph.num_parts}, but "
                             f"this process is rank {me} of {world} in the exchange's group")
        self.group = group
        self.send_index = graph.send_index
        self.send_counts = list(graph.send_counts)
        self.recv_counts = list(graph.recv_counts)
        self.num_owned = graph.num_owned
        self.num_halo = graph.num_halo
        self.stats = HaloStats(timed=timed)

    def __call__(self, x_owned: torch.Tensor) -> torch.Tensor:
        if not isinstance(x_owned, torch.Tensor) or x_owned.dim() < 1 or \
                x_owned.size(0) != self.num_owned:
            shape = tuple(x_owned.shape) if isinstance(x_owned, torch.Tensor) else x_owned
            raise ValueError(f"the halo exchange takes the {self.num_owned} owned rows of this "
                             f"rank, got {shape}")
        if self.send_index.device != x_owned.device:
            self.send_index = self.send_index.to(x_owned.device)
        return _Exchange.apply(x_owned, self)

    @property
    def rows_sent(self) -> int:
        return int(sum(self.send_counts))

    def bytes_per_exchange(self, width: int, element_size: int = 4) -> Optional[int]:
        """Bytes this rank sends plus receives in one forward exchange of rows of `width`."""
        return (self.rows_sent + self.num_halo) * width * element_size

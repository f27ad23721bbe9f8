"""Data-parallel training of hector.nn layers with torch.distributed.

    def train(ctx):                                   # ctx: Context of this rank
        model = wrap(MyModel().to(ctx.device), ctx)   # DistributedDataParallel
        ...
    launch(train, nproc=2)     # spawns 2 ranks (gloo on the CPU, NCCL on GPUs),
                               # or, under torchrun, runs train in this rank

hector.nn layers are ordinary torch modules: DistributedDataParallel wraps
them unchanged. Their parameters are torch parameters, their backward is
one autograd Function per layer whose weight gradients DDP's reducer
all-reduces as soon as that layer's backward returns, while the layers
before it are still running their backward. On the GPU nothing inside a
layer's backward waits for the device (hector.nn queues its kernels on
torch's current stream, `synchronize=False`), so the host keeps queueing
the backward kernels while NCCL reduces the buckets already done
(docs/distributed.md lists the host synchronisations that remain, all in
the forward's per-graph preprocessing).

Failure: the process group gets a timeout (`timeout_s`, default
$HECTOR_DIST_TIMEOUT_S or 600 s). A rank that dies mid-step makes the
others' next collective fail (gloo: the peer's connection closes; NCCL:
its watchdog aborts the communicator, with TORCH_NCCL_ASYNC_ERROR_HANDLING
on, which init() turns on unless it is set), and a rank that stops
answering makes them fail after the timeout: an error, not a hang.
launch() in spawn mode ends the other ranks once one has failed and
raises the failed rank's error.
"""

from __future__ import annotations

import datetime
import os
import socket
from typing import NamedTuple, Optional

import torch

__all__ = ["Context", "init", "launch", "wrap", "under_torchrun", "pyg_loader",
           "from_pyg_batch", "TIMEOUT_ENV"]

TIMEOUT_ENV = "HECTOR_DIST_TIMEOUT_S"
_DEFAULT_TIMEOUT_S = 600.0


class Context(NamedTuple):
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str


def under_torchrun() -> bool:
    """This process is one rank of a group launched by torchrun (or any
    launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)."""
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def _timeout(timeout_s) -> datetime.timedelta:
    if timeout_s is None:
        timeout_s = float(os.environ.get(TIMEOUT_ENV, _DEFAULT_TIMEOUT_S))
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    return datetime.timedelta(seconds=float(timeout_s))


def init(backend: Optional[str] = None, timeout_s: Optional[float] = None,
         device: Optional[str] = None) -> Context:
    """Joins the process group described by the environment (RANK,
    WORLD_SIZE, MASTER_ADDR, MASTER_PORT; LOCAL_RANK picks the GPU). The
    backend defaults to NCCL when CUDA is available and `device` is not
    "cpu", else gloo; the device is cuda:LOCAL_RANK (made current) or the CPU."""
    import torch.distributed as dist

    if not under_torchrun():
        raise RuntimeError("hector.distributed.init needs RANK, WORLD_SIZE, MASTER_ADDR and "
                           "MASTER_PORT in the environment: run under torchrun, or use "
                           "launch(fn, nproc=N), which sets them")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device='cuda' but torch sees no CUDA GPU")
        if local >= torch.cuda.device_count():
            raise RuntimeError(f"LOCAL_RANK {local} but this host has "
                               f"{torch.cuda.device_count()} GPU(s): start at most one rank "
                               "per GPU")
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    if backend is None:
        backend = "nccl" if dev.type == "cuda" else "gloo"
    # A rank whose NCCL collective times out (a peer died or hangs) aborts
    # instead of waiting forever. torch 2.2 renamed the variable and warns
    # about the old name, so only the one this torch reads is set.
    renamed = tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 2)
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING" if renamed
                          else "NCCL_ASYNC_ERROR_HANDLING", "1")
    if not dist.is_initialized():
        dist.init_process_group(backend, rank=rank, world_size=world,
                                timeout=_timeout(timeout_s))
    return Context(rank, world, local, dev, backend)


def wrap(model: torch.nn.Module, ctx: Context, **ddp_options):
    """`model` (on ctx.device, its parameters initialised: call a lazy
    HGTConv once first) inside DistributedDataParallel for this rank."""
    from torch.nn.parallel import DistributedDataParallel

    lazy = [n for n, p in model.named_parameters()
            if isinstance(p, torch.nn.parameter.UninitializedParameter)]
    if lazy:
        raise ValueError(f"DistributedDataParallel needs initialised parameters, but {lazy[0]} "
                         "is lazy (in_channels=-1): give the widths, or run one forward "
                         "before wrapping")
    if ctx.device.type == "cuda":
        ddp_options.setdefault("device_ids", [ctx.device.index])
        ddp_options.setdefault("output_device", ctx.device.index)
    return DistributedDataParallel(model, **ddp_options)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank, fn, args, nproc, port, backend, device, timeout_s, results):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                      LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    import torch.distributed as dist

    ctx = init(backend, timeout_s, device)
    try:
        value = fn(ctx, *args)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    results.put((rank, value))


def launch(fn, nproc: Optional[int] = None, args: tuple = (), backend: Optional[str] = None,
           device: Optional[str] = None, timeout_s: Optional[float] = None):
    """Runs fn(ctx, *args) on every rank and returns rank 0's result.
    Under torchrun this process is one rank: fn runs here (nproc, if
    given, must equal WORLD_SIZE). Otherwise `nproc` processes are spawned
    on this host (torch.multiprocessing, start method spawn: fn and args
    must be picklable, fn a module-level function); if one fails, the others
    are ended and its error is raised here."""
    if under_torchrun():
        world = int(os.environ["WORLD_SIZE"])
        if nproc is not None and nproc != world:
            raise ValueError(f"nproc={nproc}, but torchrun started {world} ranks")
        import torch.distributed as dist

        ctx = init(backend, timeout_s, device)
        try:
            return fn(ctx, *args)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
    if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"nproc must be a positive integer, got {nproc!r}")
    if (device == "cuda" or (device is None and torch.cuda.is_available())) and \
            nproc > torch.cuda.device_count():
        raise ValueError(f"nproc={nproc}, but this host has {torch.cuda.device_count()} "
                         "GPU(s): one rank per GPU (or device='cpu')")
    import torch.multiprocessing as mp

    results = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(_rank_main, args=(fn, args, nproc, _free_port(), backend, device,
                                         timeout_s, results),
                       nprocs=nproc, join=True, start_method="spawn")
    values = {}
    while not results.empty():
        rank, value = results.get()
        values[rank] = value
    return values.get(0)


# ---- PyG's NeighborLoader, where torch_geometric is installed --------------------

def pyg_loader(data, split, epoch: int, fanouts, batch_size: int, **loader_options):
    """torch_geometric's NeighborLoader over this rank's seeds of `epoch`
    (split: a hector.distributed.sampler.SeedSplit), `fanouts` per hop, in
    the split's order (the loader does not shuffle again). `data` is a
    torch_geometric Data with edge_index and, for typed layers, edge_type
    (an edge attribute: the loader slices it along with the edges).
    Batches give the seeds first (batch.batch_size of them); from_pyg_batch
    turns one into a Subgraph."""
    try:
        from torch_geometric.loader import NeighborLoader
    except ImportError as err:
        raise ImportError("pyg_loader needs torch_geometric; without it use "
                          "hector.distributed.sampler.NeighborSampler") from err
    return NeighborLoader(data, num_neighbors=list(fanouts), input_nodes=split.share(epoch),
                          batch_size=batch_size, shuffle=False, **loader_options)


def from_pyg_batch(batch):
    """A NeighborLoader batch as a hector.distributed.sampler.Subgraph."""
    from .sampler import Subgraph

    e_id = getattr(batch, "e_id", None)
    if e_id is None:
        e_id = torch.full((batch.edge_index.size(1),), -1, dtype=torch.int64)
    return Subgraph(batch.n_id, batch.edge_index, getattr(batch, "edge_type", None), e_id,
                    int(batch.batch_size))

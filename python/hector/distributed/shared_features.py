"""One feature table per host, shared by the ranks of that host.

    x = shared_table(lambda: load_features(), name="feats")   # every rank calls it
    x_gpu_view = pinned_for(x, device)                         # GPU ranks: zero-copy
    rows = x_gpu_view[node_ids.to(device)]                     # CUDA tensor

Data-parallel ranks all read the same node features. Loading them once
per rank multiplies host memory by the ranks per host (8 copies of mag's
2M × 256 float32 table are 16 GiB). shared_table() builds the table once
per host: the host's first rank (LOCAL_RANK 0) calls `build`, writes the
result into a file of a memory file system (/dev/shm, or
$HECTOR_SHM_DIR), and every rank of the host maps that file with
MAP_SHARED (torch.from_file(shared=True)): all ranks see the same
physical pages, one copy per host. The file is unlinked once every rank
has mapped it, so nothing is left behind when the processes exit; the
pages are freed when the last rank unmaps them.

On the GPU path each rank registers the shared mapping as pinned, mapped
memory for its own device (pinned_for: hector.unified, which page-locks
in place, no copy), and gathers its mini-batches' rows with the runtime's
zero-copy gather (docs/runtime-unified.md): the table never goes through
a CPU gather or a per-rank copy. Pinning costs ~0.6 s per GiB per rank
(BRIEF.md §6), once.

What is checked where: test_distributed_data_parallel.py checks on the CPU
that the ranks of a host map one copy (a write by one rank is seen by the
others, and only the first rank calls `build`); the pinned registration of
one shared mapping by several GPU ranks runs in test/gpu/test_distributed_gpu.py
(its zero-copy gather equals indexing the table); its speed against
per-rank device copies is not measured yet (bench/distributed.py
--features host|device measures both on the GPU machines).
"""

from __future__ import annotations

import json
import os
import uuid

import torch

__all__ = ["shared_table", "pinned_for", "local_rank", "shm_dir"]

SHM_ENV = "HECTOR_SHM_DIR"


def shm_dir() -> str:
    """Where shared tables live while the ranks map them: $HECTOR_SHM_DIR,
    else /dev/shm (memory, not disk), else the temporary directory."""
    given = os.environ.get(SHM_ENV)
    if given:
        return given
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    import tempfile
    return tempfile.gettempdir()


def local_rank() -> int:
    """This process's rank among those of its host: torchrun's LOCAL_RANK
    (launch() sets it too); 0 without one."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def shared_table(build, name: str = "features", group=None) -> torch.Tensor:
    """The tensor `build()` returns, built by the host's first rank only
    and shared by every rank of the host (see the module doc). Collective:
    every rank of the process group (`group`, default the world) calls it.
    Without an initialised process group it returns build() itself."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return build()
    token = [uuid.uuid4().hex if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(token, src=0, group=group)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
    path = os.path.join(shm_dir(), f"hector-{safe}-{token[0]}")
    leader = local_rank() == 0
    error = None
    if leader:
        try:
            table = build()
            if not isinstance(table, torch.Tensor) or table.layout != torch.strided:
                raise TypeError(f"shared_table: build() must return a dense torch.Tensor, got "
                                f"{type(table).__name__}")
            table = table.detach().cpu().contiguous()
            shared = torch.from_file(path, shared=True, size=table.numel(), dtype=table.dtype)
            shared.copy_(table.reshape(-1))
            with open(path + ".json", "w", encoding="utf-8") as f:
                json.dump({"shape": list(table.shape), "dtype": str(table.dtype)}, f)
            del table
        except Exception as err:  # tell the others instead of leaving them waiting
            error = f"{type(err).__name__}: {err}"
    # Every rank learns whether some leader failed (one small all-gather).
    errors = [None] * dist.get_world_size(group)
    dist.all_gather_object(errors, error, group=group)
    failed = [e for e in errors if e]
    if failed:
        for p in (path, path + ".json"):
            if leader and os.path.exists(p):
                os.unlink(p)
        raise RuntimeError(f"shared_table({name!r}): building the table failed on a host's "
                           f"first rank: {failed[0]}")
    try:
        with open(path + ".json", encoding="utf-8") as f:
            meta = json.load(f)
        dtype = getattr(torch, meta["dtype"].replace("torch.", ""))
        shape = tuple(meta["shape"])
        numel = 1
        for s in shape:
            numel *= s
        shared = torch.from_file(path, shared=True, size=numel, dtype=dtype).view(shape)
        error = None
    except Exception as err:
        shared, error = None, f"{type(err).__name__}: {err}"
    errors = [None] * dist.get_world_size(group)
    dist.all_gather_object(errors, error, group=group)  # every rank has mapped it (or failed)
    if leader:
        for p in (path, path + ".json"):
            if os.path.exists(p):
                os.unlink(p)
    failed = [e for e in errors if e]
    if failed:
        raise RuntimeError(f"shared_table({name!r}): mapping {path} failed on a rank: "
                           f"{failed[0]} (are the ranks of one host sharing {shm_dir()}? "
                           f"set {SHM_ENV})")
    return shared


def pinned_for(table: torch.Tensor, device):
    """`table` (a host tensor, e.g. from shared_table) registered as pinned,
    mapped memory for CUDA `device`, in place (hector.unified): indexing the
    result with CUDA ids gathers the rows zero-copy into a CUDA tensor.
    Each rank registers the host's one copy for its own device."""
    from ..unified import unified

    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"pinned_for maps host memory for a CUDA device, got {device}; on "
                         "the CPU index the table itself")
    return unified(table, device=device)

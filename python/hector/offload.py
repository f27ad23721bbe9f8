"""Saved activations of autograd kept in the runtime's tensor cache.

    from hector.offload import offload
    from hector.tensor_cache import TensorCache
    cache = TensorCache(host_capacity=16 << 30, directory="/scratch")
    with offload(cache, tier="disk"):
        loss = model(graph, x).sum()   # tensors saved for backward go to the cache
    loss.backward()                    # ... and come back when the backward reads them

Every tensor autograd saves inside the block (Hector's layers and plain
torch ops alike) of at least `min_bytes` is copied into the cache and
dropped from its device; the backward reads it back onto that device. A
tensor saved twice (the same tensor, unchanged) is stored once. A
value leaves the cache when autograd frees the graph that saved it. A tensor
the cache cannot take (its host tier is full) simply stays where it is.

This is the synchronous, run-time form (docs/offload.md): copies to and
from the GPU run on the current stream and wait for it. Libraries built
with `hectorc --offload` place their own evictions and prefetches, and copy
device memory straight into the cache's (pinned) host memory.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
import weakref
from typing import Optional

import torch

from . import _runtime
from .tensor_cache import TensorCache


# Keys of the values offload puts: unique in the process (several contexts
# may share a cache, with graphs alive at once), in the upper half of the key
# space, which direct users of a TensorCache should leave to it.
_keys = itertools.count(1 << 63)
_keys_lock = threading.Lock()


def reserve_keys(count: int) -> int:
    """The first of `count` consecutive keys no other user of this module
    gets (the compiled entries of one training step use key base + slot)."""
    with _keys_lock:
        base = next(_keys)
        for _ in range(count - 1):
            next(_keys)
    return base


_default_cache = None


def default_cache() -> TensorCache:
    """The process's cache for compiled offload plans that are given none:
    host tier up to half the machine's memory ($HECTOR_OFFLOAD_HOST_BYTES),
    pinned, disk tier in $HECTOR_OFFLOAD_DIR (else the temporary directory).
    With $HECTOR_OFFLOAD_POOL_BYTES, a host pool of that many bytes starts
    being pinned in the background when it is made (reserve_pool)."""
    global _default_cache
    with _keys_lock:
        if _default_cache is None or _default_cache.closed:
            host = os.environ.get("HECTOR_OFFLOAD_HOST_BYTES")
            capacity = int(host) if host else (
                os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
            directory = os.environ.get("HECTOR_OFFLOAD_DIR") or tempfile.gettempdir()
            _default_cache = TensorCache(host_capacity=capacity, directory=directory,
                                         pinned=True)
            pool = os.environ.get("HECTOR_OFFLOAD_POOL_BYTES")
            if pool:
                _default_cache.reserve_pool(int(pool))
        return _default_cache


def reserve_pool(nbytes: int, cache: Optional[TensorCache] = None) -> TensorCache:
    """Starts pinning a host pool of `nbytes` for `cache` (default:
    default_cache()) in the background and returns the cache at once: call
    it before the first training step (after CUDA is initialised, so that
    the driver is there to pin), so that the step's evictions find pinned
    host blocks instead of pinning them (~0.6 s per GiB). The cache's
    pool_stats() say how far it is. A cache has one pool; reserving one it
    has is an error."""
    cache = cache if cache is not None else default_cache()
    cache.reserve_pool(nbytes)
    return cache


class _Saved:
    """A packed tensor: its key in the cache and how to rebuild it. The cache
    entry is released when autograd drops the last reference to this."""

    __slots__ = ("key", "nbytes", "shape", "dtype", "device", "__weakref__")

    def __init__(self, cache: TensorCache, key: int, tensor: torch.Tensor):
        self.key = key
        self.nbytes = tensor.numel() * tensor.element_size()
        self.shape, self.dtype, self.device = tensor.shape, tensor.dtype, tensor.device
        weakref.finalize(self, _release, cache, key)


def _release(cache: TensorCache, key: int) -> None:
    if not cache.closed:  # a closed cache has freed everything
        cache.release(key)


class offload:
    """Context manager: tensors saved for backward inside it go to `cache`."""

    def __init__(self, cache: TensorCache, tier: str = "host", min_bytes: int = 1 << 16):
        self.cache, self.tier, self.min_bytes = cache, tier, min_bytes
        # id(saved tensor) -> (weak reference to it, its _Saved, its version
        # then). The tensor object itself identifies a value: the addresses of
        # a storage this frees are reused by the next tensors.
        self._live = {}
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _pack(self, tensor: torch.Tensor):
        nbytes = tensor.numel() * tensor.element_size()
        if nbytes < self.min_bytes or tensor.is_sparse or tensor.layout != torch.strided:
            return tensor
        seen = self._live.get(id(tensor))
        if seen is not None and seen[0]() is tensor and seen[2] == tensor._version:
            return seen[1]
        host = tensor.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy()
        key = reserve_keys(1)
        try:
            self.cache.put(key, host, tier=self.tier)
        except _runtime.HectorRuntimeError as err:
            if err.status == _runtime.OUT_OF_MEMORY:
                return tensor  # the host tier is full: keep it where it is
            raise
        saved = _Saved(self.cache, key, tensor)
        live, ident = self._live, id(tensor)

        def forget(ref):
            if live.get(ident, (None,))[0] is ref:
                del live[ident]

        self._live[ident] = (weakref.ref(tensor, forget), saved, tensor._version)
        return saved

    def _unpack(self, packed):
        if not isinstance(packed, _Saved):
            return packed
        data = torch.from_numpy(self.cache.get(packed.key, nbytes=packed.nbytes))
        return data.view(packed.dtype).reshape(packed.shape).to(packed.device)

    def __enter__(self) -> "offload":
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)


def plan(model: torch.nn.Module, capacity_bytes: Optional[int] = None, *,
         tiers=("host", "disk", "recompute"), host_capacity_bytes: Optional[int] = None,
         cache: Optional[TensorCache] = None, rates=None):
    """The offload planner for `model`'s hector.nn layers, stacked in PyTorch
    (hector.planned_offload, docs/offload.md): use `with` around training
    steps; the first records them, the next ones follow the plan, made as
    the compiler's offload-scheduling pass makes it, from the layers'
    manifests and graph sizes. `capacity_bytes`: device memory for the
    layers' own values (None: only moves hidden in idle time); `tiers`: the
    moves allowed (host, disk, recompute); `host_capacity_bytes`: host memory
    for moved values (None: no limit); `cache`: default default_cache();
    `rates`: a hector.step_plan.Rates."""
    from .planned_offload import PlannedOffload

    return PlannedOffload(model, capacity_bytes, tiers=tiers,
                          host_capacity_bytes=host_capacity_bytes, cache=cache, rates=rates)

"""The runtime's tensor cache (C ABI: runtime/include/hector/tensor_cache.h).

    from hector.tensor_cache import TensorCache
    with TensorCache(host_capacity=1 << 30, directory="/scratch") as cache:
        cache.put(7, array, tier="disk")     # returns before the write completes
        out = cache.get(7, like=array)       # bit-identical copy
        cache.release(7)

    # host memory pinned in the background, before the first step
    cache = TensorCache(host_capacity=8 << 30, pinned=True, reserve_pool=True)
    cache.pool_stats()                       # bytes_ready, bytes_pinned, pin_ns, ...
    # several values read from disk at once
    a, b = cache.get_many([1, 2], likes=[x, y])

Values are numpy arrays (any dtype, C-contiguous) or bytes-like objects.
Failures raise hector._runtime.HectorRuntimeError with the runtime's message
(status OUT_OF_MEMORY: the host tier is full and nothing was stored; IO: a
read failed or did not match its checksum). docs/offload.md describes the
tiers.

offload_bind / offload_unbind / bound, offload_release and offload_stats are
the caller's side of compiled offload (runtime/include/hector/offload.h):
the evicts and prefetches that compiled training entry points make.
"""

from __future__ import annotations

import contextlib
import ctypes
import weakref
from typing import Optional

import numpy as np

from . import _runtime

TIERS = {"host": 0, "disk": 1}
CHECKSUM, NO_DIRECT_IO, PINNED, RESERVE_POOL = 1, 2, 4, 8  # hector_tensor_cache_config.flags


class _Config(ctypes.Structure):
    _fields_ = [
        ("directory", ctypes.c_char_p),
        ("host_capacity", ctypes.c_uint64),
        ("disk_capacity", ctypes.c_uint64),
        ("chunk_bytes", ctypes.c_uint64),
        ("io_threads", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("fail_write", ctypes.c_int64),
    ]


class _Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "values", "host_bytes", "disk_bytes", "bytes_written", "bytes_read", "deduplicated",
        "handed_over", "writes_failed", "checksum_failures")] + [
        ("direct_io", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


class _PoolStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "bytes", "bytes_ready", "bytes_pinned", "pin_ns", "puts_pooled", "puts_unready",
        "puts_no_room")] + [("making", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


class _OffloadStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "evicted_host_values", "evicted_host_bytes", "evicted_disk_values", "evicted_disk_bytes",
        "disk_to_host", "prefetched_values", "prefetched_bytes", "fallbacks", "fallback_values",
        "fallback_bytes")]


_declared = set()


def _lib() -> ctypes.CDLL:
    lib = _runtime.load()
    if id(lib) not in _declared:
        c_int, c_void_p, u64 = ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64
        for name, argtypes in {
            "hector_tensor_cache_create": [ctypes.POINTER(_Config), ctypes.POINTER(c_void_p)],
            "hector_tensor_cache_destroy": [c_void_p],
            "hector_tensor_cache_put": [c_void_p, u64, c_void_p, u64, c_int],
            "hector_tensor_cache_get": [c_void_p, u64, c_void_p, u64],
            "hector_tensor_cache_release": [c_void_p, u64],
            "hector_tensor_cache_where": [c_void_p, u64, ctypes.POINTER(c_int)],
            "hector_tensor_cache_flush": [c_void_p],
            "hector_tensor_cache_stats_get": [c_void_p, ctypes.POINTER(_Stats)],
            "hector_tensor_cache_get_many": [c_void_p, u64, ctypes.POINTER(u64),
                                             ctypes.POINTER(c_void_p), ctypes.POINTER(u64),
                                             ctypes.POINTER(c_int)],
            "hector_tensor_cache_get_async": [c_void_p, u64, c_void_p, u64,
                                              ctypes.POINTER(c_void_p)],
            "hector_tensor_cache_wait": [c_void_p],
            "hector_tensor_cache_reserve_pool": [c_void_p, u64, u64],
            "hector_tensor_cache_pool_wait": [c_void_p],
            "hector_tensor_cache_pool_stats_get": [c_void_p, ctypes.POINTER(_PoolStats)],
            "hector_tensor_cache_test_pin_delay": [c_void_p, u64],
            "hector_tensor_cache_test_fail_read": [c_void_p, u64],
            "hector_offload_bind": [c_void_p, u64],
            "hector_offload_release": [c_void_p, u64],
            "hector_offload_stats_get": [ctypes.POINTER(_OffloadStats)],
        }.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = c_int, argtypes
        # What generated code calls; failures go to the thread's launch status.
        i64 = ctypes.c_int64
        for name, argtypes in {
            "hector_offload_unbind": [],
            "hector_offload_evict": [i64, ctypes.c_int32, c_void_p, i64],
            "hector_offload_prefetch": [i64, c_void_p, i64],
            "hector_offload_wait": [i64],
        }.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = None, argtypes
        _declared.add(id(lib))
    return lib


def _buffer(value) -> np.ndarray:
    """The bytes of `value` as a contiguous uint8 view (no copy when it is contiguous)."""
    array = np.ascontiguousarray(np.frombuffer(value, dtype=np.uint8) if isinstance(
        value, (bytes, bytearray, memoryview)) else value)
    return array.reshape(-1).view(np.uint8)


class TensorCache:
    """A host tier and, with `directory`, a disk tier (one unlinked file there).
    With `pinned`, host memory is page-locked where a CUDA driver is loaded, so
    that copies from and to the GPU (compiled offload plans) run at full
    speed; pinning is paid once per block, which the cache keeps for later
    values. With `reserve_pool`, the whole host capacity is made ready
    (pinned, or its pages faulted in) by a background thread from creation
    on (reserve_pool() starts it later); puts that come before their block
    is ready use pageable memory rather than wait."""

    def __init__(self, host_capacity: int, directory: Optional[str] = None, *,
                 disk_capacity: int = 0, chunk_bytes: int = 0, io_threads: int = 0,
                 checksum: bool = False, direct_io: bool = True, pinned: bool = False,
                 reserve_pool: bool = False, fail_write: int = 0):
        self._handle = None
        self._pending = weakref.WeakSet()  # get_async reads not yet waited for
        self.directory = directory  # the disk tier's, or None: no disk tier
        self._lib = _lib()
        config = _Config(directory.encode() if directory else None, host_capacity, disk_capacity,
                         chunk_bytes, io_threads,
                         (CHECKSUM if checksum else 0) | (0 if direct_io else NO_DIRECT_IO)
                         | (PINNED if pinned else 0) | (RESERVE_POOL if reserve_pool else 0),
                         fail_write)
        handle = ctypes.c_void_p()
        _runtime._check(self._lib, self._lib.hector_tensor_cache_create(ctypes.byref(config),
                                                                        ctypes.byref(handle)))
        self._handle = handle

    @property
    def closed(self) -> bool:
        """Whether close() has freed the cache and everything in it."""
        return self._handle is None

    def _h(self) -> ctypes.c_void_p:
        if self.closed:
            raise ValueError("the tensor cache is closed")
        return self._handle

    def put(self, key: int, value, tier: str = "host") -> None:
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r} (known: {', '.join(TIERS)})")
        data = _buffer(value)
        _runtime._check(self._lib, self._lib.hector_tensor_cache_put(
            self._h(), key, data.ctypes.data, data.nbytes, TIERS[tier]))

    def get(self, key: int, like=None, *, nbytes: Optional[int] = None,
            out: Optional[np.ndarray] = None) -> np.ndarray:
        """The value of `key`: into `out` (a C-contiguous array of its size), else
        into a new array shaped and typed like `like`, else of `nbytes` bytes."""
        if out is None:
            out = np.empty_like(like) if like is not None else np.empty(nbytes, dtype=np.uint8)
        if not out.flags["C_CONTIGUOUS"]:
            raise ValueError("get: out must be C-contiguous")
        _runtime._check(self._lib, self._lib.hector_tensor_cache_get(
            self._h(), key, out.ctypes.data, out.nbytes))
        return out

    def get_many(self, keys, likes=None, *, nbytes=None, outs=None) -> list:
        """The values of `keys`, read together: the disk's chunks of all of them
        run at once on the I/O threads. Into `outs`, else new arrays like
        `likes`, else of `nbytes` bytes each. A failed read raises
        HectorRuntimeError naming its key, with `statuses` (one per key) and
        `key` (the first that failed) on the error; the values stay stored and
        the other reads are complete."""
        keys = [int(k) for k in keys]
        if outs is None:
            if likes is not None:
                outs = [np.empty_like(like) for like in likes]
            elif nbytes is not None:
                outs = [np.empty(n, dtype=np.uint8) for n in nbytes]
            else:
                raise ValueError("get_many: give likes, nbytes or outs")
        outs = list(outs)
        if len(outs) != len(keys):
            raise ValueError(f"get_many: {len(keys)} keys but {len(outs)} outputs")
        for out in outs:
            if not out.flags["C_CONTIGUOUS"]:
                raise ValueError("get_many: outputs must be C-contiguous")
        n = len(keys)
        c_keys = (ctypes.c_uint64 * n)(*keys)
        c_outs = (ctypes.c_void_p * n)(*[out.ctypes.data for out in outs])
        c_bytes = (ctypes.c_uint64 * n)(*[out.nbytes for out in outs])
        statuses = (ctypes.c_int * n)()
        status = self._lib.hector_tensor_cache_get_many(self._h(), n, c_keys, c_outs, c_bytes,
                                                        statuses)
        if status != _runtime.OK:
            try:
                _runtime._check(self._lib, status)
            except _runtime.HectorRuntimeError as err:
                err.statuses = list(statuses)
                err.key = next(k for k, s in zip(keys, statuses) if s != _runtime.OK)
                raise
        return outs

    def get_async(self, key: int, like=None, *, nbytes: Optional[int] = None,
                  out: Optional[np.ndarray] = None) -> "PendingGet":
        """Starts reading `key` (into `out`, else a new array like `like`, else
        of `nbytes` bytes) and returns; PendingGet.wait() gives the array.
        Reads started one after another run together."""
        if out is None:
            out = np.empty_like(like) if like is not None else np.empty(nbytes, dtype=np.uint8)
        if not out.flags["C_CONTIGUOUS"]:
            raise ValueError("get_async: out must be C-contiguous")
        handle = ctypes.c_void_p()
        _runtime._check(self._lib, self._lib.hector_tensor_cache_get_async(
            self._h(), key, out.ctypes.data, out.nbytes, ctypes.byref(handle)))
        pending = PendingGet(self, handle, out)
        self._pending.add(pending)
        return pending

    def reserve_pool(self, nbytes: int = 0, chunk_bytes: int = 0) -> None:
        """Starts making the host pool (`nbytes`, 0: the host capacity) in the
        background, chunk by chunk (`chunk_bytes`, 0: 256 MiB); returns at once."""
        _runtime._check(self._lib, self._lib.hector_tensor_cache_reserve_pool(
            self._h(), nbytes, chunk_bytes))

    def pool_wait(self) -> None:
        """Waits until the host pool is made."""
        _runtime._check(self._lib, self._lib.hector_tensor_cache_pool_wait(self._h()))

    def pool_stats(self) -> dict:
        """The host pool: its bytes, those made so far and pinned, the time
        spent making them (pin_ns), puts served by it, puts that came before
        their block was ready or found no room (both took pageable memory),
        and whether its thread is at work (making)."""
        s = _PoolStats()
        _runtime._check(self._lib, self._lib.hector_tensor_cache_pool_stats_get(
            self._h(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in _PoolStats._fields_ if name != "reserved"}

    def _test_pin_delay(self, microseconds: int) -> None:
        """For tests: each chunk of a pool reserved later takes this much longer."""
        _runtime._check(self._lib, self._lib.hector_tensor_cache_test_pin_delay(
            self._h(), microseconds))

    def _test_fail_read(self, key: int) -> None:
        """For tests: the next read of `key` from the disk tier fails (EIO)."""
        _runtime._check(self._lib, self._lib.hector_tensor_cache_test_fail_read(self._h(), key))

    def release(self, key: int) -> None:
        _runtime._check(self._lib, self._lib.hector_tensor_cache_release(self._h(), key))

    def where(self, key: int) -> str:
        tier = ctypes.c_int()
        _runtime._check(self._lib, self._lib.hector_tensor_cache_where(
            self._h(), key, ctypes.byref(tier)))
        return "disk" if tier.value == TIERS["disk"] else "host"

    def flush(self) -> None:
        _runtime._check(self._lib, self._lib.hector_tensor_cache_flush(self._h()))

    def stats(self) -> dict:
        s = _Stats()
        _runtime._check(self._lib, self._lib.hector_tensor_cache_stats_get(self._h(),
                                                                           ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in _Stats._fields_ if name != "reserved"}

    def close(self) -> None:
        if self._handle is not None:
            for pending in list(self._pending):  # a read in flight must end first
                pending._finish()
            self._lib.hector_tensor_cache_destroy(self._handle)
            self._handle = None

    def __enter__(self) -> "TensorCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()


class PendingGet:
    """A read that TensorCache.get_async started; wait() completes it."""

    def __init__(self, cache: TensorCache, handle: ctypes.c_void_p, out: np.ndarray):
        self._cache, self._handle, self.out = cache, handle, out
        self._status = None

    def _finish(self) -> int:
        if self._status is None:
            lib = self._cache._lib
            self._status = lib.hector_tensor_cache_wait(self._handle)
            self._message = lib.hector_last_error().decode(errors="replace")
            self._handle = None
            self._cache._pending.discard(self)
        return self._status

    def wait(self) -> np.ndarray:
        """The value, once read; raises HectorRuntimeError if the read failed
        (the value stays stored)."""
        if self._finish() != _runtime.OK:
            name = self._cache._lib.hector_status_name(self._status).decode()
            raise _runtime.HectorRuntimeError(self._status, f"{self._message} [{name}]")
        return self.out

    def __del__(self):
        if self._status is None and self._handle is not None:
            self._finish()


# Compiled offload (runtime/include/hector/offload.h): the caller's side of
# the evicts and prefetches that compiled training entry points make. The
# binding is per thread; failures inside an entry call are in its launch
# status (hector_launch_status), not raised here.

def offload_bind(cache: TensorCache, key_base: int) -> None:
    """This thread's entry calls evict to and prefetch from `cache`, under
    keys key_base + slot."""
    lib = _lib()
    _runtime._check(lib, lib.hector_offload_bind(cache._h(), key_base))


def offload_unbind() -> None:
    _lib().hector_offload_unbind()


def offload_release(cache: TensorCache, key: int) -> None:
    """Drops one reference to `key`, from the runtime's fallback or the cache."""
    lib = _lib()
    _runtime._check(lib, lib.hector_offload_release(cache._h(), key))


def offload_stats() -> dict:
    """Process-wide counts: evictions per tier, prefetches, the fallback."""
    lib = _lib()
    s = _OffloadStats()
    _runtime._check(lib, lib.hector_offload_stats_get(ctypes.byref(s)))
    return {name: getattr(s, name) for name, _ in _OffloadStats._fields_}


@contextlib.contextmanager
def bound(cache: TensorCache, key_base: int):
    """offload_bind for the block, offload_unbind after it."""
    offload_bind(cache, key_base)
    try:
        yield cache
    finally:
        offload_unbind()

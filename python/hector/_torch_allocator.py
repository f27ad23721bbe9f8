"""Hector's temporary device buffers from PyTorch's caching allocator.

The runtime keeps its temporaries in a memory pool of its own unless told
otherwise (``hector_launch_set_allocator``, runtime/include/hector/launch.h).
In a PyTorch process that pool would hold memory the caching allocator
cannot see: torch would run out of memory next to Hector's freed blocks, and
``torch.cuda.max_memory_allocated`` would not count them. So the first CUDA
library a process loads routes the runtime's allocations to
``torch.cuda.caching_allocator_alloc`` on the current stream, where the
entry points run. ``HECTOR_TORCH_ALLOCATOR=0`` keeps the runtime's pool.
"""

from __future__ import annotations

import ctypes
import os

ENV_VAR = "HECTOR_TORCH_ALLOCATOR"

_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                          ctypes.c_void_p, ctypes.c_void_p)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                         ctypes.c_void_p)


def _alloc(size, device, stream, context):
    import torch
    try:
        return torch.cuda.caching_allocator_alloc(int(size), device)
    except RuntimeError:  # out of memory: the runtime reports it
        return None


def _free(ptr, device, stream, context):
    import torch
    torch.cuda.caching_allocator_delete(ptr)


# Kept alive for as long as the runtime may call them.
_callbacks = (_ALLOC(_alloc), _FREE(_free))
_installed = set()


def install(runtime: ctypes.CDLL) -> bool:
    """Routes `runtime`'s temporaries to PyTorch's caching allocator, once
    per runtime; False where it keeps its own pool (an older runtime, or
    HECTOR_TORCH_ALLOCATOR=0)."""
    if os.environ.get(ENV_VAR, "1") == "0":
        return False
    setter = getattr(runtime, "hector_launch_set_allocator", None)
    if setter is None:
        return False
    key = ctypes.cast(setter, ctypes.c_void_p).value
    if key in _installed:
        return True
    setter.restype = ctypes.c_int
    setter.argtypes = [_ALLOC, _FREE, ctypes.c_void_p]
    if setter(_callbacks[0], _callbacks[1], None) != 0:
        return False
    _installed.add(key)
    return True

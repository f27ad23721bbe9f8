"""hgraph.dropout's mask in NumPy, written from its specification (the
op's description in docs/dialects/HGraphDialect.md), not from the
compiler: element (n, j) of the caller's edge n and column j of a value of
width W is kept iff fmix(fmix((n·W + j) ^ k1) + k2) >> 8 >= ceil(p·2^24),
with k1, k2 derived from the seed. Shared by the interpreter
(hgraph_interpreter.py) and the dropout tests."""

from __future__ import annotations

import math

import numpy as np

_M32 = np.uint64(0xFFFFFFFF)


def _u(value: int) -> np.uint64:
    return np.uint64(value)


def fmix(x):
    """MurmurHash3's 32-bit finalizer on uint64 arrays holding 32-bit values
    (products of two 32-bit values fit in 64 bits; reduced modulo 2^32)."""
    x = x ^ (x >> _u(16))
    x = (x * _u(0x85EBCA6B)) & _M32
    x = x ^ (x >> _u(13))
    x = (x * _u(0xC2B2AE35)) & _M32
    return x ^ (x >> _u(16))


def keep_mask(seed: int, num_edges: int, width: int, p: float) -> np.ndarray:
    """[num_edges, width] bool: element (n, j) of the caller's edge n is kept."""
    s = int(seed) % 2**64  # the int64 seed's two's-complement bits
    lo, hi = _u(s & 0xFFFFFFFF), _u(s >> 32)
    k1 = fmix(lo ^ _u(0x243F6A88))
    k2 = fmix(hi ^ k1 ^ _u(0x85A308D3))
    n = np.arange(num_edges, dtype=np.uint64)[:, None]
    j = np.arange(width, dtype=np.uint64)[None, :]
    c = (n * _u(width) + j) & _M32
    r = fmix((fmix(c ^ k1) + k2) & _M32)
    return (r >> _u(8)) >= _u(math.ceil(p * 2**24))


def apply(values: np.ndarray, mask: np.ndarray, p: float) -> np.ndarray:
    """values [E, W] with the mask applied and the kept ones multiplied by
    1/(1-p) rounded to the values' dtype (zeros for p = 1)."""
    if p >= 1:
        return np.zeros_like(values)
    scale = values.dtype.type(1.0 / (1.0 - p))
    return np.where(mask, values * scale, values.dtype.type(0))

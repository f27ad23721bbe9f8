"""Content fingerprints of integer tensors, reduced on their own device.

Used wherever a cache must never serve a result for tensors whose values
changed, however they changed (in place through .numpy() or .data, a
torch.from_numpy buffer refilled: none of those bumps the version counter):
hector.nn's graph cache and the typed-endpoint check of compiled entries.
"""

from __future__ import annotations

import threading

import torch

__all__ = ["fingerprint", "fingerprints"]

# Content fingerprints of index tensors. Element i of chunk c (of _CHUNK
# elements) is weighed by _weights[i] (odd, pseudo-random, fixed), each
# chunk's weighted sum is reduced on the tensor's device, and the host
# combines the chunk sums with per-chunk odd multipliers, all modulo 2^64:
#
#     h = sum_c m_c * sum_i x[c * _CHUNK + i] * w_i      (mod 2^64)
#
# One multiply and one sum per element, temporaries of _CHUNK elements, and
# one small device-to-host copy for all the tensors of a call. The position
# weights make every change of a value, of an order or of a row visible;
# the sum is linear, so two graphs collide only when their difference is
# orthogonal to the weights modulo 2^64 (about 2^-64 for a change that is
# not built against these fixed weights).
_CHUNK = 1 << 20
_MASK64 = (1 << 64) - 1
_weights: dict = {}  # device -> int64 [_CHUNK]
_weights_lock = threading.Lock()


def _position_weights(device) -> torch.Tensor:
    key = str(device)
    with _weights_lock:
        w = _weights.get(key)
        if w is None:
            with torch.inference_mode(False):  # a normal tensor, whatever the caller's mode
                gen = torch.Generator().manual_seed(0x6865637470)
                w = torch.randint(-2**62, 2**62, (_CHUNK,), dtype=torch.int64,
                                  generator=gen)
                w = (w * 2 + 1).to(device)  # odd: a change of one element always shows
            _weights[key] = w
        return w


def _chunk_multiplier(c: int) -> int:
    """An odd 64-bit multiplier for chunk c (splitmix64 of c)."""
    z = (c * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) | 1


def _chunk_sums(t: torch.Tensor) -> list:
    """0-d int64 tensors on t's device: the weighted sum of each chunk of t's
    elements (row-major, whatever t's strides)."""
    flat = t.reshape(-1)
    w = _position_weights(t.device)
    sums = []
    for start in range(0, flat.numel(), _CHUNK):
        part = flat[start:start + _CHUNK]
        # int64 products wrap around modulo 2^64, as their sum does.
        sums.append((part.to(torch.int64) * w[:part.numel()]).sum())
    return sums


def fingerprints(tensors) -> list:
    """(shape, dtype, device, 64-bit content hash) of each integer tensor of
    `tensors`: equal for tensors of equal shape, dtype, device and values,
    whatever their identity, strides or version counters. The hash is
    reduced on each tensor's own device (no host copy of the tensor); the
    host receives one int64 per million elements, in a single copy (on a GPU
    that copy waits for the work queued before it)."""
    tensors = list(tensors)
    with torch.no_grad():
        per_tensor = [_chunk_sums(t) for t in tensors]
        values = {}
        for device in {str(t.device) for t in tensors}:
            sums = [s for t, ss in zip(tensors, per_tensor) if str(t.device) == device
                    for s in ss]
            values[device] = iter(torch.stack(sums).tolist() if sums else [])
    result = []
    for t, ss in zip(tensors, per_tensor):
        chunks = values[str(t.device)]
        h = 0
        for c in range(len(ss)):
            h = (h + _chunk_multiplier(c) * (next(chunks) & _MASK64)) & _MASK64
        result.append((tuple(t.shape), str(t.dtype), str(t.device), h))
    return result


def fingerprint(t: torch.Tensor) -> tuple:
    """fingerprints() of one tensor."""
    return fingerprints([t])[0]

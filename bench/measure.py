"""Timing, peak memory, out-of-memory capture and HBM bandwidth, for one device (CUDA or CPU)."""

from __future__ import annotations

import gc
import statistics
import time

import torch


def is_oom(err: BaseException) -> bool:
    """True for CUDA out-of-memory, however the library reports it."""
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(err, oom_type):
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and ("out of memory" in text or "CUBLAS_STATUS_ALLOC_FAILED" in text)


def free(device: torch.device) -> None:
    """Drop garbage and return cached blocks, so the next contender starts clean."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def allocated(device: torch.device) -> int:
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else 0


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak(device: torch.device) -> int:
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0


def time_calls(fn, device: torch.device, *, warmup: int, max_iters: int, budget_s: float):
    """Median milliseconds of fn() after warm-up; CUDA events on a GPU, perf_counter on a CPU.

    Stops after max_iters samples or once budget_s of timed work has passed
    (at least one sample). Returns (median_ms, samples).
    """
    for _ in range(warmup):
        fn()
    sync(device)
    samples = []
    spent = 0.0
    while len(samples) < max_iters and (not samples or spent < budget_s):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        else:
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
        samples.append(ms)
        spent += ms / 1e3
    return statistics.median(samples), len(samples)


def measure_bandwidth(device: torch.device, nbytes: int = 1 << 30, reps: int = 10) -> float:
    """Memory bandwidth in bytes/s from a large device-to-device copy, counting bytes read + written."""
    n = nbytes // 4
    ms = _copy_ms(device, n, reps)
    free(device)  # the buffers died with _copy_ms
    return 2.0 * n * 4 / (ms / 1e3)


def _copy_ms(device, n, reps):
    a = torch.empty(n, dtype=torch.float32, device=device).uniform_()
    b = torch.empty_like(a)
    return time_calls(lambda: b.copy_(a), device, warmup=2, max_iters=reps, budget_s=5.0)[0]

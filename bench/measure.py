"""Timing, peak memory, out-of-memory capture, float32 matmul precision, and the two
peaks of the roofline (memory bandwidth, GEMM throughput), for one device (CUDA or CPU)."""

from __future__ import annotations

import contextlib
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


# ----------------------------------------------------------------- precision
PRECISIONS = ("fp32", "tf32")


def set_precision(precision: str) -> dict:
    """Float32 matmul precision for everything torch runs in this process.

    fp32: no TF32 anywhere (cuBLAS and cuDNN), matmul precision 'highest'.
    tf32: TF32 allowed in cuBLAS and cuDNN, matmul precision 'high'.
    Only these legacy flags are set: torch 1.13 and 2.x both read them, and
    recent torch refuses a mix of them with its newer `fp32_precision`
    settings. Returns the settings as torch reports them afterwards.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    return precision_settings()


def precision_settings() -> dict:
    return {"cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


@contextlib.contextmanager
def precision(precision_name: str):
    """set_precision for a block, then the settings from before it."""
    before = precision_settings()
    set_precision(precision_name)
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before["cuda.matmul.allow_tf32"]
        torch.backends.cudnn.allow_tf32 = before["cudnn.allow_tf32"]
        torch.set_float32_matmul_precision(before["float32_matmul_precision"])


# ----------------------------------------------------------------- GEMM peak
def measure_gemm_peak(device: torch.device, precision_name: str, n: int = None, reps: int = 10) -> float:
    """FLOP/s of a float32 n x n x n matmul (cuBLAS on a GPU) at the given precision.

    2 n^3 FLOPs over the median of `reps` timed calls (CUDA events), after
    warm-up; n = 8192 on a GPU (1.1 TFLOP a call, 768 MiB of operands),
    512 on a CPU (a plumbing check, not a peak). The settings of the process are restored afterwards.
    """
    if n is None:
        n = 8192 if device.type == "cuda" else 512
    with precision(precision_name):
        ms = _matmul_ms(device, n, reps)
    free(device)  # the operands died with _matmul_ms
    return 2.0 * n ** 3 / (ms / 1e3)


def _matmul_ms(device, n, reps):
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=gen, device=device)
    b = torch.randn(n, n, generator=gen, device=device)
    c = torch.empty(n, n, device=device)
    return time_calls(lambda: torch.matmul(a, b, out=c), device, warmup=3, max_iters=reps,
                      budget_s=5.0)[0]

#!/usr/bin/env python3
"""GPU time of torch.sort on gather index lists (int64 keys, int32 keys, and
int64 converted to int32 first, as hector.unified does before a sorted
gather). Timed like the gather benchmark (bench_gather.event_ms: CUDA events
behind a sleep kernel), median of 30.

    python3 bench/gather/sort_cost.py
"""

import statistics

import torch

from bench_gather import event_ms


def gpu_ms(fn, reps=30):
    return statistics.median(event_ms(lambda i: fn(), reps))


def main():
    dev = torch.device("cuda", 0)
    for n in (1024, 8192, 65536, 262144):
        i64 = torch.randint(0, 1 << 25, (n,), device=dev)
        i32 = i64.to(torch.int32)
        print(f"sort n={n}: int64 {gpu_ms(lambda: torch.sort(i64)):.4f} ms, "
              f"int32 {gpu_ms(lambda: torch.sort(i32)):.4f} ms, "
              f"int64->int32+sort {gpu_ms(lambda: torch.sort(i64.to(torch.int32))):.4f} ms")


if __name__ == "__main__":
    main()

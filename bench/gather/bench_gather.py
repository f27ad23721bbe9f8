#!/usr/bin/env python3
"""Zero-copy gather benchmark: the gather table of BRIEF.md section 6 and the
2048..2076 byte row-size sweep.

For each (rows gathered x row bytes) it times, on one GPU, gathers of random
rows out of a large host-resident table (several GB, far larger than L2):
  cpu+copy  torch.index_select on the pinned CPU table into a pinned staging
            buffer, then a non_blocking copy to the GPU (wall clock, synced)
  naive     zero-copy kernel, one thread per 4-byte element (ours, for
            comparison: HECTOR_GATHER_NAIVE)
  ours      hector.unified gather as a user gets it (check off: no sync in
            the timed region; sorts its indices when sorts_rows says so, the
            sort's kernels included in the time); also forced unsorted and
            sorted
  ideal     the gathered bytes moved by one pinned host->device copy of the
            same size, measured in the same run (the PCIe limit for that
            transfer); `peak` is bytes / the bandwidth of a 1 GiB copy.
GPU times are CUDA-event medians over --reps runs, each with fresh random
indices, the methods taking turns run by run, each timed behind a sleep kernel so that host launch costs are not
counted (SLEEP_CYCLES); `ours_wall_ms` in the JSON is the host time of one
checked, synchronised gather. A second experiment times sorted against
unsorted gathers on tables of several sizes (--sizes). Prints markdown
tables and writes JSON.

    python3 bench/gather/bench_gather.py --out results.json
"""

import argparse
import itertools
import json
import os
import statistics
import time

import torch

from hector import _runtime
from hector.unified import host_empty, sorts_rows, unified

TABLE = [(8192, 256), (65536, 1024), (262144, 2048), (262144, 2052)]
ANCHOR_H200 = {  # BRIEF.md section 6, ms: cpu+copy, naive, ideal
    (8192, 256): (0.107, 0.059, 0.050),
    (65536, 1024): (4.49, 1.33, 1.22),
    (262144, 2048): (19.7, 10.9, 9.7),
    (262144, 2052): (22.9, 18.0, 9.7),
}


def fill_random(buf_u8: torch.Tensor) -> None:
    """Fills a big uint8 tensor with random bytes quickly: one random 64 MB
    block, copied over the buffer (torch parallelises the copies)."""
    block = torch.randint(0, 256, (64 << 20,), dtype=torch.uint8)
    n = buf_u8.numel()
    for start in range(0, n, block.numel()):
        end = min(n, start + block.numel())
        buf_u8[start:end].copy_(block[: end - start])
        block = block.roll(4097)  # rows that repeat the block still differ


def sys_text(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "unavailable"


def anon_huge_pages() -> str:
    for line in sys_text("/proc/meminfo").splitlines():
        if line.startswith("AnonHugePages"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def host_table(nbytes: int, backing: str):
    """A host uint8 table of nbytes: 'malloc' (torch.empty), 'thp' (2 MB
    transparent huge pages), 'nothp' (4 KB pages forced), or 'hostalloc'
    (cuMemHostAlloc through the runtime: pinned by the driver)."""
    import mmap

    if backing == "malloc":
        return torch.empty(nbytes, dtype=torch.uint8), None
    if backing == "thp":
        return host_empty(nbytes, torch.uint8), None
    if backing == "nothp":
        buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            buf.madvise(mmap.MADV_NOHUGEPAGE)
        return torch.frombuffer(buf, dtype=torch.uint8), None
    if backing in ("hostalloc", "vmm"):
        import ctypes

        if backing == "hostalloc":
            ptr, _ = _runtime.host_alloc(nbytes, 0)
        else:
            ptr = _runtime.host_alloc_large_pages(nbytes, 0)
        buf = (ctypes.c_ubyte * nbytes).from_address(ptr)
        return torch.frombuffer(buf, dtype=torch.uint8), (backing, ptr)
    raise ValueError(backing)


def free_table(handle) -> None:
    kind, ptr = handle
    if kind == "hostalloc":
        _runtime.host_free(ptr)
    else:
        _runtime.host_free_large_pages(ptr)


def backing_experiment(table_gib: float, reps: int, dev, staging, copy_src,
                       backings=("malloc", "nothp", "thp", "hostalloc", "vmm")):
    """Ours on tables of different page backing (and one small table): does
    the GPU's address translation of host pages limit random gathers?"""
    out = []
    configs = [(8192, 256), (65536, 1024), (262144, 2048), (262144, 2052)]
    cases = [(b, table_gib) for b in backings]
    for backing, gib in cases:
        nbytes = int(gib * (1 << 30)) // 4096 * 4096
        try:
            host, freeptr = host_table(nbytes, backing)
            t0 = time.perf_counter()
            fill_random(host)
            t1 = time.perf_counter()
            whole = unified(host, device=dev)
            t2 = time.perf_counter()
            huge = anon_huge_pages()
            for n, rb in configs:
                r = bench_config(host.view(torch.float32), n, rb, reps, dev, staging, copy_src,
                                 check_cpu=False)
                r.update(backing=backing, table_gib=gib, fill_s=t1 - t0, pin_s=t2 - t1,
                         anon_huge_pages=huge)
                out.append(r)
                print(f"# backing {backing} {gib} GiB {n}x{rb}: unsorted {r['unsorted_ms']:.3f} "
                      f"sorted {r['sorted_ms']:.3f} naive {r['naive_ms']:.3f} "
                      f"ideal {r['ideal_ms']:.3f} ok {r['correct_unsorted']} "
                      f"(fill {t1 - t0:.1f} s, pin {t2 - t1:.1f} s, AnonHugePages {huge})", flush=True)
        except Exception as e:  # one backing failing must not end the run
            print(f"# backing {backing}: failed: {e}", flush=True)
            continue
        del whole
        if freeptr:
            del host
            free_table(freeptr)
    return out


# GPU cycles of the sleep kernel queued before each timed run: the GPU is
# still busy with it while the host enqueues the run, so host-side launch
# costs (Python, ctypes, torch.sort's launches) overlap it, as they overlap
# earlier work in a training loop, and the events time the GPU work alone.
SLEEP_CYCLES = 2_000_000  # about 1 ms at H100/H200 clocks


def event_ms(fn, reps: int, warmup: int = 3) -> list[float]:
    """Per-run GPU times of fn() in ms, measured with CUDA events; fn(i) gets
    the run number (to pick fresh indices)."""
    for i in range(warmup):
        fn(i)
    times = []
    for i in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        fn(warmup + i)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return times


def interleaved_ms(fns: dict, reps: int, warmup: int = 3) -> dict:
    """Median GPU time (ms) of each fn, the methods taking turns run by run
    so that drifts of the machine (PCIe, host memory) hit all of them alike.
    Every call gets its own run number, so no call finds the rows of an
    earlier one in L2 (at most (reps + warmup) * len(fns) numbers)."""
    run = itertools.count()
    for fn in fns.values():
        for _ in range(warmup):
            fn(next(run))
    times = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            r = next(run)
            times[name] += event_ms(lambda j, fn=fn, r=r: fn(r), 1, warmup=0)
    return {name: statistics.median(t) for name, t in times.items()}


def wall_ms(fn, reps: int, warmup: int = 2) -> list[float]:
    for i in range(warmup):
        fn(i)
        torch.cuda.synchronize()
    times = []
    for i in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(warmup + i)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def bench_config(host_f32, n, row_bytes, reps, dev, staging, copy_src, check_cpu=True,
                 naive=True):
    """Times one (rows gathered, row bytes) configuration. Methods: ours (the
    default gather, which sorts when sorts_rows says so), unsorted and sorted
    (forced), naive, the ideal copy and (check_cpu) the CPU
    gather + copy. Each GPU method's output is first compared bit for bit
    with table[idx] on the CPU."""
    cols = row_bytes // 4
    rows = host_f32.numel() // cols
    table = host_f32[: rows * cols].view(rows, cols)
    u = unified(table, device=dev, check=False)
    n_methods = 4 + (1 if naive else 0)  # ours, unsorted, sorted, ideal
    nsets = (reps + 3) * n_methods + 2
    gen = torch.Generator(device=dev).manual_seed(n * 7919 + row_bytes)
    idx_dev = [torch.randint(0, rows, (n,), device=dev, generator=gen) for _ in range(nsets)]
    cpu_runs = max(5, reps // 3) + 2
    idx_cpu = [i.cpu() for i in idx_dev[:cpu_runs]]
    out = torch.empty(n, cols, device=dev)
    nbytes = n * row_bytes

    def gather(**kw):
        return lambda i: u.gather(idx_dev[i % nsets], out=out, check=False, **kw)

    methods = {"ours": gather(), "unsorted": gather(sort=False), "sorted": gather(sort=True)}
    if naive:
        methods["naive"] = gather(sort=False, _flags=_runtime.GATHER_NAIVE)

    stage = staging[:nbytes].view(torch.float32).view(n, cols)

    def cpu_copy(i):
        torch.index_select(table, 0, idx_cpu[i % cpu_runs], out=stage)
        out.copy_(stage, non_blocking=True)

    dst_bytes = torch.empty(nbytes, dtype=torch.uint8, device=dev)

    def ideal(i):
        dst_bytes.copy_(copy_src[:nbytes], non_blocking=True)

    ref = table[idx_cpu[0]]
    result = {
        "rows_gathered": n,
        "row_bytes": row_bytes,
        "bytes": nbytes,
        "table_rows": rows,
        "table_bytes": rows * row_bytes,
        "sorts": sorts_rows(n, rows * row_bytes),
        "distinct_rows": int(torch.unique(idx_dev[0]).numel()),
        "variant": _runtime.gather_variant(_runtime.GatherDesc(
            src=u._dev_ptr, src_rows=rows, src_stride=row_bytes, row_bytes=row_bytes,
            index=idx_dev[0].data_ptr(), n_index=n, index_bytes=8, flags=0,
            dst=out.data_ptr(), dst_stride=row_bytes, device=dev.index, reserved=0,
            stream=None)),
    }
    for name, fn in methods.items():
        out.fill_(float("nan"))
        fn(0)
        torch.cuda.synchronize()
        # Compare bits: random bytes read as float32 include NaNs.
        result[f"correct_{name}"] = torch.equal(out.cpu().view(torch.int32),
                                                ref.view(torch.int32))
    methods["ideal"] = ideal
    for name, ms in interleaved_ms(methods, reps).items():
        result[f"{name}_ms"] = ms
    # Host time of a checked gather, synchronised (what one blocking call costs).
    result["ours_wall_ms"] = statistics.median(wall_ms(
        lambda i: u.gather(idx_dev[i % nsets], out=out, check=True), max(5, reps // 3)))
    if check_cpu:
        result["cpu_copy_ms"] = statistics.median(wall_ms(cpu_copy, max(5, reps // 3)))
    return result


# Gathers timed on tables of several sizes (sorted against unsorted): where
# does reading rows in address order start to pay, and by how much?
SIZE_CONFIGS = [(1024, 256), (4096, 256), (8192, 256), (65536, 256), (4096, 2048),
                (65536, 1024), (262144, 2048), (262144, 2052)]


def size_experiment(table_gibs, reps, dev, staging, copy_src):
    out = []
    for gib in table_gibs:
        nbytes = int(gib * (1 << 30)) // 4096 * 4096
        host = torch.empty(nbytes, dtype=torch.uint8)
        fill_random(host)
        whole = unified(host, device=dev)
        for n, rb in SIZE_CONFIGS:
            r = bench_config(host.view(torch.float32), n, rb, reps, dev, staging, copy_src,
                             check_cpu=False, naive=False)
            r["table_gib"] = gib
            out.append(r)
            print(f"# size {gib} GiB {n}x{rb}: unsorted {r['unsorted_ms'] / r['ideal_ms']:.3f} "
                  f"sorted {r['sorted_ms'] / r['ideal_ms']:.3f} of ideal {r['ideal_ms']:.4f} ms; "
                  f"correct {r['correct_unsorted'] and r['correct_sorted']}", flush=True)
        del whole, host
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table-gb", type=float, default=8.0, help="host table size")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--sweep-rows", type=int, default=262144)
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--backing", default="auto",
                    choices=["auto", "malloc", "thp", "nothp", "hostalloc", "vmm"],
                    help="host memory of the main table; auto: the fastest of the "
                         "backing experiment")
    ap.add_argument("--experiment-gib", type=float, default=0.0,
                    help="table size of the backing experiment (0: skip it)")
    ap.add_argument("--experiment-backings", default="malloc,nothp,thp,hostalloc,vmm")
    ap.add_argument("--sizes", default="0.0625,0.25,1,4",
                    help="table sizes (GiB) of the sorted/unsorted experiment ('': skip it)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gather.json"))
    args = ap.parse_args()

    dev = torch.device("cuda", 0)
    torch.cuda.init()
    gpu = torch.cuda.get_device_name(dev)
    print(f"# GPU: {gpu}; torch {torch.__version__}; CPU threads {torch.get_num_threads()}",
          flush=True)

    print(f"# THP enabled: {sys_text('/sys/kernel/mm/transparent_hugepage/enabled')}; "
          f"defrag: {sys_text('/sys/kernel/mm/transparent_hugepage/defrag')}", flush=True)
    max_bytes = max(n * rb for n, rb in TABLE + [(args.sweep_rows, 2076)])
    staging = torch.empty(max_bytes, dtype=torch.uint8).pin_memory()
    copy_src = torch.empty(1 << 30, dtype=torch.uint8).pin_memory()
    fill_random(copy_src)
    peak_dst = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    peak_ms = statistics.median(
        event_ms(lambda i: peak_dst.copy_(copy_src, non_blocking=True), 10))
    peak_gbs = (1 << 30) / peak_ms / 1e6
    print(f"# pinned host->device copy of 1 GiB: {peak_ms:.2f} ms = {peak_gbs:.1f} GB/s",
          flush=True)

    experiment = []
    if args.experiment_gib > 0:
        experiment = backing_experiment(args.experiment_gib, max(5, args.reps // 3), dev,
                                        staging, copy_src, args.experiment_backings.split(","))
    backing = args.backing
    if backing == "auto":
        score = {}
        for r in experiment:
            if r["table_gib"] == args.experiment_gib:
                score[r["backing"]] = score.get(r["backing"], 0.0) + r["ours_ms"] / r["ideal_ms"]
        backing = min(score, key=score.get) if score else "malloc"


    t0 = time.perf_counter()
    nbytes = int(args.table_gb * (1 << 30)) // 4096 * 4096
    host, freeptr = host_table(nbytes, backing)
    fill_random(host)
    t1 = time.perf_counter()
    whole = unified(host, device=dev)  # pins the whole table once
    t2 = time.perf_counter()
    print(f"# main table {nbytes / 2**30:.1f} GiB ({backing}): filled in {t1 - t0:.1f} s, "
          f"pinned+mapped in {t2 - t1:.1f} s; AnonHugePages {anon_huge_pages()}", flush=True)
    host_f32 = host.view(torch.float32)

    results = {"gpu": gpu, "torch": torch.__version__, "peak_h2d_gbs": peak_gbs,
               "table_gib": nbytes / 2**30, "backing": backing, "reps": args.reps,
               "sleep_cycles": SLEEP_CYCLES, "experiment": experiment, "table": [],
               "sweep": [], "sizes": []}
    for n, rb in TABLE:
        r = bench_config(host_f32, n, rb, args.reps, dev, staging, copy_src)
        r["peak_ms"] = r["bytes"] / peak_gbs / 1e6
        results["table"].append(r)
        print(f"# {n}x{rb}: {r}", flush=True)
    if not args.no_sweep:
        for rb in range(2048, 2077, 4):
            r = bench_config(host_f32, args.sweep_rows, rb, args.reps, dev, staging, copy_src,
                             check_cpu=False)
            r["peak_ms"] = r["bytes"] / peak_gbs / 1e6
            results["sweep"].append(r)
            print(f"# sweep {rb}: {r}", flush=True)
    del whole, host_f32, host
    sizes = [float(g) for g in args.sizes.split(",") if g]
    results["sizes"] = size_experiment(sizes, args.reps, dev, staging, copy_src)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print_report(results, args)


def print_report(results, args):
    experiment = results["experiment"]
    if experiment:
        print(f"\n## Host-page backing ({args.experiment_gib} GiB tables; ms)\n")
        print("| backing | config | naive | unsorted | sorted | ideal | unsorted / ideal | "
              "sorted / ideal | AnonHugePages |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in experiment:
            print(f"| {r['backing']} | {r['rows_gathered'] // 1024}K x {r['row_bytes']} B | "
                  f"{r['naive_ms']:.3f} | {r['unsorted_ms']:.3f} | {r['sorted_ms']:.3f} | "
                  f"{r['ideal_ms']:.3f} | {r['unsorted_ms'] / r['ideal_ms']:.3f} | "
                  f"{r['sorted_ms'] / r['ideal_ms']:.3f} | {r['anon_huge_pages']} |")
    if results["sizes"]:
        print("\n## Sorted against unsorted, by table size (ms; ratios to the ideal copy)\n")
        print("| table GiB | config | unsorted | sorted | ideal | unsorted / ideal | "
              "sorted / ideal | default sorts | correct |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in results["sizes"]:
            print(f"| {r['table_gib']} | {r['rows_gathered']} x {r['row_bytes']} B | "
                  f"{r['unsorted_ms']:.4f} | {r['sorted_ms']:.4f} | {r['ideal_ms']:.4f} | "
                  f"{r['unsorted_ms'] / r['ideal_ms']:.3f} | {r['sorted_ms'] / r['ideal_ms']:.3f} | "
                  f"{r['sorts']} | {r['correct_unsorted'] and r['correct_sorted']} |")
    print(f"\n## Gather table ({results['gpu']}; {results['table_gib']:.0f} GiB table, "
          f"{results['backing']}; ms, GPU time, median of {args.reps}; ideal = same-size pinned "
          f"copy; peak = bytes / {results['peak_h2d_gbs']:.1f} GB/s)\n")
    print("| config | CPU gather + copy | naive zero-copy | ours | ours unsorted | PCIe ideal | "
          "peak | ours / ideal | kernel | sorts | correct |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results["table"]:
        label = f"{r['rows_gathered'] // 1024}K x {r['row_bytes']} B"
        correct = all(v for k, v in r.items() if k.startswith("correct_"))
        print(f"| {label} | {r['cpu_copy_ms']:.3f} | {r['naive_ms']:.3f} | {r['ours_ms']:.3f} | "
              f"{r['unsorted_ms']:.3f} | {r['ideal_ms']:.3f} | {r['peak_ms']:.3f} | "
              f"{r['ours_ms'] / r['ideal_ms']:.3f} | {r['variant']} | {r['sorts']} | "
              f"{correct} |")
    if results["sweep"]:
        print(f"\n## Row-size sweep ({args.sweep_rows} rows; ms)\n")
        print("| row bytes | naive | ours | ours unsorted | ideal | ours / ideal | "
              "unsorted / ideal | naive / unsorted | kernel |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in results["sweep"]:
            print(f"| {r['row_bytes']} | {r['naive_ms']:.3f} | {r['ours_ms']:.3f} | "
                  f"{r['unsorted_ms']:.3f} | {r['ideal_ms']:.3f} | "
                  f"{r['ours_ms'] / r['ideal_ms']:.3f} | {r['unsorted_ms'] / r['ideal_ms']:.3f} | "
                  f"{r['naive_ms'] / r['unsorted_ms']:.2f} | {r['variant']} |")
    rows = results["table"] + results["sweep"]
    worst = max(r["ours_ms"] / r["ideal_ms"] for r in rows)
    correct = all(v for r in rows + results["sizes"] for k, v in r.items()
                  if k.startswith("correct_"))
    print(f"\nworst ours / ideal: {worst:.3f} (goal <= 1.10); every output bit-exact: {correct}")


if __name__ == "__main__":
    main()

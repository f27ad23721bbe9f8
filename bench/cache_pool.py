"""Pinning off the critical path: the tensor cache's host pool made in the
background, against host blocks pinned when the first step needs them.

Each "step" evicts --values device tensors of --value-mib through the
runtime's offload functions (hector_offload_evict, as a compiled forward
does: copies on the runtime's copy stream into the cache's pinned host
blocks), waits for the device, prefetches them all back (hector_offload_prefetch
in a row, then hector_offload_wait for each, as a compiled backward does),
and releases them. Three caches, in one run (pinned, host tier of the
step's bytes):

  inline     no pool: the first step pins each block as it needs it
             (cuMemHostAlloc, ~0.6 s per GiB), later steps reuse them
  pool       the pool reserved and waited for before the first step (its
             pinning time is reported: paid before training starts)
  pool-busy  the pool reserved just before the first step, not waited for:
             puts that come before their block is ready take pageable memory

It prints each step's milliseconds, the pool's statistics, and checks the
values come back bit-identical. With --tier disk the values go to the disk
tier (--dir), and the prefetches read them together from the file.

    python3 bench/cache_pool.py --values 16 --value-mib 64 --steps 4 --out OUT.json

Without a GPU it runs on host numpy arrays (nothing is pinned there; the
pool's "pinning" is faulting its pages in).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import tempfile
import time

import numpy as np

import repo_paths  # noqa: E402,F401  (sets the import paths)
from hector import tensor_cache as tc  # noqa: E402
from hector.tensor_cache import TensorCache  # noqa: E402


def make_values(args):
    """The step's values: CUDA tensors where there is a GPU, else numpy arrays,
    as (pointer, nbytes, object) with a copy of each to compare."""
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    n = args.value_mib << 18  # float32 elements
    if cuda:
        torch.cuda.init()  # the driver loaded: the cache pins its host memory
        gen = torch.Generator(device="cuda").manual_seed(0)
        xs = [torch.randn(n, device="cuda", generator=gen) for _ in range(args.values)]
        return "cuda", xs, [x.cpu().numpy() for x in xs]
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(n, dtype=np.float32) for _ in range(args.values)]
    return "cpu", xs, [x.copy() for x in xs]


def pointer(x) -> int:
    return x.data_ptr() if hasattr(x, "data_ptr") else x.ctypes.data


def empty_like(x):
    return x.new_empty(x.shape) if hasattr(x, "new_empty") else np.empty_like(x)


def run_case(name, args, kind, xs, expect, lib):
    sync = (lambda: __import__("torch").cuda.synchronize()) if kind == "cuda" else (lambda: None)
    step_bytes = sum(int(e.nbytes) for e in expect)
    cache = TensorCache(step_bytes + (64 << 20), args.dir if args.tier == "disk" else None,
                        pinned=True)
    pool_made_s = None
    if name != "inline":
        start = time.perf_counter()
        cache.reserve_pool(chunk_bytes=args.pool_chunk_mib << 20)
        if name == "pool":
            cache.pool_wait()
            pool_made_s = time.perf_counter() - start
    tier = 1 if args.tier == "disk" else 0
    steps, ok = [], True
    try:
        with tc.bound(cache, 0):
            for _ in range(args.steps):
                sync()
                start = time.perf_counter()
                for slot, x in enumerate(xs):
                    lib.hector_offload_evict(slot, tier, pointer(x), int(expect[slot].nbytes))
                sync()
                if args.tier == "disk":
                    cache.flush()  # the values are on disk: the reads come from the file
                outs = [empty_like(x) for x in xs]
                for slot, out in enumerate(outs):
                    lib.hector_offload_prefetch(slot, pointer(out), int(expect[slot].nbytes))
                for slot in range(len(outs)):
                    lib.hector_offload_wait(slot)
                sync()
                steps.append(1e3 * (time.perf_counter() - start))
                if lib.hector_launch_status() != 0:
                    raise RuntimeError(lib.hector_launch_error().decode())
                for slot in range(len(xs)):
                    tc.offload_release(cache, slot)
                got = [o.cpu().numpy() if kind == "cuda" else o for o in outs]
                ok = ok and all(np.array_equal(g, e) for g, e in zip(got, expect))
        pool = cache.pool_stats()
    finally:
        cache.close()
    return {"steps_ms": steps, "pool_made_s": pool_made_s, "pool": pool, "bit_identical": ok}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=16)
    ap.add_argument("--value-mib", type=int, default=64)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--tier", choices=("host", "disk"), default="host")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="the disk tier's directory")
    ap.add_argument("--pool-chunk-mib", type=int, default=256)
    ap.add_argument("--cases", default="inline,pool,pool-busy")
    ap.add_argument("--out", help="JSON results")
    args = ap.parse_args(argv)
    lib = tc._lib()
    lib.hector_launch_status.restype, lib.hector_launch_status.argtypes = ctypes.c_int, []
    lib.hector_launch_error.restype, lib.hector_launch_error.argtypes = ctypes.c_char_p, []
    kind, xs, expect = make_values(args)
    results = {}
    print(f"{kind}: {args.values} values x {args.value_mib} MiB per step, {args.tier} tier")
    for name in args.cases.split(","):
        r = results[name] = run_case(name, args, kind, xs, expect, lib)
        p = r["pool"]
        made = f", pool made before in {r['pool_made_s']:.2f} s" if r["pool_made_s"] else ""
        print(f"{name}: steps {', '.join(f'{t:.1f}' for t in r['steps_ms'])} ms{made}; "
              f"pool {p['bytes_ready'] >> 20}/{p['bytes'] >> 20} MiB ready, "
              f"{p['bytes_pinned'] >> 20} MiB pinned, {p['pin_ns'] / 1e9:.2f} s pinning; "
              f"puts pooled {p['puts_pooled']}, before ready {p['puts_unready']}, "
              f"no room {p['puts_no_room']}; bit-identical {r['bit_identical']}", flush=True)
    if args.out:
        gpu = None
        if kind == "cuda":
            import torch
            gpu = torch.cuda.get_device_name()
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "device": kind, "gpu": gpu, "results": results}, f,
                      indent=1)
    return 0 if all(r["bit_identical"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

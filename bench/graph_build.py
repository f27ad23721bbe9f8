"""hector_graph_build (runtime/lib/graph) alone, on uniform random graphs of
the sizes of docs/runtime-graph.md, for one or more runtime libraries.

Each --lib is loaded in a child process of its own (two builds of the
library export the same names); the libraries take turns for --rounds rounds
so that a slow spell of the machine hits them all. Per round and graph the
best of --repeat builds is printed, wall and CPU seconds. Inputs are int64,
seed 0.

    python3 bench/graph_build.py --lib before=/tmp/old/libhector_runtime.so \\
        --lib after=build/runtime/libhector_runtime.so --rounds 3 --repeat 7
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
import time

import numpy as np

import repo_paths  # noqa: F401  (sets the import paths)
from hector import graph

# name, N, E, T, R
GRAPHS = {
    "mag": (1_939_743, 21_111_007, 4, 4),
    "am": (881_680, 5_668_682, 7, 96),
}


def measure(lib_path: str, names, repeat: int) -> None:
    """Prints one line per graph: the best of `repeat` builds."""
    lib = ctypes.CDLL(lib_path)
    lib.hector_graph_build.argtypes = [ctypes.POINTER(graph._GraphInput),
                                       ctypes.POINTER(ctypes.c_void_p)]
    lib.hector_graph_free.argtypes = [ctypes.c_void_p]
    for name in names:
        n, e, t, r = GRAPHS[name]
        rng = np.random.default_rng(0)
        arrays = [rng.integers(0, t, n), rng.integers(0, n, e), rng.integers(0, n, e),
                  rng.integers(0, r, e)]
        graph_input = graph._GraphInput(*(graph._index_array(a) for a in arrays), t, r)
        wall = cpu = float("inf")
        for _ in range(repeat):
            out = ctypes.c_void_p()
            cpu0, wall0 = time.process_time(), time.perf_counter()
            status = lib.hector_graph_build(ctypes.byref(graph_input), ctypes.byref(out))
            wall1, cpu1 = time.perf_counter(), time.process_time()
            if status != 0:
                sys.exit(f"hector_graph_build failed on {name}: status {status}")
            lib.hector_graph_free(out)
            wall, cpu = min(wall, wall1 - wall0), min(cpu, cpu1 - cpu0)
        print(f"{name}: wall {wall:.3f} s  cpu {cpu:.3f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", action="append", required=True, metavar="LABEL=PATH",
                        help="a libhector_runtime.so to time, with a label")
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=list(GRAPHS))
    parser.add_argument("--repeat", type=int, default=3, help="builds per round; the best counts")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the library a child times
    args = parser.parse_args()
    if args.child:
        measure(args.child, args.graphs, args.repeat)
        return
    libs = [spec.split("=", 1) for spec in args.lib]
    for round_ in range(args.rounds):
        for label, path in libs:
            print(f"round {round_ + 1} {label} ({path})", flush=True)
            subprocess.run([sys.executable, __file__, "--lib", f"{label}={path}", "--child",
                            path, "--repeat", str(args.repeat), "--graphs", *args.graphs],
                           check=True)


if __name__ == "__main__":
    main()

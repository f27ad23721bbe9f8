"""The cap on CUDA libraries' temporaries (issue 17) on a GPU: the CUDA side
of test/python/test_temporary_cap.py. Written without a GPU at hand: not
run yet (docs/offload.md, "The capacity at run time").

An RGAT training step built with `hectorc --target=cuda --training`, through
hector.autograd on CUDA tensors, temporaries from torch's allocator (the
default in a PyTorch process) and from the runtime's own pool
(HECTOR_TORCH_ALLOCATOR=0, in a child process):
  * under half the step's measured peak of temporaries the step raises
    TemporaryMemoryError naming the entry point, the bytes asked for, the
    cap and the bytes in use; no temporary stays allocated; with the cap
    lifted the step gives the same output and gradients;
  * walking the cap up from 0 through every failure point the messages name
    ends at the measured peak, which passes; a byte less fails.

The GPU machines have no hectorc, so the library is built here first:
    python3 test/gpu/test_temporary_cap_gpu.py --build build/gpu-models/capacity
then on the GPU machine:
    HECTOR_CAPACITY_GPU_DIR=build/gpu-models/capacity python3 -m pytest test/gpu/test_temporary_cap_gpu.py
Not collected by CI.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

from gpu_paths import REPO as _REPO  # noqa: E402  (sets the import paths)

import numpy as np  # noqa: E402

from cuda_torch import cuda_torch  # noqa: E402

WIDTH = 64
DIR_ENV = "HECTOR_CAPACITY_GPU_DIR"
DEFAULT_DIR = os.path.join(_REPO, "build", "gpu-models", "capacity")
LIBRARY = "librgat_train.so"
REFUSED = re.compile(r"a temporary buffer of (\d+) bytes would exceed the cap on temporary "
                     r"device memory: (\d+) bytes, (\d+) of them in use")


def build(directory: str) -> None:
    from hector import models
    from hectorc_support import find_tool

    hectorc = find_tool("hectorc")
    if hectorc is None:
        raise SystemExit("hectorc not found in $HECTOR_BUILD_DIR/bin or build/bin")
    os.makedirs(directory, exist_ok=True)
    source = os.path.join(directory, "rgat.mlir")
    with open(source, "w") as f:
        f.write(models.generate("rgat", WIDTH))
    subprocess.run([hectorc, source, "--target=cuda", "--training", "-o",
                    os.path.join(directory, LIBRARY)], check=True)
    print(f"test_temporary_cap_gpu: wrote {LIBRARY} to {directory}")


# ---- pytest ------------------------------------------------------------------------


def load():
    from hector import compiled

    directory = os.environ.get(DIR_ENV, DEFAULT_DIR)
    os.environ.setdefault("HECTOR_RUNTIME_LIB", os.path.join(directory, "libhector_runtime.so"))
    path = os.path.join(directory, LIBRARY)
    if not os.path.exists(path):
        import pytest

        pytest.skip(f"{path} not built (python3 test/gpu/test_temporary_cap_gpu.py --build DIR)")
    return compiled.load(path)


def graph(torch):
    from hector import graph as hgraph
    from model_cases import random_graph

    g = random_graph(np.random.default_rng(9))
    return hgraph.preprocess(g["node_type"], g["src"], g["dst"], g["etype"],
                             g["num_node_types"], g["num_edge_types"],
                             device=torch.device("cuda"))


def step(torch, library, pre, seed=1):
    from hector import autograd

    rng = np.random.default_rng(seed)
    entry = library["rgat_fwd"]
    symbols = {k: int(getattr(pre, k)) for k in ("N", "E", "T", "R", "P")}
    tensors = {}
    for arg in entry.arguments:
        if arg.role in ("input", "weight"):
            shape = autograd._shape(entry, arg, symbols)
            tensors[arg.name] = torch.tensor((rng.standard_normal(shape) * 0.3)
                                             .astype(np.float32), device="cuda",
                                             requires_grad=True)
    out, = autograd.run(library, "rgat", pre, **tensors)
    weight = torch.sin(torch.arange(out.numel(), device="cuda", dtype=torch.float32))
    (out * weight.reshape(out.shape)).sum().backward()
    torch.cuda.synchronize()
    return [out.detach()] + [t.grad for t in tensors.values()]


def same(a, b):
    return all(float((x - y).abs().max() / y.abs().max().clamp_min(1e-30)) < 1e-5
               for x, y in zip(a, b))


def uncapped_step():
    """torch, the library, the graph, an uncapped step's results and its
    measured peak of temporaries (nothing left allocated after it)."""
    torch = cuda_torch()
    library = load()
    pre = graph(torch)
    library.set_temporary_cap(None)
    library.peak_temporary_bytes(reset=True)
    reference = step(torch, library, pre)
    peak = library.peak_temporary_bytes()
    assert peak > 0 and library.temporary_bytes() == 0
    return torch, library, pre, reference, peak


def test_cap_below_the_peak_raises_frees_and_recovers():
    from hector import compiled

    torch, library, pre, reference, peak = uncapped_step()
    with library.capped(peak // 2):
        try:
            step(torch, library, pre)
        except compiled.TemporaryMemoryError as err:
            message = str(err)
        else:
            raise AssertionError("the step ran under half its peak")
        assert library.temporary_bytes() == 0
    assert message.startswith(("rgat_fwd(): ", "rgat_bwd(): ")), message
    requested, cap, in_use = map(int, REFUSED.search(message).groups())
    assert cap == peak // 2 and in_use + requested > cap
    assert same(step(torch, library, pre), reference)


def test_walking_the_cap_up_to_the_peak():
    from hector import compiled

    torch, library, pre, reference, peak = uncapped_step()
    cap = 0
    for _ in range(1000):
        library.set_temporary_cap(cap)
        try:
            result = step(torch, library, pre)
            break
        except compiled.TemporaryMemoryError as err:
            assert library.temporary_bytes() == 0
            requested, reported, in_use = map(int, REFUSED.search(str(err)).groups())
            assert reported == cap
            cap = in_use + requested
    assert cap == peak and same(result, reference)
    library.set_temporary_cap(peak - 1)
    try:
        step(torch, library, pre)
        raise AssertionError("the step ran a byte under its peak")
    except compiled.TemporaryMemoryError:
        pass
    library.set_temporary_cap(None)


def test_runtime_pool():
    """The same with the runtime's own pool instead of torch's allocator."""
    cuda_torch()
    env = dict(os.environ, HECTOR_TORCH_ALLOCATOR="0")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", os.path.abspath(__file__),
         "-k", "cap_below_the_peak or walking"], env=env, capture_output=True, text=True,
        timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", metavar="DIR", nargs="?", const=DEFAULT_DIR,
                        help="compile the library into DIR (default %(default)s)")
    args = parser.parse_args()
    if args.build:
        build(args.build)
    else:
        parser.print_help()

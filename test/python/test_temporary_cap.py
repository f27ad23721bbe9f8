"""The cap on a compiled library's temporaries (issue 17), on the CPU backend.

A CPU library counts the host memory its entry points' temporaries hold and
refuses an allocation past its cap (CompiledLibrary.set_temporary_cap, the
library's hector_cpu_set_temporary_cap, $HECTOR_TEMPORARY_CAP). The generated
code checks every allocation (hector-cpu-check-allocations): the call stops,
frees what it holds and reports, and Python raises TemporaryMemoryError
naming the entry point, the bytes asked for, the cap and the bytes in use.
For RGAT and HGT training steps (forward and backward, through
hector.autograd):
  * a cap below a step's peak raises that error and leaves no temporary
    allocated; the same step then runs again, with the same results, once
    the cap is raised;
  * walking the cap up from 0 through every failure the messages report
    (the bytes in use plus the bytes asked for) fails at each point with
    nothing left allocated, and ends at the step's measured peak, which
    passes; a byte less fails;
  * threads calling one library at once share its cap: each call succeeds
    with the right answer or raises, each thread sees only its own failures,
    and nothing stays allocated;
  * a per-iteration buffer of a parallel loop refused on a worker thread
    fails the call of the thread the loop serves;
  * $HECTOR_TEMPORARY_CAP sets the initial cap; a malformed value fails
    calls with a message that says so; bad arguments are refused.
"""

from __future__ import annotations

import re
import shutil
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import _memory, autograd, compiled, graph as hgraph  # noqa: E402
from hector.models import generate  # noqa: E402
from hectorc_support import build  # noqa: E402
from test_offload_compiled import parameters  # noqa: E402
from model_cases import random_graph, relative_error  # noqa: E402

WIDTH = 16
SAME = 1e-6  # the same computation; parallel sums may add in another order
REFUSED = re.compile(r"a temporary buffer of (\d+) bytes would exceed the cap on this "
                     r"library's temporaries: (\d+) bytes, (\d+) of them in use")


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("capacity")
    built = {}
    for model, heads in (("rgat", 1), ("hgt", 2)):
        built[model] = compiled.load(build(directory, generate(model, width=WIDTH, heads=heads),
                                           "--target=cpu", "--training",
                                           name=f"lib{model}.so"))
    yield built
    for library in built.values():
        library.set_temporary_cap(None)


@pytest.fixture(scope="module")
def pre():
    graph = random_graph(np.random.default_rng(17))
    return hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                             graph["num_node_types"], graph["num_edge_types"])


@pytest.fixture
def one_thread(monkeypatch):
    """Parallel loops on the calling thread alone, so that the order of the
    allocations and the peak are the same at every call."""
    monkeypatch.setenv("HECTOR_NUM_THREADS", "1")


def step(library, model, pre, seed=3):
    """One training step (forward and backward); the output and every gradient."""
    tensors = parameters(library, f"{model}_fwd", pre, seed)
    out, = autograd.run(library, model, pre, **tensors)
    weight = torch.sin(torch.arange(out.numel(), dtype=torch.float32)).reshape(out.shape)
    (out * weight).sum().backward()
    return [out.detach().clone()] + [t.grad.clone() for t in tensors.values()]


def same(a, b):
    return all(relative_error(y.numpy(), x.numpy()) < SAME for x, y in zip(a, b))


def measured_peak(library, model, pre):
    library.peak_temporary_bytes(reset=True)
    result = step(library, model, pre)
    return library.peak_temporary_bytes(), result


@pytest.mark.parametrize("model", ["rgat", "hgt"])
def test_cap_below_the_peak_raises_frees_and_recovers(libraries, pre, model):
    library = libraries[model]
    library.set_temporary_cap(None)
    peak, reference = measured_peak(library, model, pre)
    assert peak > 0
    before = library.temporary_bytes()
    assert before == 0
    cap = peak // 2
    with library.capped(cap):
        assert library.temporary_cap() == cap
        with pytest.raises(compiled.TemporaryMemoryError) as failure:
            step(library, model, pre)
        assert library.temporary_bytes() == before
        # Still refused, and still nothing left behind.
        with pytest.raises(MemoryError):
            step(library, model, pre)
        assert library.temporary_bytes() == before
    assert library.temporary_cap() is None
    message = str(failure.value)
    assert failure.value.status == 8  # HECTOR_ERROR_OUT_OF_MEMORY
    assert message.startswith(f"{model}_fwd(): ") or message.startswith(f"{model}_bwd(): ")
    match = REFUSED.search(message)
    assert match, message
    requested, reported_cap, in_use = map(int, match.groups())
    assert reported_cap == cap and in_use + requested > cap, message
    assert same(reference, step(library, model, pre))
    assert library.temporary_bytes() == before


@pytest.mark.parametrize("model", ["rgat", "hgt"])
def test_walking_the_cap_up_to_the_peak(libraries, pre, model, one_thread):
    library = libraries[model]
    library.set_temporary_cap(None)
    peak, reference = measured_peak(library, model, pre)
    cap, failures = 0, 0
    while True:
        library.set_temporary_cap(cap)
        try:
            result = step(library, model, pre)
            break
        except compiled.TemporaryMemoryError as err:
            failures += 1
            assert library.temporary_bytes() == 0, (cap, str(err))
            requested, reported_cap, in_use = map(int, REFUSED.search(str(err)).groups())
            assert reported_cap == cap and in_use + requested > cap
            cap = in_use + requested
        assert failures < 1000
    # Every allocation that raised the peak failed once, at its own point.
    assert failures >= 3
    assert cap == peak
    assert same(reference, result)
    library.set_temporary_cap(peak - 1)
    with pytest.raises(compiled.TemporaryMemoryError):
        step(library, model, pre)
    assert library.temporary_bytes() == 0
    library.set_temporary_cap(peak)
    library.peak_temporary_bytes(reset=True)
    assert same(reference, step(library, model, pre))
    assert library.peak_temporary_bytes() == peak
    library.set_temporary_cap(None)


def inference_arguments(library, model, pre, seed):
    entry = library[model]
    rng = np.random.default_rng(seed)
    symbols = {k: int(getattr(pre, k)) for k in ("N", "E", "T", "R", "P")}
    arrays = pre.arrays()
    values = {}
    for arg in entry.arguments:
        if arg.name in arrays:
            values[arg.name] = arrays[arg.name]
            continue
        shape = autograd._shape(entry, arg, symbols)
        if arg.role == "output":
            values[arg.name] = np.zeros(shape, np.float32)
        else:
            values[arg.name] = (rng.standard_normal(shape) * 0.3).astype(np.float32)
    return entry, values


def test_threads_share_the_cap(libraries, pre, monkeypatch):
    monkeypatch.setenv("HECTOR_NUM_THREADS", "2")
    library = libraries["rgat"]
    library.set_temporary_cap(None)
    entry, values = inference_arguments(library, "rgat", pre, seed=5)
    output = next(a.name for a in entry.arguments if a.role == "output")
    library.peak_temporary_bytes(reset=True)
    entry(**values)
    one_call = library.peak_temporary_bytes()
    reference = values[output].copy()

    def run(cap, threads=6, calls=8):
        outcomes = []

        def worker():
            for _ in range(calls):
                mine = dict(values, **{output: np.zeros_like(reference)})
                try:
                    entry(**mine)
                except compiled.TemporaryMemoryError as err:
                    outcomes.append(("refused", str(err)))
                else:
                    outcomes.append(("ran", relative_error(mine[output], reference)))

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return outcomes

    # No cap: every call runs, right.
    outcomes = run(None)
    assert all(kind == "ran" and error < SAME for kind, error in outcomes)
    # Room for one call and a half: calls that overlap may be refused, and
    # each thread sees only its own failures.
    cap = one_call * 3 // 2
    library.set_temporary_cap(cap)
    library.peak_temporary_bytes(reset=True)
    outcomes = run(cap)
    library.set_temporary_cap(None)
    assert len(outcomes) == 48
    for kind, detail in outcomes:
        if kind == "ran":
            assert detail < SAME
        else:
            assert detail.startswith("rgat(): ") and REFUSED.search(detail), detail
    assert any(kind == "ran" for kind, _ in outcomes)
    assert library.peak_temporary_bytes() <= cap
    assert library.temporary_bytes() == 0


# A loop whose iterations each allocate a buffer (as the CPU GEMM's private
# accumulators do), below an allocation of the function's own.
LOOP = """
func.func @loop(%x: memref<?xf32> {hector.arg = {role = "input", name = "x", shape = ["N"]}},
                %y: memref<?xf32> {hector.arg = {role = "output", name = "y", shape = ["N"]}})
    attributes {hector.entry, llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %h = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %t = memref.alloc() : memref<1024xf32>
    %v = memref.load %x[%i] : memref<?xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %t[%c0] : memref<1024xf32>
    %u = memref.load %t[%c0] : memref<1024xf32>
    memref.store %u, %h[%i] : memref<?xf32>
    memref.dealloc %t : memref<1024xf32>
    scf.reduce
  }
  memref.copy %h, %y : memref<?xf32> to memref<?xf32>
  memref.dealloc %h : memref<?xf32>
  return
}
"""


def test_refused_in_a_parallel_loop(tmp_path, monkeypatch):
    monkeypatch.setenv("HECTOR_NUM_THREADS", "2")
    library = compiled.load(build(tmp_path, LOOP, "--target=cpu", name="libloop.so"))
    n = 4096
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    # The function's buffer fits, no iteration's does.
    library.set_temporary_cap(n * 4 + 1000)
    with pytest.raises(compiled.TemporaryMemoryError) as failure:
        library.loop(x, y)
    assert "loop(): a temporary buffer of 4096 bytes" in str(failure.value)
    assert library.temporary_bytes() == 0
    # Room for the function's buffer and both threads' iteration buffers.
    library.set_temporary_cap(n * 4 + 2 * 4096)
    library.loop(x, y)
    np.testing.assert_array_equal(y, 2 * x)
    assert library.temporary_bytes() == 0
    # The thread's status was cleared: the next call runs too.
    y[:] = 0
    library.loop(x, y)
    np.testing.assert_array_equal(y, 2 * x)


def fresh_copy(library, directory):
    """The library under another name: a new instance, which reads
    $HECTOR_TEMPORARY_CAP again at its first allocation."""
    path = str(directory / "libcopy.so")
    shutil.copy(library.path, path)
    shutil.copy(library.manifest_path, path + ".json")
    return compiled.load(path)


def test_environment_variable(libraries, pre, tmp_path, monkeypatch):
    monkeypatch.setenv(_memory.TEMPORARY_CAP_ENV, "1K")
    library = fresh_copy(libraries["rgat"], tmp_path)
    assert library.temporary_cap() == 1024
    refused = r"rgat_(fwd|bwd)\(\): .* the cap on this library's temporaries: 1024 bytes"
    with pytest.raises(compiled.TemporaryMemoryError, match=refused):
        step(library, "rgat", pre)
    assert library.temporary_bytes() == 0
    library.set_temporary_cap(None)
    step(library, "rgat", pre)


def test_malformed_environment_variable(libraries, pre, tmp_path, monkeypatch):
    monkeypatch.setenv(_memory.TEMPORARY_CAP_ENV, "lots")
    library = fresh_copy(libraries["rgat"], tmp_path)
    assert library.temporary_cap() == 0
    with pytest.raises(compiled.LaunchError) as failure:
        step(library, "rgat", pre)
    assert failure.value.status == 1  # HECTOR_ERROR_INVALID_ARGUMENT
    assert not isinstance(failure.value, MemoryError)
    assert "$HECTOR_TEMPORARY_CAP = 'lots' is not a number of bytes" in str(failure.value)
    assert library.temporary_bytes() == 0
    library.set_temporary_cap(None)
    step(library, "rgat", pre)


def test_bad_caps_are_refused(libraries):
    library = libraries["rgat"]
    with pytest.raises(TypeError, match="number of bytes or None"):
        library.set_temporary_cap("1G")
    with pytest.raises(TypeError):
        library.set_temporary_cap(1.5)
    with pytest.raises(ValueError, match="out of range"):
        library.set_temporary_cap(-1)
    with pytest.raises(ValueError, match="out of range"):
        library.set_temporary_cap(2**64 - 1)
    assert library.set_temporary_cap(None) is None
    assert library.set_temporary_cap(0) is None
    assert library.set_temporary_cap(None) == 0


def test_cuda_runtime_cap_functions():
    """The CUDA runtime's side, without a GPU: the cap is set, read and
    cleared; nothing is held. (Its refusals need a GPU: test/gpu.)"""
    from hector import _runtime

    try:
        _runtime.load()
    except _runtime.RuntimeLibraryNotFound as err:
        pytest.fail(str(err))
    previous = _runtime.temporary_cap()
    try:
        _runtime.set_temporary_cap(12345)
        assert _runtime.temporary_cap() == 12345
        _runtime.set_temporary_cap(None)
        assert _runtime.temporary_cap() is None
        assert _runtime.temporary_bytes() == 0
        with pytest.raises(ValueError):
            _runtime.set_temporary_cap(-5)
    finally:
        _runtime.set_temporary_cap(previous)


@pytest.mark.parametrize("text, cap", [("3M", 3 << 20), ("0", 0), ("", None), ("12x", 0)])
def test_cuda_runtime_reads_the_environment_variable(text, cap):
    import os
    import subprocess
    import sys

    from hectorc_support import REPO

    code = "from hector import _runtime; print(_runtime.temporary_cap())"
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    env[_memory.TEMPORARY_CAP_ENV] = text
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(cap)


def test_python_names_the_variable_of_the_header():
    """_memory.TEMPORARY_CAP_ENV and NO_TEMPORARY_CAP are temporaries.h's."""
    import os

    from hectorc_support import REPO

    with open(os.path.join(REPO, "runtime", "include", "hector", "temporaries.h")) as f:
        header = f.read()
    assert f'#define HECTOR_TEMPORARY_CAP_ENV "{_memory.TEMPORARY_CAP_ENV}"' in header
    assert "#define HECTOR_NO_TEMPORARY_CAP UINT64_MAX" in header
    assert compiled.NO_TEMPORARY_CAP == 2**64 - 1

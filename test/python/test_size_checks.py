"""Sizes checked before allocating (issue 16, finding 6): a request whose
arrays can not fit in the memory available raises MemoryError saying what
was asked and how many bytes it needs, instead of allocating and
zero-filling until the OOM killer ends the process.

Every huge request runs in a child process whose address space is capped
(RLIMIT_AS), so that the test itself can never take the machine's memory,
fixed or not; $HECTOR_MEMORY_LIMIT pins the memory the checks see, so that
the outcome does not depend on the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hector import _memory, graph

ADDRESS_SPACE = 6 << 30  # the children's cap: torch and the runtime need ~2 GiB
HUGE_R = 2**31 - 1


def run_capped(code: str, limit: str = "8G"):
    """Runs `code` in a child with RLIMIT_AS capped and HECTOR_MEMORY_LIMIT = `limit`."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    env = dict(os.environ)
    env[_memory.ENV_VAR] = limit
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], preexec_fn=cap,
                          env=env, capture_output=True, text=True, timeout=300)


def expect_memory_error(result, *phrases):
    assert result.returncode == 0, (result.returncode, result.stderr[-3000:])
    message = result.stdout
    assert message.startswith("MemoryError: "), message
    for phrase in phrases:
        assert phrase in message, (phrase, message)
    return message


# ---- hector.graph.preprocess --------------------------------------------------------

PREPROCESS = """
    import numpy as np
    from hector import graph
    try:
        graph.preprocess(np.zeros(5, np.int64), [0, 1, 2, 3], [1, 2, 3, 4], [0, 0, 1, 1],
                         {t}, {r}{device})
    except MemoryError as err:
        print("MemoryError:", err)
    else:
        print("no error")
"""


@pytest.mark.parametrize("device", ["", ", device='cpu'"], ids=["runtime", "torch"])
def test_preprocess_of_a_huge_num_edge_types(device):
    """The finding: a 5-node graph with num_edge_types = 2^31 - 1 (allowed)
    needs several R-sized arrays, 16 GiB and more."""
    if device:
        pytest.importorskip("torch")
    result = run_capped(PREPROCESS.format(t=1, r=HUGE_R, device=device))
    message = expect_memory_error(result, "N = 5, E = 4", "num_node_types = 1",
                                  f"num_edge_types = {HUGE_R}", "bytes",
                                  "8.0 GiB (8589934592 bytes) available (set by "
                                  f"${_memory.ENV_VAR})")
    need = graph.host_bytes(5, 4, 1, HUGE_R) if not device else None
    if need is not None:
        assert f"({need} bytes)" in message


@pytest.mark.parametrize("device", ["", ", device='cpu'"], ids=["runtime", "torch"])
def test_preprocess_of_a_huge_num_node_types(device):
    if device:
        pytest.importorskip("torch")
    result = run_capped(PREPROCESS.format(t=HUGE_R, r=2, device=device))
    expect_memory_error(result, f"num_node_types = {HUGE_R}", "num_edge_types = 2")


def test_what_fits_still_builds():
    result = run_capped(PREPROCESS.format(t=1, r=1 << 20, device=""), limit="1G")
    assert result.returncode == 0 and result.stdout.strip() == "no error", result.stderr


def test_host_bytes_is_a_lower_bound_of_the_outputs():
    rng = np.random.default_rng(0)
    n, e, t, r = 50, 400, 3, 7
    pre = graph.preprocess(rng.integers(0, t, n), rng.integers(0, n, e), rng.integers(0, n, e),
                           rng.integers(0, r, e), t, r)
    outputs = sum(a.nbytes for a in pre.arrays().values())
    assert 2 * outputs <= graph.host_bytes(n, e, t, r) + 4 * pre.P  # compact_src: P <= E


# ---- the C ABI: the runtime checks too ----------------------------------------------------

C_ABI = """
    import ctypes, numpy as np
    from hector import graph
    lib = graph._lib()
    node_type = np.zeros(5, np.int64)
    ids = np.array([0, 1, 2, 3], np.int64)
    arr = lambda a: graph._IndexArray(a.ctypes.data, a.size, 8, 0)
    g = graph._GraphInput(arr(node_type), arr(ids), arr(ids + 1), arr(ids % 2), {t}, {r})
    out = ctypes.c_void_p()
    status = lib.hector_graph_build(ctypes.byref(g), ctypes.byref(out))
    print(lib.hector_status_name(status).decode(), lib.hector_last_error().decode())
"""


def test_hector_graph_build_refuses_what_can_not_fit():
    """A C caller of hector_graph_build (no Python check in front) gets
    OUT_OF_MEMORY and the sizes, and nothing is allocated."""
    result = run_capped(C_ABI.format(t=1, r=HUGE_R))
    assert result.returncode == 0, result.stderr[-3000:]
    status, _, message = result.stdout.strip().partition(" ")
    assert status == "HECTOR_ERROR_OUT_OF_MEMORY", result.stdout
    assert f"N = 5, E = 4, num_node_types = 1, num_edge_types = {HUGE_R}" in message
    assert "(8.0 GiB) available (set by $HECTOR_MEMORY_LIMIT)" in message
    assert "needs at least" in message and "bytes" in message


def test_hector_graph_build_rejects_a_malformed_limit():
    result = run_capped(C_ABI.format(t=1, r=3), limit="lots")
    assert result.stdout.startswith("HECTOR_ERROR_INVALID_ARGUMENT"), result.stdout
    assert "HECTOR_MEMORY_LIMIT = 'lots'" in result.stdout


# ---- hector.nn constructors ----------------------------------------------------------

LAYER = """
    import hector.nn as hnn
    try:
        hnn.{call}
    except MemoryError as err:
        print("MemoryError:", err)
    else:
        print("no error")
"""


@pytest.mark.parametrize("call,phrases", [
    # 13 GiB of relation weights: allocated and filled, it would be OOM-killed
    # on a 16 GiB machine.
    ("RGCNConv(256, 256, 50_000)", ["RGCNConv(in_channels=256, out_channels=256, "
                                    "num_relations=50000", "[50000, 256, 256]"]),
    ("RGCNConv(16, 16, 2**31 - 1)", ["num_relations=2147483647"]),
    ("RGCNConv(4096, 4096, 200, num_bases=2)", ["num_bases=2", "[200, 4096, 4096]"]),
    ("RGATConv(1 << 20, 1 << 20, 1)", ["RGATConv(in_channels=1048576, out_channels=1048576"]),
    ("RGATConv(64, 64, 100, heads=10_000)", ["heads=10000"]),
    ("HGTConv(1 << 16, 1 << 16, (['a'], [('a', 'r', 'a')]))",
     ["HGTConv(in_channels=65536, out_channels=65536", "1 node types", "[1, 65536, 65536]"]),
])
def test_layers_refuse_parameters_that_can_not_fit(call, phrases):
    pytest.importorskip("torch")
    result = run_capped(LAYER.format(call=call))
    expect_memory_error(result, *phrases, "bytes", "8.0 GiB")


def test_layers_that_fit_are_built():
    pytest.importorskip("torch")
    result = run_capped(LAYER.format(call="RGCNConv(64, 64, 100)"), limit="16M")
    assert result.stdout.strip() == "no error", (result.stdout, result.stderr[-2000:])


# ---- where the available memory comes from -------------------------------------------------

def test_available_host_memory(monkeypatch):
    monkeypatch.delenv(_memory.ENV_VAR, raising=False)
    available, how = _memory.host_available()
    total = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(("MemTotal:", "SwapTotal:")):
                total += int(line.split()[1]) * 1024
    assert available is not None and 0 < available <= total, (available, how)


@pytest.mark.parametrize("text,value", [("123", 123), ("8G", 8 << 30), ("16m", 16 << 20),
                                        ("2T", 2 << 40), ("  5K ", 5 << 10)])
def test_limit_variable(monkeypatch, text, value):
    monkeypatch.setenv(_memory.ENV_VAR, text)
    assert _memory.host_available() == (value, f"${_memory.ENV_VAR}")


@pytest.mark.parametrize("text", ["lots", "8GB", "-1", "1.5G"])
def test_malformed_limit_variable(monkeypatch, text):
    monkeypatch.setenv(_memory.ENV_VAR, text)
    with pytest.raises(ValueError, match=_memory.ENV_VAR):
        _memory.check_host("x", 1)


def test_small_requests_look_nothing_up(monkeypatch):
    monkeypatch.delenv(_memory.ENV_VAR, raising=False)
    monkeypatch.setattr(_memory, "host_available", lambda: pytest.fail("looked up"))
    _memory.check_host("a small request", 1 << 20)

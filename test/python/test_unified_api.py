"""hector.unified's Python surface without a GPU: argument checks, the
placement-rule dispatch of torch functions, and a clear error when no GPU is
there. (Gathers themselves are tested on a GPU: test/gpu/test_unified_gather.py.)"""

import pytest

torch = pytest.importorskip("torch")

from hector import _runtime  # noqa: E402
from hector.unified import UnifiedTensor, _row_layout, check_index, unified  # noqa: E402

from test_unified_support import cuda_driver_present, runtime_library  # noqa: E402


def fake_unified(host, device="cuda:0"):
    """A UnifiedTensor that skips registration, to test dispatch without a GPU."""
    u = object.__new__(UnifiedTensor)
    u.host, u.device, u.check, u.sort = host, torch.device(device), True, None
    return u


@pytest.mark.parametrize("bad", [[1, 2, 3], 3.0, None, "rows"])
def test_non_tensors_are_refused(bad):
    with pytest.raises(TypeError, match="expects a torch.Tensor"):
        unified(bad)


def test_tensors_that_cannot_be_unified():
    with pytest.raises(ValueError, match="read-only inputs"):
        unified(torch.zeros(4, 3, requires_grad=True), device=0)
    with pytest.raises(ValueError, match="at least one dimension"):
        unified(torch.tensor(1.0), device=0)
    with pytest.raises(ValueError, match="not contiguous"):
        unified(torch.zeros(8, 6)[:, ::2], device=0)
    with pytest.raises(ValueError, match="not contiguous"):
        unified(torch.zeros(6, 8).t(), device=0)
    with pytest.raises(ValueError, match="overlap"):
        unified(torch.zeros(1, 5).expand(4, 5), device=0)
    with pytest.raises(ValueError, match="CUDA device"):
        unified(torch.zeros(4, 3), device="cpu")
    with pytest.raises(TypeError, match="strided"):
        unified(torch.eye(3).to_sparse(), device=0)


def test_row_layouts():
    t = torch.zeros(10, 3, 5, dtype=torch.float16)
    assert _row_layout(t) == (10, 30, 30)
    assert _row_layout(t[::2]) == (5, 30, 60)        # strided rows are fine
    assert _row_layout(t[3:4]) == (1, 30, 30)
    assert _row_layout(torch.zeros(7, dtype=torch.int8)) == (7, 1, 1)
    assert _row_layout(torch.zeros(0, 4)) == (0, 16, 16)
    assert _row_layout(torch.zeros(4, 1, 3)[:, :, :]) == (4, 12, 12)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_no_gpu_is_a_clear_error(tmp_path_factory):
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        unified(torch.zeros(4, 3))
    if cuda_driver_present():
        pytest.skip("a CUDA driver is installed here")
    runtime_library(tmp_path_factory)
    with pytest.raises(_runtime.HectorRuntimeError, match="libcuda.so.1") as e:
        unified(torch.zeros(4, 3), device=0)
    assert e.value.status == _runtime.NO_DRIVER


def test_index_checks():
    dev = torch.device("cuda", 0)
    with pytest.raises(TypeError, match="CUDA integer tensor"):
        check_index([1, 2], dev)
    with pytest.raises(TypeError, match="CUDA integer tensor"):
        check_index(slice(0, 3), dev)
    with pytest.raises(TypeError, match="boolean masks"):
        check_index(torch.zeros(3, dtype=torch.bool), dev)
    with pytest.raises(TypeError, match="int64 or torch.int32"):
        check_index(torch.zeros(3, dtype=torch.float32), dev)
    with pytest.raises(TypeError, match="int64 or torch.int32"):
        check_index(torch.zeros(3, dtype=torch.int16), dev)
    with pytest.raises(ValueError, match="CUDA index tensor"):
        check_index(torch.zeros(3, dtype=torch.int64), dev)


def test_indexing_with_cpu_or_python_indices_is_refused():
    u = fake_unified(torch.arange(12.0).reshape(4, 3))
    with pytest.raises(ValueError, match="u.host\\[index\\]"):
        u[torch.tensor([0, 1])]
    with pytest.raises(TypeError, match="slices, ints and tuples"):
        u[1:3]
    with pytest.raises(TypeError, match="slices, ints and tuples"):
        u[0]


def test_tensor_like_surface():
    u = fake_unified(torch.zeros(5, 2, 3, dtype=torch.bfloat16))
    assert u.shape == (5, 2, 3) and u.dtype == torch.bfloat16
    assert u.device == torch.device("cuda", 0) and u.is_unified
    assert len(u) == 5 and u.dim() == 3 and u.numel() == 30 and u.element_size() == 2
    assert u.size() == (5, 2, 3) and u.size(1) == 2
    assert "host-resident" in repr(u)


def test_placement_rule_dispatch():
    u = fake_unified(torch.arange(12.0).reshape(4, 3))
    cpu_idx = torch.tensor([0, 2])
    # Supported ops reach the gather (which then refuses the CPU index).
    with pytest.raises(ValueError, match="CUDA index tensor"):
        torch.index_select(u, 0, cpu_idx)
    with pytest.raises(ValueError, match="CUDA index tensor"):
        torch.index_select(u, dim=0, index=cpu_idx)
    with pytest.raises(ValueError, match="CUDA index tensor"):
        torch.nn.functional.embedding(cpu_idx, u)
    with pytest.raises(ValueError, match="dim must be 0"):
        torch.index_select(u, 1, cpu_idx)
    with pytest.raises(TypeError, match="default options"):
        torch.nn.functional.embedding(cpu_idx, u, padding_idx=0)
    # Anything else is a clear TypeError, never a silent CPU computation.
    for op in (lambda: torch.add(u, 1), lambda: torch.ones(3) + u, lambda: torch.matmul(u, torch.ones(3)),
               lambda: torch.cat([u, u])):
        with pytest.raises(TypeError, match="not supported on a hector UnifiedTensor"):
            op()


def test_when_gathers_sort_their_indices():
    from hector.unified import SORT_MIN_ROWS, SORT_MIN_TABLE_BYTES, sorts_rows

    big = SORT_MIN_TABLE_BYTES
    assert sorts_rows(SORT_MIN_ROWS, big) and sorts_rows(1 << 20, 8 * big)
    assert not sorts_rows(SORT_MIN_ROWS - 1, 8 * big)  # too short to hide the sort
    assert not sorts_rows(1 << 20, big - 1)  # small tables translate cheaply
    assert not sorts_rows(0, 0)


def test_host_empty():
    from hector.unified import host_empty

    t = host_empty((5, 7), torch.float32)
    assert t.shape == (5, 7) and t.dtype == torch.float32 and t.device.type == "cpu"
    t.fill_(3.0)
    assert float(t.sum()) == 105.0
    assert host_empty(10, torch.int8).shape == (10,)
    assert host_empty((0, 4)).shape == (0, 4)
    assert host_empty((4, 4), torch.bfloat16, huge_pages=False).is_contiguous()


def test_released_memory_outlives_page_sharing_registrations(monkeypatch):
    # With a fake runtime: a released tensor stays referenced while another
    # live registration shares one of its pages (that registration may be
    # mapped through the released one's pinned pages).
    import gc
    import importlib

    # The module, not the `hector.unified` function the package exports.
    hu = importlib.import_module("hector.unified")
    # Unified tensors left by earlier tests must be finalized now, not inside
    # this test's collections, where they would unregister through the fakes.
    gc.collect()

    calls = []
    monkeypatch.setattr(hu._runtime, "host_register", lambda p, n, d: calls.append(("reg", p, n)) or p)
    monkeypatch.setattr(hu._runtime, "host_unregister", lambda p, n: calls.append(("unreg", p, n)))
    monkeypatch.setattr(hu, "_registrations", {})
    import mmap

    # Slices at fixed offsets from a page boundary, so that a and b always
    # share a page and far never does (a tensor is only 64-byte aligned).
    store = torch.zeros(4096 + mmap.PAGESIZE // 4)
    base = (-store.data_ptr() % mmap.PAGESIZE) // 4
    a, b, far = (store[base:base + 100], store[base + 200:base + 300],
                 store[base + 3000:base + 3100])
    ua, ub, uf = unified(a.view(10, 10), device=0), unified(b.view(10, 10), device=0), \
        unified(far.view(10, 10), device=0)
    assert [c[0] for c in calls] == ["reg"] * 3 and len(hu._registrations) == 3
    del ua
    gc.collect()
    assert calls[-1] == ("unreg", a.data_ptr(), 400)
    assert len(hu._registrations) == 3   # b shares a's page: a is kept
    del uf
    gc.collect()
    assert len(hu._registrations) == 2   # far shares no page with a live one
    del ub
    gc.collect()
    assert hu._registrations == {}

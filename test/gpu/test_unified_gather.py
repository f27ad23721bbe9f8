"""GPU tests of hector.unified's zero-copy gather against plain indexing.

Needs a CUDA GPU and a built runtime (HECTOR_RUNTIME_LIB or build-rt/):
    python3 -m pytest test/gpu/test_unified_gather.py
Not collected by CI (CI runs test/python only).
"""

import ctypes

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import gpu_paths  # noqa: E402,F401  (sets the import paths)

from hector import _runtime  # noqa: E402
from hector.unified import UnifiedTensor, unified  # noqa: E402

DEV = torch.device("cuda", 0)
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int32, torch.int64]
GEN = torch.Generator().manual_seed(1234)


def random_rows(rows, cols, dtype, offset=0):
    """rows x cols of random values whose first byte sits `offset` bytes past
    a 64-byte aligned allocation (so the base is unaligned on purpose)."""
    item = torch.empty((), dtype=dtype).element_size()
    assert offset % item == 0
    n = rows * cols + offset // item
    if dtype.is_floating_point:
        flat = torch.randn(n, generator=GEN).to(dtype)
    else:
        info = torch.iinfo(dtype)
        lo, hi = max(info.min, -(1 << 30)), min(info.max, 1 << 30)
        flat = torch.randint(lo, hi, (n,), generator=GEN, dtype=torch.int64).to(dtype)
    return flat[offset // item:].view(rows, cols)


def rand_index(rows, n, dtype=torch.int64):
    return torch.randint(0, rows, (n,), generator=GEN).to(dtype)


def assert_same(got, ref):
    assert got.device.type == "cuda"
    assert got.dtype == ref.dtype and got.shape == ref.shape
    # Bit-exact: a gather moves bytes, it never rounds.
    assert torch.equal(got.cpu().view(torch.uint8), ref.contiguous().view(torch.uint8))


def poisoned(shape, dtype):
    """An output buffer full of 0xA5 bytes: unwritten elements show up."""
    out = torch.empty(shape, dtype=dtype, device=DEV)
    out.view(torch.uint8).fill_(0xA5)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cols", [1, 3, 8, 33, 64, 255, 512, 513, 1031])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("sort", [False, True])
def test_every_row_type(dtype, cols, index_dtype, sort):
    t = random_rows(997, cols, dtype)
    u = unified(t)
    idx = rand_index(997, 1500, index_dtype)
    out = u.gather(idx.to(DEV), out=poisoned((1500, cols), dtype), sort=sort)
    assert_same(out, t[idx.long()])


@pytest.mark.parametrize("row_bytes", list(range(2048, 2077, 4)))
@pytest.mark.parametrize("offset", [0, 4, 8, 12, 64])
@pytest.mark.parametrize("sort", [False, True])
def test_row_size_sweep_2048_to_2076(row_bytes, offset, sort):
    t = random_rows(3001, row_bytes // 4, torch.float32, offset)
    u = unified(t, sort=sort)
    idx = rand_index(3001, 4096)
    assert_same(u[idx.to(DEV)], t[idx])


@pytest.mark.parametrize("row_bytes", [1, 2, 3, 5, 7, 15, 17, 31, 33, 127, 129, 255, 257,
                                       1023, 2049, 4095, 4097, 8191, 20001])
@pytest.mark.parametrize("offset", [0, 1, 7, 13])
@pytest.mark.parametrize("sort", [False, True])
def test_odd_byte_sizes_and_offsets(row_bytes, offset, sort):
    # int8 rows: any size, any base; >4 KB rows go in several staging tiles.
    t = random_rows(517, row_bytes, torch.int8, offset)
    idx = rand_index(517, 700)
    assert_same(unified(t, sort=sort)[idx.to(DEV)], t[idx])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cols", [1, 7, 127, 1025])
@pytest.mark.parametrize("offset", [2, 6, 14])
def test_half_rows_of_odd_length_at_odd_offsets(dtype, cols, offset):
    t = random_rows(300, cols, dtype, offset)
    idx = rand_index(300, 333)
    assert_same(unified(t)[idx.to(DEV)], t[idx])


@pytest.mark.parametrize("cols", [4, 64, 512, 513])
def test_all_kernel_paths_agree(cols):
    t = random_rows(2000, cols, torch.float32)
    u = unified(t)
    idx = rand_index(2000, 3000).to(DEV)
    ref = t[idx.cpu()]
    for flags in (0, _runtime.GATHER_FORCE_GENERAL, _runtime.GATHER_NAIVE):
        assert_same(u.gather(idx, out=poisoned((3000, cols), torch.float32), _flags=flags), ref)


def test_empty_index_and_empty_rows():
    t = random_rows(10, 16, torch.float32)
    u = unified(t)
    out = u[torch.empty(0, dtype=torch.int64, device=DEV)]
    assert out.shape == (0, 16) and out.device.type == "cuda"
    z = unified(torch.empty(10, 0))
    assert z[torch.tensor([1, 2], device=DEV)].shape == (2, 0)
    e = unified(torch.empty(0, 5))
    assert e[torch.empty(0, dtype=torch.int64, device=DEV)].shape == (0, 5)
    with pytest.raises(IndexError):
        e[torch.tensor([0], device=DEV)]


def test_duplicates_and_index_shapes():
    t = random_rows(50, 9, torch.float32)
    u = unified(t)
    idx = torch.tensor([[3, 3, 3], [49, 0, 3]])
    assert_same(u[idx.to(DEV)], t[idx])
    assert_same(u[torch.tensor(7, device=DEV)], t[torch.tensor(7)])
    assert_same(u[torch.full((1000,), 11, device=DEV)], t[torch.full((1000,), 11)])


def test_negative_indices_follow_torch_indexing():
    t = random_rows(40, 6, torch.int32)
    u = unified(t)
    idx = torch.tensor([-1, -40, 0, 39, -7])
    assert_same(u[idx.to(DEV)], t[idx])
    # index_select and embedding do not wrap, like torch.
    with pytest.raises(IndexError):
        torch.index_select(u, 0, idx.to(DEV))


@pytest.mark.parametrize("bad", [40, 41, 1 << 40, -41, -(1 << 50)])
@pytest.mark.parametrize("sort", [False, True])
def test_out_of_range_is_an_error_not_a_crash(bad, sort):
    t = random_rows(40, 300, torch.float32)
    u = unified(t, sort=sort)
    idx = torch.tensor([1, 2, bad, 5, bad, 7], device=DEV)
    with pytest.raises(IndexError, match="out of range") as e:
        u[idx]
    assert e.value.position == 2 and e.value.index == bad
    # Unchecked: asynchronous, bad rows come back as zeros, good rows right.
    out = u.gather(idx, check=False, wrap_negative=True)
    torch.cuda.synchronize()
    good = torch.tensor([0, 1, 3, 5])
    assert_same(out[good.to(DEV)], t[idx.cpu()[good]])
    assert torch.count_nonzero(out[2]).item() == 0 and torch.count_nonzero(out[4]).item() == 0
    # The device is fine afterwards.
    assert_same(u[torch.tensor([0, 39], device=DEV)], t[[0, 39]])


def test_int32_out_of_range():
    u = unified(random_rows(10, 4, torch.int64))
    with pytest.raises(IndexError) as e:
        u[torch.tensor([0, 10], dtype=torch.int32, device=DEV)]
    assert e.value.position == 1 and e.value.index == 10


def test_torch_functions_follow_the_placement_rule():
    t = random_rows(100, 32, torch.bfloat16)
    u = unified(t)
    idx = rand_index(100, 77)
    assert_same(torch.index_select(u, 0, idx.to(DEV)), t.index_select(0, idx))
    assert_same(u.index_select(0, idx.to(DEV)), t.index_select(0, idx))
    emb_idx = rand_index(100, 12).view(3, 4)
    assert_same(torch.nn.functional.embedding(emb_idx.to(DEV), u),
                torch.nn.functional.embedding(emb_idx, t))
    with pytest.raises(TypeError, match="not supported"):
        torch.add(u, 1)
    with pytest.raises(ValueError, match="CUDA index tensor"):
        u[idx]


def test_strided_rows_and_pinned_tensors():
    base = random_rows(200, 24, torch.float32)
    view = base[::3]
    idx = rand_index(len(view), 90)
    assert_same(unified(view)[idx.to(DEV)], view[idx])
    pinned = random_rows(64, 40, torch.float16).pin_memory()
    idx = rand_index(64, 50)
    assert_same(unified(pinned)[idx.to(DEV)], pinned[idx])


def test_shared_pages_and_lifetimes():
    # Small tensors share pages; wrap the same memory several times and drop
    # the wrappers in an order that would unpin live memory without refcounts.
    ts = [random_rows(5 + i, 3, torch.float32) for i in range(20)]
    us = [unified(t) for t in ts]
    again = unified(ts[3])
    half = unified(ts[3][2:])
    for k in range(0, 20, 2):
        us[k] = None
    for k in range(1, 20, 2):
        idx = rand_index(len(ts[k]), 16)
        assert_same(us[k][idx.to(DEV)], ts[k][idx])
    us[3] = None
    idx = rand_index(len(ts[3]), 16)
    assert_same(again[idx.to(DEV)], ts[3][idx])
    idx = rand_index(len(ts[3]) - 2, 16)
    assert_same(half[idx.to(DEV)], ts[3][2:][idx])


def test_host_writes_are_seen_without_recopy():
    t = random_rows(30, 8, torch.float32)
    u = unified(t)
    t[5] = 42.0
    assert_same(u[torch.tensor([5], device=DEV)], t[[5]])


def test_caller_stream():
    t = random_rows(5000, 256, torch.float32)
    u = unified(t, check=False)
    idx = rand_index(5000, 20000)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        idx_d = idx.to(DEV, non_blocking=False)
        out = u[idx_d]
    s.synchronize()
    assert_same(out, t[idx])


def test_wrong_device_index_and_out():
    u = unified(random_rows(10, 4, torch.float32))
    with pytest.raises(ValueError, match="out must be"):
        u.gather(torch.tensor([1], device=DEV), out=torch.empty(2, 4, device=DEV))
    with pytest.raises(TypeError, match="int64 or torch.int32"):
        u[torch.tensor([1.0], device=DEV)]


def test_mapped_allocation_and_raw_gather():
    # hector_host_alloc memory, gathered through the C ABI directly.
    rows, rb = 1000, 100
    host, dev = _runtime.host_alloc(rows * rb, 0)
    try:
        data = torch.randint(0, 255, (rows * rb,), generator=GEN, dtype=torch.uint8)
        ctypes.memmove(host, data.data_ptr(), rows * rb)
        idx = rand_index(rows, 555).to(DEV)
        out = torch.empty(555, rb, dtype=torch.uint8, device=DEV)
        desc = _runtime.GatherDesc(src=dev, src_rows=rows, src_stride=rb, row_bytes=rb,
                                   index=idx.data_ptr(), n_index=555, index_bytes=8,
                                   flags=_runtime.GATHER_CHECK, dst=out.data_ptr(),
                                   dst_stride=rb, device=0, reserved=0, stream=None)
        _runtime.gather(desc)
        assert_same(out, data.view(rows, rb)[idx.cpu()])
    finally:
        _runtime.host_free(host)


def raw_gather(u, idx, dst_index, out, flags=_runtime.GATHER_CHECK):
    """hector_gather through the C ABI with a scatter list."""
    desc = _runtime.GatherDesc(
        src=u._dev_ptr, src_rows=u._rows, src_stride=u._row_stride, row_bytes=u._row_bytes,
        index=idx.data_ptr(), n_index=idx.numel(), index_bytes=idx.element_size(),
        flags=flags, dst=out.data_ptr(), dst_stride=u._row_bytes, device=0, reserved=0,
        stream=None, dst_index=dst_index.data_ptr())
    _runtime.gather(desc)
    torch.cuda.synchronize()


@pytest.mark.parametrize("cols", [5, 64, 513])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("flags", [0, _runtime.GATHER_FORCE_GENERAL, _runtime.GATHER_NAIVE])
def test_scatter_list_sends_each_row_to_its_place(cols, index_dtype, flags):
    # dst[dst_index[i]] = src[index[i]], on every kernel path.
    t = random_rows(800, cols, torch.float32)
    u = unified(t)
    idx = rand_index(800, 1200, index_dtype).to(DEV)
    perm = torch.randperm(1200, generator=GEN).to(DEV)
    out = poisoned((1200, cols), torch.float32)
    raw_gather(u, idx, perm, out, flags | _runtime.GATHER_CHECK)
    ref = torch.empty(1200, cols)
    ref[perm.cpu()] = t[idx.cpu().long()]
    assert_same(out, ref)


def test_scatter_list_out_of_range_is_reported_never_written():
    t = random_rows(100, 32, torch.float32)
    u = unified(t)
    idx = rand_index(100, 64).to(DEV)
    perm = torch.arange(64, device=DEV)
    for bad in (64, -1, 1 << 45):
        dst_index = perm.clone()
        dst_index[9] = bad
        # A guard row after the output: nothing may be written past the end.
        buf = poisoned((65, 32), torch.float32)
        with pytest.raises(_runtime.HectorRuntimeError, match=r"dst_index\[9\]") as e:
            raw_gather(u, idx, dst_index, buf[:64])
        assert e.value.status == _runtime.INVALID_ARGUMENT
        assert torch.all(buf[64].view(torch.int32) == buf[9].view(torch.int32))
        keep = torch.tensor([i for i in range(64) if i != 9])
        assert_same(buf[:64][keep.to(DEV)], t[idx.cpu()[keep]])
    # A bad source index ranks before a bad scatter entry, and its position
    # is reported as the caller's (dst_index of the bad row).
    idx2 = idx.clone()
    idx2[5] = 100
    dst_index = perm.flip(0)
    dst_index[0] = 1000
    with pytest.raises(IndexError) as e:
        raw_gather(u, idx2, dst_index, poisoned((64, 32), torch.float32))
    assert e.value.position == 63 - 5 and e.value.index == 100


def test_sorted_gather_reports_the_lowest_bad_position():
    u = unified(random_rows(50, 8, torch.float32), sort=True)
    idx = torch.tensor([3, 70, 1, 60, -99, 2], device=DEV)
    with pytest.raises(IndexError) as e:
        u[idx]
    assert e.value.position == 1 and e.value.index == 70


def test_large_table_random_rows():
    t = random_rows(1 << 20, 64, torch.float32)  # 256 MB
    u = unified(t, check=True)
    idx = rand_index(1 << 20, 1 << 18)
    for sort in (None, False, True):
        assert_same(u.gather(idx.to(DEV), wrap_negative=True, sort=sort), t[idx])


def test_isinstance_surface():
    u = unified(random_rows(4, 4, torch.float32))
    assert isinstance(u, UnifiedTensor) and u.device == DEV
    assert _runtime.device_count() >= 1 and _runtime.device_name(0)


def test_neighbours_of_unified_tensors_still_copy():
    # Registrations cover exact byte ranges: unrelated tensors that share a
    # page with a unified one keep working with cudaMemcpy (torch .to()).
    ts = [random_rows(3 + i % 5, 7, torch.float32) for i in range(200)]
    us = [unified(t) for t in ts[::2]]
    for t in ts:
        assert torch.equal(t.to(DEV).cpu(), t)
        assert torch.equal(t.to(DEV, non_blocking=True).cpu(), t)
    for t, u in zip(ts[::2], us):
        idx = rand_index(len(t), 9)
        assert_same(u[idx.to(DEV)], t[idx])


def test_host_empty_huge_page_table():
    from hector.unified import host_empty

    t = host_empty((3000, 300), torch.float16)
    t.copy_(random_rows(3000, 300, torch.float16))
    idx = rand_index(3000, 5000)
    assert_same(unified(t)[idx.to(DEV)], t[idx])


def test_large_page_allocation():
    # hector_host_alloc_large_pages (CUDA VMM host memory), wrapped and mapped.
    rows, cols = 4096, 129
    nbytes = rows * cols * 4
    try:
        ptr = _runtime.host_alloc_large_pages(nbytes, 0)
    except _runtime.HectorRuntimeError as e:
        pytest.skip(f"no host VMM allocations here: {e}")
    try:
        buf = (ctypes.c_ubyte * nbytes).from_address(ptr)
        t = torch.frombuffer(buf, dtype=torch.uint8).view(torch.float32).view(rows, cols)
        t.copy_(random_rows(rows, cols, torch.float32))
        u = unified(t)
        idx = rand_index(rows, 3000)
        assert_same(u[idx.to(DEV)], t[idx])
        del u
    finally:
        _runtime.host_free_large_pages(ptr)

"""The runtime side of compiled offload (runtime/include/hector/offload.h) on
the CPU: hector_offload_evict and hector_offload_prefetch called through
ctypes the way a compiled entry point calls them, with numpy buffers as its
saved values. Round trips bit-identical on both tiers, the launch-status
error model, the fallback for a full host tier, a disk tier asked of a cache
without one, releases, and threads with bindings of their own."""

import ctypes
import threading

import numpy as np
import pytest

from hector import _runtime
from hector import tensor_cache as tc
from hector.tensor_cache import TensorCache

from test_unified_support import runtime_library

KIB, MIB = 1 << 10, 1 << 20
HOST, DISK = 0, 1


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    lib = runtime_library(tmp_path_factory)
    tc._lib()  # declares the offload functions
    lib.hector_launch_status.restype, lib.hector_launch_status.argtypes = ctypes.c_int, []
    lib.hector_launch_error.restype, lib.hector_launch_error.argtypes = ctypes.c_char_p, []
    lib.hector_launch_clear.restype, lib.hector_launch_clear.argtypes = None, []
    return lib


@pytest.fixture(autouse=True)
def clean_thread(raw):
    """Each test starts and ends with no binding and a clear launch status."""
    raw.hector_launch_clear()
    tc.offload_unbind()
    yield
    raw.hector_launch_clear()
    tc.offload_unbind()


def evict(raw, slot, value, tier=HOST):
    raw.hector_offload_evict(slot, tier, value.ctypes.data, value.nbytes)


def prefetch(raw, slot, like):
    """A prefetch and, as generated code places it before the value's first
    reader, its wait (the read may still run until then)."""
    out = np.empty_like(like)
    raw.hector_offload_prefetch(slot, out.ctypes.data, out.nbytes)
    raw.hector_offload_wait(slot)
    return out


def status(raw):
    return raw.hector_launch_status(), raw.hector_launch_error().decode()


def delta(before):
    after = tc.offload_stats()
    return {k: after[k] - before[k] for k in after}


# Odd sizes, a 4 KiB block and one past it, several 64 KiB chunks plus a tail.
SIZES = [0, 1, 7, 4095, 4097, 3 * 64 * KIB + 5]


@pytest.mark.parametrize("tier", [HOST, DISK])
def test_round_trip_is_bit_identical(raw, tmp_path, tier):
    rng = np.random.default_rng(tier)
    data = [rng.integers(0, 256, n, dtype=np.uint8) for n in SIZES]
    base = 1000
    before = tc.offload_stats()
    with TensorCache(64 * MIB, str(tmp_path), chunk_bytes=64 * KIB, io_threads=3,
                     checksum=True) as cache:
        with tc.bound(cache, base):
            for slot, v in enumerate(data):
                evict(raw, slot, v, tier)
            assert status(raw) == (0, "")
            cache.flush()
            for slot, v in enumerate(data):
                assert cache.where(base + slot) == ("disk" if tier == DISK and v.size else "host")
            for _ in range(2):  # the keys stay: a backward may run again
                for slot, v in enumerate(data):
                    np.testing.assert_array_equal(prefetch(raw, slot, v), v)
            assert status(raw) == (0, "")
        for slot in range(len(data)):
            tc.offload_release(cache, base + slot)
        assert cache.stats()["values"] == 0
    d = delta(before)
    name = "host" if tier == HOST else "disk"
    assert d[f"evicted_{name}_values"] == len(data)
    assert d[f"evicted_{name}_bytes"] == sum(SIZES)
    assert d["prefetched_values"] == 2 * len(data)
    assert d["prefetched_bytes"] == 2 * sum(SIZES)
    assert d["fallbacks"] == 0


def test_typed_values_come_back_whole(raw):
    x = np.random.default_rng(2).standard_normal((33, 17))
    with TensorCache(MIB) as cache, tc.bound(cache, 0):
        evict(raw, 5, x)
        np.testing.assert_array_equal(prefetch(raw, 5, x), x)
        tc.offload_release(cache, 5)


def test_unbound_call_records_an_error_until_cleared(raw):
    v = np.arange(64, dtype=np.uint8)
    evict(raw, 0, v)
    code, message = status(raw)
    assert code == _runtime.INVALID_ARGUMENT
    assert "without hector_offload_bind" in message
    with TensorCache(MIB) as cache, tc.bound(cache, 0):
        evict(raw, 0, v)  # a failure is pending: nothing happens
        assert cache.stats()["values"] == 0
        assert status(raw)[1] == message  # the first failure is kept
        raw.hector_launch_clear()
        assert status(raw) == (0, "")
        evict(raw, 0, v)
        assert status(raw) == (0, "") and cache.stats()["values"] == 1
        tc.offload_release(cache, 0)
    raw.hector_offload_prefetch(0, v.ctypes.data, v.nbytes)  # unbound again
    assert status(raw)[0] == _runtime.INVALID_ARGUMENT


def test_bound_unbinds_after_the_block(raw):
    v = np.ones(8, dtype=np.uint8)
    with TensorCache(MIB) as cache:
        with tc.bound(cache, 0):
            evict(raw, 0, v)
        evict(raw, 1, v)
        assert status(raw)[0] == _runtime.INVALID_ARGUMENT
        tc.offload_release(cache, 0)


@pytest.mark.parametrize("case", ["unknown key", "wrong size"])
def test_bad_prefetch_records_invalid_argument(raw, case):
    v = np.arange(100, dtype=np.uint8)
    with TensorCache(MIB) as cache, tc.bound(cache, 50):
        evict(raw, 0, v)
        if case == "unknown key":
            prefetch(raw, 1, v)
        else:
            prefetch(raw, 0, v[:99])
        code, message = status(raw)
        assert code == _runtime.INVALID_ARGUMENT
        assert "hector_offload_prefetch(slot" in message
        tc.offload_release(cache, 50)


@pytest.mark.parametrize("args", [(0, 2, 16), (-1, HOST, 16), (0, HOST, -1)])
def test_bad_evict_arguments_record_invalid_argument(raw, args):
    slot, tier, nbytes = args
    v = np.zeros(16, dtype=np.uint8)
    with TensorCache(MIB) as cache, tc.bound(cache, 0):
        raw.hector_offload_evict(slot, tier, v.ctypes.data, nbytes)
        assert status(raw)[0] == _runtime.INVALID_ARGUMENT
        assert cache.stats()["values"] == 0


def test_full_host_tier_falls_back_and_nothing_is_lost(raw):
    rng = np.random.default_rng(3)
    big = rng.integers(0, 256, 10_000, dtype=np.uint8)
    small = rng.integers(0, 256, 100, dtype=np.uint8)
    before = tc.offload_stats()
    with TensorCache(4 * KIB) as cache, tc.bound(cache, 7):
        evict(raw, 0, big)    # more than the whole host tier
        evict(raw, 1, small)  # fits
        assert status(raw) == (0, "")
        assert cache.stats()["values"] == 1
        d = delta(before)
        assert (d["fallbacks"], d["fallback_values"], d["fallback_bytes"]) == (1, 1, big.size)
        assert d["evicted_host_values"] == 1
        evict(raw, 0, big)  # a second reference to the kept value
        np.testing.assert_array_equal(prefetch(raw, 0, big), big)
        np.testing.assert_array_equal(prefetch(raw, 1, small), small)
        prefetch(raw, 0, big[:-1])
        assert status(raw)[0] == _runtime.INVALID_ARGUMENT
        raw.hector_launch_clear()
        tc.offload_release(cache, 7)
        assert delta(before)["fallback_values"] == 1  # one reference left
        tc.offload_release(cache, 7)
        d = delta(before)
        assert (d["fallback_values"], d["fallback_bytes"]) == (0, 0)
        with pytest.raises(_runtime.HectorRuntimeError) as err:
            tc.offload_release(cache, 7)
        assert err.value.status == _runtime.INVALID_ARGUMENT
        tc.offload_release(cache, 8)
        assert cache.stats()["values"] == 0


def test_disk_tier_without_a_directory_goes_to_the_host_tier(raw):
    v = np.random.default_rng(4).integers(0, 256, 5000, dtype=np.uint8)
    before = tc.offload_stats()
    with TensorCache(MIB) as cache, tc.bound(cache, 0):
        evict(raw, 3, v, DISK)
        evict(raw, 3, v, DISK)  # deduplicated, still on the host tier
        assert status(raw) == (0, "")
        assert cache.where(3) == "host"
        np.testing.assert_array_equal(prefetch(raw, 3, v), v)
        d = delta(before)
        assert (d["disk_to_host"], d["evicted_host_values"], d["evicted_disk_values"]) == (2, 2, 0)
        evict(raw, 3, v[:10], DISK)  # a stored key of another size stays an error
        assert status(raw)[0] == _runtime.INVALID_ARGUMENT
        tc.offload_release(cache, 3)
        tc.offload_release(cache, 3)


def test_release_twice_is_an_error(raw):
    v = np.arange(10, dtype=np.uint8)
    with TensorCache(MIB) as cache:
        with tc.bound(cache, 100):
            evict(raw, 0, v)
        tc.offload_release(cache, 100)
        with pytest.raises(_runtime.HectorRuntimeError) as err:
            tc.offload_release(cache, 100)
        assert err.value.status == _runtime.INVALID_ARGUMENT


def test_caller_side_null_arguments(raw):
    assert raw.hector_offload_bind(None, 0) == _runtime.INVALID_ARGUMENT
    assert raw.hector_offload_release(None, 0) == _runtime.INVALID_ARGUMENT
    assert raw.hector_offload_stats_get(None) == _runtime.INVALID_ARGUMENT


def test_threads_with_their_own_bindings_do_not_mix(raw, tmp_path):
    threads, slots = 8, 20
    barrier = threading.Barrier(threads)
    errors = []

    def work(t, cache):
        rng = np.random.default_rng(100 + t)
        data = [np.full(rng.integers(1, 30_000), t, dtype=np.uint8) for _ in range(slots)]
        for v in data:
            v[::7] = rng.integers(0, 256, v[::7].size, dtype=np.uint8)
        try:
            barrier.wait()
            with tc.bound(cache, t << 32):
                for slot, v in enumerate(data):
                    evict(raw, slot, v, DISK if slot % 2 else HOST)
                barrier.wait()  # every thread's values are stored before any is read
                for slot, v in enumerate(data):
                    np.testing.assert_array_equal(prefetch(raw, slot, v), v)
                assert status(raw) == (0, "")
            for slot in range(slots):
                tc.offload_release(cache, (t << 32) + slot)
        except BaseException as e:  # reported by the main thread
            errors.append(e)
            barrier.abort()

    with TensorCache(256 * MIB, str(tmp_path), chunk_bytes=16 * KIB) as shared, \
            TensorCache(256 * MIB) as own:
        pool = [threading.Thread(target=work, args=(t, shared if t % 2 else own))
                for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        assert not errors, errors
        assert shared.stats()["values"] == 0 and own.stats()["values"] == 0


def test_the_cpu_path_leaves_the_cuda_driver_unloaded(raw):
    def driver_loaded():
        with open("/proc/self/maps") as maps:
            return "libcuda.so" in maps.read()

    if driver_loaded():
        pytest.skip("the CUDA driver is already loaded in this process")
    v = np.arange(1000, dtype=np.uint8)
    with TensorCache(MIB) as cache, tc.bound(cache, 0):
        evict(raw, 0, v)
        np.testing.assert_array_equal(prefetch(raw, 0, v), v)
        tc.offload_release(cache, 0)
    assert not driver_loaded()


@pytest.mark.parametrize("pool", [False, True])
def test_prefetches_in_a_row_read_together_and_wait_in_any_order(raw, tmp_path, pool):
    # As a backward that prefetches several values at one point: the reads
    # start one after another and run together; each wait completes its own.
    rng = np.random.default_rng(7)
    data = [rng.integers(0, 256, n, dtype=np.uint8) for n in SIZES * 2]
    with TensorCache(64 * MIB, str(tmp_path), chunk_bytes=64 * KIB, io_threads=4,
                     checksum=True) as cache, tc.bound(cache, 300):
        if pool:
            cache.reserve_pool(chunk_bytes=MIB)
        for slot, v in enumerate(data):
            evict(raw, slot, v, DISK if slot % 2 else HOST)
        cache.flush()
        outs = [np.zeros_like(v) for v in data]
        for slot, out in enumerate(outs):
            raw.hector_offload_prefetch(slot, out.ctypes.data, out.nbytes)
        for slot in reversed(range(len(data))):
            raw.hector_offload_wait(slot)
            np.testing.assert_array_equal(outs[slot], data[slot])
        assert status(raw) == (0, "")
        # Never waited for: unbinding completes them.
        outs = [np.zeros_like(v) for v in data]
        for slot, out in enumerate(outs):
            raw.hector_offload_prefetch(slot, out.ctypes.data, out.nbytes)
        tc.offload_unbind()
        for out, v in zip(outs, data):
            np.testing.assert_array_equal(out, v)
        assert status(raw) == (0, "")
        for slot in range(len(data)):
            tc.offload_release(cache, 300 + slot)


def test_a_failing_read_is_reported_at_its_wait_and_loses_nothing(raw, tmp_path):
    rng = np.random.default_rng(8)
    data = [rng.integers(0, 256, 100 * KIB, dtype=np.uint8) for _ in range(4)]
    with TensorCache(16 * MIB, str(tmp_path), chunk_bytes=64 * KIB) as cache, \
            tc.bound(cache, 0):
        for slot, v in enumerate(data):
            evict(raw, slot, v, DISK)
        cache.flush()
        cache._test_fail_read(2)
        outs = [np.zeros_like(v) for v in data]
        for slot, out in enumerate(outs):
            raw.hector_offload_prefetch(slot, out.ctypes.data, out.nbytes)
        assert status(raw) == (0, "")  # started; the failure comes with its read
        for slot in range(4):
            raw.hector_offload_wait(slot)
        code, message = status(raw)
        assert code == _runtime.IO
        assert "hector_offload_prefetch(slot 2)" in message and "reading key 2" in message
        for slot in (0, 1):  # waited for before the failure
            np.testing.assert_array_equal(outs[slot], data[slot])
        raw.hector_launch_clear()
        assert cache.stats()["values"] == 4  # nothing lost: it reads back
        np.testing.assert_array_equal(prefetch(raw, 2, data[2]), data[2])
        assert status(raw) == (0, "")
        for slot in range(4):
            tc.offload_release(cache, slot)


# ---- Device memory (CUDA libraries); skipped where there is no GPU --------

@pytest.fixture(scope="module")
def cuda(raw):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    raw.hector_set_stream.restype = ctypes.c_int
    raw.hector_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_int]
    raw.hector_reset_stream.restype, raw.hector_reset_stream.argtypes = None, []
    return torch


def device_evict(raw, slot, x, tier=HOST):
    raw.hector_offload_evict(slot, tier, x.data_ptr(), x.numel() * x.element_size())


def device_prefetch(raw, slot, like):
    out = like.new_empty(like.shape)
    raw.hector_offload_prefetch(slot, out.data_ptr(), out.numel() * out.element_size())
    raw.hector_offload_wait(slot)  # as generated code does before the first reader
    return out


@pytest.mark.parametrize("tier", [HOST, DISK])
@pytest.mark.parametrize("caller_stream", [False, True])
def test_device_memory_round_trip(raw, cuda, tmp_path, tier, caller_stream):
    torch = cuda
    stream = torch.cuda.Stream()
    if caller_stream:  # entry calls run on the caller's stream, not waited for
        assert raw.hector_set_stream(stream.cuda_stream, 1) == 0
    try:
        with TensorCache(256 * MIB, str(tmp_path), chunk_bytes=MIB) as cache, \
                tc.bound(cache, 0), torch.cuda.stream(stream):
            sizes = [1, 4097, 3 * MIB + 3]
            xs = [torch.randn(n, device="cuda") for n in sizes]
            # Values still being computed on the stream when evicted: the
            # evict must wait for them.
            torch.cuda._sleep(100_000_000)
            ys = [(x * 3 + 1).tanh() for x in xs]
            for slot, y in enumerate(ys):
                device_evict(raw, slot, y, tier)
            assert status(raw) == (0, "")
            expect = [y.cpu() for y in ys]
            # The copies run on the runtime's copy stream; an entry's free
            # of these buffers waits for them (mgpuMemFree), this test
            # waits for the device before overwriting them.
            torch.cuda.synchronize()
            for y in ys:
                y.fill_(float("nan"))
            for slot, e in enumerate(expect):
                got = device_prefetch(raw, slot, ys[slot])
                assert torch.equal(got.cpu(), e)
            assert status(raw) == (0, "")
            host = np.arange(1000, dtype=np.uint8)  # host memory in a CUDA process
            evict(raw, 99, host)
            np.testing.assert_array_equal(prefetch(raw, 99, host), host)
            for slot in [*range(len(sizes)), 99]:
                tc.offload_release(cache, slot)
            assert cache.stats()["values"] == 0
    finally:
        raw.hector_reset_stream()


@pytest.mark.parametrize("pool", [False, True])
def test_device_prefetches_from_disk_in_a_row(raw, cuda, tmp_path, pool):
    # Values on disk prefetched into device memory one after another: read
    # together into the cache's host blocks (from its pinned pool with
    # `pool`), each copied to the device at its wait.
    torch = cuda
    with TensorCache(256 * MIB, str(tmp_path), chunk_bytes=MIB, pinned=True,
                     reserve_pool=pool) as cache, tc.bound(cache, 0):
        if pool:
            cache.pool_wait()
            assert cache.pool_stats()["bytes_pinned"] == cache.pool_stats()["bytes"]
        xs = [torch.randn(n, device="cuda") for n in (1, 4097, 3 * MIB + 3, MIB)]
        expect = [x.cpu() for x in xs]
        for slot, x in enumerate(xs):
            device_evict(raw, slot, x, DISK)
        torch.cuda.synchronize()
        cache.flush()
        assert all(cache.where(slot) == "disk" for slot in range(len(xs)))
        outs = [x.new_full(x.shape, float("nan")) for x in xs]
        for slot, out in enumerate(outs):
            raw.hector_offload_prefetch(slot, out.data_ptr(), out.numel() * 4)
        for slot in reversed(range(len(xs))):
            raw.hector_offload_wait(slot)
        torch.cuda.synchronize()
        assert status(raw) == (0, "")
        for out, e in zip(outs, expect):
            assert torch.equal(out.cpu(), e)
        if pool:
            assert cache.pool_stats()["puts_pooled"] == len(xs)
        for slot in range(len(xs)):
            tc.offload_release(cache, slot)


@pytest.mark.parametrize("tier", [HOST, DISK])
def test_device_values_across_the_pinned_pools_chunks(raw, cuda, tmp_path, tier):
    # The pool pins 1 MiB at a time: the driver refuses one copy across two
    # registrations, so the runtime splits copies at the chunks' bounds.
    torch = cuda
    with TensorCache(64 * MIB, str(tmp_path), chunk_bytes=MIB, pinned=True) as cache, \
            tc.bound(cache, 0):
        cache.reserve_pool(chunk_bytes=MIB)
        cache.pool_wait()
        assert cache.pool_stats()["bytes_pinned"] == 64 * MIB
        xs = [torch.randn(n, device="cuda") for n in (5, MIB // 4 + 1, 3 * MIB + 3, 2 * MIB)]
        expect = [x.cpu() for x in xs]
        for slot, x in enumerate(xs):
            device_evict(raw, slot, x, tier)
        torch.cuda.synchronize()
        cache.flush()
        for slot, e in enumerate(expect):
            assert torch.equal(device_prefetch(raw, slot, xs[slot]).cpu(), e)
        torch.cuda.synchronize()
        assert status(raw) == (0, "")
        assert cache.pool_stats()["puts_pooled"] == len(xs)
        for slot in range(len(xs)):
            tc.offload_release(cache, slot)


def test_device_memory_falls_back_to_a_device_copy(raw, cuda):
    torch = cuda
    x = torch.randn(100_000, device="cuda")
    expect = x.cpu()
    before = tc.offload_stats()
    with TensorCache(64 * KIB) as cache, tc.bound(cache, 5):
        device_evict(raw, 0, x)
        assert status(raw) == (0, "")
        assert cache.stats()["values"] == 0
        assert delta(before)["fallback_bytes"] == x.numel() * 4
        x.zero_()
        assert torch.equal(device_prefetch(raw, 0, x).cpu(), expect)
        out = np.empty(x.numel(), dtype=np.float32)  # into host memory too
        raw.hector_offload_prefetch(0, out.ctypes.data, out.nbytes)
        assert status(raw) == (0, "")
        np.testing.assert_array_equal(out, expect.numpy())
        tc.offload_release(cache, 5)
        assert delta(before)["fallback_bytes"] == 0


def test_wait_without_a_prefetch_in_flight_does_nothing(raw):
    # A wait for a prefetch already waited for, or never made, does nothing.
    v = np.arange(10, dtype=np.float32)
    with TensorCache(MIB) as cache, tc.bound(cache, 0):
        evict(raw, 0, v)
        np.testing.assert_array_equal(prefetch(raw, 0, v), v)
        raw.hector_offload_wait(0)
        raw.hector_offload_wait(12345)
        assert status(raw) == (0, "")
        tc.offload_release(cache, 0)

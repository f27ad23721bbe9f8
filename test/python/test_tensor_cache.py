"""The runtime's tensor cache (runtime/include/hector/tensor_cache.h) on the CPU:
host and disk tiers, round trips bit-identical to what was put, deduplicated
keys, reads of values whose write is in flight, injected I/O errors, a full
disk tier and a full host tier (nothing lost), checksums that catch data
corrupted on disk, and concurrent use."""

import os

import numpy as np
import pytest

from hector import _runtime
from hector.tensor_cache import TensorCache

from test_unified_support import runtime_library
from threads import run_in_threads

KIB, MIB = 1 << 10, 1 << 20


@pytest.fixture(scope="module", autouse=True)
def lib(tmp_path_factory):
    return runtime_library(tmp_path_factory)


def values(rng, sizes):
    """Random byte arrays of the given sizes (the reference is the array itself)."""
    return [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]


def cache_file_fd():
    """The descriptor of this process's (unlinked) disk-tier file."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "hector-cache-" in target:
            return int(fd)
    raise AssertionError("no hector-cache file is open")


# Odd sizes, a block, one past it, and several chunks plus a tail.
SIZES = [0, 1, 7, 4095, 4096, 4097, 3 * 64 * KIB + 5]


@pytest.mark.parametrize("tier,direct_io", [("host", True), ("disk", True), ("disk", False)])
def test_round_trip_is_bit_identical(tmp_path, tier, direct_io):
    rng = np.random.default_rng(0)
    data = values(rng, SIZES)
    with TensorCache(64 * MIB, str(tmp_path), chunk_bytes=64 * KIB, io_threads=3,
                     direct_io=direct_io) as cache:
        if not direct_io:
            assert cache.stats()["direct_io"] == 0
        for key, v in enumerate(data):
            cache.put(key, v, tier=tier)
        cache.flush()
        for key, v in enumerate(data):
            np.testing.assert_array_equal(cache.get(key, like=v), v)
            assert cache.where(key) == ("disk" if tier == "disk" and v.size else "host")
        s = cache.stats()
        assert s["values"] == len(data)
        if tier == "disk":
            stored = sum(-(-v.size // 4096) * 4096 for v in data)
            assert s["bytes_written"] == stored and s["disk_bytes"] == stored
            assert s["host_bytes"] == 0  # host copies freed once written
            assert s["bytes_read"] == sum(v.size for v in data)
        for key in range(len(data)):
            cache.release(key)
        s = cache.stats()
        assert (s["values"], s["host_bytes"], s["disk_bytes"]) == (0, 0, 0)


def test_typed_arrays_come_back_with_their_shape_and_dtype(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 19)).astype(np.float32)
    ids = rng.integers(-2**62, 2**62, 1001, dtype=np.int64)
    with TensorCache(MIB, str(tmp_path)) as cache:
        cache.put(1, x, tier="disk")
        cache.put(2, ids, tier="host")
        cache.put(3, b"bytes too", tier="disk")
        cache.flush()
        y = cache.get(1, like=x)
        assert y.dtype == x.dtype and y.shape == x.shape and np.array_equal(y.view(np.uint32),
                                                                           x.view(np.uint32))
        np.testing.assert_array_equal(cache.get(2, like=ids), ids)
        assert cache.get(3, nbytes=9).tobytes() == b"bytes too"
        buffer = np.zeros_like(ids)
        assert cache.get(2, out=buffer) is buffer and np.array_equal(buffer, ids)
        with pytest.raises(ValueError, match="C-contiguous"):
            cache.get(1, out=np.zeros((19, 37), np.float32).T)


def test_keys_are_deduplicated_and_reference_counted(tmp_path):
    v = np.arange(10000, dtype=np.uint8)
    with TensorCache(MIB, str(tmp_path)) as cache:
        cache.put(5, v, tier="disk")
        cache.put(5, v, tier="disk")  # the same storage saved twice
        cache.flush()
        s = cache.stats()
        assert (s["values"], s["deduplicated"]) == (1, 1)
        assert s["bytes_written"] == 12288  # written once
        with pytest.raises(_runtime.HectorRuntimeError, match="holds 10000 bytes, not 3"):
            cache.put(5, v[:3])
        cache.release(5)
        np.testing.assert_array_equal(cache.get(5, like=v), v)  # one reference left
        cache.release(5)
        with pytest.raises(_runtime.HectorRuntimeError, match="no value under key 5"):
            cache.get(5, like=v)
        with pytest.raises(_runtime.HectorRuntimeError, match="no value under key 5"):
            cache.release(5)


def test_a_value_needed_while_its_write_is_in_flight_is_handed_over(tmp_path):
    """One I/O thread, 64 values of 1 MiB queued: the last one is read long
    before its turn. It comes from its host copy, its write is cancelled, and
    it stays in host memory; the others reach the disk."""
    rng = np.random.default_rng(2)
    data = values(rng, [MIB] * 64)
    with TensorCache(128 * MIB, str(tmp_path), io_threads=1, chunk_bytes=256 * KIB) as cache:
        for key, v in enumerate(data):
            cache.put(key, v, tier="disk")
        np.testing.assert_array_equal(cache.get(63, like=data[63]), data[63])
        cache.flush()
        s = cache.stats()
        assert s["handed_over"] == 1
        assert cache.where(63) == "host" and cache.where(0) == "disk"
        assert s["host_bytes"] == MIB and s["disk_bytes"] == 63 * MIB
        for key, v in enumerate(data):
            np.testing.assert_array_equal(cache.get(key, like=v), v)


def test_a_failed_write_keeps_the_value_in_host_memory(tmp_path, capfd):
    rng = np.random.default_rng(3)
    a, b, c = values(rng, [5000, 70000, 300])
    with TensorCache(MIB, str(tmp_path), fail_write=1, io_threads=1) as cache:
        cache.put(1, a, tier="disk")  # its (only) write request fails
        cache.flush()
        cache.put(2, b, tier="disk")
        cache.put(3, c, tier="disk")
        cache.flush()
        s = cache.stats()
        assert s["writes_failed"] == 1
        assert [cache.where(k) for k in (1, 2, 3)] == ["host", "disk", "disk"]
        for key, v in ((1, a), (2, b), (3, c)):
            np.testing.assert_array_equal(cache.get(key, like=v), v)
    assert "a disk write failed" in capfd.readouterr().err


def test_a_full_disk_tier_keeps_values_in_host_memory_and_reuses_freed_space(tmp_path):
    rng = np.random.default_rng(4)
    data = values(rng, [4096, 4000, 100])
    with TensorCache(MIB, str(tmp_path), disk_capacity=8192) as cache:
        for key, v in enumerate(data):
            cache.put(key, v, tier="disk")
        cache.flush()
        assert [cache.where(k) for k in range(3)] == ["disk", "disk", "host"]
        assert cache.stats()["writes_failed"] == 1
        for key, v in enumerate(data):
            np.testing.assert_array_equal(cache.get(key, like=v), v)
        cache.release(0)  # its extent is reused
        cache.put(9, data[0], tier="disk")
        cache.flush()
        assert cache.where(9) == "disk" and cache.stats()["disk_bytes"] == 8192
        np.testing.assert_array_equal(cache.get(9, like=data[0]), data[0])


def test_a_full_host_tier_stores_nothing(tmp_path):
    with TensorCache(8192, str(tmp_path)) as cache:
        cache.put(1, np.zeros(8192, np.uint8), tier="host")
        with pytest.raises(_runtime.HectorRuntimeError, match="host tier is full") as err:
            cache.put(2, np.zeros(1, np.uint8), tier="disk")  # its host copy does not fit
        assert err.value.status == _runtime.OUT_OF_MEMORY
        assert cache.stats()["values"] == 1
        with pytest.raises(_runtime.HectorRuntimeError, match="no value under key 2"):
            cache.get(2, nbytes=1)
        cache.release(1)
        cache.put(2, np.ones(1, np.uint8), tier="disk")  # room again


@pytest.mark.parametrize("checksum", [True, False])
def test_checksums_catch_data_corrupted_on_disk(tmp_path, checksum):
    v = np.random.default_rng(5).integers(0, 256, 20000, dtype=np.uint8)
    with TensorCache(MIB, str(tmp_path), checksum=checksum) as cache:
        cache.put(1, v, tier="disk")
        cache.flush()
        np.testing.assert_array_equal(cache.get(1, like=v), v)
        fd = cache_file_fd()
        flipped = bytes([v[100] ^ 0xFF])
        with open(f"/proc/self/fd/{fd}", "r+b", buffering=0) as f:
            f.seek(100)  # the only extent starts at 0
            f.write(flipped)
            os.fsync(f.fileno())
        if checksum:
            with pytest.raises(_runtime.HectorRuntimeError, match="does not match its checksum") as err:
                cache.get(1, like=v)
            assert err.value.status == _runtime.IO
            assert cache.stats()["checksum_failures"] == 1
        else:  # what the checksum mode is for: the damage goes unnoticed
            got = cache.get(1, like=v)
            assert got[100] == flipped[0] and np.array_equal(np.delete(got, 100), np.delete(v, 100))


def test_concurrent_puts_gets_and_releases(tmp_path):
    with TensorCache(256 * MIB, str(tmp_path), chunk_bytes=32 * KIB, io_threads=4,
                     checksum=True) as cache:
        def worker(t):
            rng = np.random.default_rng(100 + t)
            for i in range(25):
                key = t * 1000 + i
                v = rng.integers(0, 256, int(rng.integers(0, 200 * KIB)), dtype=np.uint8)
                tier = "disk" if i % 3 else "host"
                cache.put(key, v, tier=tier)
                cache.put(key, v, tier=tier)
                np.testing.assert_array_equal(cache.get(key, like=v), v)
                cache.release(key)
                if i % 2:
                    cache.flush()
                np.testing.assert_array_equal(cache.get(key, like=v), v)
                cache.release(key)

        run_in_threads(worker, 8)
        cache.flush()
        s = cache.stats()
        assert (s["values"], s["host_bytes"], s["disk_bytes"]) == (0, 0, 0)
        assert s["checksum_failures"] == 0 and s["deduplicated"] == 200


def test_bad_arguments_get_clear_errors(tmp_path):
    with pytest.raises(_runtime.HectorRuntimeError, match="cannot create a file in") as err:
        TensorCache(MIB, str(tmp_path / "missing"))
    assert err.value.status == _runtime.IO
    with pytest.raises(ValueError, match="unknown tier"):
        TensorCache(MIB).put(1, b"x", tier="tape")
    cache = TensorCache(MIB)  # no disk tier
    with pytest.raises(_runtime.HectorRuntimeError, match="no disk tier"):
        cache.put(1, b"x", tier="disk")
    cache.put(1, b"abc")
    with pytest.raises(_runtime.HectorRuntimeError, match="holds 3 bytes, not 4"):
        cache.get(1, nbytes=4)
    cache.close()
    with pytest.raises(ValueError, match="closed"):
        cache.get(1, nbytes=3)


@pytest.mark.parametrize("pinned", [False, True])
def test_reused_host_memory_never_mixes_values(tmp_path, pinned):
    # Released and written values leave their host blocks to later puts (up
    # to the host capacity); a larger block may serve a smaller value, whose
    # bytes must be its own. `pinned` without a CUDA driver is plain memory.
    rng = np.random.default_rng(4)
    capacity = 64 << 20
    with TensorCache(host_capacity=capacity, directory=str(tmp_path), chunk_bytes=1 << 20,
                     pinned=pinned) as cache:
        for step in range(40):
            sizes = rng.integers(0, 6 << 20, size=4)
            values = [rng.integers(0, 256, size=int(n), dtype=np.uint8) for n in sizes]
            for i, value in enumerate(values):
                cache.put(step * 10 + i, value, tier="disk" if i % 2 else "host")
            assert cache.stats()["host_bytes"] <= capacity
            for i, value in enumerate(values):
                back = cache.get(step * 10 + i, like=value)
                assert np.array_equal(back, value), (step, i)
                cache.release(step * 10 + i)
        cache.flush()
        assert cache.stats()["values"] == 0

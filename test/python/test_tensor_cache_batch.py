"""Reads of several values at once from the tensor cache
(hector_tensor_cache_get_many, get_async / wait; docs/offload.md) on the
CPU: bit-identical to what was put, whatever tier each value is in (on disk,
in host memory, with its write still in flight); a read that fails (an
injected I/O error, a checksum mismatch, an unknown key, a wrong size)
names its key, leaves the others complete and its value stored; reads
started one after another and waited for in any order; and threads reading
batches of shared values."""

import os

import numpy as np
import pytest

from hector import _runtime
from hector.tensor_cache import TensorCache

from test_unified_support import runtime_library
from threads import run_in_threads

KIB, MIB = 1 << 10, 1 << 20
SIZES = [0, 1, 7, 4095, 4096, 4097, 3 * 64 * KIB + 5, MIB + 3]


@pytest.fixture(scope="module", autouse=True)
def lib(tmp_path_factory):
    return runtime_library(tmp_path_factory)


def values(rng, sizes):
    return [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]


def put_all(cache, data, tiers):
    for key, (v, tier) in enumerate(zip(data, tiers)):
        cache.put(key, v, tier=tier)


@pytest.mark.parametrize("direct_io,checksum", [(True, False), (False, True)])
def test_a_batch_is_bit_identical_whatever_tier_its_values_are_in(tmp_path, direct_io,
                                                                   checksum):
    rng = np.random.default_rng(0)
    data = values(rng, SIZES * 2)
    tiers = ["disk" if i % 3 else "host" for i in range(len(data))]
    with TensorCache(64 * MIB, str(tmp_path), chunk_bytes=64 * KIB, io_threads=3,
                     direct_io=direct_io, checksum=checksum) as cache:
        put_all(cache, data, tiers)
        cache.flush()
        keys = list(range(len(data)))
        # Shuffled, with a key twice: each output gets its own copy.
        order = list(rng.permutation(keys)) + [keys[-2]]
        got = cache.get_many(order, likes=[data[k] for k in order])
        for k, g in zip(order, got):
            np.testing.assert_array_equal(g, data[k])
        s = cache.stats()
        # Every read of a value on disk comes from the file, the repeated one too.
        assert s["bytes_read"] == sum(data[k].size for k in order if tiers[k] == "disk")
        assert s["checksum_failures"] == 0
        assert cache.get_many([], nbytes=[]) == []


def test_a_batch_takes_values_whose_writes_are_in_flight(tmp_path):
    # One I/O thread, 32 values of 1 MiB queued: the batch reads the last
    # ones (handed over from their host copies) and the first ones (already
    # on disk, or not yet) together.
    rng = np.random.default_rng(1)
    data = values(rng, [MIB] * 32)
    with TensorCache(64 * MIB, str(tmp_path), io_threads=1, chunk_bytes=256 * KIB) as cache:
        put_all(cache, data, ["disk"] * 32)
        keys = [31, 30, 0, 1, 29]
        for k, g in zip(keys, cache.get_many(keys, likes=[data[k] for k in keys])):
            np.testing.assert_array_equal(g, data[k])
        cache.flush()
        got = cache.get_many(range(32), likes=data)
        for v, g in zip(data, got):
            np.testing.assert_array_equal(g, v)
        assert cache.stats()["handed_over"] >= 1


def test_a_failing_read_names_its_key_and_loses_nothing(tmp_path):
    rng = np.random.default_rng(2)
    data = values(rng, [300 * KIB] * 10)
    with TensorCache(16 * MIB, str(tmp_path), chunk_bytes=64 * KIB, io_threads=4) as cache:
        put_all(cache, data, ["disk"] * 10)
        cache.flush()
        cache._test_fail_read(6)
        outs = [np.zeros_like(v) for v in data]
        with pytest.raises(_runtime.HectorRuntimeError, match=r"read 6 of 10 \(key 6\)") as err:
            cache.get_many(range(10), outs=outs)
        assert err.value.status == _runtime.IO and err.value.key == 6
        assert "Input/output error" in str(err.value) and "1 of the 10 reads failed" in str(err.value)
        assert err.value.statuses == [0] * 6 + [_runtime.IO] + [0] * 3
        for k in range(10):
            if k != 6:  # the other reads are complete
                np.testing.assert_array_equal(outs[k], data[k])
        # Nothing lost: the value is still stored, on disk, and reads back.
        assert cache.stats()["values"] == 10 and cache.where(6) == "disk"
        np.testing.assert_array_equal(cache.get(6, like=data[6]), data[6])
        with pytest.raises(_runtime.HectorRuntimeError, match="no value under key 10"):
            cache._test_fail_read(10)


def test_bad_keys_and_sizes_fail_their_reads_only(tmp_path):
    rng = np.random.default_rng(3)
    a, b, c = values(rng, [5000, 70000, 300])
    with TensorCache(MIB, str(tmp_path)) as cache:
        put_all(cache, [a, b, c], ["host", "disk", "disk"])
        cache.flush()
        outs = [np.zeros_like(a), np.zeros(12, np.uint8), np.zeros_like(c), np.zeros(9, np.uint8)]
        with pytest.raises(_runtime.HectorRuntimeError, match=r"read 1 of 4 \(key 1\).*holds "
                           r"70000 bytes, not 12.*2 of the 4 reads failed") as err:
            cache.get_many([0, 1, 2, 99], outs=outs)
        assert err.value.statuses == [0, _runtime.INVALID_ARGUMENT, 0, _runtime.INVALID_ARGUMENT]
        np.testing.assert_array_equal(outs[0], a)
        np.testing.assert_array_equal(outs[2], c)
        assert cache.stats()["values"] == 3
        with pytest.raises(ValueError, match="2 keys but 1 outputs"):
            cache.get_many([0, 1], outs=[outs[0]])
        with pytest.raises(ValueError, match="likes, nbytes or outs"):
            cache.get_many([0])


def test_a_checksum_mismatch_in_a_batch_is_reported_for_its_key(tmp_path):
    rng = np.random.default_rng(4)
    data = values(rng, [20000, 20000, 20000])
    with TensorCache(MIB, str(tmp_path), checksum=True) as cache:
        put_all(cache, data, ["disk"] * 3)
        cache.flush()
        fd = next(int(fd) for fd in os.listdir("/proc/self/fd")
                  if "hector-cache-" in os.readlink(f"/proc/self/fd/{fd}"))
        with open(f"/proc/self/fd/{fd}", "r+b", buffering=0) as f:
            f.seek(24576 + 10)  # key 1's extent: the second, 4 KiB-aligned
            f.write(bytes([data[1][10] ^ 0xFF]))
            os.fsync(f.fileno())
        with pytest.raises(_runtime.HectorRuntimeError, match="key 1.*does not match its checksum") as err:
            cache.get_many([0, 1, 2], likes=data)
        assert err.value.key == 1 and err.value.statuses == [0, _runtime.IO, 0]
        assert cache.stats()["checksum_failures"] == 1 and cache.stats()["values"] == 3


def test_reads_started_together_are_waited_for_in_any_order(tmp_path):
    rng = np.random.default_rng(5)
    data = values(rng, SIZES)
    with TensorCache(32 * MIB, str(tmp_path), chunk_bytes=64 * KIB, io_threads=4) as cache:
        put_all(cache, data, ["disk" if i % 2 else "host" for i in range(len(data))])
        cache.flush()
        cache._test_fail_read(5)
        pending = [cache.get_async(k, like=v) for k, v in enumerate(data)]
        for k in reversed(range(len(data))):
            if k == 5:
                with pytest.raises(_runtime.HectorRuntimeError, match="reading key 5") as err:
                    pending[k].wait()
                assert err.value.status == _runtime.IO
            else:
                np.testing.assert_array_equal(pending[k].wait(), data[k])
        np.testing.assert_array_equal(cache.get(5, like=data[5]), data[5])
        with pytest.raises(_runtime.HectorRuntimeError, match="no value under key 77"):
            cache.get_async(77, nbytes=1)
        # Reads never waited for are completed when the cache closes.
        left = [cache.get_async(k, like=v) for k, v in enumerate(data)]
    assert cache.closed and all(p.out is not None for p in left)


def test_threads_reading_batches_of_shared_values(tmp_path):
    rng = np.random.default_rng(6)
    data = values(rng, [int(n) for n in rng.integers(0, 300 * KIB, 40)])
    with TensorCache(64 * MIB, str(tmp_path), chunk_bytes=32 * KIB, io_threads=4,
                     checksum=True) as cache:
        put_all(cache, data, ["disk" if i % 4 else "host" for i in range(len(data))])

        def worker(t):
            r = np.random.default_rng(100 + t)
            for _ in range(10):
                keys = [int(k) for k in r.choice(len(data), 8, replace=False)]
                for k, g in zip(keys, cache.get_many(keys, likes=[data[k] for k in keys])):
                    np.testing.assert_array_equal(g, data[k])

        run_in_threads(worker, 6)
        assert cache.stats()["checksum_failures"] == 0 and cache.stats()["values"] == len(data)

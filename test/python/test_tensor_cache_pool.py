"""The tensor cache's host pool, made in the background
(hector_tensor_cache_reserve_pool, docs/offload.md) on the CPU, where
"pinning" is faulting the pages in and a test hook makes each chunk slow:
puts go on while the pool fills (they take pageable memory until a block of
their size is ready, and never wait), values are bit-identical whichever
memory they sit in, the pool fills chunk by chunk and is then used, blocks
go back to it and are reused without mixing values, a cache closed in the
middle of the reservation stops and joins its thread at once, and threads
use a pool being made."""

import time

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


def random_values(rng, count, largest):
    return [rng.integers(0, 256, int(n), dtype=np.uint8)
            for n in rng.integers(0, largest, count)]


def test_puts_go_on_while_a_slow_pool_fills_in_the_background(tmp_path):
    rng = np.random.default_rng(0)
    chunk, chunks, delay_s = 4 * MIB, 8, 0.25
    with TensorCache(chunks * chunk, str(tmp_path), chunk_bytes=256 * KIB) as cache:
        cache._test_pin_delay(int(delay_s * 1e6))
        start = time.monotonic()
        cache.reserve_pool(chunk_bytes=chunk)
        assert time.monotonic() - start < delay_s  # it returns at once
        early = random_values(rng, 12, MIB)
        for key, v in enumerate(early):
            cache.put(key, v, tier="disk" if key % 2 else "host")
        s = cache.pool_stats()
        # Made in the background: the puts did not wait for it.
        assert s["making"] == 1 and s["bytes_ready"] < s["bytes"] == chunks * chunk
        assert s["puts_unready"] > 0
        assert s["puts_pooled"] + s["puts_unready"] == sum(1 for v in early if v.size)
        readies = [s["bytes_ready"]]
        while cache.pool_stats()["making"]:
            readies.append(cache.pool_stats()["bytes_ready"])
            time.sleep(delay_s / 5)
        cache.pool_wait()
        s = cache.pool_stats()
        assert s["making"] == 0 and s["bytes_ready"] == s["bytes"]
        assert s["bytes_pinned"] == 0  # no CUDA driver here: faulted in, not pinned
        assert s["pin_ns"] >= chunks * delay_s * 1e9 * 0.99
        assert readies == sorted(readies) and len(set(readies)) > 2  # filled chunk by chunk
        # Everything put before is intact; later puts come from the pool.
        cache.flush()
        for key, v in enumerate(early):
            np.testing.assert_array_equal(cache.get(key, like=v), v)
        late = random_values(rng, 12, MIB)
        for i, v in enumerate(late):
            cache.put(100 + i, v, tier="disk" if i % 2 else "host")
        s2 = cache.pool_stats()
        assert s2["puts_unready"] == s["puts_unready"] and s2["puts_no_room"] == 0
        assert s2["puts_pooled"] == s["puts_pooled"] + sum(1 for v in late if v.size)
        cache.flush()
        for i, v in enumerate(late):
            np.testing.assert_array_equal(cache.get(100 + i, like=v), v)
        for key in list(range(len(early))) + [100 + i for i in range(len(late))]:
            cache.release(key)
        assert cache.stats()["host_bytes"] == 0 and cache.stats()["values"] == 0


def test_the_pool_of_the_whole_capacity_starts_at_creation():
    capacity = 10 * MIB + 123  # rounded down to 4 KiB
    with TensorCache(capacity, reserve_pool=True) as cache:
        cache.pool_wait()
        s = cache.pool_stats()
        assert s["bytes"] == capacity // 4096 * 4096 == s["bytes_ready"]
        assert s["making"] == 0
        with pytest.raises(_runtime.HectorRuntimeError, match="has a host pool already") as err:
            cache.reserve_pool()
        assert err.value.status == _runtime.INVALID_ARGUMENT
    with TensorCache(MIB) as cache:  # none asked for
        cache.pool_wait()  # returns
        assert cache.pool_stats() == {
            "bytes": 0, "bytes_ready": 0, "bytes_pinned": 0, "pin_ns": 0, "puts_pooled": 0,
            "puts_unready": 0, "puts_no_room": 0, "making": 0}


@pytest.mark.parametrize("values_in_pool", [False, True])
def test_closing_in_the_middle_of_the_reservation_joins_at_once(tmp_path, values_in_pool):
    # 16 chunks of 4 MiB, each taking 30 s (or 1.5 s, when values should sit
    # in the first one before closing): closing never waits for the rest.
    rng = np.random.default_rng(1)
    cache = TensorCache(64 * MIB, str(tmp_path), chunk_bytes=64 * KIB)
    cache._test_pin_delay(1_500_000 if values_in_pool else 30_000_000)
    cache.reserve_pool(chunk_bytes=4 * MIB)
    if values_in_pool:
        while cache.pool_stats()["bytes_ready"] == 0:
            time.sleep(0.05)
    data = random_values(rng, 6, MIB)
    for key, v in enumerate(data):
        cache.put(key, v, tier="disk")  # writes in flight at close
    for key, v in enumerate(data[:3]):
        np.testing.assert_array_equal(cache.get(key, like=v), v)
    s = cache.pool_stats()
    assert s["making"] == 1 and s["bytes_ready"] < s["bytes"]
    assert (s["puts_pooled"] > 0) == values_in_pool
    start = time.monotonic()
    cache.close()
    assert time.monotonic() - start < 5  # not the chunks still to make
    assert cache.closed


def test_a_pool_smaller_than_the_host_tier_sends_the_rest_to_pageable_memory(tmp_path):
    rng = np.random.default_rng(2)
    with TensorCache(16 * MIB, str(tmp_path)) as cache:
        cache.reserve_pool(2 * MIB, chunk_bytes=MIB)
        cache.pool_wait()
        data = random_values(rng, 20, 700 * KIB)
        for key, v in enumerate(data):
            cache.put(key, v)
        s = cache.pool_stats()
        assert s["puts_no_room"] > 0 and s["puts_pooled"] > 0 and s["puts_unready"] == 0
        for key, v in enumerate(data):
            np.testing.assert_array_equal(cache.get(key, like=v), v)
            cache.release(key)
        assert cache.stats()["host_bytes"] == 0


def test_values_larger_than_a_chunk_and_reused_blocks_never_mix(tmp_path):
    # Blocks go back to the pool and are carved again (first fit, coalesced);
    # a value larger than a pool chunk spans several.
    rng = np.random.default_rng(3)
    capacity = 32 * MIB
    with TensorCache(capacity, str(tmp_path), chunk_bytes=MIB, checksum=True) as cache:
        cache.reserve_pool(chunk_bytes=2 * MIB)
        cache.pool_wait()
        for step in range(15):
            values = random_values(rng, 5, 5 * MIB)
            for i, v in enumerate(values):
                cache.put(step * 10 + i, v, tier="disk" if (step + i) % 2 else "host")
            assert cache.stats()["host_bytes"] <= capacity
            for i, v in enumerate(values):
                np.testing.assert_array_equal(cache.get(step * 10 + i, like=v), v)
                cache.release(step * 10 + i)
        cache.flush()
        s = cache.pool_stats()
        assert s["puts_pooled"] > 0 and s["puts_unready"] == 0
        assert cache.stats()["checksum_failures"] == 0 and cache.stats()["host_bytes"] == 0


def test_threads_use_a_pool_being_made(tmp_path):
    with TensorCache(128 * MIB, str(tmp_path), chunk_bytes=64 * KIB, io_threads=4,
                     checksum=True) as cache:
        cache._test_pin_delay(20_000)
        cache.reserve_pool(chunk_bytes=MIB)

        def worker(t):
            rng = np.random.default_rng(10 + t)
            for i in range(30):
                key = t * 1000 + i
                v = rng.integers(0, 256, int(rng.integers(0, 600 * KIB)), dtype=np.uint8)
                cache.put(key, v, tier="disk" if i % 3 else "host")
                np.testing.assert_array_equal(cache.get(key, like=v), v)
                if i % 2:
                    cache.flush()
                np.testing.assert_array_equal(cache.get(key, like=v), v)
                cache.release(key)

        run_in_threads(worker, 8)
        cache.flush()
        s, p = cache.stats(), cache.pool_stats()
        assert (s["values"], s["host_bytes"], s["checksum_failures"]) == (0, 0, 0)
        assert p["puts_pooled"] + p["puts_unready"] + p["puts_no_room"] > 0

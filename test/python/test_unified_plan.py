"""Circular-shift alignment math: the pure Python mirror against its
properties, and the C runtime's copy (the one the kernels compile) against
the Python one."""

import random

import pytest

from hector.unified import CHUNK, LINE, chunk_order, row_plan

from test_unified_support import runtime_library


def _sizes(rng):
    special = [0, 1, 2, 3, 15, 16, 17, 31, 33, 127, 128, 129, 255, 256, 257, 511, 512,
               513, 1000, 1024, 2047, 2048, 2052, 2076, 4095, 4096, 4097, 8191, 65536 + 3]
    return special + [rng.randrange(0, 20000) for _ in range(300)]


def _addrs(rng):
    return [0, 1, 4, 12, 16, 100, 112, 124, 127, 128, 4095] + [
        rng.randrange(0, 1 << 44) for _ in range(40)]


def _instructions(addr, row_bytes, order, lanes=32):
    """Per 32-lane load instruction: the set of 128-byte lines it touches."""
    hull, _, _ = row_plan(addr, row_bytes)
    out = []
    for k in range(0, len(order), lanes):
        out.append({(hull + CHUNK * j) // LINE for j in order[k:k + lanes]})
    return out


def test_plan_covers_the_row_exactly():
    rng = random.Random(1)
    for rb in _sizes(rng):
        for addr in _addrs(rng):
            hull, chunks, shift = row_plan(addr, rb)
            assert hull % CHUNK == 0
            if rb == 0:
                assert chunks == 0
                continue
            assert hull <= addr < hull + CHUNK
            end = hull + CHUNK * chunks
            assert addr + rb <= end < addr + rb + CHUNK
            assert 0 <= shift < chunks
            # The lane order is a rotation: every chunk exactly once.
            assert sorted(chunk_order(addr, rb)) == list(range(chunks))


def test_lane_zero_starts_on_a_line_boundary():
    rng = random.Random(2)
    for rb in _sizes(rng):
        for addr in _addrs(rng):
            hull, chunks, shift = row_plan(addr, rb)
            if rb == 0:
                continue
            end = hull + CHUNK * chunks
            first_line = -(-hull // LINE) * LINE
            if first_line < end:
                assert (hull + CHUNK * shift) % LINE == 0
            else:  # the whole row sits inside one line: nothing to align
                assert shift == 0


def test_every_unwrapped_load_is_line_aligned():
    rng = random.Random(3)
    for rb in _sizes(rng):
        for addr in _addrs(rng):
            hull, chunks, shift = row_plan(addr, rb)
            if chunks == 0 or -(-hull // LINE) * LINE >= hull + CHUNK * chunks:
                continue
            order = chunk_order(addr, rb)
            for k in range(0, chunks, 32):
                lanes = order[k:k + 32]
                if any(j < shift for j in lanes):
                    continue  # the instruction that wraps round
                assert (hull + CHUNK * lanes[0]) % LINE == 0


def test_shift_never_touches_more_lines_than_no_shift():
    # The 2048..2076 byte sweep of the benchmarks, rows packed back to back.
    for rb in range(2048, 2077, 4):
        shifted_total = plain_total = 0
        for r in range(64):
            addr = 4096 + r * rb
            _, chunks, _ = row_plan(addr, rb)
            lines = len({(row_plan(addr, rb)[0] + CHUNK * j) // LINE for j in range(chunks)})
            shifted = sum(len(s) for s in _instructions(addr, rb, chunk_order(addr, rb)))
            plain = sum(len(s) for s in _instructions(addr, rb, list(range(chunks))))
            # At most one line is read by two instructions (the wrap).
            assert shifted <= lines + 1
            assert shifted <= plain
            shifted_total += shifted
            plain_total += plain
        if rb % LINE:
            assert shifted_total < plain_total


def test_c_runtime_plan_matches_python(tmp_path_factory):
    runtime_library(tmp_path_factory)
    from hector import _runtime

    rng = random.Random(4)
    for rb in _sizes(rng):
        for addr in _addrs(rng)[:12]:
            assert _runtime.row_plan(addr, rb) == row_plan(addr, rb), (addr, rb)


def test_c_runtime_plan_rejects_bad_input(tmp_path_factory):
    runtime_library(tmp_path_factory)
    from hector import _runtime

    with pytest.raises(_runtime.HectorRuntimeError, match="row_bytes"):
        _runtime.row_plan(0, -1)
    with pytest.raises(ValueError):
        row_plan(0, -1)

"""libhector_runtime through ctypes on a machine without a GPU: it loads, it
validates its arguments with clear messages, it picks the kernel variant the
layout calls for, and GPU calls fail with a clear "no CUDA" error."""

import ctypes

import pytest

from hector import _runtime
from hector._runtime import GatherDesc

from test_unified_support import cuda_driver_present, runtime_library


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return runtime_library(tmp_path_factory)


def desc(**kw):
    """A valid descriptor with fake (never dereferenced) addresses."""
    d = dict(src=0x10000000, src_rows=1000, src_stride=2048, row_bytes=2048,
             index=0x20000000, n_index=64, index_bytes=8, flags=0,
             dst=0x30000000, dst_stride=2048, device=0, reserved=0, stream=None)
    d.update(kw)
    return GatherDesc(**d)


def test_library_identity(lib):
    assert lib.hector_abi_version() == _runtime.ABI_VERSION
    assert lib.hector_status_name(_runtime.NO_DRIVER) == b"HECTOR_ERROR_NO_DRIVER"
    assert lib.hector_status_name(999) == b"HECTOR_ERROR_UNKNOWN"
    assert _runtime.has_kernels() in (True, False)


@pytest.mark.skipif(cuda_driver_present(), reason="a CUDA driver is installed here")
def test_no_driver_is_a_clear_error(lib):
    with pytest.raises(_runtime.HectorRuntimeError) as e:
        _runtime.device_count()
    assert e.value.status == _runtime.NO_DRIVER
    assert "libcuda.so.1" in str(e.value) and "HECTOR_ERROR_NO_DRIVER" in str(e.value)
    # Every GPU-backed entry point says the same, and none crashes.
    for call in (
        lambda: _runtime.device_name(0),
        lambda: _runtime.host_alloc(4096, 0),
        lambda: _runtime.host_alloc_large_pages(4096, 0),
        lambda: _runtime.host_register(ctypes.addressof(ctypes.create_string_buffer(64)), 64, 0),
        lambda: _runtime.gather(desc()),
    ):
        with pytest.raises(_runtime.HectorRuntimeError) as e:
            call()
        assert e.value.status == _runtime.NO_DRIVER, str(e.value)
    # Freeing NULL is a no-op, as with free().
    _runtime.host_free(0)
    _runtime.host_free_large_pages(0)


def test_unregister_of_unknown_memory_is_reported(lib):
    buf = ctypes.create_string_buffer(64)
    with pytest.raises(_runtime.HectorRuntimeError, match="was not registered") as e:
        _runtime.host_unregister(ctypes.addressof(buf), 64)
    assert e.value.status == _runtime.NOT_REGISTERED


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(index_bytes=2), "index_bytes must be 4"),
        (dict(n_index=-1), "n_index"),
        (dict(n_index=1 << 41), "n_index"),
        (dict(row_bytes=-5), "must be >= 0"),
        (dict(src_rows=-1), "must be >= 0"),
        (dict(src_stride=100), "strides"),
        (dict(dst_stride=2047), "strides"),
        (dict(reserved=1), "reserved"),
        (dict(flags=64), "unknown flags"),
        (dict(flags=16), "unknown flags"),  # the L2 prefetch-size flags of ABI 1
        (dict(dst=None), "non-NULL"),
        (dict(index=None), "non-NULL"),
        (dict(src=None), "src is NULL"),
        (dict(device=-1), "negative"),
        (dict(src_rows=1 << 60, src_stride=1 << 20, row_bytes=1 << 20, dst_stride=1 << 20), "overflows"),
        (dict(row_bytes=1 << 36, src_stride=1 << 36, dst_stride=1 << 36), "32 GiB"),
    ],
)
def test_bad_descriptors_are_rejected(lib, fields, message):
    for call in (_runtime.gather_variant, _runtime.gather):
        with pytest.raises(_runtime.HectorRuntimeError, match=message) as e:
            call(desc(**fields))
        assert e.value.status == _runtime.INVALID_ARGUMENT


def test_null_descriptor(lib):
    assert lib.hector_gather(None, None, None) == _runtime.INVALID_ARGUMENT
    assert b"desc is NULL" in lib.hector_last_error()


@pytest.mark.parametrize(
    "fields, variant",
    [
        (dict(), "aligned/g32/i64"),                       # 2 KB rows
        (dict(index_bytes=4), "aligned/g32/i32"),
        (dict(row_bytes=256, src_stride=256, dst_stride=256), "aligned/g16/i64"),
        (dict(row_bytes=16, src_stride=16, dst_stride=16), "aligned/g1/i64"),
        (dict(row_bytes=48, src_stride=48, dst_stride=48), "aligned/g4/i64"),
        (dict(row_bytes=0, src_stride=0, dst_stride=0), "aligned/g1/i64"),
        # 2052 B rows (the unaligned row of the gather table)
        (dict(row_bytes=2052, src_stride=2052, dst_stride=2052), "general/g32/i64"),
        # aligned rows at an unaligned base (a view at an odd offset)
        (dict(src=0x10000004), "general/g32/i64"),
        (dict(dst=0x30000008), "general/g32/i64"),
        # odd byte sizes: int8 / fp16 rows of odd length
        (dict(row_bytes=3, src_stride=3, dst_stride=3), "general/g2/i64"),
        (dict(row_bytes=14, src_stride=14, dst_stride=14), "general/g2/i64"),
        (dict(row_bytes=40, src_stride=40, dst_stride=40), "general/g4/i64"),
        (dict(row_bytes=250, src_stride=250, dst_stride=250), "general/g32/i64"),
        (dict(flags=_runtime.GATHER_FORCE_GENERAL), "general/g32/i64"),
        (dict(flags=_runtime.GATHER_NAIVE), "naive/e4/i64"),
        (dict(flags=_runtime.GATHER_NAIVE, row_bytes=6, src_stride=6, dst_stride=6), "naive/e2/i64"),
        (dict(flags=_runtime.GATHER_NAIVE, row_bytes=7, src_stride=7, dst_stride=7), "naive/e1/i64"),
    ],
)
def test_variant_follows_the_layout(lib, fields, variant):
    assert _runtime.gather_variant(desc(**fields)) == variant


def test_env_var_that_points_nowhere(monkeypatch, lib):
    monkeypatch.setenv(_runtime.ENV_VAR, "/nonexistent/libhector_runtime.so")
    monkeypatch.setattr(_runtime, "_lib", None)
    with pytest.raises(_runtime.RuntimeLibraryNotFound, match="/nonexistent") as e:
        _runtime.load()
    assert isinstance(e.value, OSError)

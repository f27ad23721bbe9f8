"""ctypes binding of libhector_runtime.so (C ABI: runtime/include/hector/runtime.h).

No build step on the user's side: the shared library is looked up, in order,
at $HECTOR_RUNTIME_LIB, next to this package, and in the repository's build
folders (build-rt/ from a standalone runtime build, build*/runtime/ from the
full tree). Nothing here needs torch or a GPU; calls that need the GPU raise
HectorRuntimeError with the runtime's own message when there is none.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading

ABI_VERSION = 4

# hector_status (runtime.h)
OK = 0
INVALID_ARGUMENT = 1
NO_DRIVER = 2
NO_DEVICE = 3
CUDA = 4
INDEX_OUT_OF_RANGE = 5
NO_KERNELS = 6
NOT_REGISTERED = 7
OUT_OF_MEMORY = 8
IO = 9

# hector_gather flags
GATHER_CHECK = 1
GATHER_WRAP_NEGATIVE = 2
GATHER_NAIVE = 4
GATHER_FORCE_GENERAL = 8

LIB_NAME = "libhector_runtime.so"
ENV_VAR = "HECTOR_RUNTIME_LIB"


class HectorRuntimeError(RuntimeError):
    """A runtime call failed; `status` is the hector_status code."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class RuntimeLibraryNotFound(HectorRuntimeError, OSError):
    """libhector_runtime.so could not be found or loaded."""

    def __init__(self, message: str):
        HectorRuntimeError.__init__(self, NO_DRIVER, message)


class GatherIndexError(HectorRuntimeError, IndexError):
    """A gather index was out of range; `position` and `index` say which."""

    def __init__(self, message: str, position: int, index: int):
        HectorRuntimeError.__init__(self, INDEX_OUT_OF_RANGE, message)
        self.position = position
        self.index = index


class GatherDesc(ctypes.Structure):
    """hector_gather_desc, field for field."""

    _fields_ = [
        ("src", ctypes.c_void_p),
        ("src_rows", ctypes.c_int64),
        ("src_stride", ctypes.c_int64),
        ("row_bytes", ctypes.c_int64),
        ("index", ctypes.c_void_p),
        ("n_index", ctypes.c_int64),
        ("index_bytes", ctypes.c_int32),
        ("flags", ctypes.c_int32),
        ("dst", ctypes.c_void_p),
        ("dst_stride", ctypes.c_int64),
        ("device", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("stream", ctypes.c_void_p),
        ("dst_index", ctypes.c_void_p),
    ]


def _repo_root() -> str:
    # python/hector/_runtime.py -> the repository root
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def candidate_paths() -> list[str]:
    """Where the library is looked for, in order (the env var wins alone)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    root = _repo_root()
    paths = [os.path.join(here, LIB_NAME)]
    # The build the tools come from first ($HECTOR_BUILD_DIR, else build/),
    # so that Python and the compiled libraries use one runtime.
    build = os.environ.get("HECTOR_BUILD_DIR") or os.path.join(root, "build")
    paths.append(os.path.join(build, "runtime", LIB_NAME))
    paths.append(os.path.join(root, "build-rt", LIB_NAME))
    paths += sorted(glob.glob(os.path.join(root, "build*", "runtime", LIB_NAME)))
    return list(dict.fromkeys(paths))


_lock = threading.Lock()
_lib = None


def _declare(lib: ctypes.CDLL) -> None:
    c_int, c_size, c_void_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p
    p_int64 = ctypes.POINTER(ctypes.c_int64)
    sig = {
        "hector_abi_version": (c_int, []),
        "hector_last_error": (ctypes.c_char_p, []),
        "hector_status_name": (ctypes.c_char_p, [c_int]),
        "hector_has_kernels": (c_int, []),
        "hector_device_count": (c_int, [ctypes.POINTER(c_int)]),
        "hector_device_name": (c_int, [c_int, ctypes.c_char_p, c_size]),
        "hector_host_register": (c_int, [c_void_p, c_size, c_int, ctypes.POINTER(c_void_p)]),
        "hector_host_unregister": (c_int, [c_void_p, c_size]),
        "hector_host_alloc": (
            c_int,
            [c_size, c_int, ctypes.POINTER(c_void_p), ctypes.POINTER(c_void_p)],
        ),
        "hector_host_free": (c_int, [c_void_p]),
        "hector_host_alloc_large_pages": (c_int, [c_size, c_int, ctypes.POINTER(c_void_p)]),
        "hector_host_free_large_pages": (c_int, [c_void_p]),
        "hector_gather": (c_int, [ctypes.POINTER(GatherDesc), p_int64, p_int64]),
        "hector_row_plan": (
            c_int,
            [ctypes.c_uint64, ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64), p_int64, p_int64],
        ),
        "hector_gather_variant": (
            c_int,
            [ctypes.POINTER(GatherDesc), ctypes.c_char_p, c_size],
        ),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def load() -> ctypes.CDLL:
    """The loaded library (cached). Raises RuntimeLibraryNotFound."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in candidate_paths():
            if not os.path.exists(path):
                tried.append(f"{path} (missing)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            _declare(lib)
            if lib.hector_abi_version() != ABI_VERSION:
                tried.append(
                    f"{path} (ABI version {lib.hector_abi_version()}, "
                    f"this package needs {ABI_VERSION}: rebuild the runtime)"
                )
                continue
            _lib = lib
            return lib
        raise RuntimeLibraryNotFound(
            f"{LIB_NAME} not found; tried: " + "; ".join(tried) + ". Build it with "
            "`cmake -S runtime -B build-rt -G Ninja && ninja -C build-rt`, or set "
            f"{ENV_VAR} to its path."
        )


def _check(lib: ctypes.CDLL, status: int) -> None:
    if status != OK:
        message = lib.hector_last_error().decode(errors="replace")
        name = lib.hector_status_name(status).decode()
        raise HectorRuntimeError(status, f"{message} [{name}]")


def has_kernels() -> bool:
    return bool(load().hector_has_kernels())


def device_count() -> int:
    lib = load()
    n = ctypes.c_int(0)
    _check(lib, lib.hector_device_count(ctypes.byref(n)))
    return n.value


def device_name(device: int) -> str:
    lib = load()
    buf = ctypes.create_string_buffer(256)
    _check(lib, lib.hector_device_name(device, buf, len(buf)))
    return buf.value.decode()


def host_register(ptr: int, nbytes: int, device: int) -> int:
    """Pins and maps [ptr, ptr + nbytes); returns the device-visible address."""
    lib = load()
    out = ctypes.c_void_p()
    _check(lib, lib.hector_host_register(ptr, nbytes, device, ctypes.byref(out)))
    return out.value


def host_unregister(ptr: int, nbytes: int) -> None:
    lib = load()
    _check(lib, lib.hector_host_unregister(ptr, nbytes))


def host_alloc(nbytes: int, device: int) -> tuple[int, int]:
    """Mapped pinned memory: returns (host address, device address)."""
    lib = load()
    host, dev = ctypes.c_void_p(), ctypes.c_void_p()
    _check(lib, lib.hector_host_alloc(nbytes, device, ctypes.byref(host), ctypes.byref(dev)))
    return host.value, dev.value


def host_free(ptr: int) -> None:
    lib = load()
    _check(lib, lib.hector_host_free(ptr))


def host_alloc_large_pages(nbytes: int, device: int) -> int:
    """Host memory from the CUDA VMM API (2 MB granules), mapped for the
    device and the CPU at the returned address."""
    lib = load()
    ptr = ctypes.c_void_p()
    _check(lib, lib.hector_host_alloc_large_pages(nbytes, device, ctypes.byref(ptr)))
    return ptr.value


def host_free_large_pages(ptr: int) -> None:
    lib = load()
    _check(lib, lib.hector_host_free_large_pages(ptr))


def gather(desc: GatherDesc) -> None:
    """Runs hector_gather; raises GatherIndexError for a bad index."""
    lib = load()
    pos, idx = ctypes.c_int64(-1), ctypes.c_int64(0)
    status = lib.hector_gather(ctypes.byref(desc), ctypes.byref(pos), ctypes.byref(idx))
    if status == INDEX_OUT_OF_RANGE:
        raise GatherIndexError(lib.hector_last_error().decode(), pos.value, idx.value)
    _check(lib, status)


def gather_variant(desc: GatherDesc) -> str:
    """The kernel hector_gather would pick for desc, e.g. 'aligned/g32/i64'."""
    lib = load()
    buf = ctypes.create_string_buffer(64)
    _check(lib, lib.hector_gather_variant(ctypes.byref(desc), buf, len(buf)))
    return buf.value.decode()


def row_plan(addr: int, row_bytes: int) -> tuple[int, int, int]:
    """The C runtime's circular-shift plan: (hull start, chunks, shift)."""
    lib = load()
    hull, n, shift = ctypes.c_uint64(), ctypes.c_int64(), ctypes.c_int64()
    _check(
        lib,
        lib.hector_row_plan(addr, row_bytes, ctypes.byref(hull), ctypes.byref(n), ctypes.byref(shift)),
    )
    return hull.value, n.value, shift.value


# ---- the cap on CUDA libraries' temporaries (launch.h, temporaries.h) --------

NO_TEMPORARY_CAP = (1 << 64) - 1  # HECTOR_NO_TEMPORARY_CAP


def temporary_cap_value(nbytes) -> int:
    """The C ABI's value of a cap of `nbytes` bytes (None: no cap), checked."""
    if nbytes is None:
        return NO_TEMPORARY_CAP
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise TypeError(f"set_temporary_cap: expected a number of bytes or None, got "
                        f"{type(nbytes).__name__}")
    if not 0 <= nbytes < NO_TEMPORARY_CAP:
        raise ValueError(f"set_temporary_cap: {nbytes} bytes is out of range [0, 2**64 - 1)")
    return nbytes


def temporary_cap_of(value: int):
    """The cap a C ABI value stands for (None: no cap)."""
    return None if value == NO_TEMPORARY_CAP else value


def _launch_function(name: str):
    lib = load()
    fn = getattr(lib, name, None)
    if fn is None:
        raise HectorRuntimeError(INVALID_ARGUMENT, f"{LIB_NAME} has no {name} (an older "
                                 "runtime?): rebuild it")
    if name == "hector_launch_set_temporary_cap":
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_uint64]
    else:
        fn.restype, fn.argtypes = ctypes.c_uint64, []
    return fn


def set_temporary_cap(nbytes) -> None:
    """Caps the bytes of temporary device buffers that CUDA libraries' entry
    points hold at once in this process (None: no cap); a call past it fails
    with a LaunchError of status OUT_OF_MEMORY. CompiledLibrary.set_temporary_cap
    does the same through a library's own runtime."""
    _launch_function("hector_launch_set_temporary_cap")(temporary_cap_value(nbytes))


def temporary_cap():
    """The cap (None: none; 0 while a malformed $HECTOR_TEMPORARY_CAP refuses
    every allocation)."""
    return temporary_cap_of(int(_launch_function("hector_launch_temporary_cap")()))


def temporary_bytes() -> int:
    """Bytes of temporary device buffers held now."""
    return int(_launch_function("hector_launch_temporary_bytes")())

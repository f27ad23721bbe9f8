"""Load libraries built by ``hectorc`` and call their entry points.

    lib = hector.compiled.load("build/libmodel.so")    # reads libmodel.so.json
    lib.rgcn(edge_src, ..., h, W, out)                  # or lib["rgcn"](...)

``hectorc model.mlir --target=cpu|cuda -o libmodel.so`` writes the library and
its manifest ``libmodel.so.json`` (docs/backends.md). Every entry point takes
its arguments in manifest order (or by name, as keywords) and returns nothing:
outputs are buffers the caller allocates and the entry point fills.

- ``--target=cpu``: numpy arrays (CPU torch tensors work too).
- ``--target=cuda``: torch CUDA tensors, all on one device. The call runs on
  the current torch stream of that device and, by default, waits for it, so
  that a failing kernel raises here (``synchronize=False`` only queues the
  work). The library needs ``libhector_runtime.so``: ``hectorc`` copies it
  next to the library, where the library finds it. An argument compiled with
  ``hectorc --host-resident=<name>`` (``"host_resident": true`` in the
  manifest) also takes a ``hector.unified`` tensor or a pinned CPU tensor:
  the kernels read its rows in place over PCIe, nothing is copied to the
  device. A pageable CPU tensor is refused (TypeError).

Libraries built with ``hectorc --training`` also have, per function f, the
entries f_fwd and f_bwd (``lib.training_entries("f")``; docs/python.md):
their saved tensors and gradients are caller-allocated outputs too.

Before calling, every argument is checked against the manifest: type and
dtype (TypeError), rank, contiguity, writability of outputs, static sizes and
shape symbols -- every "E" the same, "N+1" one more than "N" (ValueError);
messages name the argument. Nothing is converted or copied silently.
Every call also checks the graph arrays, since generated code indexes memory
with them (ValueError naming the array, the value and its range): every id
in its range, every offset table starting at 0, never decreasing and ending
at its symbol (hector/_graph_checks.py). The statistics are reduced on the
arrays' device and read back in one copy, two reductions over each id array; on
a GPU that copy waits for the work queued before it. ``check_indices=False``
skips the check, for arrays that come straight from hector.graph and were
not modified since (hector.nn does so for the graphs it preprocesses
itself); an id out of range then reads or writes out of bounds.
An entry built with ``hectorc --typed-endpoints`` (``"typed_endpoints": true``
in the manifest) always checks that every edge type of the graph joins one
source node type to one destination node type, which its code assumes
(ValueError otherwise; torch arrays are checked once per content, by
fingerprint).

Temporaries. Entry points allocate their temporary buffers themselves (host
memory in a CPU library, device memory in a CUDA one) and count them:
``lib.temporary_bytes()`` in use, ``lib.peak_temporary_bytes()`` at most.
``lib.set_temporary_cap(nbytes)`` (or ``with lib.capped(nbytes):``, or
``$HECTOR_TEMPORARY_CAP`` before the first call) caps them: a call that
would need more stops, frees what it allocated and raises
TemporaryMemoryError (a MemoryError) naming the entry point, the bytes asked
for, the cap and the bytes in use; its outputs are not valid. A CPU
library's cap is its own; a CUDA library's is the runtime's, for the whole
process (runtime/include/hector/temporaries.h).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
from dataclasses import dataclass

from . import _entry_abi, _runtime, _torch_allocator
from ._graph_checks import check_graph_indices, check_typed_endpoints

__all__ = ["load", "CompiledLibrary", "EntryPoint", "Argument", "LaunchError",
           "TemporaryMemoryError"]

MANIFEST_FORMAT = "hector-library-manifest"
MANIFEST_VERSION = 1
# Roles of arguments. `output`, `saved` and `grad` are buffers the caller
# allocates and the entry point fills; the others are read. A library built
# with `hectorc --training` has, per function f, the entries f (kind
# "inference"), f_fwd ("training_forward": f's arguments, then its saved
# tensors as outputs) and f_bwd ("training_backward": what the backward reads,
# the saved tensors, the cotangents "d_result<i>" of f's results, then the
# gradients "d_<argument>" as outputs); both name f in "primal".
# Both from runtime/include/hector/entry_abi.def (python/hector/_entry_abi.py).
ROLES = tuple(_entry_abi.ACCESS)
KINDS = _entry_abi.KINDS


def access(role: str, kind: str) -> str:
    """What an entry point of `kind` does with an argument of `role`:
    "none" (not allowed), "read", or "written" (an output the caller
    allocates)."""
    return _entry_abi.ACCESS[role][KINDS.index(kind)]

DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64")
STREAM_ASYNC = 1  # HECTOR_STREAM_ASYNC (runtime/include/hector/launch.h)

_SYMBOL = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\+([0-9]+))?$")


@dataclass(frozen=True)
class Offloaded:
    """A saved value an entry moves through the runtime's tensor cache
    instead of a buffer argument (``hectorc --offload``): a training forward
    evicts it, the backward prefetches it, under key base + slot."""
    name: str
    direction: str  # "evict" | "prefetch"
    slot: int
    tier: str  # "host" | "disk" for an evict, else ""
    shape: tuple


def _parse_offloaded(path: str, entry: str, raw) -> tuple:
    if not isinstance(raw, list):
        raise _manifest_error(path, f"entry '{entry}' has offload {raw!r}")
    found = []
    for item in raw:
        ok = (isinstance(item, dict) and isinstance(item.get("name"), str)
              and item.get("direction") in ("evict", "prefetch")
              and isinstance(item.get("slot"), int) and item["slot"] >= 0
              and isinstance(item.get("shape"), list)
              and (item.get("tier") in ("host", "disk")) == (item["direction"] == "evict"))
        if not ok:
            raise _manifest_error(path, f"entry '{entry}' has an offloaded value {item!r}")
        found.append(Offloaded(item["name"], item["direction"], item["slot"],
                               item.get("tier", ""), tuple(item["shape"])))
    return tuple(found)


class LaunchError(RuntimeError):
    """A CUDA entry point failed in the launch runtime; `status` is the
    hector_status code (runtime.h)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class TemporaryMemoryError(LaunchError, MemoryError):
    """An entry point could not allocate a temporary buffer: past the cap on
    temporaries (CompiledLibrary.set_temporary_cap), or the allocator had no
    memory. The call freed what it had allocated; its outputs are not
    valid."""


def _entry_error(entry: str, status: int, message: str) -> LaunchError:
    """The exception for an entry point's failure status and message."""
    cls = TemporaryMemoryError if status == _runtime.OUT_OF_MEMORY else LaunchError
    return cls(status, f"{entry}(): {message}")


# A cap of this many bytes is no cap (HECTOR_NO_TEMPORARY_CAP, temporaries.h).
NO_TEMPORARY_CAP = _runtime.NO_TEMPORARY_CAP


@dataclass(frozen=True)
class Argument:
    """One argument of an entry point, as the manifest describes it."""

    index: int
    role: str
    name: str
    dtype: str
    rank: int
    shape: tuple  # per dimension: symbol (str), size (int) or None
    sizes: tuple  # per dimension: the size every call must have, or None
    entry_kind: str = "inference"  # the kind of the entry point it belongs to
    # An input the kernels read in place from pinned, mapped host memory
    # (hectorc --host-resident): it accepts hector.unified tensors.
    host_resident: bool = False

    @property
    def is_output(self) -> bool:
        """Whether the caller allocates this buffer and the entry point fills
        it: results, saved tensors of a training forward, gradients. (Saved
        tensors are outputs of f_fwd and inputs of f_bwd.)"""
        return access(self.role, self.entry_kind) == "written"


def _descriptor_type(rank: int, cache: dict = {}) -> type:  # noqa: B006
    """ctypes struct of a rank-`rank` memref descriptor:
    {T *allocated; T *aligned; int64 offset; int64 sizes[rank]; int64 strides[rank]}."""
    if rank not in cache:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                  ("offset", ctypes.c_int64)]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
        cache[rank] = type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})
    return cache[rank]


# Memref descriptors of recent (pointer, shape) pairs, with their addresses:
# the same tensors come back call after call (graph arrays, weights,
# outputs), and building a ctypes struct costs more than the lookup. A
# descriptor only holds that pair and the strides it implies, so a cached
# one is never stale; the tensor's lifetime is the caller's, as before.
_DESCRIPTOR_CACHE_SIZE = 1024
_descriptors: dict = {}


def _descriptor(ptr: int, shape: tuple) -> tuple:
    """The memref descriptor of `ptr` with row-major `shape`, and its address."""
    key = (ptr, shape)
    found = _descriptors.get(key)
    if found is None:
        d = _descriptor_type(len(shape))()
        d.allocated = d.aligned = ptr
        d.offset = 0
        if shape:
            d.sizes[:] = list(shape)
            d.strides[:] = _row_major_strides(shape)
        if len(_descriptors) >= _DESCRIPTOR_CACHE_SIZE:
            _descriptors.clear()
        found = _descriptors[key] = (d, ctypes.addressof(d))
    return found


def _row_major_strides(shape) -> list:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(int(size), 1)
    return strides[::-1]


def _manifest_error(path: str, what: str) -> ValueError:
    return ValueError(f"{path}: not a valid hectorc manifest: {what}")


def _parse_argument(path: str, entry: str, index: int, raw, kind: str) -> Argument:
    where = f"entry '{entry}' argument {index}"
    if not isinstance(raw, dict):
        raise _manifest_error(path, f"{where} is not an object")
    try:
        role, name, dtype, rank = raw["role"], raw["name"], raw["dtype"], raw["rank"]
        shape, sizes = raw["shape"], raw.get("sizes", [None] * len(raw["shape"]))
    except KeyError as e:
        raise _manifest_error(path, f"{where} lacks {e}") from None
    if role not in ROLES:
        raise _manifest_error(path, f"{where} has role {role!r}")
    if dtype not in DTYPES:
        raise _manifest_error(path, f"{where} has dtype {dtype!r}")
    if not isinstance(name, str) or not name:
        raise _manifest_error(path, f"{where} has no name")
    if not isinstance(rank, int) or rank < 0 or len(shape) != rank or len(sizes) != rank:
        raise _manifest_error(path, f"{where} has rank {rank!r} and shape {shape!r}")
    for dim in shape:
        if not (dim is None or (isinstance(dim, int) and dim >= 0)
                or (isinstance(dim, str) and _SYMBOL.match(dim))):
            raise _manifest_error(path, f"{where} has a bad shape entry {dim!r}")
    for size in sizes:
        if not (size is None or (isinstance(size, int) and size >= 0)):
            raise _manifest_error(path, f"{where} has a bad size {size!r}")
    if access(role, kind) == "none":
        article = "an" if kind[0] in "aeiou" else "a"
        raise _manifest_error(path, f"{where} has role {role!r} in {article} {kind} entry")
    host_resident = raw.get("host_resident", False)
    if not isinstance(host_resident, bool):
        raise _manifest_error(path, f"{where} has host_resident {host_resident!r}")
    if host_resident and role != "input":
        raise _manifest_error(path, f"{where} is host_resident but has role {role!r}")
    return Argument(index, role, name, dtype, rank, tuple(shape), tuple(sizes), kind,
                    host_resident)


class EntryPoint:
    """A callable entry point of a compiled library."""

    def __init__(self, library: "CompiledLibrary", raw: dict):
        path = library.manifest_path
        try:
            self.name = raw["name"]
            self.symbol = raw["symbol"]
            raw_args = raw["arguments"]
        except (KeyError, TypeError) as e:
            raise _manifest_error(path, f"an entry lacks {e}") from None
        self.preprocessing = tuple(raw.get("preprocessing", ()))
        # Libraries from before training entries carry no kind: inference.
        self.kind = raw.get("kind", "inference")
        if self.kind not in KINDS:
            raise _manifest_error(path, f"entry '{self.name}' has kind {self.kind!r}")
        self.primal = raw.get("primal", self.name)
        if not isinstance(self.primal, str) or not self.primal:
            raise _manifest_error(path, f"entry '{self.name}' has primal {self.primal!r}")
        # Built with --typed-endpoints: every call checks the graph qualifies.
        self.typed_endpoints = raw.get("typed_endpoints", False)
        if not isinstance(self.typed_endpoints, bool):
            raise _manifest_error(
                path, f"entry '{self.name}' has typed_endpoints {self.typed_endpoints!r}")
        self.arguments = tuple(
            _parse_argument(path, self.name, i, a, self.kind) for i, a in enumerate(raw_args))
        self.offloaded = _parse_offloaded(path, self.name, raw.get("offload", []))
        self._library = library
        self._fast_plan = None  # _prepare_cuda_tensors' per-argument checks
        try:
            self._fn = getattr(library._lib, self.symbol)
        except AttributeError:
            raise _manifest_error(
                path, f"the library has no symbol {self.symbol} for entry '{self.name}'"
            ) from None
        self._fn.restype = None
        self._fn.argtypes = [ctypes.c_void_p] * len(self.arguments)

    def __repr__(self) -> str:
        args = ", ".join(f"{a.role} {a.name}{' (host-resident)' if a.host_resident else ''}: "
                         f"{a.dtype}{_shape_text(a.shape)}" for a in self.arguments)
        return f"<hector entry {self.name}({args}) [{self._library.target}]>"

    # -- argument binding and checks -------------------------------------

    def _bind(self, args: tuple, kwargs: dict) -> list:
        n = len(self.arguments)
        if len(args) > n:
            raise TypeError(f"{self.name}() takes {n} arguments, got {len(args)}")
        values = list(args) + [None] * (n - len(args))
        given = [True] * len(args) + [False] * (n - len(args))
        names = {a.name: a.index for a in self.arguments}
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{self.name}() has no argument named {key!r}")
            i = names[key]
            if given[i]:
                raise TypeError(f"{self.name}() got argument {key!r} twice")
            values[i], given[i] = value, True
        missing = [a.name for a in self.arguments if not given[a.index]]
        if missing:
            raise TypeError(f"{self.name}() is missing arguments: {', '.join(missing)}")
        return values

    def _describe(self, arg: Argument, value):
        """(data pointer, shape, device) of one argument, after type checks."""
        what = f"{self.name}(): argument '{arg.name}'"
        cuda = self._library.target == "cuda"
        torch = _torch_if_tensor(value)
        is_unified = _unified_if_tensor(value) is not None
        if is_unified and not (cuda and arg.host_resident):
            hint = (f"build the library with hectorc --host-resident={arg.name}, or pass a "
                    "CUDA tensor" if cuda else "pass its CPU tensor (u.host)")
            raise TypeError(f"{what} is a hector.unified tensor (host memory mapped for the "
                            f"GPU), but this entry does not read it from host memory: {hint}")
        if is_unified:
            # Kernels read the rows in place through the mapping (no copy).
            dtype = str(value.dtype).replace("torch.", "")
            contiguous = value.host.is_contiguous()
            writable = True
            shape, ptr, device = tuple(value.shape), value._dev_ptr, value.device
        elif cuda:
            if torch is None:
                kind = ("a torch CUDA tensor or a hector.unified tensor" if arg.host_resident
                        else "a torch CUDA tensor")
                raise TypeError(f"{what} must be {kind} (the library was built "
                                f"with --target=cuda), got {type(value).__name__}")
            pinned = False
            if not value.is_cuda:
                if not (arg.host_resident and value.device.type == "cpu"):
                    raise TypeError(f"{what} must be on a CUDA device, got device {value.device}")
                if not value.is_pinned():
                    raise TypeError(
                        f"{what} is host-resident (hectorc --host-resident) but this CPU tensor "
                        "is pageable memory, which the GPU cannot read: pass "
                        f"hector.unified({arg.name}) (pins it in place and maps it for the GPU, "
                        "no copy), a pinned CPU tensor, or a CUDA tensor")
                pinned = True
            dtype = str(value.dtype).replace("torch.", "")
            contiguous = value.is_contiguous()
            writable = True
            # A pinned CPU tensor is mapped once the call's device is known
            # (_prepare): no pointer nor device yet.
            shape = tuple(value.shape)
            ptr, device = (None, None) if pinned else (value.data_ptr(), value.device)
        else:
            if torch is not None:
                if value.device.type != "cpu":
                    raise TypeError(f"{what} must be on the CPU (the library was built with "
                                    f"--target=cpu), got device {value.device}")
                value = value.detach().numpy()
            np = _numpy()
            if not isinstance(value, np.ndarray):
                raise TypeError(f"{what} must be a numpy array, got {type(value).__name__}")
            dtype = value.dtype.name if value.dtype.isnative else f"non-native {value.dtype}"
            contiguous = value.flags["C_CONTIGUOUS"]
            writable = value.flags["WRITEABLE"]
            shape, ptr, device = value.shape, value.ctypes.data, None
        if dtype != arg.dtype:
            raise TypeError(f"{what} must have dtype {arg.dtype}, got {dtype}")
        if len(shape) != arg.rank:
            raise ValueError(f"{what} must have rank {arg.rank} (shape "
                             f"{_shape_text(arg.shape)}), got shape {tuple(shape)}")
        if not contiguous:
            raise ValueError(f"{what} must be contiguous (row-major); "
                             "make a contiguous copy first")
        if arg.is_output and not writable:
            raise ValueError(f"{what} is an output but is read-only")
        return ptr, tuple(int(s) for s in shape), device, value

    def check(self, *args, **kwargs) -> dict:
        """Checks the arguments as a call would; returns the symbol values
        ({"E": 6, "N": 4, ...}). Raises TypeError/ValueError naming the
        argument."""
        return self._prepare(args, kwargs)[0]

    def _prepare(self, args: tuple, kwargs: dict):
        values = self._bind(args, kwargs)
        if self._library.target == "cuda":
            prepared = self._prepare_cuda_tensors(values)
            if prepared is not None:
                return prepared
        return self._prepare_checked(values)

    def _prepare_checked(self, values: list):
        """(symbols, described, device, values) after every check, each
        failure a TypeError or ValueError naming the argument."""
        symbols: dict[str, tuple[int, str]] = {}
        described, device = [], None
        for arg, value in zip(self.arguments, values):
            ptr, shape, dev, keep = self._describe(arg, value)
            what = f"{self.name}(): argument '{arg.name}'"
            if dev is not None:
                if device is None:
                    device = (dev, arg.name)
                elif dev != device[0]:
                    unified_arg = _unified_if_tensor(keep) is not None
                    where = "is mapped for" if unified_arg else "is on"
                    raise ValueError(f"{what} {where} {dev} but '{device[1]}' is on "
                                     f"{device[0]}: all arguments must be on one device")
            for k, (size, dim, fixed) in enumerate(zip(shape, arg.shape, arg.sizes)):
                if fixed is not None and size != fixed:
                    raise ValueError(f"{what} must have size {fixed} in dimension {k} (shape "
                                     f"{_shape_text(arg.shape)}), got shape {shape}")
                if isinstance(dim, int) and size != dim:
                    raise ValueError(f"{what} must have size {dim} in dimension {k} (shape "
                                     f"{_shape_text(arg.shape)}), got shape {shape}")
                if isinstance(dim, str):
                    name, plus = _SYMBOL.match(dim).groups()
                    value_of_symbol = size - int(plus or 0)
                    if value_of_symbol < 0:
                        raise ValueError(f"{what} has size {size} in dimension {k}, which is "
                                         f"{dim}: {name} would be negative")
                    if name in symbols and symbols[name][0] != value_of_symbol:
                        bound, source = symbols[name]
                        raise ValueError(
                            f"{what} has size {size} in dimension {k} ({dim}), but {name} = "
                            f"{bound} from argument '{source}'")
                    symbols.setdefault(name, (value_of_symbol, arg.name))
            described.append((arg, ptr, shape, keep))
        if any(ptr is None for _, ptr, _, _ in described):
            described = self._map_pinned(described, device)
        return {k: v for k, (v, _) in symbols.items()}, described, device, values

    def _prepare_cuda_tensors(self, values: list):
        """What _prepare returns, for the common CUDA call (every argument a
        contiguous torch CUDA tensor of its declared dtype and rank, all on
        one device, the sizes consistent) in a few Python steps per
        argument: a call costs tens of microseconds of host time per
        argument through the general checks, which on a small graph is most
        of the call. None for anything else; _prepare then checks in full
        and names what is wrong."""
        torch = _torch()
        plan = self._fast_plan
        if plan is None:
            plan = self._fast_plan = [
                (arg, getattr(torch, arg.dtype, None), arg.rank,
                 [(k, *_SYMBOL.match(dim).groups(), fixed) if isinstance(dim, str)
                  else (k, None, dim, fixed)
                  for k, (dim, fixed) in enumerate(zip(arg.shape, arg.sizes))])
                for arg in self.arguments]
        symbols: dict[str, int] = {}
        described, device_index = [], None
        for (arg, dtype, rank, dims), value in zip(plan, values):
            if not (isinstance(value, torch.Tensor) and value.is_cuda
                    and value.dtype is dtype and value.dim() == rank
                    and value.is_contiguous()):
                return None
            index = value.get_device()
            if device_index is None:
                device_index, device = index, (value.device, arg.name)
            elif index != device_index:
                return None
            shape = tuple(value.shape)
            for k, name, bound, fixed in dims:
                size = shape[k]
                if fixed is not None and size != fixed:
                    return None
                if name is None:
                    if isinstance(bound, int) and size != bound:
                        return None
                    continue
                size -= int(bound or 0)
                if size < 0 or symbols.setdefault(name, size) != size:
                    return None
            described.append((arg, value.data_ptr(), shape, value))
        return symbols, described, (device if described else None), values

    def _map_pinned(self, described: list, device) -> list:
        """Host-resident arguments given as pinned CPU tensors: their
        device-visible address for the call's device (memory that torch
        pinned is recognised by the runtime, not pinned again)."""
        from .unified import unified

        torch = _torch()
        index = (device[0].index if device and device[0].index is not None
                 else torch.cuda.current_device())
        mapped = []
        for arg, ptr, shape, keep in described:
            if ptr is None:
                keep = unified(keep, device=index)
                ptr = keep._dev_ptr
            mapped.append((arg, ptr, shape, keep))
        return mapped

    # -- the call -----------------------------------------------------------

    def __call__(self, *args, synchronize: bool = True, check_indices: bool = True,
                 offload=None, **kwargs) -> None:
        """`offload`: a (hector.tensor_cache.TensorCache, key base) pair, needed
        by entries whose manifest lists offloaded values; the forward's and
        the backward's calls of one step take the same pair, and the caller
        releases the keys (CompiledLibrary.offload_release) afterwards."""
        if self.offloaded:
            if (not isinstance(offload, tuple) or len(offload) != 2
                    or not isinstance(offload[1], int) or not 0 <= offload[1] < 1 << 64):
                raise TypeError(
                    f"{self.name}() moves saved values ({', '.join(o.name for o in self.offloaded)}) "
                    "through a tensor cache: pass offload=(cache, key_base)")
        symbols, described, device, values = self._prepare(args, kwargs)
        if check_indices:
            check_graph_indices(self.name, [(arg, keep) for arg, _, _, keep in described],
                                symbols)
        if self.typed_endpoints:
            # The caller's arrays (a CPU library may see numpy views of torch
            # tensors), so that unchanged torch tensors are checked once.
            check_typed_endpoints(self.name, zip(self.arguments, values))
        # (struct, address) pairs: the structs stay alive through the call
        # even if another thread clears the cache meanwhile.
        descriptors = [_descriptor(ptr, shape) for _, ptr, shape, _ in described]
        pointers = [address for _, address in descriptors]
        library = self._library
        if self.offloaded:
            library._offload_bind(*offload)
        try:
            if library.target == "cuda":
                library._call_cuda(self.name, self._fn, pointers, device, synchronize)
            else:
                library._call_cpu(self.name, self._fn, pointers, self.offloaded)
        finally:
            if self.offloaded:
                library._lib.hector_offload_unbind()
        # `described` keeps every array alive until here.
        del described


class CompiledLibrary:
    """A library built by hectorc, with its entry points as attributes."""

    def __init__(self, lib_path: str):
        self.path = os.path.abspath(lib_path)
        self.manifest_path = self.path + ".json"
        try:
            with open(self.manifest_path, encoding="utf-8") as f:
                manifest = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.manifest_path}: manifest not found; hectorc writes it next to the "
                "library (--emit=lib)") from None
        except json.JSONDecodeError as e:
            raise _manifest_error(self.manifest_path, str(e)) from None
        if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
            raise _manifest_error(self.manifest_path, f"format is not {MANIFEST_FORMAT!r}")
        if manifest.get("format_version") != MANIFEST_VERSION:
            raise _manifest_error(
                self.manifest_path,
                f"format_version {manifest.get('format_version')!r}, this loader reads "
                f"{MANIFEST_VERSION}")
        self.manifest = manifest
        self.target = manifest.get("target")
        if self.target not in ("cpu", "cuda"):
            raise _manifest_error(self.manifest_path, f"target {self.target!r}")
        self.gpu_arch = manifest.get("gpu_arch")
        self._lib = self._open()
        entries = manifest.get("entries")
        if not isinstance(entries, list):
            raise _manifest_error(self.manifest_path, "no entries list")
        self.entries = {}
        for raw in entries:
            entry = EntryPoint(self, raw)
            self.entries[entry.name] = entry

    def _open(self) -> ctypes.CDLL:
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"{self.path}: no such library")
        try:
            lib = ctypes.CDLL(self.path)
        except OSError as first:
            if self.target != "cuda" or "libhector_runtime" not in str(first):
                raise OSError(f"cannot load {self.path}: {first}") from None
            # The runtime is not beside the library: load it from where
            # hector._runtime finds it ($HECTOR_RUNTIME_LIB, the build tree),
            # globally, so that the library's dependency resolves to it.
            for candidate in _runtime.candidate_paths():
                if os.path.exists(candidate):
                    ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
                    break
            try:
                lib = ctypes.CDLL(self.path)
            except OSError as second:
                raise OSError(
                    f"cannot load {self.path}: {second}. hectorc copies "
                    f"{_runtime.LIB_NAME} next to the library; else set "
                    f"{_runtime.ENV_VAR} to it") from None
        if self.target == "cuda":
            # Through the library's handle, these resolve in the runtime the
            # library itself is bound to (never another copy).
            c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
            for name, restype, argtypes in (
                ("hector_launch_status", c_int, []),
                ("hector_launch_error", ctypes.c_char_p, []),
                ("hector_launch_clear", None, []),
                ("hector_set_device", c_int, [c_int]),
                ("hector_set_stream", c_int, [c_void_p, c_int]),
                ("hector_reset_stream", None, []),
                ("hector_launch_module_loads", ctypes.c_int64, []),
                ("hector_launch_peak_temporary_bytes", ctypes.c_uint64, []),
                ("hector_launch_reset_peak_temporary_bytes", None, []),
                ("hector_last_error", ctypes.c_char_p, []),
            ):
                try:
                    fn = getattr(lib, name)
                except AttributeError:
                    raise OSError(
                        f"cannot use {self.path}: its {_runtime.LIB_NAME} has no {name} "
                        "(an older runtime?)") from None
                fn.restype, fn.argtypes = restype, argtypes
            # Newer than the rest (an older runtime lacks it: trimming is
            # then a no-op, its memory was never kept).
            trim = getattr(lib, "hector_launch_trim_temporaries", None)
            if trim is not None:
                trim.restype, trim.argtypes = c_int, []
            self.temporaries_in_torch = _torch_allocator.install(lib)
        return lib

    def _call_cuda(self, name: str, fn, pointers: list, device, synchronize: bool) -> None:
        torch = _torch()
        lib = self._lib
        dev = device[0] if device else torch.device("cuda", torch.cuda.current_device())
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        if lib.hector_set_device(index) != 0:
            raise LaunchError(_runtime.NO_DEVICE, lib.hector_last_error().decode(errors="replace"))
        stream = torch.cuda.current_stream(index).cuda_stream
        lib.hector_set_stream(stream, 0 if synchronize else STREAM_ASYNC)
        lib.hector_launch_clear()
        try:
            fn(*pointers)
            status = lib.hector_launch_status()
            if status != 0:
                message = lib.hector_launch_error().decode(errors="replace")
                raise _entry_error(name, status, message)
        finally:
            lib.hector_launch_clear()
            lib.hector_reset_stream()

    def _offload_functions(self) -> None:
        """Declares the runtime's offload functions on the library's handle,
        so that they resolve in the runtime the library itself calls (never
        another copy of it)."""
        if getattr(self, "_offload_declared", False):
            return
        c_int, c_void_p, c_uint64 = ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64
        for name, restype, argtypes in (
            ("hector_offload_bind", c_int, [c_void_p, c_uint64]),
            ("hector_offload_unbind", None, []),
            ("hector_offload_release", c_int, [c_void_p, c_uint64]),
            ("hector_launch_status", c_int, []),
            ("hector_launch_error", ctypes.c_char_p, []),
            ("hector_launch_clear", None, []),
            ("hector_last_error", ctypes.c_char_p, []),
        ):
            try:
                fn = getattr(self._lib, name)
            except AttributeError:
                raise OSError(f"cannot offload with {self.path}: its {_runtime.LIB_NAME} "
                              f"has no {name} (an older runtime?)") from None
            fn.restype, fn.argtypes = restype, argtypes
        self._offload_declared = True

    def _offload_bind(self, cache, key_base: int) -> None:
        self._offload_functions()
        handle = cache._h()  # raises on a closed cache
        if self._lib.hector_offload_bind(handle, key_base) != 0:
            raise RuntimeError(self._lib.hector_last_error().decode(errors="replace"))

    def offload_release(self, cache, key: int) -> None:
        """Drops the value an evict stored under `key` (key base + slot)."""
        self._offload_functions()
        if self._lib.hector_offload_release(cache._h(), key) != 0:
            raise RuntimeError(self._lib.hector_last_error().decode(errors="replace"))

    def _cpu_functions(self):
        """The CPU library's own status and temporaries functions
        (runtime/include/hector/temporaries.h), declared once; None for a
        library built before they existed."""
        declared = self.__dict__.get("_cpu_declared")
        if declared is not None:
            return declared or None
        c_int, c_uint64 = ctypes.c_int, ctypes.c_uint64
        functions = {}
        for name, restype, argtypes in (
            ("hector_cpu_status", c_int, []),
            ("hector_cpu_error", ctypes.c_char_p, []),
            ("hector_cpu_clear", None, []),
            ("hector_cpu_set_temporary_cap", c_int, [c_uint64]),
            ("hector_cpu_temporary_cap", c_uint64, []),
            ("hector_cpu_temporary_bytes", c_uint64, []),
        ):
            fn = getattr(self._lib, name, None)
            if fn is None:
                self._cpu_declared = {}
                return None
            fn.restype, fn.argtypes = restype, argtypes
            functions[name[len("hector_cpu_"):]] = fn
        self._cpu_declared = functions
        return functions

    def _call_cpu(self, name: str, fn, pointers: list, offloaded) -> None:
        """A CPU entry: a failed allocation is recorded in the library's
        status for this thread; an entry that calls the runtime (offload)
        records its failures in the launch status, as CUDA entries do."""
        cpu = self._cpu_functions()
        if cpu is None and not offloaded:
            fn(*pointers)
            return
        lib = self._lib
        if cpu is not None:
            cpu["clear"]()
        if offloaded:
            lib.hector_launch_clear()
        try:
            fn(*pointers)
            if cpu is not None and (status := cpu["status"]()) != 0:
                raise _entry_error(name, status, cpu["error"]().decode(errors="replace"))
            if offloaded and (status := lib.hector_launch_status()) != 0:
                raise _entry_error(name, status,
                                   lib.hector_launch_error().decode(errors="replace"))
        finally:
            if cpu is not None:
                cpu["clear"]()
            if offloaded:
                lib.hector_launch_clear()

    # -- temporaries --------------------------------------------------------

    def _temporaries_function(self, suffix: str):
        """hector_cpu_<suffix> of a CPU library, hector_launch_<suffix> of the
        runtime a CUDA library is bound to."""
        if self.target == "cuda":
            fn = getattr(self._lib, "hector_launch_" + suffix, None)
            if fn is None:
                raise OSError(f"{self.path}: its {_runtime.LIB_NAME} has no "
                              f"hector_launch_{suffix} (an older runtime?)")
            fn.restype = ctypes.c_int if suffix == "set_temporary_cap" else ctypes.c_uint64
            fn.argtypes = [ctypes.c_uint64] if suffix == "set_temporary_cap" else []
            return fn
        cpu = self._cpu_functions()
        if cpu is None:
            raise OSError(f"{self.path} has no hector_cpu_{suffix}: it was built before "
                          "libraries counted and capped their temporaries; rebuild it")
        return cpu[suffix]

    def temporary_bytes(self) -> int:
        """Bytes of temporary buffers the library's entry points hold now
        (CPU libraries: this library's; CUDA libraries: the runtime's, in
        this process)."""
        return int(self._temporaries_function("temporary_bytes")())

    def temporary_cap(self):
        """The cap on the bytes of temporaries in use at once, or None for
        none (initially $HECTOR_TEMPORARY_CAP; 0 while a malformed value of
        it refuses every allocation: calls then raise a LaunchError that
        says so)."""
        return _runtime.temporary_cap_of(int(self._temporaries_function("temporary_cap")()))

    def set_temporary_cap(self, nbytes):
        """Caps the bytes of temporaries in use at once (None: no cap) and
        returns the previous cap. A call that would need more raises
        TemporaryMemoryError and frees what it allocated. A CPU library's
        cap is its own; a CUDA library's is its runtime's, for every CUDA
        library of the process."""
        value = _runtime.temporary_cap_value(nbytes)
        previous = self.temporary_cap()
        self._temporaries_function("set_temporary_cap")(value)
        return previous

    @contextlib.contextmanager
    def capped(self, nbytes):
        """``with lib.capped(nbytes):`` the cap of set_temporary_cap for
        the block, the previous one restored after it."""
        previous = self.set_temporary_cap(nbytes)
        try:
            yield self
        finally:
            self.set_temporary_cap(previous)

    def module_loads(self) -> int:
        """How many times kernel modules were loaded into a GPU context so far
        (CUDA libraries; repeated calls must not add to it)."""
        if self.target != "cuda":
            return 0
        return int(self._lib.hector_launch_module_loads())

    # Whether the temporaries come from torch's caching allocator (so that
    # torch.cuda.max_memory_allocated counts them; hector/_torch_allocator.py).
    temporaries_in_torch = False

    def peak_temporary_bytes(self, reset: bool = False) -> int:
        """The most bytes of temporary buffers the library's entry points
        held at once since the last reset: device memory (CUDA libraries;
        where `temporaries_in_torch`, torch's own peak already counts them)
        or host memory (CPU libraries, at the capacity of each block; 0 for
        a library built before they counted it)."""
        if self.target == "cuda":
            peak_of, reset_peak = ("hector_launch_peak_temporary_bytes",
                                   "hector_launch_reset_peak_temporary_bytes")
        else:
            peak_of, reset_peak = ("hector_cpu_peak_temporary_bytes",
                                   "hector_cpu_reset_peak_temporary_bytes")
            if not hasattr(self._lib, peak_of):
                return 0
            getattr(self._lib, peak_of).restype = ctypes.c_uint64
            getattr(self._lib, reset_peak).restype = None
        peak = int(getattr(self._lib, peak_of)())
        if reset:
            getattr(self._lib, reset_peak)()
        return peak

    def trim_temporaries(self) -> None:
        """Return the device memory the runtime keeps for temporary buffers
        (freed blocks stay mapped for the next call; docs/compilation.md)
        to the driver; a no-op for CPU libraries."""
        trim = getattr(self._lib, "hector_launch_trim_temporaries", None)
        if self.target != "cuda" or trim is None:
            return
        if trim() != 0:
            raise RuntimeError(self._lib.hector_launch_error().decode(errors="replace"))

    def training_entries(self, primal: str):
        """(f_fwd, f_bwd): the training entry points of function `primal`, or
        None when the library was built without ``hectorc --training``."""
        if primal not in self.entries:
            raise KeyError(f"{self.path} has no entry point {primal!r}")
        found = {e.kind: e for e in self.entries.values()
                 if e.primal == primal and e.kind != "inference"}
        if not found:
            return None
        missing = [k for k in ("training_forward", "training_backward") if k not in found]
        if missing:
            raise _manifest_error(self.manifest_path,
                                  f"function '{primal}' has no {missing[0]} entry")
        return found["training_forward"], found["training_backward"]

    def __getattr__(self, name: str) -> EntryPoint:
        entries = self.__dict__.get("entries", {})
        if name in entries:
            return entries[name]
        raise AttributeError(f"{self.path} has no entry point {name!r} "
                             f"(entries: {', '.join(entries) or 'none'})")

    def __getitem__(self, name: str) -> EntryPoint:
        try:
            return self.entries[name]
        except KeyError:
            raise KeyError(f"{self.path} has no entry point {name!r}") from None

    def __repr__(self) -> str:
        return f"<hector library {self.path} [{self.target}] entries: {', '.join(self.entries)}>"


def load(lib_path) -> CompiledLibrary:
    """Loads a library written by ``hectorc --emit=lib`` and its manifest
    (``<lib_path>.json``)."""
    return CompiledLibrary(os.fspath(lib_path))


def _shape_text(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _numpy():
    import numpy

    return numpy


def _torch():
    import torch

    return torch


def _unified_if_tensor(value):
    """The UnifiedTensor class, if `value` is one (imported only then)."""
    if type(value).__module__ == f"{__package__}.unified":
        from .unified import UnifiedTensor

        if isinstance(value, UnifiedTensor):
            return UnifiedTensor
    return None


def _torch_if_tensor(value):
    """torch, if `value` is a torch tensor (torch is imported only then)."""
    module = type(value).__module__
    if module.startswith("torch"):
        torch = _torch()
        if isinstance(value, torch.Tensor):
            return torch
    return None

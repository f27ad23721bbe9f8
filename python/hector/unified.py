"""Unified tensors: host-resident tensors that CUDA code reads in place.

    feats = hector.unified(feats)          # 1: pin the CPU tensor in place
    x = feats[n_id]                        # 2: n_id on the GPU -> x on the GPU

`hector.unified(t)` page-locks and maps the CPU tensor `t` (no copy) and
returns a UnifiedTensor. Indexing it with a CUDA index tensor gathers the rows
straight out of host memory over PCIe into a new CUDA tensor (the zero-copy
gather of libhector_runtime). Placement rule (BRIEF.md section 3): an op that
mixes a unified tensor and CUDA tensors runs on the GPU and returns a CUDA
tensor. Supported ops: `u[idx]`, `torch.index_select(u, 0, idx)` /
`u.index_select(0, idx)`, `torch.nn.functional.embedding(idx, u)`; anything else
raises TypeError (gather the rows first, or use `u.host` for CPU work).

Bad indices raise IndexError (GatherIndexError) when `check` is on (the
default; it costs one stream synchronisation per gather). With check off the
gather stays asynchronous and rows of bad indices come back as zeros.

Large gathers from large tables sort their indices first (`sort=None`, the
default, decides by `sorts_rows`): the rows are then read in address order,
which needs far fewer host-page translations, and the kernel writes each row
back to its place. The result is the same either way.

torch is imported lazily, so this module (and its pure functions) import on
machines without it.
"""

from __future__ import annotations

import itertools
import mmap
import threading
import weakref

from . import _runtime

__all__ = [
    "UnifiedTensor",
    "unified",
    "host_empty",
    "row_plan",
    "chunk_order",
    "sorts_rows",
]

CHUNK = 16  # bytes per vector load
LINE = 128  # PCIe / cache line the loads are aligned to


# --- Circular-shift alignment, the pure math (mirror of gather_plan.h) ------

def row_plan(addr: int, row_bytes: int) -> tuple[int, int, int]:
    """Plan of one row at host address `addr`: (hull, chunks, shift).

    The row's 16-byte aligned hull starts at `hull` and has `chunks` chunks of
    16 bytes. Lane c of the row's lanes loads chunk (shift + c) mod chunks, so
    lane 0 starts on the first 128-byte boundary inside the hull and every
    32-lane load of 512 bytes covers whole lines; the chunks before that
    boundary are read last, when the index wraps.
    """
    if row_bytes < 0 or addr < 0:
        raise ValueError("row_plan: addr and row_bytes must be >= 0")
    begin = addr & ~(CHUNK - 1)
    if row_bytes == 0:
        return begin, 0, 0
    end = (addr + row_bytes + CHUNK - 1) & ~(CHUNK - 1)
    chunks = (end - begin) // CHUNK
    first_line = (begin + LINE - 1) & ~(LINE - 1)
    shift = 0 if first_line >= end else (first_line - begin) // CHUNK
    return begin, chunks, shift


def chunk_order(addr: int, row_bytes: int) -> list[int]:
    """Chunk index loaded by each lane position 0, 1, ... (a rotation)."""
    _, chunks, shift = row_plan(addr, row_bytes)
    return [(shift + c) % chunks for c in range(chunks)]


# --- The tensor-like object ---------------------------------------------------

def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("hector.unified needs PyTorch (import torch failed)") from e
    return torch


# Live and released registrations: token -> [first page, end page, host
# tensor, alive]. Two mapped tensors may share a page, and the runtime then
# maps the later one through the earlier one's registration, which stays
# pinned while either is mapped. So a released tensor's memory is kept alive
# until no live registration shares a page with it: freeing it earlier could
# hand pinned, registered bytes to an unrelated allocation.
_registrations: dict = {}
_registrations_lock = threading.Lock()
_next_token = itertools.count()


def _register(tensor, ptr: int, span: int, device: int) -> tuple[int, int]:
    dev_ptr = _runtime.host_register(ptr, span, device)
    page = mmap.PAGESIZE
    lo, hi = ptr // page * page, -(-(ptr + span) // page) * page
    with _registrations_lock:
        token = next(_next_token)
        _registrations[token] = [lo, hi, tensor, True]
    return dev_ptr, token


def _release(host_ptr: int, nbytes: int, token: int) -> None:
    # Runs when the UnifiedTensor is collected.
    _runtime.host_unregister(host_ptr, nbytes)
    with _registrations_lock:
        _registrations[token][3] = False
        alive = [(lo, hi) for lo, hi, _, live in _registrations.values() if live]
        for key in [k for k, (lo, hi, _, live) in _registrations.items()
                    if not live and not any(a < hi and lo < b for a, b in alive)]:
            del _registrations[key]


def _row_layout(t) -> tuple[int, int, int]:
    """(rows, row_bytes, row_stride_bytes) of a tensor whose rows are contiguous."""
    rows = t.shape[0]
    row_numel = 1
    for s in t.shape[1:]:
        row_numel *= s
    # Inner dimensions must be laid out as one contiguous block per row.
    expected = 1
    for size, stride in reversed(list(zip(t.shape[1:], t.stride()[1:]))):
        if size > 1 and stride != expected:
            raise ValueError(
                "hector.unified: the rows of the tensor are not contiguous in memory "
                f"(shape {tuple(t.shape)}, strides {tuple(t.stride())}); call .contiguous() "
                "first (that makes a copy)"
            )
        expected *= size
    row_stride = t.stride(0) if rows > 1 else row_numel
    if rows > 1 and row_stride < row_numel:
        raise ValueError(
            "hector.unified: rows overlap in memory (stride(0) "
            f"{t.stride(0)} < row size {row_numel}); call .contiguous() first"
        )
    size = t.element_size()
    return rows, row_numel * size, row_stride * size


# When a gather sorts its indices (measured on an H200, docs/runtime-unified.md):
# reading rows in address order pays off once the table spans more memory
# than the GPU's translation caches reach, and the gather is long enough for
# the gain to outweigh the sort (0.05-0.07 ms).
SORT_MIN_ROWS = 32768
SORT_MIN_TABLE_BYTES = 1 << 30


def sorts_rows(n_index: int, table_bytes: int) -> bool:
    """Whether a gather of n_index rows from a table spanning table_bytes
    sorts its indices by default."""
    return n_index >= SORT_MIN_ROWS and table_bytes >= SORT_MIN_TABLE_BYTES


def _sorted_rows(idx, rows: int):
    """(sorted indices, their positions in idx). Keys are sorted as int32
    when the table allows (half the radix passes of int64); values outside
    int32 are clamped first, which keeps them out of range."""
    torch = _torch()
    if idx.dtype == torch.int64 and rows < 2**31 - 1:
        idx = idx.clamp(-(2**31), 2**31 - 1).to(torch.int32)
    return torch.sort(idx)


def check_index(index, device) -> None:
    """Raises a clear TypeError / ValueError unless `index` can drive a gather
    on `device` (a torch.device): an int32/int64 CUDA tensor on that device."""
    torch = _torch()
    if not isinstance(index, torch.Tensor):
        raise TypeError(
            "a UnifiedTensor is indexed with a CUDA integer tensor of row indices, "
            f"not {type(index).__name__}; slices, ints and tuples are not supported "
            "(use u.host[...] for CPU-side indexing)"
        )
    if index.dtype == torch.bool:
        raise TypeError(
            "boolean masks are not supported: use mask.nonzero().squeeze(1) as indices"
        )
    if index.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"index dtype must be torch.int64 or torch.int32, got {index.dtype}")
    if index.device.type != "cuda":
        raise ValueError(
            f"the index tensor is on {index.device}: a UnifiedTensor gathers with a CUDA "
            f"index tensor (use index.to('{device}')); for CPU gathers use u.host[index]"
        )
    if index.device != device:
        raise ValueError(
            f"the index tensor is on {index.device} but this UnifiedTensor is mapped for "
            f"{device}"
        )


class UnifiedTensor:
    """A CPU tensor pinned in place and mapped for a GPU (see module doc).

    Attributes: `shape`, `dtype`, `device` (the CUDA device its gathers run on
    and return to: the placement rule), `host` (the CPU tensor itself, shared,
    not copied), `check` (report bad indices) and `sort` (read rows in sorted
    index order: True, False, or None to let `sorts_rows` decide), both
    switchable.
    """

    def __init__(self, tensor, device=None, check: bool = True, sort=None):
        torch = _torch()
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"hector.unified expects a torch.Tensor, got {type(tensor).__name__}")
        if isinstance(tensor, UnifiedTensor):  # pragma: no cover - not a Tensor subclass
            raise TypeError("already a UnifiedTensor")
        if tensor.device.type != "cpu":
            raise TypeError(
                f"hector.unified expects a CPU tensor, got one on {tensor.device}: "
                "GPU tensors are indexed directly"
            )
        if tensor.layout != torch.strided:
            raise TypeError(f"hector.unified supports strided tensors, not {tensor.layout}")
        if tensor.requires_grad:
            raise ValueError(
                "hector.unified tensors are read-only inputs: gradients do not flow into "
                "host memory (use tensor.detach())"
            )
        if tensor.dim() == 0:
            raise ValueError("hector.unified needs a tensor with at least one dimension (rows)")
        rows, row_bytes, row_stride = _row_layout(tensor)
        if device is None:
            if not torch.cuda.is_available():
                raise RuntimeError(
                    "hector.unified needs a CUDA GPU, and torch.cuda.is_available() is False"
                )
            device = torch.cuda.current_device()
        device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
        if device.type != "cuda":
            raise ValueError(f"hector.unified maps host memory for a CUDA device, not {device}")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())

        self.host = tensor
        self.device = device
        self.check = check
        self.sort = sort
        self._rows = rows
        self._row_bytes = row_bytes
        self._row_stride = row_stride
        self._dev_ptr = 0
        # Rows of zero bytes (or no rows) leave nothing to map.
        span = (rows - 1) * row_stride + row_bytes if rows > 0 and row_bytes > 0 else 0
        self._span = span
        if span > 0:
            ptr = tensor.data_ptr()
            self._dev_ptr, token = _register(tensor, ptr, span, device.index)
            self._finalizer = weakref.finalize(self, _release, ptr, span, token)
            self._finalizer.atexit = False  # the process's exit unpins everything

    # -- tensor-like surface --
    @property
    def shape(self):
        return self.host.shape

    @property
    def dtype(self):
        return self.host.dtype

    @property
    def is_unified(self) -> bool:
        return True

    def size(self, dim=None):
        return self.host.size() if dim is None else self.host.size(dim)

    def dim(self) -> int:
        return self.host.dim()

    def numel(self) -> int:
        return self.host.numel()

    def element_size(self) -> int:
        return self.host.element_size()

    def __len__(self) -> int:
        return len(self.host)

    def __repr__(self) -> str:
        return (
            f"UnifiedTensor(shape={tuple(self.shape)}, dtype={self.dtype}, "
            f"device={self.device}, host-resident)"
        )

    # -- gathers --
    def gather(self, index, out=None, check=None, wrap_negative=False, sort=None, _flags=0):
        """Rows `index` (a CUDA int32/int64 tensor of any shape) as a new CUDA
        tensor of shape index.shape + self.shape[1:], on the current stream.

        sort: read the rows in sorted index order (True), in the given order
        (False), or as `self.sort` says (None: then `sorts_rows` decides)."""
        torch = _torch()
        check_index(index, self.device)
        idx = index.reshape(-1)
        if not idx.is_contiguous():  # pragma: no cover - reshape(-1) of any tensor
            idx = idx.contiguous()
        shape = tuple(index.shape) + tuple(self.shape[1:])
        if out is None:
            out = torch.empty(shape, dtype=self.dtype, device=self.device)
        elif (
            not isinstance(out, torch.Tensor)
            or tuple(out.shape) != shape
            or out.dtype != self.dtype
            or out.device != self.device
            or not out.is_contiguous()
        ):
            raise ValueError(
                f"out must be a contiguous {self.dtype} tensor of shape {shape} on {self.device}"
            )
        check = self.check if check is None else check
        flags = _flags
        if check:
            flags |= _runtime.GATHER_CHECK
        if wrap_negative:
            flags |= _runtime.GATHER_WRAP_NEGATIVE
        sort = self.sort if sort is None else sort
        if sort is None:
            sort = sorts_rows(idx.numel(), self._span)
        dst_index = None
        if sort and idx.numel() > 1:
            idx, dst_index = _sorted_rows(idx, self._rows)
        desc = _runtime.GatherDesc(
            src=self._dev_ptr or None,
            src_rows=self._rows,
            src_stride=self._row_stride,
            row_bytes=self._row_bytes,
            index=idx.data_ptr() or None,
            n_index=idx.numel(),
            index_bytes=idx.element_size(),
            flags=flags,
            dst=out.data_ptr() or None,
            dst_stride=self._row_bytes,
            device=self.device.index,
            reserved=0,
            stream=torch.cuda.current_stream(self.device).cuda_stream or None,
            dst_index=None if dst_index is None else dst_index.data_ptr(),
        )
        # The runtime pushes the primary context itself; torch must have made
        # it (the index tensor is on the device, so it has).
        try:
            _runtime.gather(desc)
        except _runtime.GatherIndexError:
            if dst_index is None:
                raise
            # Report the lowest bad position, as an unsorted gather does.
            return self.gather(index, out, check, wrap_negative, sort=False, _flags=_flags)
        return out

    def __getitem__(self, index):
        # Like torch indexing: negative indices count from the end.
        return self.gather(index, wrap_negative=True)

    def index_select(self, dim, index):
        if dim != 0:
            raise ValueError("UnifiedTensor.index_select gathers rows: dim must be 0")
        if index.dim() > 1:
            raise ValueError("index_select expects a 0-D or 1-D index tensor")
        return self.gather(index.reshape(-1))

    # -- placement rules for torch functions --
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        torch = _torch()
        kwargs = kwargs or {}
        if func in (torch.index_select, torch.Tensor.index_select):
            bound = _bind(("input", "dim", "index"), args, kwargs, func, required=3)
            src = bound["input"]
            if not isinstance(src, UnifiedTensor):
                raise TypeError("index_select: only the input may be a UnifiedTensor")
            return src.index_select(bound["dim"], bound["index"])
        if func is torch.nn.functional.embedding:
            names = ("input", "weight", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse")
            bound = _bind(names, args, kwargs, func, required=2)
            weight = bound["weight"]
            if not isinstance(weight, UnifiedTensor) or weight.dim() != 2:
                raise TypeError("embedding: the weight must be a 2-D UnifiedTensor")
            extras = {k: bound[k] for k in names[2:] if k in bound}
            defaults = {"padding_idx": None, "max_norm": None, "norm_type": 2.0,
                        "scale_grad_by_freq": False, "sparse": False}
            if any(extras[k] != defaults[k] for k in extras):
                raise TypeError(
                    "embedding on a UnifiedTensor supports only the default options "
                    "(no padding_idx, max_norm, scale_grad_by_freq or sparse)"
                )
            return weight.gather(bound["input"])
        name = getattr(func, "__name__", repr(func))
        raise TypeError(
            f"{name} is not supported on a hector UnifiedTensor: supported are indexing "
            "with a CUDA index tensor, index_select(0, idx) and embedding(idx, u). "
            "Gather the rows first (u[idx] gives a CUDA tensor), or use u.host for CPU work."
        )


def _unsupported_operator(name):
    def op(self, *args, **kwargs):
        raise TypeError(
            f"operator {name} is not supported on a hector UnifiedTensor: gather the rows "
            "first (u[idx] gives a CUDA tensor), or use u.host for CPU work"
        )

    op.__name__ = name
    return op


# Python operators would otherwise fall back to a bare "unsupported operand".
for _name in ("add", "sub", "mul", "truediv", "floordiv", "matmul", "pow", "mod"):
    for _prefix in ("__", "__r"):
        setattr(UnifiedTensor, f"{_prefix}{_name}__", _unsupported_operator(f"{_prefix}{_name}__"))
for _name in ("__neg__", "__abs__", "__setitem__"):
    setattr(UnifiedTensor, _name, _unsupported_operator(_name))


def _bind(names, args, kwargs, func, required) -> dict:
    """Maps a torch function's positional and keyword arguments to names."""
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise TypeError(f"{getattr(func, '__name__', func)}: unexpected argument {k!r}")
        bound[k] = v
    for k in names[:required]:
        if k not in bound:
            raise TypeError(f"{getattr(func, '__name__', func)}: missing argument {k!r}")
    return bound


def host_empty(shape, dtype=None, huge_pages: bool = True):
    """An uninitialised CPU tensor in fresh anonymous memory, backed by 2 MB
    transparent huge pages when `huge_pages` (madvise MADV_HUGEPAGE).

    For tables that a GPU will gather from at random: the GPU translates
    every host address it reads, and with 4 KB pages nearly every row of a
    large table costs a page walk, which caps random gathers of small rows
    far below PCIe speed (docs/runtime-unified.md has the measurements).
    Fill it, then pass it to unified()."""
    torch = _torch()
    dtype = dtype or torch.get_default_dtype()
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    numel = 1
    for s in shape:
        numel *= s
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if huge_pages and hasattr(mmap, "MADV_HUGEPAGE"):
        buf.madvise(mmap.MADV_HUGEPAGE)
    # frombuffer keeps `buf` alive for as long as the tensor lives.
    return torch.frombuffer(buf, dtype=torch.uint8).view(dtype).view(shape)


def unified(tensor, device=None, check: bool = True, sort=None) -> UnifiedTensor:
    """Pins the CPU tensor `tensor` in place and maps it for `device` (default:
    the current CUDA device). Returns a UnifiedTensor; see the module doc.
    `check` and `sort` are the defaults of its gathers."""
    return UnifiedTensor(tensor, device=device, check=check, sort=sort)

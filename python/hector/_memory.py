"""Sizes checked before allocating: a request that can not fit in the memory
that is available raises MemoryError saying what was asked and how many
bytes it needs, instead of allocating, zero-filling and being killed by the
OOM killer.

Available host memory: $HECTOR_MEMORY_LIMIT when set (bytes, or a number with
a K, M, G or T suffix, powers of 1024), else MemAvailable + SwapFree of
/proc/meminfo, lowered to the headroom of the process's memory cgroup (v2
memory.max - memory.current, v1 memory.limit_in_bytes - memory.usage_in_bytes)
when it has a limit. The runtime's C++ preprocessing checks the same way
(runtime/lib/graph/preprocess.cpp). The estimates are lower bounds of what
the allocation needs at its peak, so a refusal is certain to be right; a
request that passes can still fail later, with MemoryError where an
allocator reports it.
"""

from __future__ import annotations

import os
import re

ENV_VAR = "HECTOR_MEMORY_LIMIT"
# The initial cap on compiled entry points' temporaries, read by the
# libraries themselves (runtime/include/hector/temporaries.h; the same
# format); CompiledLibrary.set_temporary_cap sets it at run time.
TEMPORARY_CAP_ENV = "HECTOR_TEMPORARY_CAP"
# Below this, nothing is looked up (small requests cost no system calls),
# unless $HECTOR_MEMORY_LIMIT is set.
_SMALL = 64 << 20
_UNLIMITED = 1 << 60


def _parse_limit(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9]+)\s*([KMGT]?)\s*", text, re.I)
    if not match:
        raise ValueError(f"${ENV_VAR} = {text!r}: expected a number of bytes, optionally "
                         "with a K, M, G or T suffix (e.g. 8G)")
    scale = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[match.group(2).upper()]
    return int(match.group(1)) << scale


def _read_int(path: str):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _meminfo():
    fields = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                name, _, value = line.partition(":")
                parts = value.split()
                if parts and parts[0].isdigit():
                    fields[name] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        return None
    if "MemAvailable" not in fields:
        return None
    return fields["MemAvailable"] + fields.get("SwapFree", 0)


def _cgroup_headroom():
    """(bytes left under the memory cgroup's limit, which file), or None."""
    paths = []
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controllers == "":
                    paths.append(("v2", path))
                elif "memory" in controllers.split(","):
                    paths.append(("v1", path))
    except (OSError, ValueError):
        pass
    candidates = []
    for version, path in paths:
        if version == "v2":
            for root in (os.path.join("/sys/fs/cgroup", path.lstrip("/")), "/sys/fs/cgroup"):
                candidates.append((os.path.join(root, "memory.max"),
                                   os.path.join(root, "memory.current")))
        else:
            for root in (os.path.join("/sys/fs/cgroup/memory", path.lstrip("/")),
                         "/sys/fs/cgroup/memory"):
                candidates.append((os.path.join(root, "memory.limit_in_bytes"),
                                   os.path.join(root, "memory.usage_in_bytes")))
    for limit_file, usage_file in candidates:
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < _UNLIMITED:
            return max(limit - usage, 0), limit_file
    return None


def host_available():
    """(bytes of host memory available, where that number comes from), or
    (None, why) when it can not be told."""
    env = os.environ.get(ENV_VAR)
    if env:
        return _parse_limit(env), f"${ENV_VAR}"
    available = _meminfo()
    how = "MemAvailable + SwapFree in /proc/meminfo"
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            how = "free physical pages"
        except (ValueError, OSError, AttributeError):
            available, how = None, "unknown"
    headroom = _cgroup_headroom()
    if headroom is not None and (available is None or headroom[0] < available):
        available, how = headroom[0], f"what the memory cgroup leaves ({headroom[1]})"
    return available, how


def format_bytes(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit} ({n} bytes)"
    return f"{n} bytes"


def check_host(what: str, needed: int) -> None:
    """Raises MemoryError when `needed` bytes of host memory for `what` (a
    phrase naming the request and its sizes) are more than is available."""
    if needed < _SMALL and not os.environ.get(ENV_VAR):
        return
    available, how = host_available()
    if available is not None and needed > available:
        source = "set by " + how if how == f"${ENV_VAR}" else f"{how}; ${ENV_VAR} overrides"
        raise MemoryError(f"{what} needs at least {format_bytes(needed)} of host memory, "
                          f"more than the {format_bytes(available)} available ({source})")


def check_device(device, what: str, needed: int) -> None:
    """check_host for a torch device: host memory for the CPU, free memory of
    the GPU (including what torch's allocator holds unused) for CUDA."""
    if device.type != "cuda":
        check_host(what, needed)
        return
    if needed < _SMALL:
        return
    import torch
    free, _total = torch.cuda.mem_get_info(device)
    free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    if needed > free:
        raise MemoryError(f"{what} needs at least {format_bytes(needed)} of memory on "
                          f"{device}, more than the {format_bytes(free)} free there")


def tensor_bytes(*shapes, itemsize: int = 4) -> int:
    """Bytes of tensors of these shapes (tuples of ints)."""
    total = 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= int(d)
        total += n * itemsize
    return total

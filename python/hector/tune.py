"""Pick the fastest hgraph-level variant of a model for one graph, by a short
timed trial, and remember the choice.

    pre = hector.graph.preprocess(node_type, src, dst, etype, T, R, device=...)
    result = hector.tune.tune(hector.models.generate("rgat", 64), pre, target="cuda")
    result.variant, result.flags      # e.g. "both", ["--variant=both", "--graph-sizes=..."]
    lib = hector.compile(source, "cuda", flags=result.flags)   # or tune.compile_tuned(...)

The variants are `hectorc --variant=unopt|compact|reorder|both`
(docs/optimizations.md). Each is compiled with the graph's sizes
(`--graph-sizes`, so reordering decides with the real N, E, P, R, T) and,
when every edge type of the graph joins fixed source and destination node
types, `--typed-endpoints`. Each runs `warmup` untimed calls and `repeat`
timed ones on random inputs (forward, or forward and backward with
`training=True`), on the graph's device; the fastest median wins.

The choice is cached in `<cache>/tune/<key>.json` (the cache directory of
hector.compile: `cache_dir=`, else $HECTOR_CACHE_DIR, else ~/.cache/hector),
where the key covers the IR, the target and GPU architecture, training, the
device that ran the trial, the candidate variants and the graph's
fingerprint (a hash of its sizes and canonical arrays: the same graph with
its edges listed in another order has the same fingerprint). A later call
with the same key returns the stored choice without timing anything.

Where there is no hectorc (the GPU machines), every variant must have been
built ahead of time: ``prebuild(source, graph, target=...)`` here (or
``python3 -m hector.aot`` with ``variant_flags(graph, v)``) puts them into a
cache directory to bring along.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import statistics
import tempfile
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import compiler as _compiler

__all__ = ["VARIANTS", "TuneResult", "fingerprint", "typed_endpoints", "variant_flags",
           "tune", "prebuild", "compile_tuned"]

VARIANTS = ("unopt", "compact", "reorder", "both")
TUNE_LAYOUT = 1  # bump when the cache entry format changes


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """The choice for one (model, graph, target, device)."""

    variant: str
    flags: tuple          # hectorc flags for hector.compile(flags=...)
    seconds: dict         # variant -> median seconds of one call (or step)
    peak_bytes: dict      # variant -> peak temporary bytes (cuda), else {}
    key: str
    cached: bool          # True when read from the cache, not timed now


# ---- the graph ------------------------------------------------------------------------

def _host(array) -> np.ndarray:
    """An index array on the host as int32 (the dtype of every preprocessed
    index array), so that host and device preprocessings hash alike."""
    if hasattr(array, "detach"):  # a torch tensor, maybe on a GPU
        array = array.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(array), dtype=np.int32)


def _sizes(graph) -> dict:
    try:
        return {k: int(getattr(graph, k)) for k in ("N", "E", "P", "R", "T")}
    except AttributeError:
        raise TypeError("graph must be a preprocessed graph (hector.graph.preprocess), got "
                        f"{type(graph).__name__}") from None


def fingerprint(graph) -> str:
    """sha256 of a preprocessed graph's sizes and canonical node types and
    edges (independent of the order the caller listed the edges in)."""
    digest = hashlib.sha256()
    digest.update(json.dumps(_sizes(graph), sort_keys=True).encode())
    for name in ("node_type", "edge_src", "edge_dst", "edge_type"):
        digest.update(name.encode())
        digest.update(_host(getattr(graph, name)).tobytes())
    return digest.hexdigest()


def typed_endpoints(graph) -> bool:
    """Whether every edge type of the graph joins nodes of one source type to
    nodes of one destination type (what `hectorc --typed-endpoints` assumes)."""
    node_type = _host(graph.node_type)
    edge_type = _host(graph.edge_type)
    if edge_type.size == 0:
        return True
    for ends in (_host(graph.edge_src), _host(graph.edge_dst)):
        types = node_type[ends]
        # Per edge type, every endpoint type equals the smallest one.
        lowest = np.full(_sizes(graph)["R"], np.iinfo(np.int32).max, np.int32)
        np.minimum.at(lowest, edge_type, types)
        if np.any(types != lowest[edge_type]):
            return False
    return True


def variant_flags(graph, variant: str) -> List[str]:
    """The hectorc flags of `variant` for this graph."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    sizes = ",".join(f"{k}={v}" for k, v in _sizes(graph).items() if v > 0)
    flags = [f"--variant={variant}"]
    if sizes:
        flags.append(f"--graph-sizes={sizes}")
    if variant in ("reorder", "both") and typed_endpoints(graph):
        flags.append("--typed-endpoints")
    return flags


# ---- timing ---------------------------------------------------------------------------

def _device_of(graph, target: str) -> str:
    """Words naming where the trial runs (part of the cache key)."""
    if target == "cuda":
        import torch
        device = graph.edge_src.device if hasattr(graph.edge_src, "device") else None
        if device is None or device.type != "cuda":
            raise ValueError("target 'cuda' needs a graph preprocessed on a CUDA device "
                             "(hector.graph.preprocess(..., device='cuda'))")
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return f"cpu:{platform.machine()}:{platform.processor() or 'unknown'}"


def _inputs(lib, name: str, graph, device, seed: int) -> dict:
    """Random float32 inputs and weights of function `name`, by argument name."""
    import torch
    from .autograd import _shape, _symbols
    entry = lib[name]
    generator = torch.Generator().manual_seed(seed)
    symbols = _symbols(graph)
    tensors = {}
    for arg in entry.arguments:
        if arg.role in ("input", "weight"):
            shape = _shape(entry, arg, symbols)
            scale = 1.0 if arg.role == "input" else 0.1  # keep softmaxes tame
            tensors[arg.name] = (torch.randn(shape, generator=generator) * scale).to(device)
    return tensors


def _time(lib, name: str, graph, training: bool, warmup: int, repeat: int, seed: int):
    """(median seconds of one call, peak temporary bytes or None)."""
    import torch
    from . import autograd
    device = graph.edge_src.device if hasattr(graph.edge_src, "device") else "cpu"
    inputs = _inputs(lib, name, graph, device, seed)
    cuda = lib.target == "cuda"

    def step():
        if not training:
            with torch.no_grad():
                autograd.run(lib, name, graph, **inputs)
            return
        leaves = {k: v.detach().requires_grad_(True) for k, v in inputs.items()}
        outputs = autograd.run(lib, name, graph, **leaves)
        torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])

    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize(device)
        lib.peak_temporary_bytes(reset=True)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    peak = lib.peak_temporary_bytes() if cuda else None
    return statistics.median(times), peak


# ---- the cache ----------------------------------------------------------------------

def _key(text: str, target: str, gpu_arch, training: bool, device: str, variants,
         graph_fingerprint: str) -> str:
    fields = {"layout": TUNE_LAYOUT, "ir_sha256": hashlib.sha256(text.encode()).hexdigest(),
              "target": target, "gpu_arch": gpu_arch, "training": training,
              "device": device, "variants": list(variants), "graph": graph_fingerprint}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _read(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise OSError(f"{path}: unreadable tuning cache entry ({err}); delete it and tune "
                      "again") from None


def _write(path: str, entry: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(entry, f, indent=1)
    os.replace(tmp, path)


def _text(source) -> str:
    return _compiler._source_text(source)


def _function(text: str, name) -> str:
    functions = _compiler._functions(text)
    if name is None:
        if not functions:
            raise ValueError("source has no hgraph.func")
        return functions[0]
    if name not in functions:
        raise ValueError(f"source has no function @{name}; it has "
                         f"{', '.join('@' + f for f in functions)}")
    return name


# ---- the API ------------------------------------------------------------------------

def tune(source, graph, target: str = "cpu", *, training: bool = False, gpu_arch=None,
         variants: Sequence[str] = VARIANTS, name: Optional[str] = None, warmup: int = 1,
         repeat: int = 5, seed: int = 0, cache_dir=None, compiler=None,
         retune: bool = False) -> TuneResult:
    """Times every variant of `source` (hgraph IR text or path) on the
    preprocessed `graph` (on the CUDA device for target "cuda") and returns
    the fastest, from the cache when this exact trial was made before
    (`retune=True` times again). `name` is the function to time (default:
    the first); `compiler` is passed on to hector.compile."""
    text = _text(source)
    name = _function(text, name)
    variants = tuple(variants)
    if not variants:
        raise ValueError("variants is empty")
    for v in variants:
        variant_flags(graph, v)  # validates
    if warmup < 0 or repeat < 1:
        raise ValueError("warmup must be >= 0 and repeat >= 1")
    device = _device_of(graph, target)
    key = _key(text, target, gpu_arch, training, device, variants, fingerprint(graph))
    path = os.path.join(_compiler.resolve_cache_dir(cache_dir), "tune", key + ".json")

    entry = None if retune else _read(path)
    if entry is not None:
        return TuneResult(entry["variant"], tuple(entry["flags"]), entry["seconds"],
                          entry.get("peak_bytes", {}), key, cached=True)

    seconds: Dict[str, float] = {}
    peaks: Dict[str, int] = {}
    flags = {v: variant_flags(graph, v) for v in variants}
    for v in variants:
        lib = _compiler.compile(text, target, training=training, gpu_arch=gpu_arch,
                                flags=flags[v], cache_dir=cache_dir, compiler=compiler)
        seconds[v], peak = _time(lib, name, graph, training, warmup, repeat, seed)
        if peak is not None:
            peaks[v] = peak
    best = min(variants, key=lambda v: (seconds[v], variants.index(v)))
    _write(path, {"variant": best, "flags": flags[best], "seconds": seconds,
                  "peak_bytes": peaks, "function": name, "target": target,
                  "device": device, "training": training, "created": time.time()})
    return TuneResult(best, tuple(flags[best]), seconds, peaks, key, cached=False)


def prebuild(source, graph, target: str = "cpu", *, training: bool = False, gpu_arch=None,
             variants: Sequence[str] = VARIANTS, cache_dir=None, compiler=None) -> list:
    """Compiles every variant for `graph` into the cache (where hectorc
    runs), so that tune() finds them on a machine without a compiler.
    Only the graph's sizes and types are read, so a host copy of a GPU
    graph (or the same graph preprocessed on the host) serves."""
    text = _text(source)
    return [_compiler.compile(text, target, training=training, gpu_arch=gpu_arch,
                              flags=variant_flags(graph, v), cache_dir=cache_dir,
                              compiler=compiler)
            for v in variants]


def compile_tuned(source, graph, target: str = "cpu", **options):
    """tune(), then the library of the chosen variant (hector.compile)."""
    result = tune(source, graph, target, **options)
    keep = {k: options[k] for k in ("training", "gpu_arch", "cache_dir", "compiler")
            if k in options}
    return _compiler.compile(_text(source), target, flags=list(result.flags), **keep)


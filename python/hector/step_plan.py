"""The offload plan of one training step of separately compiled layers.

    from hector.step_plan import LayerCall, plan_step
    calls = [LayerCall("convs.0", lib0.training_entries("rgat"), {"N": ..., "E": ..., "P": ...}),
             LayerCall("convs.1", ...)]
    plan = plan_step(calls, capacity_bytes=3 << 30)
    print(plan.describe())          # per layer, per saved value: keep / host / disk / recompute

The run-time form of the compiler's `hgraph-offload-scheduling` pass
(lib/Dialect/HGraph/Transforms/OffloadScheduling.cpp) for a step whose
layers are each their own library, called from PyTorch in some order
(hector.planned_offload applies the plan). The step is a timeline of
entry calls: the layers' training forwards in call order, then their
backwards in reverse. Everything comes from the layers' manifests (the
arguments of `f_fwd` and `f_bwd`, their roles and symbolic shapes) and the
graph's sizes of each call (N, E, P, R, T of its preprocessed graph).

Taken from the pass unchanged: the rates and their defaults (`Rates`,
the pass's options `device-gbps` ... `disk-read-gbps`); an operation's time
as its bytes over the device bandwidth; a transfer's as its bytes over the
host or disk rates; the greedy choice (while the modelled peak exceeds the
capacity, the saved value with the most memory pressure removed per second
of cost moves: to host memory while the host capacity allows, else to
disk, or is recomputed where that is cheaper); the prefetch placement (the
earliest backward point from which the value fits under the capacity until
its reader, else the latest point that still hides its read, else the
backward's start); without a capacity, only values whose round trip hides
in their idle period move.

Different, because the unit here is a whole entry call rather than an
hgraph operation (docs/offload.md lists these):
- an entry's time is its buffers' bytes over the device bandwidth: the
  manifest does not say which rows a weight multiplies, so there is no
  FLOP term (give measured seconds in LayerCall to override);
- a saved value's last forward reader is its layer's forward, its readers
  in the backward its layer's backward;
- a kept value lives from its layer's forward to its layer's backward
  (autograd frees it there), not the whole step: the pressure a move
  removes is counted over the points in between;
- recomputing reruns the layer's whole training forward in its backward:
  the first value of a layer recomputed costs that forward's time, the
  others of the same layer come with it (cost 0); the rerun's other results
  are held at that point;
- memory counts the layers' own buffers: saved values, the inputs each
  layer keeps for its backward, the results of each call while it runs,
  the cotangents and gradients of each backward; not parameters, not the
  entries' temporaries, not what torch ops between the layers save.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ._memory import format_bytes
from .compiled import _SYMBOL

DECISIONS = ("keep", "host", "disk", "recompute")
MOVES = ("host", "disk", "recompute")
_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8,
             "int8": 1, "uint8": 1, "bool": 1}


@dataclass(frozen=True)
class Rates:
    """Bytes per second of the device, the host and the disk; FLOP/s of the
    GEMMs. The defaults are the pass's (include/hector/Dialect/HGraph/
    Transforms/Passes.td, the H100 figures measured for issue 17)."""

    device_gbps: float = 2950
    gemm_tflops: float = 51
    host_write_gbps: float = 53.1
    host_read_gbps: float = 54.6
    disk_write_gbps: float = 3.05
    disk_read_gbps: float = 1.78

    def __post_init__(self):
        for name, value in vars(self).items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not value > 0 or math.isinf(value):
                raise ValueError(f"Rates: {name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class LayerCall:
    """One call of a layer's training entries in the step: the layer's name,
    its (f_fwd, f_bwd) entry points (hector.compiled.EntryPoint, or anything
    with .name, .arguments of .role/.name/.dtype/.shape, .offloaded), the
    graph's sizes, and optionally measured seconds of each entry."""

    layer: str
    entries: Tuple
    symbols: Dict[str, int]
    forward_seconds: Optional[float] = None
    backward_seconds: Optional[float] = None


@dataclass
class SavedValue:
    """One saved value of one call and what the plan does with it. Points
    index the timeline (Plan.points)."""

    call: int
    layer: str
    name: str
    bytes: int
    produced: int            # the layer's forward; also its last forward reader
    first_backward: int      # the layer's backward (its only reader there)
    idle_seconds: float
    host_seconds: float      # round trip
    disk_seconds: float
    recompute_seconds: Optional[float]  # the layer's forward; None: not allowed
    decision: str = "keep"
    prefetch_at: Optional[int] = None  # for host and disk

    @property
    def evict_after(self) -> Optional[int]:
        return self.produced if self.decision in ("host", "disk") else None


@dataclass
class Plan:
    """The step's timeline and the decision for every saved value."""

    layers: List[str]
    points: List[str]              # "forward <layer>" ..., then "backward <layer>" ...
    seconds: List[float]           # each point's estimated time
    values: List[SavedValue]
    capacity_bytes: Optional[int]
    host_capacity_bytes: Optional[int]
    tiers: Tuple[str, ...]
    peak_kept: float
    peak_planned: float
    reachable: bool
    memory: List[float] = field(default_factory=list)       # planned, per point
    memory_kept: List[float] = field(default_factory=list)  # everything kept, per point

    def backward_point(self, call: int) -> int:
        return 2 * len(self.layers) - 1 - call

    def of(self, call: int) -> List[SavedValue]:
        return [v for v in self.values if v.call == call]

    def prefetches_at(self, point: int) -> List[SavedValue]:
        return [v for v in self.values if v.prefetch_at == point]

    def moved_bytes(self, tier: str) -> int:
        return sum(v.bytes for v in self.values if v.decision == tier)

    def describe(self) -> str:
        cap = "none" if self.capacity_bytes is None else format_bytes(self.capacity_bytes)
        lines = [f"offload plan: {len(self.layers)} calls, capacity {cap}, modelled peak "
                 f"{format_bytes(int(self.peak_kept))} kept -> "
                 f"{format_bytes(int(self.peak_planned))} planned"
                 + ("" if self.reachable else " (capacity not reached)")]
        for v in self.values:
            where = ""
            if v.decision in ("host", "disk"):
                where = (f", evicted after #{v.produced} ({self.points[v.produced]}), "
                         f"prefetched at #{v.prefetch_at} ({self.points[v.prefetch_at]})")
            lines.append(f"  {v.layer} (call {v.call}) {v.name}: {v.bytes} bytes: "
                         f"{v.decision}{where}")
        return "\n".join(lines)


def argument_bytes(arg, symbols: Dict[str, int]) -> int:
    """Bytes of a manifest argument at the graph's sizes."""
    n = 1
    for dim in arg.shape:
        if isinstance(dim, int):
            n *= dim
            continue
        match = _SYMBOL.match(dim) if isinstance(dim, str) else None
        if not match or match.group(1) not in symbols:
            raise ValueError(f"argument '{arg.name}' has dimension {dim!r}, which the graph "
                             f"sizes {sorted(symbols)} do not define")
        n *= symbols[match.group(1)] + int(match.group(2) or 0)
    if arg.dtype not in _ITEMSIZE:
        raise ValueError(f"argument '{arg.name}' has dtype {arg.dtype!r}")
    return n * _ITEMSIZE[arg.dtype]


def _sized(call: LayerCall, arg) -> int:
    try:
        return argument_bytes(arg, call.symbols)
    except ValueError as err:
        raise ValueError(f"layer {call.layer}: {err}") from None


def _check_options(capacity_bytes, host_capacity_bytes, tiers) -> Tuple[str, ...]:
    for what, value in (("capacity_bytes", capacity_bytes),
                        ("host_capacity_bytes", host_capacity_bytes)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value <= 0):
            raise ValueError(f"{what} must be a positive number of bytes or None (no limit), "
                             f"got {value!r}")
    if isinstance(tiers, str):
        tiers = (tiers,)
    tiers = tuple(tiers)
    unknown = [t for t in tiers if t not in MOVES]
    if unknown or not tiers or len(set(tiers)) != len(tiers):
        raise ValueError(f"tiers must be distinct names among {', '.join(MOVES)}, got "
                         f"{tiers!r}")
    return tiers


class _Step:
    """The timeline: point k < L is call k's forward, point 2L-1-k its backward."""

    def __init__(self, calls: Sequence[LayerCall], rates: Rates, tiers: Tuple[str, ...]):
        self.calls = list(calls)
        L = self.L = len(self.calls)
        self.rates = rates
        self.seconds = [0.0] * (2 * L)
        self.base = [0.0] * (2 * L)
        # Per call: results of its forward and its saved values, by name, in bytes.
        self.outputs = [0.0] * L
        self.values: List[SavedValue] = []
        self.saved_bytes: List[Dict[str, int]] = []
        for k, call in enumerate(self.calls):
            if not isinstance(call, LayerCall):
                raise TypeError(f"calls[{k}] must be a LayerCall, got {type(call).__name__}")
            fwd, bwd = call.entries
            b = self.backward_point(k)
            read_by_backward = {a.name for a in bwd.arguments}
            fwd_bytes = bwd_bytes = 0
            saved = {}
            for arg in fwd.arguments:
                if arg.role == "graph":
                    continue
                size = _sized(call, arg)
                fwd_bytes += size
                if arg.role == "input":  # kept for the backward when it reads it
                    self._add(self.base, k, b if arg.name in read_by_backward else k, size)
                elif arg.role == "output":
                    self.outputs[k] += size
                    self._add(self.base, k, k, size)
                elif arg.role == "saved":
                    if arg.name in read_by_backward:
                        saved[arg.name] = size
                    else:
                        self._add(self.base, k, k, size)
            for arg in bwd.arguments:
                if arg.role in ("graph", "input", "weight", "saved"):
                    if arg.role != "graph":
                        bwd_bytes += _sized(call, arg)
                    continue
                size = _sized(call, arg)  # cotangents, gradients
                bwd_bytes += size
                self._add(self.base, b, b, size)
            self.seconds[k] = (call.forward_seconds if call.forward_seconds is not None
                               else fwd_bytes / (rates.device_gbps * 1e9))
            self.seconds[b] = (call.backward_seconds if call.backward_seconds is not None
                               else bwd_bytes / (rates.device_gbps * 1e9))
            self.saved_bytes.append(saved)
        self.start = [0.0]
        for s in self.seconds:
            self.start.append(self.start[-1] + s)
        for k, call in enumerate(self.calls):
            b = self.backward_point(k)
            can_recompute = "recompute" in tiers and not any(
                o.direction == "evict" for o in getattr(call.entries[0], "offloaded", ()))
            for name, size in self.saved_bytes[k].items():
                self.values.append(SavedValue(
                    call=k, layer=call.layer, name=name, bytes=size, produced=k,
                    first_backward=b, idle_seconds=self.start[b] - self.start[k + 1],
                    host_seconds=size / (rates.host_write_gbps * 1e9)
                    + size / (rates.host_read_gbps * 1e9),
                    disk_seconds=size / (rates.disk_write_gbps * 1e9)
                    + size / (rates.disk_read_gbps * 1e9),
                    recompute_seconds=self.seconds[k] if can_recompute else None))

    def backward_point(self, k: int) -> int:
        return 2 * self.L - 1 - k

    @staticmethod
    def _add(memory, first, last, size) -> None:
        for point in range(first, last + 1):
            memory[point] += size

    def _held(self, v: SavedValue, decision: str, prefetch_at=None) -> List[Tuple[int, int]]:
        if decision == "keep":
            return [(v.produced, v.first_backward)]
        if decision == "recompute":
            return [(v.produced, v.produced), (v.first_backward, v.first_backward)]
        at = v.first_backward if prefetch_at is None else prefetch_at
        return [(v.produced, v.produced), (at, v.first_backward)]

    def profile(self) -> List[float]:
        memory = list(self.base)
        for v in self.values:
            for first, last in self._held(v, v.decision, v.prefetch_at):
                self._add(memory, first, last, v.bytes)
        # A rerun forward holds its results and its other saved values (copies
        # it drops) at the layer's backward.
        for k in {v.call for v in self.values if v.decision == "recompute"}:
            others = sum(v.bytes for v in self.values
                         if v.call == k and v.decision != "recompute")
            self._add(memory, self.backward_point(k), self.backward_point(k),
                      self.outputs[k] + others)
        return memory


def plan_step(calls: Sequence[LayerCall], capacity_bytes: Optional[int] = None, *,
              tiers=("host", "disk", "recompute"), host_capacity_bytes: Optional[int] = None,
              rates: Optional[Rates] = None, warn: bool = True) -> Plan:
    """The plan of the step made of `calls` (in forward call order).
    `capacity_bytes`: device memory for the layers' own values (None: no
    limit, then only moves hidden in their idle period); `tiers`: the moves
    allowed, among host, disk and recompute; `host_capacity_bytes`: host
    memory for moved values (None: no limit). A capacity the plan cannot
    reach warns (RuntimeWarning) with what the step needs."""
    tiers = _check_options(capacity_bytes, host_capacity_bytes, tiers)
    rates = Rates() if rates is None else rates
    if not isinstance(rates, Rates):
        raise TypeError(f"rates must be a hector.step_plan.Rates, got {type(rates).__name__}")
    step = _Step(calls, rates, tiers)
    kept = step.profile()
    peak_kept = max(kept, default=0.0)
    host_used = 0

    def host_fits(v):
        return host_capacity_bytes is None or host_used + v.bytes <= host_capacity_bytes

    reachable = True
    if capacity_bytes is None:
        for v in step.values:
            if v.produced + 1 >= v.first_backward:
                continue
            if "host" in tiers and v.host_seconds <= v.idle_seconds and host_fits(v):
                v.decision = "host"
                host_used += v.bytes
            elif "disk" in tiers and v.disk_seconds <= v.idle_seconds:
                v.decision = "disk"
    else:
        while True:
            memory = step.profile()
            if max(memory, default=0.0) <= capacity_bytes:
                break
            rerun = {v.call for v in step.values if v.decision == "recompute"}
            best, best_decision, best_score = None, "keep", 0.0
            for v in step.values:
                if v.decision != "keep":
                    continue
                relief = 0.0
                for point in range(v.produced + 1, v.first_backward):
                    if memory[point] > capacity_bytes:
                        relief += min(v.bytes, memory[point] - capacity_bytes) * max(
                            step.seconds[point], 1e-9)
                if relief <= 0:
                    continue
                decision, cost = None, math.inf
                if "host" in tiers and host_fits(v):
                    decision, cost = "host", v.host_seconds
                elif "disk" in tiers:
                    decision, cost = "disk", v.disk_seconds
                if v.recompute_seconds is not None:
                    again = 0.0 if v.call in rerun else v.recompute_seconds
                    if again < cost:
                        decision, cost = "recompute", again
                if decision is None:
                    continue
                score = relief / max(cost, 1e-12)
                if score > best_score:
                    best, best_decision, best_score = v, decision, score
            if best is None:
                reachable = False
                if warn:
                    warnings.warn(
                        f"hector offload plan: the step needs "
                        f"{format_bytes(int(max(memory)))} with every idle saved value "
                        f"moved ({', '.join(tiers)}); the capacity is "
                        f"{format_bytes(capacity_bytes)}", RuntimeWarning, stacklevel=2)
                break
            best.decision = best_decision
            if best_decision == "host":
                host_used += best.bytes
    _place_prefetches(step, capacity_bytes)
    memory = step.profile()
    return Plan(layers=[c.layer for c in step.calls],
                points=[f"forward {c.layer}" for c in step.calls]
                + [f"backward {c.layer}" for c in reversed(step.calls)],
                seconds=list(step.seconds), values=step.values,
                capacity_bytes=capacity_bytes, host_capacity_bytes=host_capacity_bytes,
                tiers=tiers, peak_kept=peak_kept, peak_planned=max(memory, default=0.0),
                reachable=reachable, memory=memory, memory_kept=kept)


def _place_prefetches(step: _Step, capacity_bytes: Optional[int]) -> None:
    """The pass's Step::placePrefetches: in order of first reader, the
    earliest backward point from which the value fits under the capacity
    until its reader, else the latest point whose time until the reader
    hides the read, else the backward's start."""
    moved = sorted((v for v in step.values if v.decision in ("host", "disk")),
                   key=lambda v: v.first_backward)
    memory = step.profile()  # values not yet placed count from their reader on
    start = step.L
    for v in moved:
        first = v.first_backward
        placed = None
        if capacity_bytes is not None:
            for point in range(first - 1, start - 1, -1):
                if memory[point] + v.bytes > capacity_bytes:
                    break
                placed = point
        if placed is None:
            rate = step.rates.disk_read_gbps if v.decision == "disk" else step.rates.host_read_gbps
            read = v.bytes / (rate * 1e9)
            placed = start
            for point in range(first, start - 1, -1):
                if step.start[first] - step.start[point] >= read:
                    placed = point
                    break
        step._add(memory, placed, first - 1, v.bytes)
        v.prefetch_at = placed

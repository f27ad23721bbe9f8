"""The offload plan (hector.step_plan) applied to hector.nn layers stacked in
PyTorch, during their training steps.

    planner = hector.offload.plan(model, capacity_bytes=2 << 30, cache=cache)
    for batch in loader:
        with planner:
            loss = model(x, edge_index, edge_type).sum()
            loss.backward()
    print(planner.plan.describe(), planner.stats())

Inside the block, every training call of one of `model`'s hector.nn layers
(their libraries' f_fwd / f_bwd, through hector.autograd) is a point of the
step's timeline. The first step records the calls (layer, entries, graph
sizes) and runs keeping everything; when its last backward has run, the
plan is made from them. The following steps apply it:

- after a layer's forward, each saved value the plan moves is copied into
  the tensor cache (host or disk tier) and dropped from its device; one it
  recomputes is dropped;
- before each layer's backward, the values whose prefetch point it is are
  read back onto their device (any the plan prefetches earlier and that
  are still missing too), their reads from the cache issued together
  (TensorCache.get_many: values on disk come off it at once); a layer with recomputed values runs its training
  forward again, from the inputs autograd kept, and its backward reads the
  recomputed values;
- the device copies are dropped after the layer's backward; the cache keeps
  a value until autograd frees the step (a backward run again with
  retain_graph reads it again).

Torch operations between the layers are untouched (their saved tensors
stay where autograd keeps them). A step whose calls differ from the plan's
(another order, other layers, other graph sizes) applies the plan to the
calls that match up to the first difference, keeps the rest, and is
planned again when it completes. A value the host tier cannot take stays
on its device. Copies are synchronous, as hector.offload's.
"""

from __future__ import annotations

import threading
import weakref
from typing import Dict, List, Optional

import torch

from . import _runtime
from .step_plan import LayerCall, Plan, Rates, _check_options, plan_step

_state = threading.local()


def _active() -> list:
    if not hasattr(_state, "planners"):
        _state.planners = []
        _state.layers = []  # (planner, layer name) of the layers in forward now
    return _state.planners


def claim(call):
    """The (planner, layer name) that plans this training call of
    hector.autograd, or None: called by hector.autograd.run."""
    _active()
    for planner, layer in reversed(_state.layers):
        if planner in _state.planners:
            return planner, layer
    return None


class _Moved:
    __slots__ = ("key", "tier", "nbytes", "shape", "dtype", "device")

    def __init__(self, key, tier, tensor):
        self.key, self.tier = key, tier
        self.nbytes = tensor.numel() * tensor.element_size()
        self.shape, self.dtype, self.device = tensor.shape, tensor.dtype, tensor.device


class _StepState:
    def __init__(self, plan: Optional[Plan], signatures: Optional[list]):
        self.plan, self.plan_signatures = plan, signatures
        self.calls: List[LayerCall] = []
        self.signatures: list = []
        self.tokens: list = []  # weak references to each call's _PlannedCall
        self.pending = 0
        self.matching = plan is not None
        self.abandoned = False
        self.events: list = []

    def finished(self) -> bool:
        return bool(self.calls) and self.pending == 0


class _PlannedCall:
    """One planned training call: what its forward did with each saved
    value, and the device copies its backward reads."""

    def __init__(self, planner, step, index, call, decisions):
        self.planner, self.step, self.index, self.call = planner, step, index, call
        self.decisions = decisions  # name -> keep / host / disk / recompute
        self.moved: Dict[str, _Moved] = {}
        self.recomputed: List[str] = []
        self.fetched: Dict[str, torch.Tensor] = {}
        self.backward_runs = 0
        self.keys: list = []
        self.ran = [False]  # whether a backward ran, for _call_freed
        weakref.finalize(self, _call_freed, planner.cache, self.keys, weakref.ref(step),
                         self.ran)

    def point(self) -> int:
        """This call's backward on the step's timeline."""
        return 2 * len(self.step.calls) - 1 - self.index

    def before_backward(self, values: dict, device) -> dict:
        """The saved values this call's forward did not keep, for its
        backward."""
        step, planner = self.step, self.planner
        point = self.point()
        # Every value read back at this point is read in one batch: the cache
        # reads those on disk together.
        batch = []
        if self.backward_runs == 0 and step.matching and \
                len(step.calls) == len(step.plan.layers):
            # The prefetches the plan places at or before this point.
            for v in step.plan.values:
                if v.prefetch_at is None or v.prefetch_at > point:
                    continue
                other = step.tokens[v.call]() if v.call < len(step.tokens) else None
                if other is not None and other.backward_runs == 0 and v.name in other.moved \
                        and v.name not in other.fetched and (other, v.name) not in batch:
                    batch.append((other, v.name))
                    step.events.append(("prefetch", v.call, v.name, point))
        for name in self.moved:
            if name not in self.fetched and (self, name) not in batch:
                if self.backward_runs == 0:
                    planner._count("late_prefetches", 1)
                batch.append((self, name))
                step.events.append(("prefetch", self.index, name, point))
        _fetch_together(planner, batch)
        out = {name: self.fetched[name] for name in self.moved}
        if self.recomputed:
            inputs = {n: values[n] for n in self.call.names}
            again = self.call.call(self.call.forward, inputs, device)
            for name in self.recomputed:
                out[name] = again[name]
            planner._count("recomputed_values", len(self.recomputed))
            planner._count("recomputed_calls", 1)
            step.events.append(("recompute", self.index, tuple(self.recomputed), point))
        for name in out:
            step.events.append(("read", self.index, name, point))
        return out

    def after_backward(self) -> None:
        self.fetched.clear()
        self.backward_runs += 1
        if self.backward_runs == 1:
            self.ran[0] = True
            self.planner._call_done(self.step)


def _fetch_together(planner, values) -> None:
    """Reads the moved values [(call, name)] back onto their devices, their
    reads from the cache issued together (TensorCache.get_many)."""
    if not values:
        return
    moved = [call.moved[name] for call, name in values]
    arrays = planner.cache.get_many([m.key for m in moved], nbytes=[m.nbytes for m in moved])
    for (call, name), m, array in zip(values, moved, arrays):
        data = torch.from_numpy(array)
        call.fetched[name] = data.view(m.dtype).reshape(m.shape).to(m.device)
    planner._count("prefetched_values", len(values))
    planner._count("prefetched_bytes", sum(m.nbytes for m in moved))


def _call_freed(cache, keys, step_ref, ran):
    """Autograd freed the call: its values leave the cache. A call freed
    before its backward ran leaves its step incomplete, never planned."""
    if not cache.closed:
        for key in keys:
            cache.release(key)
    step = step_ref()
    if step is not None and not ran[0]:
        step.abandoned = True
        step.pending -= 1


class PlannedOffload:
    """hector.offload.plan(...): see the module's docstring."""

    def __init__(self, model: torch.nn.Module, capacity_bytes: Optional[int] = None, *,
                 tiers=("host", "disk", "recompute"), host_capacity_bytes: Optional[int] = None,
                 cache=None, rates: Optional[Rates] = None):
        from .nn._base import CompiledLayer
        from .offload import default_cache

        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"plan(): model must be a torch.nn.Module, got {type(model).__name__}")
        self.tiers = _check_options(capacity_bytes, host_capacity_bytes, tiers)
        self.capacity_bytes, self.host_capacity_bytes = capacity_bytes, host_capacity_bytes
        self.rates = Rates() if rates is None else rates
        if not isinstance(self.rates, Rates):
            raise TypeError(f"rates must be a hector.step_plan.Rates, got "
                            f"{type(self.rates).__name__}")
        self.layers = {m: name or type(m).__name__ for name, m in model.named_modules()
                       if isinstance(m, CompiledLayer)}
        if not self.layers:
            raise ValueError(f"plan(): {type(model).__name__} has no hector.nn layers to plan")
        self.cache = default_cache() if cache is None else cache
        if "disk" in self.tiers and not getattr(self.cache, "directory", None):
            raise ValueError("plan(): the disk tier needs a tensor cache with a directory "
                             "(TensorCache(..., directory=...)); or leave 'disk' out of tiers")
        self.plan: Optional[Plan] = None
        self._signatures = None
        self._step: Optional[_StepState] = None
        self._handles: list = []
        self._stats = dict.fromkeys((
            "steps", "plans", "evicted_host_values", "evicted_host_bytes",
            "evicted_disk_values", "evicted_disk_bytes", "kept_in_place", "prefetched_values",
            "prefetched_bytes", "late_prefetches", "recomputed_values", "recomputed_calls",
            "dropped_for_recompute_bytes"), 0)
        self._lock = threading.Lock()

    # ---- the context -------------------------------------------------------------

    def __enter__(self) -> "PlannedOffload":
        planners = _active()
        if self in planners:
            raise RuntimeError("this offload plan is already active")
        for module, name in self.layers.items():
            self._handles.append(module.register_forward_pre_hook(self._enter_layer(name)))
            self._handles.append(module.register_forward_hook(self._leave_layer(name)))
        planners.append(self)
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        _active().remove(self)
        _state.layers = [entry for entry in _state.layers if entry[0] is not self]

    def _enter_layer(self, name):
        def hook(module, inputs):
            _active()
            _state.layers.append((self, name))
        return hook

    def _leave_layer(self, name):
        def hook(module, inputs, output):
            while _state.layers:  # also past entries a failed forward left
                if _state.layers.pop() == (self, name):
                    break
        return hook

    # ---- statistics ----------------------------------------------------------------

    def _count(self, what: str, n: int) -> None:
        with self._lock:
            self._stats[what] += n

    def stats(self) -> dict:
        """Counts since this planner was made: steps, plans made, values and
        bytes evicted per tier, values kept in place (host tier full),
        prefetches (and those made only when the backward needed them),
        values and calls recomputed, and the bytes dropped for
        recomputation."""
        with self._lock:
            return dict(self._stats)

    @property
    def last_step_events(self) -> list:
        """What the latest step did, in order: ("evict", call, name, point),
        ("prefetch", call, name, point), ("recompute", call, names, point),
        ("read", call, name, point), points of the plan's timeline."""
        return list(self._step.events) if self._step else []

    # ---- the calls (from hector.autograd) --------------------------------------------

    def after_forward(self, call, layer: str, saved: dict) -> tuple:
        """A training forward of `layer` ran and saved `saved` (name ->
        tensor). Returns (the call's _PlannedCall, the names autograd keeps)."""
        step = self._step
        if step is None or step.finished():
            step = self._step = _StepState(self.plan, self._signatures)
            self._count("steps", 1)
        index = len(step.calls)
        symbols = dict(call.symbols)
        signature = (layer, call.library.path, call.forward.name, tuple(sorted(symbols.items())))
        step.calls.append(LayerCall(layer, (call.forward, call.backward), symbols))
        step.signatures.append(signature)
        if step.matching and (index >= len(step.plan_signatures)
                              or step.plan_signatures[index] != signature):
            step.matching = False
        decisions = {v.name: v.decision for v in step.plan.of(index)} if step.matching else {}
        token = _PlannedCall(self, step, index, call, decisions)
        step.tokens.append(weakref.ref(token))
        step.pending += 1
        kept = []
        for name, tensor in saved.items():
            decision = decisions.get(name, "keep")
            if decision in ("host", "disk") and self._evict(token, name, tensor, decision):
                step.events.append(("evict", index, name, index))
            elif decision == "recompute":
                token.recomputed.append(name)
                self._count("dropped_for_recompute_bytes",
                            tensor.numel() * tensor.element_size())
            else:
                kept.append(name)
        return token, kept

    def _evict(self, token, name, tensor, tier) -> bool:
        from .offload import reserve_keys

        host = tensor.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy()
        key = reserve_keys(1)
        try:
            self.cache.put(key, host, tier=tier)
        except _runtime.HectorRuntimeError as err:
            if err.status == _runtime.OUT_OF_MEMORY:
                self._count("kept_in_place", 1)
                return False
            raise
        token.keys.append(key)
        token.moved[name] = _Moved(key, tier, tensor)
        self._count(f"evicted_{tier}_values", 1)
        self._count(f"evicted_{tier}_bytes", token.moved[name].nbytes)
        return True

    def _call_done(self, step: _StepState) -> None:
        """One call's first backward ran; the last one completes the step,
        which is planned when it did not follow the plan."""
        step.pending -= 1
        if step.pending or step.abandoned:
            return
        if step.signatures != step.plan_signatures:
            self.plan = plan_step(step.calls, self.capacity_bytes, tiers=self.tiers,
                                  host_capacity_bytes=self.host_capacity_bytes,
                                  rates=self.rates)
            self._signatures = list(step.signatures)
            self._count("plans", 1)

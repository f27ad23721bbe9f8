"""PyTorch autograd over the entry points of a compiled library.

    pre = hector.graph.preprocess(node_type, src, dst, etype, T, R, device=...)
    out, = hector.autograd.run(lib, "rgat", pre, h=h, W=W, a=a, b=b)
    out.sum().backward()                        # fills h.grad, W.grad, ...

run() calls function f of `lib` on torch tensors (float32, and int64 [1] for
a seed argument; contiguous copies are made where needed, all on the library's device: CPU for --target=cpu,
CUDA for --target=cuda) and returns its results as new tensors. When
gradients are needed (grad mode on and some input requires grad) it calls
the training forward f_fwd instead, keeps its saved tensors, and the backward
calls f_bwd with them and the results' cotangents (libraries built with
``hectorc --training``; docs/compilation.md, docs/python.md). Otherwise it
calls the inference entry f and keeps nothing. Double backward is not
supported (the backward is itself not differentiable).
"""

from __future__ import annotations

import weakref

import torch
from torch.autograd.function import once_differentiable

from .compiled import _SYMBOL, CompiledLibrary

__all__ = ["run", "TrainingNotAvailable"]


class TrainingNotAvailable(RuntimeError):
    """Gradients were asked of a library built without ``hectorc --training``."""


def _symbols(graph) -> dict:
    return {k: int(getattr(graph, k)) for k in ("N", "E", "T", "R", "P")}


def _shape(entry, arg, symbols: dict) -> tuple:
    """The size of every dimension of a caller-allocated argument."""
    dims = []
    for k, (dim, fixed) in enumerate(zip(arg.shape, arg.sizes)):
        if fixed is not None:
            dims.append(fixed)
        elif isinstance(dim, int):
            dims.append(dim)
        elif isinstance(dim, str):
            name, plus = _SYMBOL.match(dim).groups()
            if name not in symbols:
                raise ValueError(f"{entry.name}(): argument '{arg.name}' has dimension {dim}, "
                                 "which the graph does not define")
            dims.append(symbols[name] + int(plus or 0))
        else:
            raise ValueError(f"{entry.name}(): argument '{arg.name}' has no known size in "
                             f"dimension {k}")
    return tuple(dims)


class _Call:
    """What forward and backward need besides tensors: the entries, the
    graph arrays, the names of the differentiable arguments."""

    def __init__(self, library: CompiledLibrary, primal: str, graph, names: tuple,
                 training, synchronize: bool, check_indices: bool = True,
                 offload_cache=None):
        self.library = library
        self.offload_cache = offload_cache
        self.primal = library[primal]
        self.forward, self.backward = training or (None, None)
        self.graph = graph
        self.names = names
        self.symbols = _symbols(graph)
        self.synchronize = synchronize
        self.check_indices = check_indices
        # (planner, layer name) when hector.offload.plan plans this call
        self.planner = None
        self.results = [a.name for a in self.primal.arguments if a.role == "output"]

    def call(self, entry, values: dict, device, offload=None) -> dict:
        """Calls `entry` with `values` by name plus the graph arrays; allocates
        and returns its caller-allocated outputs by name."""
        args, outputs = {}, {}
        for arg in entry.arguments:
            if arg.is_output:
                outputs[arg.name] = args[arg.name] = torch.empty(
                    _shape(entry, arg, self.symbols), dtype=getattr(torch, arg.dtype),
                    device=device)
            elif arg.role == "graph":
                args[arg.name] = getattr(self.graph, arg.name)
            elif arg.name in values:
                args[arg.name] = values[arg.name]
            else:
                raise ValueError(f"{entry.name}(): the library reads argument '{arg.name}' "
                                 f"({arg.role}), which {self.primal.name}() does not take")
        kwargs = {"synchronize": self.synchronize} if self.library.target == "cuda" else {}
        if entry.offloaded:
            kwargs["offload"] = offload
        entry(**args, check_indices=self.check_indices, **kwargs)
        return outputs


class _StepKeys:
    """The keys under which one training step's forward evicted its saved
    values (hectorc --offload): released when autograd frees the step's
    graph (its backward may run again before that, with retain_graph)."""

    def __init__(self, library: CompiledLibrary, cache, slots: list):
        from . import offload  # the tensor cache's binding, only when used

        self.cache = cache
        self.base = offload.reserve_keys(max(slots) + 1)
        # Set once the forward has returned: every slot was evicted then. A
        # forward that failed part-way evicted only some.
        self.forward_done = [False]
        weakref.finalize(self, _release_keys, library, cache,
                         [self.base + slot for slot in slots], self.forward_done)


def _release_keys(library, cache, keys, forward_done) -> None:
    """Releases each key of the step, all of them even if one fails (then
    the first failure is raised); a key that a failed forward never evicted
    is skipped."""
    if cache.closed:  # a closed cache has freed everything
        return
    failure = None
    for key in keys:
        try:
            library.offload_release(cache, key)
        except RuntimeError as err:
            if forward_done[0] or "no value under key" not in str(err):
                failure = failure or err
    if failure is not None:
        raise failure


class _EntryFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, call: _Call, device, *tensors):
        values = dict(zip(call.names, tensors))
        if call.forward is None:  # no gradients wanted: the inference entry
            outputs = call.call(call.primal, values, device)
            return tuple(outputs[name] for name in call.results)
        evicted = [o.slot for o in call.forward.offloaded if o.direction == "evict"]
        ctx.keys = None
        if evicted:
            from . import offload

            cache = call.offload_cache or offload.default_cache()
            ctx.keys = _StepKeys(call.library, cache, evicted)
        outputs = call.call(call.forward, values, device, offload=ctx.keys and
                            (ctx.keys.cache, ctx.keys.base))
        if ctx.keys:
            ctx.keys.forward_done[0] = True
        saved = [a.name for a in call.forward.arguments if a.role == "saved"]
        ctx.planned = None
        if call.planner is not None:  # hector.offload.plan: it keeps the names it returns
            planner, layer = call.planner
            ctx.planned, saved = planner.after_forward(
                call, layer, {name: outputs[name] for name in saved})
        ctx.call, ctx.saved_names = call, saved
        ctx.save_for_backward(*tensors, *(outputs[name] for name in saved))
        return tuple(outputs[name] for name in call.results)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        call = ctx.call
        stored = ctx.saved_tensors
        values = dict(zip(call.names, stored))
        values.update(zip(ctx.saved_names, stored[len(call.names):]))
        for name, grad in zip(call.results, grads):
            values["d_" + name] = grad.to(torch.float32).contiguous()
        device = stored[0].device if stored else None
        if ctx.planned is not None:
            values.update(ctx.planned.before_backward(values, device))
        outputs = call.call(call.backward, values, device, offload=ctx.keys and
                            (ctx.keys.cache, ctx.keys.base))
        if ctx.planned is not None:
            ctx.planned.after_backward()
        found = {name[2:]: value for name, value in outputs.items()
                 if name.startswith("d_")}
        unknown = sorted(set(found) - set(call.names))
        if unknown:
            raise ValueError(f"{call.backward.name}(): gradient 'd_{unknown[0]}' is of no "
                             f"argument of {call.primal.name}()")
        return (None, None) + tuple(
            found.get(name) if ctx.needs_input_grad[2 + i] else None
            for i, name in enumerate(call.names))


def _device(library: CompiledLibrary, tensors: dict):
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        raise ValueError(f"all tensors must be on one device, got {sorted(map(str, devices))}")
    device = devices.pop() if devices else torch.device("cpu")
    want = "cuda" if library.target == "cuda" else "cpu"
    if device.type != want:
        raise ValueError(f"the library was built for target '{library.target}', so its "
                         f"tensors must be on {want}, got {device}")
    return device


def run(library: CompiledLibrary, name: str, graph, synchronize: bool = True,
        check_indices: bool = True, offload_cache=None, **tensors):
    """Calls function `name` of `library` on the preprocessed `graph`
    (hector.graph.preprocess, on the tensors' device for cuda) and the
    torch tensors `tensors` by argument name. Returns the tuple of results,
    differentiable with respect to every tensor argument. `check_indices`
    as for compiled entries (hector.compiled): False only for a graph
    straight from hector.graph.preprocess, unmodified since. A library
    built with ``hectorc --offload`` keeps the saved values its plan moves
    in `offload_cache` (a hector.tensor_cache.TensorCache; default:
    hector.offload.default_cache())."""
    entry = library[name]
    if entry.kind != "inference":
        raise ValueError(f"run() takes a function of the model, not its {entry.kind} "
                         f"entry '{name}'; give '{entry.primal}'")
    params = [a for a in entry.arguments if a.role in ("input", "weight")]
    names = tuple(a.name for a in params)
    missing = [n for n in names if n not in tensors]
    extra = sorted(set(tensors) - set(names))
    if missing or extra:
        raise TypeError(f"{name}() takes tensors {', '.join(names)}"
                        + (f"; missing {', '.join(missing)}" if missing else "")
                        + (f"; unexpected {', '.join(extra)}" if extra else ""))
    for arg in params:
        n, t = arg.name, tensors[arg.name]
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}(): argument '{n}' must be a torch tensor, "
                            f"got {type(t).__name__}")
        if arg.dtype != "float32":  # a seed (int64 [1]): it has no gradient
            if t.dtype != getattr(torch, arg.dtype):
                raise TypeError(f"{name}(): argument '{n}' must be {arg.dtype}, got {t.dtype}")
            continue
        if t.dtype != torch.float32:
            raise TypeError(f"{name}(): argument '{n}' must be float32, got {t.dtype} "
                            "(hector's libraries compute in float32)")
    device = _device(library, tensors)
    needs_grad = torch.is_grad_enabled() and any(tensors[n].requires_grad for n in names)
    training = None
    if needs_grad:
        training = library.training_entries(name)
        if training is None:
            wants = [n for n in names if tensors[n].requires_grad]
            raise TrainingNotAvailable(
                f"gradients of {name}() are needed (for {', '.join(wants)}), but "
                f"{library.path} was built without training entries: compile it with "
                "training=True (hectorc --training), or run under torch.no_grad()")
    call = _Call(library, name, graph, names, training, synchronize, check_indices,
                 offload_cache)
    if training is not None:
        from . import planned_offload

        call.planner = planned_offload.claim(call)
    return _EntryFunction.apply(call, device, *(tensors[n].contiguous() for n in names))

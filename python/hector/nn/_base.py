"""What the hector.nn layers share: the compiled library of a layer and the
per-graph preprocessing cache."""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict

import torch

from .. import compiler, models
from .._fingerprint import fingerprint, fingerprints
from ..autograd import TrainingNotAvailable

__all__ = ["GraphCache", "graph_cache", "fingerprint", "fingerprints", "CompiledLayer", "glorot_",
           "eager_layer"]


def glorot_(tensor: torch.Tensor) -> torch.Tensor:
    """Glorot (Xavier) uniform over the last two dimensions, as PyG's
    `inits.glorot`: U(-a, a), a = sqrt(6 / (fan_in + fan_out))."""
    bound = math.sqrt(6.0 / (tensor.size(-2) + tensor.size(-1)))
    with torch.no_grad():
        return tensor.uniform_(-bound, bound)


# ---- per-graph preprocessing cache ---------------------------------------------

class GraphCache:
    """Preprocessed graphs (hector.graph.preprocess), keyed by the content of
    the tensors that describe the graph (edge_index, edge_type, ...; see
    fingerprints()) and by everything else that numbers its ids: node
    counts, type counts, the layer's node and edge type order, the device.

    Keying by content means a graph changed in place is never served stale,
    however it was changed (a torch.from_numpy buffer refilled, a write
    through .numpy() or .data: none of those bumps the version counter),
    and that a graph rebuilt as new tensors with the same values hits. The
    cost is one pass over the index tensors per forward (a multiply and a
    sum per element, on their device). At most `capacity` graphs are kept,
    least recently used first out; an entry lives until it is pushed out or
    clear() is called.
    """

    def __init__(self, capacity: int = 16):
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def get(self, tensors, extra, build):
        """The cached value for (the content of `tensors`, `extra`), or
        build() stored. `extra` must hold everything besides the tensors'
        values that the value depends on."""
        key = (tuple(fingerprints(tensors)), extra)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key]
            self.misses += 1
        value = build()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return value


graph_cache = GraphCache()


def check_index_tensor(what: str, t, rows=None, device=None) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(t).__name__} (a sparse "
                        "adjacency is a torch.sparse COO/CSR/CSC tensor or a "
                        "torch_sparse.SparseTensor)")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{what} must hold integer ids, got dtype {t.dtype}")
    if rows is None:
        if t.dim() != 1:
            raise ValueError(f"{what} must be one-dimensional, got shape {tuple(t.shape)}")
    elif t.dim() != 2 or t.size(0) != rows:
        raise ValueError(f"{what} must have shape [{rows}, E], got {tuple(t.shape)}")
    if device is not None and t.device != device:
        raise ValueError(f"{what} is on {t.device} but the features are on {device}")
    return t


def preprocess(device, node_type, src, dst, etype, num_node_types, num_edge_types):
    """hector.graph.preprocess where the layer runs: numpy arrays for the CPU
    library, tensors on the GPU for the CUDA one."""
    from .. import graph

    if device.type == "cuda":
        return graph.preprocess(node_type, src, dst, etype, num_node_types, num_edge_types,
                                device=device)
    host = [t.detach().cpu().numpy() for t in (node_type, src, dst, etype)]
    return graph.preprocess(*host, num_node_types, num_edge_types)


def first_out_of_range(pairs) -> int:
    """The position in `pairs` ((ids tensor, bound), ...) of the first
    tensor holding an id outside [0, bound), or -1. One host read for all
    of them (on a GPU, one wait for the queued work, not one per tensor)."""
    flags = [((ids < 0) | (ids >= bound)).any() if ids.numel() else None
             for ids, bound in pairs]
    present = [f for f in flags if f is not None]
    if not present:
        return -1
    values = iter(torch.stack(present).tolist())
    for i, f in enumerate(flags):
        if f is not None and next(values):
            return i
    return -1


def check_endpoints(what: str, index, num_src: int, num_dst: int) -> None:
    """Raises ValueError naming the first source id outside [0, num_src) or
    destination id outside [0, num_dst) of `index` [2, E]."""
    rows = ((0, num_src, "source"), (1, num_dst, "destination"))
    i = first_out_of_range([(index[row], bound) for row, bound, _ in rows])
    if i >= 0:
        row, bound, which = rows[i]
        ids = index[row]
        bad = ids[(ids < 0) | (ids >= bound)][0]
        raise ValueError(f"{what} holds {which} node {int(bad)}, but there are {bound} "
                         f"{which} nodes")


def relational_graph(edges, num_src: int, num_dst: int, num_relations: int, device,
                     sources_apart: bool = False):
    """The preprocessing (one node type) of the relational graph `edges`
    (hector.nn._adjacency.Edges), cached per graph. Homogeneous (sources
    and destinations are the same num_src == num_dst nodes), or with
    `sources_apart`: num_src source nodes, then num_dst destination nodes
    (node id num_src + t), every edge checked against its own side's count."""
    index, edge_type = edges.index, edges.edge_type
    if not sources_apart:
        n = num_src
        return graph_cache.get(
            (index, edge_type), (n, 1, num_relations, str(device)),
            lambda: preprocess(device, torch.zeros(n, dtype=torch.int64, device=device),
                               index[0], index[1], edge_type, 1, num_relations))

    def build():
        check_endpoints("edge_index", index, num_src, num_dst)
        n = num_src + num_dst
        return preprocess(device, torch.zeros(n, dtype=torch.int64, device=device),
                          index[0], index[1].to(torch.int64) + num_src, edge_type, 1,
                          num_relations)

    return graph_cache.get((index, edge_type),
                           ("sources apart", num_src, num_dst, num_relations, str(device)),
                           build)


# ---- compiled layers -------------------------------------------------------------

_libraries: dict = {}  # (spec, target, arch, training, cache dir, compiler) -> library
_libraries_lock = threading.Lock()


# torch.jit.script(layer): key -> the layer its ScriptModule calls (kept alive,
# since the ScriptModule cannot hold it).
_scripted: dict = {}
_script_keys = itertools.count()


def eager_layer(module) -> "CompiledLayer":
    """The Python layer behind `module`: itself, or, for the ScriptModule
    torch.jit.script made of a layer (whose @torch.jit.ignore'd methods get
    the ScriptModule as self), that layer, in the ScriptModule's
    training mode."""
    if isinstance(module, CompiledLayer):
        return module
    layer = _scripted[module._script_key]
    layer.training = module.training
    return layer


class CompiledLayer(torch.nn.Module):
    """A layer computed by one function of a hector-compiled library.

    The library is compiled (or found in the cache) on the first forward on a
    device: target cpu or cuda (for the GPU's architecture), with training
    entries when gradients are needed. `cache_dir` and `compiler` (per
    instance; default None) are passed to hector.compile.

    torch.jit.script(layer) works as PyG's tests use it: the layers' forward
    is a typed TorchScript method that calls the Python layer through an
    @torch.jit.ignore'd method (the compiled libraries are called from
    Python through ctypes, which TorchScript cannot compile). So the
    ScriptModule runs in the process that made it, on the layer's own
    parameters, inside larger scripted models too; it cannot be saved
    (torch.jit.save refuses Python calls) or run without Python.
    """

    model = ""  # "rgcn", "rgat" or "hgt": the function of the library
    __constants__ = ["_script_key"]  # set by __prepare_scriptable__
    __jit_unused_properties__ = ["model_spec", "featureless_model_spec"]

    def __prepare_scriptable__(self):
        """Called by torch.jit.script: registers this layer for eager_layer()."""
        self._script_key = next(_script_keys)
        _scripted[self._script_key] = self
        return self

    def __init__(self):
        super().__init__()
        self.cache_dir = None
        self.compiler = None
        # Queue on the current torch stream like any torch op; True waits
        # for the kernels so that a failing one raises at the call.
        self.synchronize = False

    def _spec_args(self) -> dict:
        raise NotImplementedError

    @property
    def model_spec(self) -> str:
        """The model spec of this layer's library, as `python3 -m hector.aot` takes it."""
        args = self._spec_args()
        return models.spec(self.model, **args)

    def library(self, device, training: bool, spec=None):
        """The compiled library for `device` (training: with f_fwd/f_bwd), of
        `spec` (default: model_spec)."""
        device = torch.device(device)
        target = "cuda" if device.type == "cuda" else "cpu"
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"hector layers run on the CPU or CUDA GPUs, got device {device}")
        arch = None
        if target == "cuda":
            major, minor = torch.cuda.get_device_capability(device)
            arch = f"sm_{major}{minor}"
        spec = self.model_spec if spec is None else spec
        common = (spec, target, arch)
        where = (str(compiler.resolve_cache_dir(self.cache_dir)), str(self.compiler))
        with _libraries_lock:
            for wanted in ((True,) if training else (False, True)):
                if common + (wanted,) + where in _libraries:
                    return _libraries[common + (wanted,) + where]
        text = models.from_spec(spec)

        def build(with_training):
            return compiler.compile(text, target, training=with_training, gpu_arch=arch,
                                    cache_dir=self.cache_dir, compiler=self.compiler,
                                    description=spec)

        try:
            lib = build(training)
        except compiler.MissingArtifactError as missing:
            if training:
                raise
            try:  # a library built with --training serves inference too
                lib = build(True)
            except compiler.MissingArtifactError:
                raise missing from None
            training = True
        except compiler.CompileError as err:
            if training and not compiler.supports_training(self.compiler):
                raise TrainingNotAvailable(
                    f"{type(self).__name__} needs gradients, but this hectorc has no "
                    "--training (autodiff) yet; run it under torch.no_grad() or with "
                    "requires_grad=False everywhere") from err
            raise
        with _libraries_lock:
            _libraries[common + (training,) + where] = lib
        return lib

    def needs_grad(self, *inputs) -> bool:
        if not torch.is_grad_enabled():
            return False
        return any(t.requires_grad for t in inputs) or any(
            p.requires_grad for p in self.parameters())


# ---- PyG's basis and block decompositions of relation weights ----------------------

def relation_parameters(module, num_relations, in_channels, out_channels, num_bases,
                        num_blocks, basis_name="weight", coeff_name="comp"):
    """Registers the relation weights as PyG does: dense `weight` [R, in, out];
    or `num_bases` bases [B, in, out] (named `basis_name`) with coefficients
    [R, B] (`coeff_name`); or `num_blocks` diagonal blocks `weight`
    [R, B, in/B, out/B]. relation_weight() turns any of them into the dense
    [R, in, out] the compiled layer takes (differentiably)."""
    check_decomposition(in_channels, out_channels, num_bases, num_blocks)
    module.num_bases, module.num_blocks = num_bases, num_blocks
    module._basis_name, module._coeff_name = basis_name, coeff_name
    if num_bases is not None:
        module.register_parameter(basis_name, torch.nn.Parameter(
            torch.empty(num_bases, in_channels, out_channels)))
        module.register_parameter(coeff_name, torch.nn.Parameter(
            torch.empty(num_relations, num_bases)))
    elif num_blocks is not None:
        module.weight = torch.nn.Parameter(torch.empty(
            num_relations, num_blocks, in_channels // num_blocks, out_channels // num_blocks))
    else:
        module.weight = torch.nn.Parameter(
            torch.empty(num_relations, in_channels, out_channels))


def check_decomposition(in_channels, out_channels, num_bases, num_blocks) -> None:
    if num_bases is not None and num_blocks is not None:
        raise ValueError("can not apply both basis-decomposition and "
                         "block-diagonal-decomposition at the same time")
    if num_bases is not None and num_bases < 1:
        raise ValueError(f"num_bases must be positive, got {num_bases}")
    if num_blocks is not None and (num_blocks < 1 or in_channels % num_blocks
                                   or out_channels % num_blocks):
        raise ValueError(f"num_blocks = {num_blocks} must divide in_channels = "
                         f"{in_channels} and the output width {out_channels}")


def relation_shapes(num_relations, in_channels, out_channels, num_bases, num_blocks):
    """The shapes of the relation weights relation_parameters registers,
    plus the dense [R, in, out] that relation_weight builds from decomposed
    ones on every forward (checks the decomposition first)."""
    check_decomposition(in_channels, out_channels, num_bases, num_blocks)
    dense = (num_relations, in_channels, out_channels)
    if num_bases is not None:
        return [(num_bases, in_channels, out_channels), (num_relations, num_bases), dense]
    if num_blocks is not None:
        return [(num_relations, num_blocks, in_channels // num_blocks,
                 out_channels // num_blocks), dense]
    return [dense]


def reset_relation_parameters(module):
    if module.num_bases is not None:
        glorot_(getattr(module, module._basis_name))
        glorot_(getattr(module, module._coeff_name))
    else:
        glorot_(module.weight)


def relation_weight(module, num_relations, in_channels, out_channels) -> torch.Tensor:
    """The dense per-relation weights [R, in, out]."""
    if module.num_bases is not None:
        basis = getattr(module, module._basis_name)
        coeff = getattr(module, module._coeff_name)
        return (coeff @ basis.view(module.num_bases, -1)).view(
            num_relations, in_channels, out_channels)
    if module.num_blocks is not None:
        w = module.weight  # [R, B, in/B, out/B] -> block diagonal [R, in, out]
        eye = torch.eye(module.num_blocks, dtype=w.dtype, device=w.device)
        return torch.einsum("rbio,bc->rbico", w, eye).reshape(
            num_relations, in_channels, out_channels)
    return module.weight


def check_parameter_memory(layer: str, asked: str, *shapes) -> None:
    """Raises MemoryError, before any parameter is allocated, when float32
    tensors of `shapes` (the layer's parameters, and the dense weights its
    forward builds from decomposed ones) need more host memory than is
    available. `asked` names the sizes the caller gave."""
    from .. import _memory

    _memory.check_host(f"{layer}({asked}) with its parameters of shapes "
                       + ", ".join(str(list(s)) for s in shapes),
                       _memory.tensor_bytes(*shapes))


def reject_options(layer: str, kwargs: dict) -> None:
    if kwargs:
        raise NotImplementedError(
            f"hector.nn.{layer} does not support PyG's option(s) {', '.join(sorted(kwargs))} "
            "(docs/python.md lists what is supported)")


def check_features(layer: str, x, width: int, what: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{layer}: {what} must be a torch.Tensor [N, {width}], got "
                        f"{type(x).__name__}")
    if x.dim() != 2 or x.size(1) != width:
        raise ValueError(f"{layer}: {what} must have shape [N, {width}], got {tuple(x.shape)}")
    if x.dtype != torch.float32:
        raise TypeError(f"{layer}: {what} must be float32 (hector computes in float32), "
                        f"got {x.dtype}")
    return x

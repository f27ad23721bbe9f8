"""The peer contenders of bench/layers.py: PyTorch eager, torch.compile, and PyG 2.8 layers.

Each contender is a factory `make(case, shared) -> Runner`. A Runner offers
forward() (inference, no autograd) and train_step() (forward, the loss and
its gradient by `case.loss_grad`, the same function for every contender:
bench/train_loss.py; then the backward into every input and weight), plus
check(out) for correctness. Raise Skip to record a reasoned skip.
`contenders_for(model, hector_libs)` lists a model's contenders in table
order, one Hector contender per library directory. Options used for the
PyG layers, and where their math still differs from BRIEF.md section 4,
are in docs/benchmarks-peers.md; keep the two in step.
"""

from __future__ import annotations

import numpy as np
import torch

from reference import PARAM_NAMES
from reference import models_torch as mt
from hector_step import HectorStep

try:
    import torch_geometric
    from torch_geometric.nn import FastRGCNConv, HGTConv, RGATConv, RGCNConv
except ImportError:  # the CPU machines here have no PyG
    torch_geometric = None


class Skip(Exception):
    """A contender that cannot run this case, with the reason."""


class Shared:
    """Per-dataset device structures, built once and shared by the contenders that use them.

    bytes_of[key] is the device memory the structure took, charged to each user's footprint.
    """

    def __init__(self, graph, device):
        self.graph, self.device = graph, device
        self._cache, self.bytes_of = {}, {}

    def get(self, key, build):
        if key not in self._cache:
            before = _allocated(self.device)
            self._cache[key] = build()
            self.bytes_of[key] = _allocated(self.device) - before
        return self._cache[key]

    def clear(self):
        self._cache.clear()


class Runner:
    compiles = False
    own_keys = ()  # Shared entries this runner uses

    def __init__(self, case, shared):
        self.case, self.shared = case, shared

    def own_bytes(self):
        return sum(self.shared.bytes_of.get(k, 0) for k in self.own_keys)

    def check(self, out):
        """Largest |out - reference| / max(1, max |reference|), or None without a reference."""
        ref = self.case.ref_out
        if ref is None or out is None:
            return None
        return rel_err(out, ref)


def backward_from(out, case):
    """The shared training tail: loss and d_out by case.loss_grad on the detached output,
    then autograd's backward from d_out into every leaf. Returns the loss."""
    loss, d_out = case.loss_grad(out.detach(), case.labels)
    out.backward(d_out)
    return loss


def rel_err(out, ref):
    return float((out.float() - ref).abs().max() / max(1.0, float(ref.abs().max())))


# ------------------------------------------------------------ torch reference
class ReferenceRunner(Runner):
    """The differentiable torch reference (test/reference/models_torch.py), eager or compiled."""

    own_keys = ("torch_graph",)

    def __init__(self, case, shared, compile_it=False):
        super().__init__(case, shared)
        tg = shared.get("torch_graph", lambda: mt.TorchGraph(case.graph, case.device, float_dtype=torch.float32))
        names, model, heads = PARAM_NAMES[case.model], case.model, case.heads

        def fwd(h, *ws):
            return mt.forward(model, tg, h, dict(zip(names, ws)), heads=heads)

        self.compiles = compile_it
        if compile_it:
            if not hasattr(torch, "compile"):
                raise Skip(f"torch.compile needs torch >= 2.0 (this is {torch.__version__})")
            # The layer alone: the loss is case.loss_grad, compiled on its own
            # like every contender's (bench/train_loss.py says why).
            fwd = torch.compile(fwd, dynamic=False)
        self.fwd = fwd
        self.inputs = [case.h] + [case.params[k] for k in names]
        if case.mode == "training":
            self.inputs = [x.detach().clone().requires_grad_() for x in self.inputs]

    def forward(self):
        with torch.no_grad():
            return self.fwd(*self.inputs)

    def train_step(self):
        for x in self.inputs:
            x.grad = None
        return backward_from(self.fwd(*self.inputs), self.case)


def eager(case, shared):
    return ReferenceRunner(case, shared)


def compiled(case, shared):
    return ReferenceRunner(case, shared, compile_it=True)


# ------------------------------------------------------------------ PyG layers
def _need_pyg():
    if torch_geometric is None:
        raise Skip("torch_geometric is not installed")


def _homo_graph(case, shared):
    g = case.graph

    def build():
        ei = torch.stack([torch.as_tensor(g.src, dtype=torch.long), torch.as_tensor(g.dst, dtype=torch.long)])
        return ei.to(case.device), torch.as_tensor(g.etype, dtype=torch.long, device=case.device)

    return shared.get("pyg_homo", build)


class HomoRunner(Runner):
    """A PyG layer called as conv(x, edge_index, edge_type) on the homogeneous view."""

    own_keys = ("pyg_homo", "module")

    def __init__(self, case, shared, conv):
        super().__init__(case, shared)
        self.edge_index, self.edge_type = _homo_graph(case, shared)
        before = _allocated(case.device)
        self.conv = conv.to(case.device)
        shared.bytes_of["module"] = _allocated(case.device) - before
        self.h = case.h.detach().clone().requires_grad_(case.mode == "training")

    def forward(self):
        with torch.no_grad():
            return self.conv(self.h, self.edge_index, self.edge_type)

    def train_step(self):
        self.h.grad = None
        self.conv.zero_grad(set_to_none=True)
        return backward_from(self.conv(self.h, self.edge_index, self.edge_type), self.case)


def _rgcn_conv(cls, case, shared):
    _need_pyg()
    p = case.params
    din, dout = p["W"].shape[1], p["W"].shape[2]
    # aggr="mean" per relation is c_e of BRIEF.md; root weight = W0; no bias.
    conv = cls(din, dout, num_relations=p["W"].shape[0], aggr="mean", root_weight=True, bias=False)
    with torch.no_grad():
        conv.weight.copy_(p["W"])
        conv.root.copy_(p["W0"])
    return HomoRunner(case, shared, conv)


def pyg_rgcn(case, shared):
    return _rgcn_conv(RGCNConv if torch_geometric else None, case, shared)


def pyg_fast_rgcn(case, shared):
    return _rgcn_conv(FastRGCNConv if torch_geometric else None, case, shared)


def pyg_rgat(case, shared):
    """RGATConv, additive self-attention across relations, with q/k set block-diagonally per head.

    PyG shares q (destination side, our b) and k (source side, our a) across
    relations, so it computes BRIEF's RGAT with a_r = a_0, b_r = b_0; check()
    compares against the reference with those tied vectors.
    """
    _need_pyg()
    p, heads = case.params, case.heads
    R, din, dout = p["W"].shape
    dh = dout // heads
    conv = RGATConv(din, dh, num_relations=R, heads=heads, concat=True, bias=False, dropout=0.0,
                    negative_slope=0.2, attention_mechanism="across-relation",
                    attention_mode="additive-self-attention")
    block = torch.zeros(dout, heads, device=p["W"].device)
    for k in range(heads):
        block[k * dh:(k + 1) * dh, k] = 1.0
    with torch.no_grad():
        conv.weight.copy_(p["W"])
        conv.k.copy_(block * p["a"][0][:, None])
        conv.q.copy_(block * p["b"][0][:, None])
    runner = HomoRunner(case, shared, conv)

    def check(out):
        tied = dict(p, a=p["a"][:1].expand_as(p["a"]), b=p["b"][:1].expand_as(p["b"]))
        tg = shared.get("torch_graph", lambda: mt.TorchGraph(case.graph, case.device, float_dtype=torch.float32))
        with torch.no_grad():
            return rel_err(out, mt.forward("rgat", tg, case.h, tied, heads=heads))

    runner.check = check
    return runner


class HGTRunner(Runner):
    """PyG HGTConv on the typed view: x_dict per node type, edge_index_dict per edge type."""

    own_keys = ("pyg_hetero", "module")

    def __init__(self, case, shared):
        _need_pyg()
        super().__init__(case, shared)
        g, dev = case.graph, case.device
        self.ntypes, etypes, ids, eidx, self.lab = shared.get("pyg_hetero", lambda: _hetero_view(g, case.labels, dev))
        d = case.h.shape[1]
        before = _allocated(dev)
        # group="sum" is the only aggregation in 2.8; PyG's own initialisation (different math: see docs).
        self.conv = HGTConv(d, d, (self.ntypes, etypes), heads=case.heads).to(dev)
        shared.bytes_of["module"] = _allocated(dev) - before
        train = case.mode == "training"
        self.x = {t: case.h[i].detach().clone().requires_grad_(train) for t, i in zip(self.ntypes, ids)}
        self.edges = eidx

    def forward(self):
        with torch.no_grad():
            return self.conv(self.x, self.edges)

    def train_step(self):
        for x in self.x.values():
            x.grad = None
        self.conv.zero_grad(set_to_none=True)
        out = self.conv(self.x, self.edges)
        have = [t for t in self.ntypes if out.get(t) is not None]
        logits = torch.cat([out[t] for t in have])
        labels = torch.cat([self.lab[t] for t in have])
        loss, d_logits = self.case.loss_grad(logits.detach(), labels)
        logits.backward(d_logits)
        return loss

    def check(self, out):
        return None  # different math (GELU, gated skip, biases): no exact reference


def _hetero_view(g, labels, device):
    """Node types 'n<t>', edge types ('n<s>', 'r<r>', 'n<d>') with edges, local ids per node type."""
    T, R = g.num_node_types, g.num_edge_types
    ntypes = [f"n{t}" for t in range(T)]
    ids = [np.flatnonzero(g.node_type == t) for t in range(T)]
    local = np.empty(g.num_nodes, np.int64)
    for i in ids:
        local[i] = np.arange(i.size)
    order = np.argsort(g.etype, kind="stable")
    bounds = np.searchsorted(g.etype[order], np.arange(R + 1))
    etypes, eidx = [], {}
    for r in range(R):
        sel = order[bounds[r]:bounds[r + 1]]
        if sel.size == 0:
            continue
        s, d = g.edge_type_endpoints[r]
        key = (f"n{s}", f"r{r}", f"n{d}")
        etypes.append(key)
        eidx[key] = torch.as_tensor(np.stack([local[g.src[sel]], local[g.dst[sel]]]), device=device)
    ids_t = [torch.as_tensor(i, device=device) for i in ids]
    lab = {t: labels[i] for t, i in zip(ntypes, ids_t)}
    return ntypes, etypes, ids_t, eidx, lab


def pyg_hgt(case, shared):
    return HGTRunner(case, shared)


# ------------------------------------------------------------------ Hector
# Libraries built here by test/gpu/build_models.sh (hectorc --target=cuda),
# since the GPU machines have no compiler: bench/layers.py --hector-libs.
HECTOR = "hector"


def is_hector(name: str) -> bool:
    """Hector's contenders: 'hector', or 'hector-<name>' for one of several library dirs."""
    return name == HECTOR or name.startswith(HECTOR + "-")


def hector_name(label: str) -> str:
    return HECTOR if label in ("", HECTOR) else f"{HECTOR}-{label}"


class HectorRunner(Runner):
    """The layer compiled by `hectorc --training` (lib<model>_<width>_<heads>.so in
    lib_dir), fed with the graph arrays built on the device (hector.graph.preprocess);
    what a call and a training step are: bench/hector_step.py."""

    own_keys = ("hector_graph",)

    def __init__(self, case, shared, lib_dir, missing=None):
        super().__init__(case, shared)
        import os

        from hector import compiled as hector_compiled, graph as hector_graph
        if missing:
            raise Skip(missing)
        path = os.path.join(lib_dir or "", f"lib{case.model}_{case.width}_{case.heads}.so")
        if not lib_dir or not os.path.exists(path):
            raise Skip(f"no compiled library {path} (bench/layers.py --hector-libs)")
        self.library = hector_compiled.load(path)
        if case.mode == "training" and not self.library.training_entries(case.model):
            raise Skip(f"{path} has no training entry points (build it with --training)")
        g = case.graph
        pre = shared.get("hector_graph", lambda: hector_graph.preprocess(
            g.node_type, g.src, g.dst, g.etype, g.num_node_types, g.num_edge_types,
            device=case.device))
        self.step = HectorStep(self.library, case.model, pre, case.h, case.params,
                               case.labels, case.mode, loss_grad=case.loss_grad)
        self.library.peak_temporary_bytes(reset=True)

    def forward(self):
        return self.step.forward()

    def train_step(self):
        return self.step.train_step()

    def extra_peak_bytes(self):
        """Temporaries the library allocates outside torch (none when they
        come from torch's caching allocator, whose peak counts them)."""
        if self.library.temporaries_in_torch:
            return 0
        return self.library.peak_temporary_bytes()


def hector(lib_dir, missing=None):
    """The contender factory of one library directory; `missing` makes it a reasoned skip."""
    def make(case, shared):
        return HectorRunner(case, shared, lib_dir, missing)
    return make


# The peers per model, in table order. torch-eager runs first: its output is
# the reference the others are checked against.
PEERS = {
    "rgcn": {"torch-eager": eager, "torch-compile": compiled,
             "pyg-RGCNConv": pyg_rgcn, "pyg-FastRGCNConv": pyg_fast_rgcn},
    "rgat": {"torch-eager": eager, "torch-compile": compiled, "pyg-RGATConv": pyg_rgat},
    "hgt": {"torch-eager": eager, "torch-compile": compiled, "pyg-HGTConv": pyg_hgt},
}


def contenders_for(model, hector_libs=None, hector_missing=None):
    """{name: factory} in table order: torch-eager, Hector's, then the other peers.

    hector_libs maps a label to a library directory ('' or 'hector' gives the
    contender 'hector', any other label 'hector-<label>'); with none, one
    'hector' contender that skips. hector_missing, when set, is the reason
    every Hector contender skips (e.g. no TF32 libraries at --precision=tf32).
    """
    libs = dict(hector_libs or {}) or {HECTOR: None}
    out = {}
    for name, make in PEERS[model].items():
        out[name] = make
        if name == "torch-eager":
            for label, lib_dir in libs.items():
                out[hector_name(label)] = hector(lib_dir, hector_missing)
    return out


def _allocated(device):
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else 0

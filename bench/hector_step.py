"""One Hector library's inference call or training step, as the benchmarks
(bench/contenders.py, bench/ablation.py, bench/softmax.py, bench/profile.py)
time it.

Inference calls the `<model>` entry point. A training step calls
`<model>_fwd` (result and saved tensors), then the training loss and its
gradient d_out (`loss_grad(out, labels)`: bench/train_loss.py, the same
function every contender of bench/layers.py uses; eager by default), then
`<model>_bwd` (the gradients of the input and of every weight). The
caller-allocated outputs of exactly the entries the mode calls are made
once, on h's device. With `annotate=True` every entry call is a
torch.profiler range named `hector::<entry>` (bench/profile.py)."""

from __future__ import annotations

import contextlib

import torch

import train_loss


def entry_shape(arg, sizes: dict) -> list:
    """The shape of a manifest argument given the graph's sizes (N, E, P, R, T)."""
    dims = []
    for dim, fixed in zip(arg.shape, arg.sizes):
        if fixed is not None:
            dims.append(fixed)
        elif isinstance(dim, int):
            dims.append(dim)
        else:
            name, _, plus = dim.partition("+")
            dims.append(sizes[name] + int(plus or 0))
    return dims


def graph_sizes(pre) -> dict:
    return {k: int(getattr(pre, k)) for k in ("N", "E", "P", "R", "T")}


class HectorStep:
    def __init__(self, lib, model, pre, h, params, labels, mode, loss_grad=None, annotate=False):
        self.labels = labels
        self.loss_grad = loss_grad or train_loss.nll_loss_and_grad
        self.annotate = annotate
        self.entry = lib[f"{model}_fwd" if mode == "training" else model]
        self.backward = lib[f"{model}_bwd"] if mode == "training" else None
        sizes = graph_sizes(pre)
        values = dict(pre.arrays(), h=h, **params)
        for entry in filter(None, (self.entry, self.backward)):
            for a in entry.arguments:
                if a.is_output and a.name not in values:
                    values[a.name] = torch.empty(entry_shape(a, sizes),
                                                 dtype=getattr(torch, a.dtype), device=h.device)
        self.values = values
        self.out = values["result0"]
        self.args = {a.name: values[a.name] for a in self.entry.arguments}
        self.first = True

    def _range(self, entry):
        if not self.annotate:
            return contextlib.nullcontext()
        return torch.autograd.profiler.record_function(f"hector::{entry.name}")

    def forward(self):
        # The first call waits and raises on a launch error; later ones queue
        # like the other contenders, so CUDA events time the kernels alone.
        with self._range(self.entry):
            # Arrays straight from hector.graph.preprocess: checked on the
            # first call only, as hector.nn layers skip the check.
            self.entry(**self.args, synchronize=self.first, check_indices=self.first)
        self.first = False
        return self.out

    def train_step(self):
        self.forward()
        loss, d_out = self.loss_grad(self.out, self.labels)
        self.values["d_result0"] = d_out.contiguous()  # the entry reads it row-major
        with self._range(self.backward):
            self.backward(**{a.name: self.values[a.name] for a in self.backward.arguments},
                          synchronize=False, check_indices=False)
        return loss

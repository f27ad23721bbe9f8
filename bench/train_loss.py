"""The training-step loss of the layer benchmarks, one piece of code for every contender.

BRIEF.md section 4: a training step computes the mean negative log-likelihood
of `log_softmax(out)` against fixed labels, then the gradients of every input
and weight. Every contender of bench/layers.py and bench/profile.py (Hector,
the torch references eager and compiled, the PyG layers) runs the same step:

    out = <the contender's forward>            # with autograd where it has one
    loss, d_out = loss_grad(out.detach(), labels)
    <the contender's backward from d_out>      # out.backward(d_out), or <model>_bwd

`loss_grad` is `nll_loss_and_grad` below, either `torch.compile`d
(`--loss=compiled`, the default: one fused kernel or two) or run eagerly
(`--loss=eager`). It writes the gradient in closed form, so it needs no
autograd of its own and compiles into one graph:

    loss  = -mean_i logp[i, y_i],  logp = log_softmax(out)
    d_out = (softmax(out) - onehot(y)) / n

which is exactly what autograd gives for F.nll_loss(F.log_softmax(out), y):
nll's backward puts -1/n at each label, and log_softmax's backward maps a
gradient g to g - softmax * sum(g) = (softmax - onehot) / n.

Why the loss is not fused into torch.compile's graph of the layer: Hector's
generated backward starts from d_out and cannot absorb the loss, so fusing it
for torch.compile alone gives that contender work the others cannot skip
(issue 15: an eager loss cost Hector 2.2 ms a step at am shape against about
0.15 ms fused). The price for torch.compile is one separately compiled graph
where it could have had the loss folded into its last forward kernel: one
extra read of `out` (N x width floats).
"""

from __future__ import annotations

import torch

KINDS = ("compiled", "eager")


def nll_loss_and_grad(out: torch.Tensor, labels: torch.Tensor):
    """(mean NLL of log_softmax(out) against labels, its gradient with respect to out)."""
    n = out.shape[0]
    logp = torch.log_softmax(out, dim=1)
    loss = -logp.gather(1, labels[:, None]).sum() / n
    classes = torch.arange(out.shape[1], device=out.device)
    onehot = (classes[None, :] == labels[:, None]).to(out.dtype)
    return loss, (torch.exp(logp) - onehot) / n


def compile_available() -> bool:
    return hasattr(torch, "compile") and hasattr(torch, "_dynamo")


def make(kind: str):
    """The loss function for --loss=KIND, and the kind that actually runs.

    'compiled' falls back to eager where torch.compile does not exist
    (torch < 2.0, the CPU machines here); the returned kind says so, and
    the benchmarks record it.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown loss kind {kind!r} (known: {', '.join(KINDS)})")
    if kind == "compiled":
        if not compile_available():
            return nll_loss_and_grad, f"eager (torch.compile unavailable in torch {torch.__version__})"
        return torch.compile(nll_loss_and_grad, dynamic=False), "compiled"
    return nll_loss_and_grad, "eager"


def reset_compiler():
    """Fresh torch.compile caches, so no recompile limit carries over from earlier cases
    (each case has new shapes). Call before a case's loss function is made."""
    if compile_available():
        torch._dynamo.reset()

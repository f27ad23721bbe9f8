"""Attention dropout (hgraph.dropout) on a GPU: the CUDA kernels draw the
mask that the CPU draws and that the specification gives.

Built here (the GPU machines have no hectorc):

    python3 test/gpu/test_dropout_gpu.py --build build/gpu-dropout

then, on the GPU machine,

    HECTOR_DROPOUT_GPU_DIR=build/gpu-dropout python3 -m pytest -q test/gpu/test_dropout_gpu.py

checks a standalone `hgraph.dropout` (values and gradient, bit for bit
against the NumPy hash of test/python/test_rgat_dropout.py, which is
written from the op's specification) and RGATConv(dropout=p) in training
mode on CUDA tensors (output and the gradients of x and every parameter
against the float64 reference with the specified mask), for heads 1 and 4.
Not collected by CI (CI runs test/python only).
"""

from __future__ import annotations

import os
import sys

import gpu_paths  # noqa: E402,F401  (sets the import paths)

DROP_CASES = [(4, 4, 0.3), (1, 1, 0.3), (6, 2, 1.0)]   # width, heads, p
RGAT_CASES = [(1, 4, 0.3), (4, 2, 0.3), (4, 3, 1.0)]   # heads, channels, p
IN, R = 6, 3


def drop_name(width, heads, p) -> str:
    return f"libdrop_{width}_{heads}_{int(p * 100)}.so"


def build(directory: str) -> None:
    from hector import aot
    import hector.nn as hnn
    from hectorc_support import build as hectorc_build
    from test_rgat_dropout import _drop_ir

    os.makedirs(directory, exist_ok=True)
    for width, heads, p in DROP_CASES:
        path = hectorc_build(directory, _drop_ir(width, heads, p), "--target=cuda",
                             "--training", name=drop_name(width, heads, p))
        print(f"test_dropout_gpu: {path}")
    specs = sorted({hnn.RGATConv(IN, c, R, heads=h, dropout=p).spec_for(True, True, True)
                    for h, c, p in RGAT_CASES})
    for spec, lib in aot.build(specs, "cuda", training=True,
                               cache_dir=os.path.join(directory, "nn-cache")):
        print(f"test_dropout_gpu: {lib.key}  {spec}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--build":
        build(sys.argv[2])
        sys.exit(0)
    sys.exit(f"usage: {sys.argv[0]} --build DIR   (then run it with pytest on the GPU)")


import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import hector.nn as hnn  # noqa: E402
import hector.nn.rgat as rgat_module  # noqa: E402
from hector import autograd, compiled, graph as hgraph  # noqa: E402
from test_rgat_dropout import (TOL, dropped, keep_mask, randomize, rel_err,  # noqa: E402
                               rgat_graph, rgat_reference)

DIR = os.environ.get("HECTOR_DROPOUT_GPU_DIR")
if not DIR:
    pytest.skip("set HECTOR_DROPOUT_GPU_DIR to a folder built by `python3 test/gpu/"
                "test_dropout_gpu.py --build DIR`", allow_module_level=True)
DEVICE = torch.device("cuda")


@pytest.mark.parametrize("width,heads,p", DROP_CASES)
@pytest.mark.parametrize("seed", [0, 12345, -7, 2**63 - 1])
def test_dropout_mask_on_gpu(width, heads, p, seed):
    lib = compiled.load(os.path.join(DIR, drop_name(width, heads, p)))
    rng = np.random.default_rng(seed % 1000)
    n, e = 500, 20_000
    src, dst, etype = rng.integers(0, n, e), rng.integers(0, n, e), rng.integers(0, R, e)
    pre = hgraph.preprocess(np.zeros(n, dtype=np.int64), src, dst, etype, 1, R, device=DEVICE)
    perm = pre.edge_perm.long()
    x_user = torch.randn(e, width, device=DEVICE)
    x = x_user[perm].clone().requires_grad_()
    (y,) = autograd.run(lib, "drop", pre, x=x,
                        seed=torch.tensor([seed], dtype=torch.int64, device=DEVICE))
    y_user = torch.empty_like(y).index_copy(0, perm, y)
    mask = keep_mask(seed, e, width, p)
    expected = dropped(x_user.double().cpu(), mask, p)
    assert torch.allclose(y_user.double().cpu(), expected, rtol=1e-6, atol=0)
    cot = torch.randn(y.shape, device=DEVICE)
    (y * cot).sum().backward()
    grad_user = torch.empty_like(x.grad).index_copy(0, perm, x.grad)
    cot_user = torch.empty_like(cot).index_copy(0, perm, cot)
    assert torch.allclose(grad_user.double().cpu(), dropped(cot_user.double().cpu(), mask, p),
                          rtol=1e-6, atol=0)


@pytest.mark.parametrize("heads,channels,drop", RGAT_CASES)
def test_rgat_dropout_on_gpu(monkeypatch, heads, channels, drop):
    seed = 0x5DEECE66D * heads + channels
    monkeypatch.setattr(rgat_module, "draw_seed",
                        lambda device: torch.tensor([seed], dtype=torch.int64, device=device))
    torch.manual_seed(heads * 10 + channels)
    conv = hnn.RGATConv(IN, channels, R, heads=heads, dropout=drop)
    randomize(conv, heads + channels)
    conv = conv.to(DEVICE)
    conv.cache_dir, conv.compiler = os.path.join(DIR, "nn-cache"), False  # load by key only
    n, edge_index, edge_type = rgat_graph(heads * 7 + channels, n=300, e=3_000)
    x = torch.randn(n, IN, device=DEVICE, requires_grad=True)
    out, (_, alpha) = conv(x, edge_index.to(DEVICE), edge_type.to(DEVICE),
                           return_attention_weights=True)
    mask = keep_mask(seed, edge_index.size(1), heads, drop)
    p = {k: v.detach().double().cpu().requires_grad_() for k, v in conv.named_parameters()}
    xr = x.detach().double().cpu().requires_grad_()
    ref, ref_alpha = rgat_reference(p, xr, edge_index, edge_type, heads=heads,
                                    channels=channels, mask=mask, drop=drop)
    assert rel_err(out.cpu(), ref) < TOL
    assert rel_err(alpha.cpu(), ref_alpha) < TOL
    # α is in the loss too (as in the CPU test): with p = 1 the output no
    # longer depends on the attention weights, whose gradient then comes
    # through α alone.
    g = torch.Generator().manual_seed(9)
    cot = torch.randn(out.shape, generator=g)
    acot = torch.randn(alpha.shape, generator=g)
    ((out * cot.to(DEVICE)).sum() + (alpha * acot.to(DEVICE)).sum()).backward()
    ((ref * cot.double()).sum() + (ref_alpha * acot.double()).sum()).backward()
    assert rel_err(x.grad.cpu(), xr.grad) < TOL
    for name, q in conv.named_parameters():
        assert rel_err(q.grad.cpu(), p[name].grad) < TOL, name

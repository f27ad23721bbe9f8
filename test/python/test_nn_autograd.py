"""hector.autograd against PyTorch's own autograd, on a hand-written library
that follows the training contract of docs/compilation.md exactly:

    f(edge_src, edge_dst, h [N, 4], W [4, 4]) -> result0 [N, 4], result1 [N, 4]
        result0[t] = Σ_{e=(s→t)} tanh(h_s · W),  result1 = 2 h
    f_fwd: the same arguments, then saved0 [E, 4] = tanh(h_s · W) per edge
    f_bwd: edge_src, edge_dst, h, W, saved0, d_result0, d_result1 -> d_h, d_W

It is C compiled here with cc (no hectorc needed), so the wrapper's plumbing
(saved tensors, cotangents by name, gradients by name, which gradients are
wanted) is tested whatever hectorc's autodiff can do. The compiled models'
gradients are tested in test_nn_cpu.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import autograd, compiled, graph as hgraph  # noqa: E402

SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>
typedef struct { int32_t *allocated, *aligned; int64_t offset, size[1], stride[1]; } I1;
typedef struct { float *allocated, *aligned; int64_t offset, size[2], stride[2]; } F2;

static void forward(I1 *src, I1 *dst, F2 *h, F2 *W, F2 *out, F2 *twice, F2 *saved) {
  int64_t n = h->size[0], e = src->size[0];
  memset(out->aligned, 0, sizeof(float) * n * 4);
  for (int64_t i = 0; i < n * 4; ++i) twice->aligned[i] = 2 * h->aligned[i];
  for (int64_t k = 0; k < e; ++k) {
    int32_t s = src->aligned[k], t = dst->aligned[k];
    for (int j = 0; j < 4; ++j) {
      float m = 0;
      for (int i = 0; i < 4; ++i) m += h->aligned[s * 4 + i] * W->aligned[i * 4 + j];
      float y = tanhf(m);
      out->aligned[t * 4 + j] += y;
      if (saved) saved->aligned[k * 4 + j] = y;
    }
  }
}

void _mlir_ciface_f(I1 *src, I1 *dst, F2 *h, F2 *W, F2 *out, F2 *twice) {
  forward(src, dst, h, W, out, twice, 0);
}
void _mlir_ciface_f_fwd(I1 *src, I1 *dst, F2 *h, F2 *W, F2 *out, F2 *twice, F2 *saved) {
  forward(src, dst, h, W, out, twice, saved);
}
void _mlir_ciface_f_bwd(I1 *src, I1 *dst, F2 *h, F2 *W, F2 *saved, F2 *dout, F2 *dtwice,
                        F2 *dh, F2 *dW) {
  int64_t n = h->size[0], e = src->size[0];
  for (int64_t i = 0; i < n * 4; ++i) dh->aligned[i] = 2 * dtwice->aligned[i];
  memset(dW->aligned, 0, sizeof(float) * 16);
  for (int64_t k = 0; k < e; ++k) {
    int32_t s = src->aligned[k], t = dst->aligned[k];
    for (int j = 0; j < 4; ++j) {
      float y = saved->aligned[k * 4 + j];
      float dm = dout->aligned[t * 4 + j] * (1 - y * y);
      for (int i = 0; i < 4; ++i) {
        dW->aligned[i * 4 + j] += h->aligned[s * 4 + i] * dm;
        dh->aligned[s * 4 + i] += dm * W->aligned[i * 4 + j];
      }
    }
  }
}
"""


def _arg(role, name, shape, dtype="float32"):
    return {"role": role, "name": name, "dtype": dtype, "rank": len(shape), "shape": shape,
            "sizes": [d if isinstance(d, int) else None for d in shape]}


GRAPH = [_arg("graph", "edge_src", ["E"], "int32"), _arg("graph", "edge_dst", ["E"], "int32")]
PARAMS = [_arg("input", "h", ["N", 4]), _arg("weight", "W", [4, 4])]
RESULTS = [_arg("output", "result0", ["N", 4]), _arg("output", "result1", ["N", 4])]


def manifest(entries):
    return {"format": "hector-library-manifest", "format_version": 1, "target": "cpu",
            "library": "libmock.so", "entries": entries}


def entry(name, kind, arguments):
    return {"name": name, "symbol": f"_mlir_ciface_{name}", "kind": kind, "primal": "f",
            "preprocessing": ["edge_src", "edge_dst"], "arguments": arguments}


TRAINING_ENTRIES = [
    entry("f", "inference", GRAPH + PARAMS + RESULTS),
    entry("f_fwd", "training_forward",
          GRAPH + PARAMS + RESULTS + [_arg("saved", "saved0", ["E", 4])]),
    entry("f_bwd", "training_backward",
          GRAPH + PARAMS + [_arg("saved", "saved0", ["E", 4]),
                            _arg("grad_output", "d_result0", ["N", 4]),
                            _arg("grad_output", "d_result1", ["N", 4]),
                            _arg("grad", "d_h", ["N", 4]), _arg("grad", "d_W", [4, 4])]),
]


@pytest.fixture(scope="module")
def mock_object(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc) for the mock library")
    directory = tmp_path_factory.mktemp("mock")
    (directory / "mock.c").write_text(SOURCE)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(directory / "libmock.so"),
                    str(directory / "mock.c"), "-lm"], check=True)
    return directory


def load_mock(directory, entries, name):
    lib = directory / name
    if not lib.exists():
        shutil.copy(directory / "libmock.so", lib)
    with open(str(lib) + ".json", "w") as f:
        json.dump(manifest(entries), f)
    return compiled.load(lib)


@pytest.fixture(scope="module")
def mock(mock_object):
    return load_mock(mock_object, TRAINING_ENTRIES, "libmock_training.so")


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(5)
    n, e = 9, 40
    src = rng.integers(0, n, e)
    dst = np.concatenate([rng.integers(0, n - 2, e - 2), [0, 0]])  # nodes 7, 8: no inputs
    return hgraph.preprocess(np.zeros(n, np.int64), src, dst, np.zeros(e, np.int64), 1, 1)


def reference(pre, h, W):
    src = torch.as_tensor(pre.edge_src.astype(np.int64))
    dst = torch.as_tensor(pre.edge_dst.astype(np.int64))
    out = torch.zeros(pre.N, 4, dtype=h.dtype).index_add(0, dst, torch.tanh(h[src] @ W))
    return out, 2 * h


def leaves(seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(9, 4, generator=g).requires_grad_(),
            torch.randn(4, 4, generator=g).requires_grad_())


def test_manifest_kinds(mock):
    assert mock.f.kind == "inference" and mock.f_fwd.kind == "training_forward"
    assert mock.f_bwd.primal == "f"
    fwd, bwd = mock.training_entries("f")
    assert (fwd.name, bwd.name) == ("f_fwd", "f_bwd")
    assert [a.is_output for a in fwd.arguments][-3:] == [True, True, True]   # saved0: output
    assert [a.is_output for a in bwd.arguments][4:] == [False] * 3 + [True] * 2  # saved0: input


def test_forward_and_backward_match_torch(mock, graph):
    h, W = leaves()
    out, twice = autograd.run(mock, "f", graph, h=h, W=W)
    h_ref, W_ref = (t.detach().double().requires_grad_() for t in (h, W))
    out_ref, twice_ref = reference(graph, h_ref, W_ref)
    assert torch.allclose(out.double(), out_ref, atol=1e-5)
    assert torch.equal(twice.double(), twice_ref)
    assert out.grad_fn is not None
    g0, g1 = torch.randn(9, 4, dtype=torch.float64), torch.randn(9, 4, dtype=torch.float64)
    ((out * g0.float()).sum() + (twice * g1.float()).sum()).backward()
    ((out_ref * g0).sum() + (twice_ref * g1).sum()).backward()
    assert torch.allclose(h.grad.double(), h_ref.grad, atol=1e-5)
    assert torch.allclose(W.grad.double(), W_ref.grad, atol=1e-5)


def test_unused_result_gets_zero_cotangent(mock, graph):
    h, W = leaves(1)
    out, _ = autograd.run(mock, "f", graph, h=h, W=W)
    out.sum().backward()
    h_ref, W_ref = (t.detach().double().requires_grad_() for t in (h, W))
    reference(graph, h_ref, W_ref)[0].sum().backward()
    assert torch.allclose(h.grad.double(), h_ref.grad, atol=1e-5)
    assert torch.allclose(W.grad.double(), W_ref.grad, atol=1e-5)


def test_only_wanted_gradients_are_returned(mock, graph):
    h, W = leaves(2)
    h.requires_grad_(False)
    out, _ = autograd.run(mock, "f", graph, h=h, W=W)
    out.sum().backward()
    assert h.grad is None and W.grad is not None


@pytest.mark.filterwarnings("ignore:Input #.* is not a double precision")
def test_gradcheck(mock, graph):
    # Finite differences through the library itself (float32, so loose).
    h, W = leaves(3)

    def fn(h, W):
        return autograd.run(mock, "f", graph, h=h, W=W)[0]

    assert torch.autograd.gradcheck(fn, (h, W), eps=1e-2, atol=1e-2, rtol=1e-2)


def test_no_grad_uses_the_inference_entry(mock, graph):
    h, W = leaves(4)
    with torch.no_grad():
        out, _ = autograd.run(mock, "f", graph, h=h, W=W)
    assert out.grad_fn is None
    assert torch.allclose(out.double(), reference(graph, h.detach().double(),
                                                  W.detach().double())[0], atol=1e-5)


def test_inference_library_refuses_gradients(mock_object, graph):
    lib = load_mock(mock_object, TRAINING_ENTRIES[:1], "libmock_inference.so")
    h, W = leaves(5)
    with pytest.raises(autograd.TrainingNotAvailable, match="without training entries"):
        autograd.run(lib, "f", graph, h=h, W=W)
    with torch.no_grad():
        autograd.run(lib, "f", graph, h=h, W=W)


@pytest.mark.parametrize("call,error,message", [
    (lambda lib, g, h, W: autograd.run(lib, "f", g, h=h), TypeError, "missing W"),
    (lambda lib, g, h, W: autograd.run(lib, "f", g, h=h, W=W, X=W), TypeError, "unexpected X"),
    (lambda lib, g, h, W: autograd.run(lib, "f", g, h=h.double(), W=W), TypeError, "float32"),
    (lambda lib, g, h, W: autograd.run(lib, "f_fwd", g, h=h, W=W), ValueError, "give 'f'"),
    (lambda lib, g, h, W: autograd.run(lib, "f", g, h=h[:3], W=W), ValueError, "'h'"),
])
def test_bad_calls(mock, graph, call, error, message):
    h, W = leaves(6)
    with pytest.raises(error, match=message):
        call(mock, graph, h, W)


def test_bad_training_manifests(mock_object):
    missing_bwd = TRAINING_ENTRIES[:2]
    lib = load_mock(mock_object, missing_bwd, "libmock_nobwd.so")
    with pytest.raises(ValueError, match="no training_backward entry"):
        lib.training_entries("f")
    bad = json.loads(json.dumps(TRAINING_ENTRIES))
    bad[0]["arguments"].append(_arg("grad", "d_h", ["N", 4]))
    with pytest.raises(ValueError, match="role 'grad' in an inference entry"):
        load_mock(mock_object, bad, "libmock_badrole.so")
    bad = json.loads(json.dumps(TRAINING_ENTRIES))
    bad[1]["kind"] = "training"
    with pytest.raises(ValueError, match="kind 'training'"):
        load_mock(mock_object, bad, "libmock_badkind.so")


def test_noncontiguous_inputs_are_copied(mock, graph):
    h, W = leaves(7)
    Wt = W.detach().t().requires_grad_()  # a leaf whose value is W, stored transposed
    out, _ = autograd.run(mock, "f", graph, h=h, W=Wt.t())
    out.sum().backward()
    h2, W2 = (t.detach().double().requires_grad_() for t in (h, W))
    reference(graph, h2, W2)[0].sum().backward()
    assert torch.allclose(Wt.grad.t().double(), W2.grad, atol=1e-5)


def test_cpu_library_refuses_other_devices(mock, graph):
    h, W = leaves(8)
    with pytest.raises(ValueError, match="target 'cpu'"):
        autograd.run(mock, "f", graph, h=h.to("meta"), W=W.to("meta"))

"""hector.offload on the CPU: a training step whose saved tensors go to the
runtime's tensor cache (host or disk tier) gives the gradients of the same
step keeping them, bit for bit; tensors saved twice are stored once; small
ones stay; a full host tier keeps tensors in place; the cache is empty once
autograd frees the graph; a graph kept for a second backward reads its
values again."""

import gc

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector.offload import offload  # noqa: E402
from hector.tensor_cache import TensorCache  # noqa: E402

from test_unified_support import runtime_library  # noqa: E402

MIB = 1 << 20


@pytest.fixture(scope="module", autouse=True)
def lib(tmp_path_factory):
    return runtime_library(tmp_path_factory)


def params(seed, n=300, d=48, r=5):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, requires_grad=True)
    w = torch.randn(r, d, d, generator=g, requires_grad=True)
    src = torch.randint(0, n, (4 * n,), generator=g)
    dst = torch.randint(0, n, (4 * n,), generator=g)
    etype = torch.randint(0, r, (4 * n,), generator=g)
    return x, w, src, dst, etype


def step(x, w, src, dst, etype):
    """Two relational layers written with plain torch ops (gathers, batched
    matmuls, index_add, tanh): every op saves something for the backward."""
    h = x
    for _ in range(2):
        msg = torch.bmm(h[src].unsqueeze(1), w[etype]).squeeze(1)
        h = torch.tanh(torch.zeros_like(h).index_add(0, dst, msg) + h * h)
    return (h * h).sum()


def grads(loss, x, w):
    loss.backward()
    out = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    return out


@pytest.mark.parametrize("tier", ["host", "disk"])
def test_offloaded_step_has_the_gradients_of_keep_all(tmp_path, tier):
    x, w, src, dst, etype = params(0)
    want = grads(step(x, w, src, dst, etype), x, w)
    with TensorCache(256 * MIB, str(tmp_path)) as cache:
        with offload(cache, tier=tier, min_bytes=4096):
            loss = step(x, w, src, dst, etype)
        s = cache.stats()
        assert s["values"] >= 6 and s["host_bytes"] + s["disk_bytes"] > 0
        got = grads(loss, x, w)
        for a, b in zip(got, want):
            assert torch.equal(a, b)
        if tier == "disk":
            assert cache.stats()["bytes_written"] > 0
        del loss
        gc.collect()
        assert cache.stats()["values"] == 0  # released with the graph


def test_a_tensor_saved_twice_is_stored_once_and_small_ones_stay(tmp_path):
    x = torch.randn(512, 64, requires_grad=True)
    small = torch.randn(8, requires_grad=True)
    with TensorCache(64 * MIB) as cache:
        with offload(cache, min_bytes=1024):
            y = (x * x).sum() + (small * small).sum()  # mul saves each operand: x twice
        s = cache.stats()
        assert s["values"] == 1 and s["deduplicated"] == 0  # one entry, packed once
        y.backward()
        assert torch.equal(x.grad, 2 * x.detach()) and torch.equal(small.grad, 2 * small.detach())


def test_a_full_host_tier_keeps_tensors_in_place():
    x = torch.randn(256, 256, requires_grad=True)
    with TensorCache(64 * 1024) as cache:  # smaller than one saved tensor
        with offload(cache, min_bytes=1024):
            y = torch.tanh(x @ x).sum()
        assert cache.stats()["values"] == 0
        y.backward()
    expected = torch.autograd.grad(torch.tanh(x @ x).sum(), x)[0]
    assert torch.equal(x.grad, expected)


def test_a_graph_kept_for_a_second_backward_reads_its_values_again(tmp_path):
    x, w, src, dst, etype = params(1, n=100)
    want = grads(step(x, w, src, dst, etype), x, w)
    with TensorCache(64 * MIB, str(tmp_path), checksum=True) as cache:
        with offload(cache, tier="disk", min_bytes=1024):
            loss = step(x, w, src, dst, etype)
        loss.backward(retain_graph=True)
        first = (x.grad.clone(), w.grad.clone())
        x.grad = w.grad = None
        second = grads(loss, x, w)
        for a, b, c in zip(first, second, want):
            assert torch.equal(a, c) and torch.equal(b, c)
        assert cache.stats()["checksum_failures"] == 0


def test_typed_and_viewed_tensors_come_back_equal():
    base = torch.randn(40, 30, dtype=torch.float64)
    x = base[:, 5:25].clone().requires_grad_(True)  # and a transposed view below
    idx = torch.arange(0, 40, 3)
    with TensorCache(16 * MIB) as cache:
        with offload(cache, min_bytes=64):
            y = (x.t() @ x)[idx % 20].exp().sum() + x[idx].pow(3).sum()
        y.backward()
    expected = torch.autograd.grad(((x.t() @ x)[idx % 20].exp().sum() + x[idx].pow(3).sum()), x)[0]
    assert torch.equal(x.grad, expected)
    assert np.isfinite(x.grad.numpy()).all()


def test_contexts_sharing_a_cache_keep_their_values_apart(tmp_path):
    """Two steps offloaded through one cache, both graphs alive at once."""
    a, b = params(2, n=120), params(3, n=120)
    want_a, want_b = grads(step(*a), a[0], a[1]), grads(step(*b), b[0], b[1])
    with TensorCache(64 * MIB, str(tmp_path)) as cache:
        with offload(cache, tier="disk", min_bytes=1024):
            loss_a = step(*a)
        with offload(cache, tier="host", min_bytes=1024):
            loss_b = step(*b)
        for got, want in ((grads(loss_b, b[0], b[1]), want_b), (grads(loss_a, a[0], a[1]), want_a)):
            assert all(torch.equal(g, w) for g, w in zip(got, want))


def test_tensors_saved_and_dropped_one_after_another_keep_their_values():
    """sigmoid saves its result; each y is dropped once saved, so its memory
    may go to the next tensor of the same shape and strides. Saved values are
    told apart by tensor, never by address (an address-keyed first version
    mixed two layers' values up in the keep-all test above)."""
    x = torch.randn(4096, dtype=torch.float64, requires_grad=True)
    with TensorCache(64 * MIB) as cache:
        with offload(cache, min_bytes=64):
            loss = 0
            for k in range(1, 6):
                y = torch.sigmoid(x + 0.5 * k)
                loss = loss + y.sum()
                del y
        assert cache.stats()["values"] == 5
        loss.backward()
    s = [torch.sigmoid(x.detach() + 0.5 * k) for k in range(1, 6)]
    assert torch.allclose(x.grad, sum(v * (1 - v) for v in s), rtol=1e-14, atol=0)


def test_a_pool_reserved_before_the_step_serves_its_saved_tensors(tmp_path, monkeypatch):
    # hector.offload.reserve_pool starts the cache's host pool in the
    # background; the step's saved tensors land in it (here, where nothing is
    # pinned, its pages are faulted in), with the gradients of keep-all.
    import hector.offload as ho

    x, w, src, dst, etype = params(2)
    want = grads(step(x, w, src, dst, etype), x, w)
    with TensorCache(64 * MIB, str(tmp_path), pinned=True) as cache:
        assert ho.reserve_pool(32 * MIB, cache) is cache
        cache.pool_wait()
        with offload(cache, tier="host", min_bytes=4096):
            loss = step(x, w, src, dst, etype)
        got = grads(loss, x, w)
        for a, b in zip(got, want):
            assert torch.equal(a, b)
        p = cache.pool_stats()
        assert p["bytes_ready"] == 32 * MIB and p["puts_pooled"] >= 6 and p["puts_unready"] == 0
    # The process's default cache reserves one from $HECTOR_OFFLOAD_POOL_BYTES.
    monkeypatch.setattr(ho, "_default_cache", None)
    monkeypatch.setenv("HECTOR_OFFLOAD_HOST_BYTES", str(16 * MIB))
    monkeypatch.setenv("HECTOR_OFFLOAD_POOL_BYTES", str(8 * MIB))
    monkeypatch.setenv("HECTOR_OFFLOAD_DIR", str(tmp_path))
    cache = ho.default_cache()
    try:
        cache.pool_wait()
        assert cache.pool_stats()["bytes"] == 8 * MIB
    finally:
        cache.close()

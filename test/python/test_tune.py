"""hector.tune on the CPU: graph fingerprints, the typed-endpoint check, the
flags of each variant, a timed trial over every variant whose choice is
cached (and found again without a compiler), and the errors.

Timings are only compared with each other inside tune(); no test asserts
how fast anything is.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import compiler, graph as hgraph, models, tune  # noqa: E402
from hectorc_support import hectorc  # noqa: E402
from model_cases import reference, relative_error  # noqa: E402
from reference import params  # noqa: E402

pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")


@pytest.fixture(autouse=True)
def build_dir(monkeypatch):
    """hector.compile uses the hectorc under test."""
    monkeypatch.setenv(compiler.BUILD_DIR_ENV, os.path.dirname(os.path.dirname(hectorc())))


def make_graph(seed=0, typed=False, n=50, e=300, t=3, r=5):
    rng = np.random.default_rng(seed)
    node_type = np.concatenate([np.arange(t), rng.integers(0, t, n - t)])
    etype = rng.integers(0, r, e)
    if typed:  # edge type k joins type k % t to type (k + 1) % t
        by_type = [np.flatnonzero(node_type == k) for k in range(t)]
        src = np.array([rng.choice(by_type[k % t]) for k in etype])
        dst = np.array([rng.choice(by_type[(k + 1) % t]) for k in etype])
    else:
        src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    return {"node_type": node_type, "src": src, "dst": dst, "etype": etype,
            "num_node_types": t, "num_edge_types": r}


def preprocess(g, order=None, device=None):
    order = np.arange(len(g["src"])) if order is None else order
    return hgraph.preprocess(g["node_type"], g["src"][order], g["dst"][order],
                             g["etype"][order], g["num_node_types"], g["num_edge_types"],
                             device=device)


# ---- the graph ------------------------------------------------------------------------

def test_fingerprint_ignores_edge_order_and_sees_every_change():
    g = make_graph()
    base = tune.fingerprint(preprocess(g))
    shuffled = np.random.default_rng(1).permutation(len(g["src"]))
    assert tune.fingerprint(preprocess(g, shuffled)) == base
    # Torch-built arrays (the device preprocessing, here on the CPU) hash alike.
    assert tune.fingerprint(preprocess(g, device="cpu")) == base
    other = dict(g, dst=g["dst"].copy())
    other["dst"][0] = (other["dst"][0] + 1) % 50
    assert tune.fingerprint(preprocess(other)) != base
    retyped = dict(g, node_type=g["node_type"].copy())
    retyped["node_type"][10] = (retyped["node_type"][10] + 1) % 3
    assert tune.fingerprint(preprocess(retyped)) != base
    assert tune.fingerprint(preprocess(dict(g, num_edge_types=6))) != base


def test_typed_endpoints():
    assert tune.typed_endpoints(preprocess(make_graph(typed=True)))
    assert not tune.typed_endpoints(preprocess(make_graph(typed=False)))
    empty = make_graph(e=0)
    assert tune.typed_endpoints(preprocess(empty))


def test_variant_flags():
    typed = preprocess(make_graph(typed=True))
    sizes = f"--graph-sizes=N=50,E=300,P={typed.P},R=5,T=3"
    assert tune.variant_flags(typed, "unopt") == ["--variant=unopt", sizes]
    assert tune.variant_flags(typed, "compact") == ["--variant=compact", sizes]
    assert tune.variant_flags(typed, "both") == ["--variant=both", sizes, "--typed-endpoints"]
    untyped = preprocess(make_graph())
    assert "--typed-endpoints" not in tune.variant_flags(untyped, "reorder")
    with pytest.raises(ValueError, match="variant must be one of"):
        tune.variant_flags(typed, "fast")


# ---- the trial ------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["rgat", "hgt"])
def test_tune_times_every_variant_and_caches_the_choice(tmp_path, model):
    g = make_graph(typed=(model == "hgt"))
    pre = preprocess(g)
    source = models.generate(model, 16)
    result = tune.tune(source, pre, "cpu", repeat=2, cache_dir=tmp_path)
    assert not result.cached
    assert set(result.seconds) == set(tune.VARIANTS)
    assert result.variant == min(result.seconds, key=result.seconds.get)
    assert list(result.flags) == tune.variant_flags(pre, result.variant)
    entry = json.loads((tmp_path / "tune" / (result.key + ".json")).read_text())
    assert entry["variant"] == result.variant and entry["function"] == model

    # Found again by the graph's fingerprint, without timing or compiling.
    shuffled = np.random.default_rng(2).permutation(len(g["src"]))
    again = tune.tune(source, preprocess(g, shuffled), "cpu", cache_dir=tmp_path,
                      compiler=False)
    assert again.cached and again.variant == result.variant and again.key == result.key
    # Another graph is another trial.
    other = tune.tune(source, preprocess(make_graph(seed=5, typed=(model == "hgt"))), "cpu",
                      variants=("unopt", "both"), repeat=1, cache_dir=tmp_path)
    assert not other.cached and other.key != result.key
    # retune times again; every library is in the cache by then.
    redone = tune.tune(source, pre, "cpu", repeat=1, cache_dir=tmp_path, compiler=False,
                       retune=True)
    assert not redone.cached and set(redone.seconds) == set(tune.VARIANTS)


def test_compile_tuned_computes_the_model(tmp_path):
    g = make_graph(seed=3)
    pre = preprocess(g)
    lib = tune.compile_tuned(models.generate("rgat", 16), pre, "cpu", repeat=1,
                             cache_dir=tmp_path)
    h = np.random.default_rng(4).standard_normal((50, 16)).astype(np.float32)
    weights = params.make_params("rgat", g, 16, 16)
    out = np.zeros_like(h)
    values = dict(pre.arrays(), h=h, result0=out, **weights)
    entry = lib["rgat"]
    entry(**{a.name: values[a.name] for a in entry.arguments})
    assert relative_error(out, reference("rgat", g, h, weights, 1)) < 1e-5


def test_prebuild_then_tune_without_a_compiler(tmp_path):
    pre = preprocess(make_graph(seed=6))
    source = models.generate("rgcn", 16)
    libs = tune.prebuild(source, pre, "cpu", cache_dir=tmp_path)
    assert len(libs) == len(tune.VARIANTS)
    result = tune.tune(source, pre, "cpu", repeat=1, cache_dir=tmp_path, compiler=False)
    assert result.variant in tune.VARIANTS


def test_tune_training(tmp_path):
    if not compiler.supports_training(hectorc()):
        pytest.skip("hectorc has no --training")
    pre = preprocess(make_graph(seed=7))
    result = tune.tune(models.generate("rgat", 16), pre, "cpu", training=True, repeat=1,
                       variants=("unopt", "both"), cache_dir=tmp_path)
    assert set(result.seconds) == {"unopt", "both"}
    cached = tune.tune(models.generate("rgat", 16), pre, "cpu", training=True,
                       variants=("unopt", "both"), cache_dir=tmp_path, compiler=False)
    assert cached.cached
    inference = tune.tune(models.generate("rgat", 16), pre, "cpu", repeat=1,
                          variants=("unopt", "both"), cache_dir=tmp_path)
    assert inference.key != result.key


# ---- errors ---------------------------------------------------------------------------

def test_errors(tmp_path):
    g = make_graph()
    pre = preprocess(g)
    source = models.generate("rgcn", 16)
    with pytest.raises(TypeError, match="preprocessed graph"):
        tune.tune(source, g, "cpu", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="variant must be one of"):
        tune.tune(source, pre, "cpu", variants=("unopt", "fast"), cache_dir=tmp_path)
    with pytest.raises(ValueError, match="variants is empty"):
        tune.tune(source, pre, "cpu", variants=(), cache_dir=tmp_path)
    with pytest.raises(ValueError, match="no function @gat"):
        tune.tune(source, pre, "cpu", name="gat", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="repeat"):
        tune.tune(source, pre, "cpu", repeat=0, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="preprocessed on a CUDA device"):
        tune.tune(source, pre, "cuda", cache_dir=tmp_path)
    # Nothing built and no compiler: the missing artifact is named.
    with pytest.raises(compiler.MissingArtifactError):
        tune.tune(source, pre, "cpu", cache_dir=tmp_path, compiler=False)
    # A damaged cache entry says what to do.
    result = tune.tune(source, pre, "cpu", repeat=1, variants=("unopt",), cache_dir=tmp_path)
    (tmp_path / "tune" / (result.key + ".json")).write_text("{")
    with pytest.raises(OSError, match="delete it and tune again"):
        tune.tune(source, pre, "cpu", variants=("unopt",), cache_dir=tmp_path)

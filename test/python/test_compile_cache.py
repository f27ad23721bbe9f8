"""hector.compile, its cache and the ahead-of-time command (python -m hector.aot),
and the model generator hector.models they are fed from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hector
from hector import aot, compiler, models
from hectorc_support import REPO, hectorc

RGCN8 = models.generate("rgcn", 8)


@pytest.fixture
def counting_hectorc(tmp_path):
    """A hectorc that logs every call to `log` (and can be slowed down)."""
    log = tmp_path / "calls.log"
    script = tmp_path / "bin" / "hectorc"
    script.parent.mkdir()
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        [ "$1" = --version ] || echo "$@" >> {log}
        [ -n "$SLOW_HECTORC" ] && sleep "$SLOW_HECTORC"
        exec {hectorc()} "$@"
        """))
    script.chmod(0o755)

    def calls():
        return log.read_text().count("\n") if log.exists() else 0

    return str(script), calls


def test_second_compile_hits_the_cache(tmp_path, counting_hectorc):
    path, calls = counting_hectorc
    lib = hector.compile(RGCN8, cache_dir=tmp_path / "c", compiler=path)
    assert calls() == 1 and "rgcn" in lib.entries
    again = hector.compile(RGCN8, cache_dir=tmp_path / "c", compiler=path)
    assert calls() == 1 and again is lib
    assert lib.key == compiler.key_of(RGCN8)
    # A fresh process finds it on disk (no second build).
    code = (f"import hector; lib = hector.compile(open({str(tmp_path / 'ir')!r}).read(), "
            f"cache_dir={str(tmp_path / 'c')!r}, compiler={path!r}); print(lib.key)")
    (tmp_path / "ir").write_text(RGCN8)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), check=True).stdout
    assert out.strip() == lib.key and calls() == 1


def test_key_covers_ir_target_arch_flags_and_training():
    keys = {
        compiler.key_of(RGCN8),
        compiler.key_of(models.generate("rgcn", 16)),
        compiler.key_of(RGCN8, "cuda"),
        compiler.key_of(RGCN8, "cuda", gpu_arch="sm_80"),
        compiler.key_of(RGCN8, flags=["--opt-level=3"]),
        compiler.key_of(RGCN8, training=True),
    }
    assert len(keys) == 6
    assert compiler.key_of(RGCN8, "cuda") == compiler.key_of(RGCN8, "cuda", gpu_arch="sm_90")
    assert all(len(k) == 64 for k in keys)


def test_a_new_compiler_builds_a_new_artifact(tmp_path, counting_hectorc):
    path, calls = counting_hectorc
    first = hector.compile(RGCN8, cache_dir=tmp_path, compiler=path)
    with open(path, "a") as f:
        f.write("# another build of the compiler\n")
    second = hector.compile(RGCN8, cache_dir=tmp_path, compiler=path)
    assert calls() == 2
    assert first.key == second.key and first.artifact_id != second.artifact_id
    index = json.loads((tmp_path / "index" / first.key).read_text())
    assert index["artifact_id"] == second.artifact_id  # the newest build is served
    without = hector.compile(RGCN8, cache_dir=tmp_path, compiler=False)
    assert without.artifact_id == second.artifact_id


def test_without_a_compiler_artifacts_load_by_key(tmp_path):
    built = hector.compile(RGCN8, cache_dir=tmp_path, compiler=hectorc())
    loaded = hector.compile(RGCN8, cache_dir=tmp_path, compiler=False)
    assert loaded.path == built.path


def test_missing_key_names_key_model_and_target(tmp_path):
    text = models.generate("rgat", 16, heads=2)
    key = compiler.key_of(text, "cuda", training=True)
    with pytest.raises(hector.MissingArtifactError) as info:
        hector.compile(text, "cuda", training=True, cache_dir=tmp_path, compiler=False,
                       description="rgat:width=16,out_width=16,heads=2")
    message = str(info.value)
    assert key in message and info.value.key == key
    assert "rgat:width=16,out_width=16,heads=2" in message
    assert "target cuda (sm_90)" in message and "--training" in message
    assert "python3 -m hector.aot --target cuda --gpu-arch sm_90 --training" in message
    assert str(tmp_path) in message


def test_a_compiler_that_does_not_run_falls_back_to_the_cache(tmp_path):
    broken = tmp_path / "hectorc"
    broken.write_text("#!/bin/sh\necho 'libMLIR.so.22.1: cannot open shared object' >&2\n"
                      "exit 127\n")
    broken.chmod(0o755)
    with pytest.raises(hector.MissingArtifactError, match="does not run"):
        hector.compile(RGCN8, cache_dir=tmp_path / "c", compiler=broken)
    hector.compile(RGCN8, cache_dir=tmp_path / "c", compiler=hectorc())
    lib = hector.compile(RGCN8, cache_dir=tmp_path / "c", compiler=broken)
    assert "rgcn" in lib.entries


def test_concurrent_builds_share_one_artifact(tmp_path, counting_hectorc):
    path, calls = counting_hectorc
    (tmp_path / "ir").write_text(RGCN8)
    code = (f"import hector; lib = hector.compile(open({str(tmp_path / 'ir')!r}).read(), "
            f"cache_dir={str(tmp_path / 'c')!r}, compiler={path!r}); print(lib.path)")
    env = dict(os.environ, SLOW_HECTORC="1")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    results = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in results]
    assert calls() == 2  # both built (neither saw the other's) ...
    paths = {out.strip() for out, _ in results}
    assert len(paths) == 1  # ... and both use the one artifact that won the rename
    assert os.listdir(tmp_path / "c" / "lib") == [os.path.basename(os.path.dirname(paths.pop()))]
    assert not [n for n in os.listdir(tmp_path / "c" / "index") if n.startswith(".")]


def test_compile_errors_carry_hectorc_diagnostics(tmp_path):
    with pytest.raises(hector.CompileError) as info:
        hector.compile("hgraph.func @broken(\n", cache_dir=tmp_path, compiler=hectorc())
    assert "<model>:1:" in str(info.value) and "error:" in str(info.value)
    assert info.value.key == compiler.key_of("hgraph.func @broken(\n")
    assert os.listdir(tmp_path / "lib") == []  # nothing half-built is left


@pytest.mark.parametrize("kwargs,error,message", [
    ({"target": "tpu"}, ValueError, "target must be one of cpu, cuda"),
    ({"target": "cpu", "gpu_arch": "sm_90"}, ValueError, "for target 'cuda' only"),
    ({"target": "cuda", "gpu_arch": "90"}, ValueError, "look like 'sm_90'"),
    ({"flags": "--opt-level=3"}, TypeError, "not one string"),
    ({"flags": ["-o", "x.so"]}, ValueError, "set by compile"),
    ({"flags": ["--training"]}, ValueError, "set by compile"),
    ({"flags": ["opt"]}, ValueError, "hectorc options"),
])
def test_bad_arguments(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        hector.compile(RGCN8, cache_dir=tmp_path, compiler=hectorc(), **kwargs)


def test_bad_sources(tmp_path):
    with pytest.raises(TypeError, match="IR text"):
        hector.compile(b"bytes", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="empty"):
        hector.compile("  \n", cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="not executable"):
        hector.compile(RGCN8, cache_dir=tmp_path, compiler=tmp_path / "nope")


def test_source_from_a_path_and_cache_dir_from_the_environment(tmp_path, monkeypatch):
    (tmp_path / "m.mlir").write_text(RGCN8)
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path / "env-cache"))
    lib = hector.compile(tmp_path / "m.mlir", compiler=hectorc())
    assert lib.path.startswith(str(tmp_path / "env-cache"))
    assert lib.key == compiler.key_of(RGCN8)


def test_compiled_library_runs(tmp_path):
    from hector import graph as hgraph
    from reference import models_numpy, params

    lib = hector.compile(RGCN8, cache_dir=tmp_path, compiler=hectorc())
    rng = np.random.default_rng(0)
    g = {"node_type": np.zeros(12, np.int64), "src": rng.integers(0, 12, 50),
         "dst": rng.integers(0, 12, 50), "etype": rng.integers(0, 3, 50),
         "num_node_types": 1, "num_edge_types": 3}
    pre = hgraph.preprocess(g["node_type"], g["src"], g["dst"], g["etype"], 1, 3)
    w = params.make_params("rgcn", g, 8, 8)
    h = rng.standard_normal((12, 8)).astype(np.float32)
    out = np.zeros((12, 8), np.float32)
    values = dict(pre.arrays(), h=h, result0=out, **w)
    lib.rgcn(**{a.name: values[a.name] for a in lib.rgcn.arguments})
    ref = models_numpy.rgcn(g, h, w["W"].astype(np.float64), w["W0"].astype(np.float64))
    assert np.abs(out - ref).max() < 1e-5 * np.abs(ref).max()


# ---- damaged artifacts ---------------------------------------------------------

# Runs the library of RGCN8 from the cache in a fresh process (a damaged
# library may crash it: SIGBUS for a truncated one) and checks its answer.
_RUN_FROM_CACHE = """
import sys, numpy as np, hector
from hector import graph
sys.path.insert(0, {test!r})
from reference import models_numpy, params
lib = hector.compile(open({ir!r}).read(), cache_dir={cache!r}, compiler={compiler!r})
rng = np.random.default_rng(0)
g = {{"node_type": np.zeros(12, np.int64), "src": rng.integers(0, 12, 50),
     "dst": rng.integers(0, 12, 50), "etype": rng.integers(0, 3, 50)}}
pre = graph.preprocess(g["node_type"], g["src"], g["dst"], g["etype"], 1, 3)
w = params.make_params("rgcn", g, 8, 8)
h = rng.standard_normal((12, 8)).astype(np.float32)
out = np.zeros((12, 8), np.float32)
values = dict(pre.arrays(), h=h, result0=out, **w)
lib.rgcn(**{{a.name: values[a.name] for a in lib.rgcn.arguments}})
ref = models_numpy.rgcn(g, h, w["W"].astype(np.float64), w["W0"].astype(np.float64))
assert np.abs(out - ref).max() < 1e-5 * np.abs(ref).max()
print("ok", lib.path)
"""


def run_from_cache(tmp_path, cache, compiler_arg):
    (tmp_path / "ir").write_text(RGCN8)
    code = _RUN_FROM_CACHE.format(test=os.path.join(REPO, "test"), ir=str(tmp_path / "ir"),
                                  cache=str(cache), compiler=compiler_arg)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ), timeout=300)


def _rewrite(path, damage):
    """Writes a damaged copy of `path` in its place. A new file, not the old
    one changed in place: this process may have the library mapped (from
    hector.compile), and truncating a mapped file would crash it with SIGBUS
    when it next touches the lost pages (as late as its exit)."""
    data = damage(bytearray(open(path, "rb").read()))
    tmp = path + ".damaged"
    with open(tmp, "wb") as f:
        f.write(bytes(data))
    os.replace(tmp, path)


def _truncate(path):
    _rewrite(path, lambda data: data[: len(data) // 2])


def _flip_bytes(path):
    def flip(data):
        middle = len(data) // 2
        for i in range(middle, min(middle + 64, len(data))):
            data[i] ^= 0xFF
        return data
    _rewrite(path, flip)


def _flip_one_byte(path):
    def flip(data):
        data[len(data) // 3] ^= 0x01
        return data
    _rewrite(path, flip)


DAMAGE = {
    "truncated library": ("lib", _truncate),
    "bytes flipped in the library": ("lib", _flip_bytes),
    "one bit flipped in the library": ("lib", _flip_one_byte),
    "library deleted": ("lib", os.remove),
    "truncated manifest": ("manifest", _truncate),
    "one bit flipped in the manifest": ("manifest", _flip_one_byte),
}


def _damage(lib_path, case):
    which, how = DAMAGE[case]
    path = lib_path if which == "lib" else lib_path + ".json"
    how(path)
    return path


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_artifact_is_rebuilt(tmp_path, counting_hectorc, case):
    """A cached library or manifest damaged after it was written (an
    interrupted copy of an AOT cache, a bad disk) is found by its recorded
    size and sha256 and rebuilt, never loaded."""
    path, calls = counting_hectorc
    cache = tmp_path / "c"
    built = hector.compile(RGCN8, cache_dir=cache, compiler=path)
    assert calls() == 1
    _damage(built.path, case)
    result = run_from_cache(tmp_path, cache, path)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.startswith("ok " + built.path)  # rebuilt in place
    assert calls() == 2
    # Repaired for good: the next process loads it without building.
    assert run_from_cache(tmp_path, cache, path).returncode == 0 and calls() == 2
    # Nothing left behind but the repair's lock file.
    assert sorted(os.listdir(cache / "lib")) == [f".{built.artifact_id}.lock",
                                                 built.artifact_id]


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_artifact_without_a_compiler_is_a_clear_error(tmp_path, case):
    cache = tmp_path / "c"
    built = hector.compile(RGCN8, cache_dir=cache, compiler=hectorc())
    damaged = _damage(built.path, case)
    result = run_from_cache(tmp_path, cache, False)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert "DamagedArtifactError" in result.stderr
    assert damaged in result.stderr and "python3 -m hector.aot" in result.stderr
    # In this process too, as a MissingArtifactError (a layer then tries a
    # training library, as for a missing one).
    compiler._loaded.clear()
    with pytest.raises(hector.MissingArtifactError, match="damaged"):
        hector.compile(RGCN8, cache_dir=cache, compiler=False)


def test_concurrent_repairs_share_one_artifact(tmp_path, counting_hectorc):
    path, calls = counting_hectorc
    cache = tmp_path / "c"
    built = hector.compile(RGCN8, cache_dir=cache, compiler=path)
    _truncate(built.path)
    (tmp_path / "ir").write_text(RGCN8)
    code = _RUN_FROM_CACHE.format(test=os.path.join(REPO, "test"), ir=str(tmp_path / "ir"),
                                  cache=str(cache), compiler=path)
    env = dict(os.environ, SLOW_HECTORC="1")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    results = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in results]
    assert all(out.startswith("ok " + built.path) for out, _ in results)
    assert [n for n in os.listdir(cache / "lib") if not n.endswith(".lock")] == \
        [built.artifact_id]
    compiler._loaded.clear()
    compiler.verify_artifact(os.path.dirname(built.path))


def test_aot_list_names_damaged_artifacts(tmp_path):
    built = hector.compile(RGCN8, cache_dir=tmp_path, compiler=hectorc())
    _flip_one_byte(built.path)
    listing = run_aot("--list", "--out", str(tmp_path))
    assert listing.returncode == 0
    assert f"[DAMAGED: {built.path}: sha256" in listing.stdout


def test_sizes_and_hashes_are_recorded(tmp_path):
    import hashlib
    built = hector.compile(RGCN8, cache_dir=tmp_path, compiler=hectorc())
    directory = os.path.dirname(built.path)
    meta = json.loads(open(os.path.join(directory, "meta.json")).read())
    names = sorted(n for n in os.listdir(directory) if n != "meta.json")
    assert sorted(meta["files"]) == names
    assert {"librgcn.so", "librgcn.so.json", "model.mlir"} <= set(names)
    for name, record in meta["files"].items():
        data = open(os.path.join(directory, name), "rb").read()
        assert record == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_an_artifact_without_recorded_hashes(tmp_path, counting_hectorc):
    """Artifacts written before sizes and hashes were recorded can not be
    verified: rebuilt with a compiler, refused (naming the file) without."""
    path, calls = counting_hectorc
    built = hector.compile(RGCN8, cache_dir=tmp_path, compiler=path)
    meta_path = os.path.join(os.path.dirname(built.path), "meta.json")
    meta = json.loads(open(meta_path).read())
    del meta["files"]
    open(meta_path, "w").write(json.dumps(meta))
    compiler._loaded.clear()
    with pytest.raises(hector.MissingArtifactError, match="no recorded sizes") as info:
        hector.compile(RGCN8, cache_dir=tmp_path, compiler=False)
    assert meta_path in str(info.value)
    again = hector.compile(RGCN8, cache_dir=tmp_path, compiler=path)
    assert calls() == 2 and again.path == built.path
    assert "files" in json.loads(open(meta_path).read())


# ---- python -m hector.aot ----------------------------------------------------

def run_aot(*args, env=None):
    return subprocess.run([sys.executable, "-m", "hector.aot", *args], capture_output=True,
                          text=True, env=dict(os.environ, **(env or {})))


def test_aot_builds_what_compile_then_loads(tmp_path):
    (tmp_path / "custom.mlir").write_text(models.generate("hgt", 8, heads=2))
    result = run_aot("--out", str(tmp_path / "aot"), "--hectorc", hectorc(),
                     "rgat:width=16,heads=2", str(tmp_path / "custom.mlir"))
    assert result.returncode == 0, result.stderr
    rgat = models.generate("rgat", 16, heads=2)
    assert compiler.key_of(rgat) in result.stdout
    lib = hector.compile(rgat, cache_dir=tmp_path / "aot", compiler=False)
    assert "rgat" in lib.entries
    lib = hector.compile(tmp_path / "custom.mlir", cache_dir=tmp_path / "aot", compiler=False)
    assert "hgt" in lib.entries
    listing = run_aot("--list", "--out", str(tmp_path / "aot"))
    assert listing.returncode == 0
    assert "rgat:width=16,out_width=16,heads=2, target cpu" in listing.stdout
    assert str(tmp_path / "custom.mlir") in listing.stdout


def test_aot_errors(tmp_path):
    result = run_aot("--out", str(tmp_path), "--hectorc", hectorc(), "rgat:width=30,heads=4")
    assert result.returncode == 1 and "heads = 4 must divide the output width 30" in result.stderr
    result = run_aot("--out", str(tmp_path), "--hectorc", hectorc(), "gcn:width=8")
    assert result.returncode == 1 and "unknown model 'gcn'" in result.stderr
    result = run_aot("--out", str(tmp_path))
    assert result.returncode == 2 and "at least one model" in result.stderr
    assert "no artifacts" in run_aot("--list", "--out", str(tmp_path / "empty")).stdout


def _ptxas():
    root = os.environ.get("CUDA_ROOT", "/usr/local/cuda")
    return os.access(os.path.join(root, "bin", "ptxas"), os.X_OK)


@pytest.mark.skipif(not _ptxas(), reason="the cuda target needs ptxas (CUDA toolkit)")
def test_aot_for_cuda_loads_without_compiler(tmp_path):
    built = aot.build(["rgcn:width=8"], "cuda", cache_dir=tmp_path, compiler_path=hectorc())
    (_, lib), = built
    assert lib.target == "cuda" and lib.gpu_arch == "sm_90"
    assert os.path.exists(os.path.join(os.path.dirname(lib.path), "libhector_runtime.so"))
    again = hector.compile(RGCN8, "cuda", cache_dir=tmp_path, compiler=False)
    assert again.path == lib.path


# ---- hector.models -------------------------------------------------------------

@pytest.mark.parametrize("model", ["rgcn", "rgat", "hgt"])
def test_generator_defaults_are_the_examples(model):
    with open(os.path.join(REPO, "examples", f"{model}.mlir")) as f:
        assert models.generate(model) == f.read()


def test_specs_round_trip():
    text = models.spec("rgat", 32, 64, heads=4, negative_slope=0.1)
    assert text == "rgat:width=32,out_width=64,heads=4,negative_slope=0.1"
    assert models.parse_spec(text) == {"model": "rgat", "width": 32, "out_width": 64,
                                       "heads": 4, "negative_slope": 0.1}
    assert models.from_spec(text) == models.generate("rgat", 32, 64, 4, negative_slope=0.1)
    assert models.spec("rgat", 32, heads=4, negative_slope=0.2) == \
        "rgat:width=32,out_width=32,heads=4"
    assert "alpha 1.000000e-01" in models.from_spec(text)
    # HGT: the residual h_t only where in == out (PyG's rule), or a separate r.
    assert models.spec("hgt", 24, 16, heads=2, residual="auto") == \
        "hgt:width=24,out_width=16,heads=2"
    assert "%out0, %h" in models.generate("hgt", 16, 16)
    assert "%out0, %h" not in models.generate("hgt", 24, 16) and \
        "hgraph.return %out0" in models.generate("hgt", 24, 16)
    text = models.spec("hgt", 24, 16, heads=2, residual="separate")
    assert text == "hgt:width=24,out_width=16,heads=2,residual=separate"
    assert models.parse_spec(text)["residual"] == "separate"
    assert '%r: !hgraph.node<16xf32> {hgraph.name = "r"}' in models.from_spec(text)


@pytest.mark.parametrize("text,message", [
    ("gcn:width=8", "unknown model 'gcn'"),
    ("rgat:width", "expected key=value"),
    ("rgat:width=x", "width must be a number"),
    ("rgat:width=8,width=8", "width given twice"),
    ("rgat:depth=2", "rgat has no option 'depth'"),
    ("rgcn:heads=2", "RGCN has no heads"),
    ("hgt:width=8,residual=gated", "residual must be one of 'auto', 'separate'"),
    ("rgat:width=8,heads=3", "heads = 3 must divide the output width 8"),
    ("rgat:width=8.5", "width must be an integer"),
    ("rgat:width=0", "must be positive"),
    ("rgat:width=8,negative_slope=inf", "finite"),
])
def test_bad_specs(text, message):
    with pytest.raises(ValueError, match=message):
        models.from_spec(text)

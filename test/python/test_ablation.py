"""bench/ablation.py on the CPU: `build` with CPU libraries for a tiny graph,
then `run`: every variant runs both modes, agrees with U, writes JSON and
markdown, records the tuner's choice (or says it fell back), and records
out-of-memory as a result. Nothing here asserts how fast anything is.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

torch = pytest.importorskip("torch")

from hector import compiler, compiled, _runtime  # noqa: E402
from hectorc_support import REPO, hectorc  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
import ablation  # noqa: E402

pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")

# mutag's shape at 0.5%: 136 nodes, 740 edges, 5 node types, 50 edge types.
DATASET, SCALE, WIDTH = "mutag", 0.005, 16
FAST = ["--warmup", "1", "--iters", "2", "--budget-s", "0.01", "--tune-repeat", "1"]


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("ablation-libs"))
    ablation.main(["build", "--out", out, "--target", "cpu", "--datasets", DATASET,
                   "--scale", str(SCALE), "--width", str(WIDTH), "--hectorc", hectorc()])
    return out


def run(libs, out, *extra):
    ablation.main(["run", "--libs", libs, "--out", str(out), *FAST, *extra])
    with open(os.path.join(str(out), "ablation.json"), encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(str(out), "ablation.md"), encoding="utf-8") as f:
        return data, f.read()


def test_build_writes_a_plan_whose_keys_all_load_without_a_compiler(libs):
    with open(os.path.join(libs, "plan.json"), encoding="utf-8") as f:
        plan = json.load(f)
    assert plan["target"] == "cpu" and plan["datasets"] == [DATASET]
    graph = plan["graphs"][DATASET]
    assert graph["typed_endpoints"]  # synthetic graphs: one (src, dst) type pair per edge type
    for v, flags in graph["flags"].items():
        assert flags[0] == f"--variant={ablation.VARIANTS[v]}"
        assert ("--typed-endpoints" in flags) == (v in ("R", "C+R"))
        assert any(f.startswith("--graph-sizes=") for f in flags)
    cache = os.path.join(libs, "cache")
    keys = os.listdir(os.path.join(cache, "index"))
    # 2 models x 4 variants x (training, inference); equal IR shares one artifact.
    assert len(keys) == 16
    assert len(os.listdir(os.path.join(cache, "lib"))) <= len(keys)
    for model in ablation.MODELS:
        text = ablation._source(model, WIDTH, 1)
        for training in (True, False):
            for flags in graph["flags"].values():
                lib = compiler.compile(text, "cpu", training=training, flags=flags,
                                       cache_dir=cache, compiler=False)
                assert (lib.training_entries(model) is not None) == training


def test_run_measures_every_variant_and_the_tuned_choice(libs, tmp_path, capsys):
    data, md = run(libs, tmp_path)
    printed = capsys.readouterr().out
    assert printed.rstrip().endswith(md.rstrip().splitlines()[-1])  # the table comes last
    assert f"rgat {DATASET} training C+R" in printed  # progress lines

    results = data["results"]
    assert len(results) == 2 * 2 * 4
    assert all(r["status"] == "ok" for r in results), [r["note"] for r in results]
    by = {(r["model"], r["mode"], r["variant"]): r for r in results}
    for r in results:
        assert r["median_ms"] > 0 and r["samples"] >= 1
        assert r["peak_bytes"] is None  # not measured on a CPU
        assert (r["saved_bytes"] > 0) if r["mode"] == "training" else r["saved_bytes"] is None
        if r["mode"] == "inference" and r["variant"] != "U":
            assert r["max_rel_err_vs_U"] < 1e-4
    for model in ablation.MODELS:
        # Compaction saves pair rows instead of edge rows: never more bytes.
        assert by[(model, "training", "C")]["saved_bytes"] <= by[(model, "training", "U")]["saved_bytes"]

    graph = data["graphs"][DATASET]
    assert graph["same_sizes_as_build"] and graph["typed_endpoints"]
    assert 0 < graph["compaction_ratio"] < 1
    assert len(data["tuned"]) == 4
    for t in data["tuned"]:
        assert t["how"] == "hector.tune" and t["variant"] in ablation.VARIANTS
        assert set(t["tuner_ms"]) == set(ablation.VARIANTS)
        assert t["median_ms"] == by[(t["model"], t["mode"], t["variant"])]["median_ms"]

    assert "| model | dataset | mode | TE | U | C | R | C+R | tuned | tuned vs U |" in md
    assert f"| rgat | {DATASET} | training | yes |" in md
    assert f"{graph['compaction_ratio']:.2f}" in md  # P/E beside the memory columns
    assert "(tuner)" in md


def test_oom_is_a_result_and_the_tuner_falls_back(libs, tmp_path, monkeypatch):
    def oom(self):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    def no_tuner(*args, training=False, **kwargs):
        if not training:
            raise compiler.MissingArtifactError("no library for key x", "x", "model", "cache")
        return real_tune(*args, training=training, **kwargs)

    real_tune = ablation.tune.tune
    monkeypatch.setattr(ablation.VariantRunner, "train_step", oom)
    monkeypatch.setattr(ablation.tune, "tune", no_tuner)
    data, md = run(libs, tmp_path, "--models", "rgat")
    training = [r for r in data["results"] if r["mode"] == "training"]
    assert len(training) == 4 and all(r["status"] == "oom" for r in training)
    assert all(r["status"] == "ok" for r in data["results"] if r["mode"] == "inference")
    tuned = {t["mode"]: t for t in data["tuned"]}
    assert tuned["inference"]["how"] == "fastest measured"
    assert "MissingArtifactError" in tuned["inference"]["note"]
    measured = {r["variant"]: r["median_ms"] for r in data["results"] if r["mode"] == "inference"}
    assert tuned["inference"]["variant"] == min(measured, key=measured.get)
    assert tuned["training"]["how"] == "hector.tune"  # the tuner's own trial still runs
    assert f"| rgat | {DATASET} | training | yes | OOM | OOM | OOM | OOM |" in md
    assert "fastest measured" in md and "Failures" in md


def test_runtime_out_of_memory_status_counts_as_oom():
    err = compiled.LaunchError(_runtime.OUT_OF_MEMORY, "cuMemAlloc failed")
    assert ablation._is_oom(err)
    assert not ablation._is_oom(ValueError("bad shape"))


def test_run_errors_are_clear(libs, tmp_path, capsys):
    with pytest.raises(SystemExit):
        ablation.main(["run", "--libs", str(tmp_path), "--out", str(tmp_path)])
    assert "plan.json not found" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ablation.main(["run", "--libs", libs, "--out", str(tmp_path), "--datasets", "am"])
    assert "unknown datasets (of the build): am" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ablation.main(["run", "--libs", libs, "--out", str(tmp_path), "--device", "cuda"])
    assert "target cpu" in capsys.readouterr().err

"""examples/cpp/train_step: the C++ training example.

- On a hand-written library that follows the training contract (the C mock
  of test_nn_autograd.py, compiled with cc, no hectorc needed): one SGD step
  and one Adam step equal the same update done with torch autograd in
  float64, the loss of every step is the float64 loss, and the plumbing
  errors are clear.
- On examples/{rgcn,rgat,hgt}.mlir built with `hectorc --training
  --target=cpu`: the loss decreases over 10 steps with SGD and with Adam, and
  one SGD step's weights equal those of the float64 torch references
  (test/reference/models_torch.py: loss, gradients by autograd, the same
  update), the independent check of the gradients the compiled backward
  computes.
- Bad input (a library without training entries, a wrong graph file, bad
  options) is one clear message and exit status 1.

The seeded inputs, weights and labels are rebuilt here from the generator
documented in examples/cpp/README.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hector import compiled  # noqa: E402
from hectorc_support import REPO, build, hectorc, tool  # noqa: E402
from reference import models_torch, params  # noqa: E402
from test_cpp_example import (  # noqa: E402
    GOLDEN, NO_GPU_MESSAGE, graph_case, mix64, preprocess, require_cuda_toolkit_without_driver,
    seeded, write_graph)
from test_nn_autograd import TRAINING_ENTRIES, manifest, mock_object  # noqa: E402,F401

MODELS = ("rgcn", "rgat", "hgt")


def run(*args, cwd=None):
    return subprocess.run([tool("train_step"), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def losses(result):
    """The per-step losses and the final loss that train_step printed."""
    assert result.returncode == 0, result.stderr
    steps = [float(m) for m in re.findall(r"^step \d+ loss (\S+)$", result.stdout, re.M)]
    final = float(re.search(r"^final loss (\S+) ", result.stdout, re.M).group(1))
    return steps, final


def expect_error(result, message):
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr.startswith("train_step: error: "), result.stderr
    assert message in result.stderr, result.stderr


# ---- what train_step generates, rebuilt from the README ---------------------------

def seeded_labels(seed, n, classes):
    """Labels: the generator's stream at position -1, floor(unit * classes)."""
    with np.errstate(over="ignore"):
        key = mix64(np.array([seed], np.uint64))
        bits = mix64(key + GOLDEN * np.arange(1, n + 1, dtype=np.uint64))
    return ((bits >> np.uint64(40)) * np.uint64(classes) >> np.uint64(24)).astype(np.int64)


def seeded_values(entry, pre, seed):
    """Inputs and weights by name, as train_step makes them (positions in f_fwd)."""
    symbols = {"N": pre.N, "E": pre.E, "T": pre.T, "R": pre.R, "P": pre.P}
    values = {}
    for arg in entry.arguments:
        if arg.role in ("input", "weight"):
            shape = tuple(symbols[d] if isinstance(d, str) else d for d in arg.shape)
            scale = 1.0 / np.sqrt(float(shape[-1])) if arg.role == "weight" else 1.0
            values[arg.name] = seeded(seed, arg.index, shape, scale)
    return values


def load_weights(directory, names):
    return {name: np.load(os.path.join(directory, f"{name}.npy")) for name in names}


def relative_error(actual, expected):
    expected = np.asarray(expected, np.float64)
    return np.linalg.norm(np.asarray(actual, np.float64) - expected) / max(
        np.linalg.norm(expected), 1e-30)


def torch_step(forward, weights, inputs, labels, optimizer, lr):
    """float64 loss, and the weights after one step of `optimizer`, by torch."""
    w = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    x = {k: torch.tensor(v, dtype=torch.float64) for k, v in inputs.items()}
    loss = models_torch.nll_loss(forward(w, x), torch.as_tensor(labels))
    loss.backward()
    opt = (torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam)(list(w.values()), lr=lr)
    opt.step()
    return float(loss), {k: v.detach().numpy() for k, v in w.items()}


def check_update(before, after, expected, tolerance):
    """The update after - before, against expected - before, per weight."""
    for name in before:
        b = before[name].astype(np.float64)
        err = relative_error(after[name] - b, expected[name] - b)
        assert err < tolerance, f"{name}: update relative error {err:.2e}"


# ---- a contract-shaped mock library (no hectorc) ------------------------------------

@pytest.fixture(scope="module")
def mock(mock_object):
    """The mock library (mock_object: test_nn_autograd.py's, compiled with cc)."""
    return with_manifest(mock_object / "libmock.so", TRAINING_ENTRIES)


def with_manifest(library, entries, name=None):
    """`library` (or a copy named `name`) with a manifest of `entries`."""
    library = str(library)
    if name:
        copy = os.path.join(os.path.dirname(library), name)
        shutil.copy(library, copy)
        library = copy
    with open(library + ".json", "w") as f:
        json.dump(manifest(entries), f)
    return library


def mock_graph():
    rng = np.random.default_rng(8)
    n, e = 12, 50
    dst = np.concatenate([rng.integers(0, n - 3, e - 2), [0, 0]])  # 9..11: no inputs
    return {"node_type": np.zeros(n, np.int64), "src": rng.integers(0, n, e), "dst": dst,
            "etype": np.zeros(e, np.int64), "num_node_types": 1, "num_edge_types": 1}


def mock_forward(graph):
    src, dst = torch.as_tensor(graph["src"]), torch.as_tensor(graph["dst"])
    n = len(graph["node_type"])

    def forward(w, x):  # result0[t] = sum over edges s->t of tanh(h_s W)
        msg = torch.tanh(x["h"][src] @ w["W"])
        return torch.zeros(n, 4, dtype=torch.float64).index_add(0, dst, msg)
    return forward


@pytest.mark.parametrize("optimizer,lr", [("sgd", 0.5), ("adam", 0.05)])
def test_mock_step_matches_torch(mock, tmp_path, optimizer, lr):
    seed = 21
    graph = mock_graph()
    result = run(mock, write_graph(tmp_path / "g.txt", graph), "--steps", 1, "--seed", seed,
                 "--optimizer", optimizer, "--lr", lr, "--dump-weights", tmp_path / "w")
    steps, final = losses(result)
    lib = compiled.load(mock)
    pre = preprocess(graph)
    values = seeded_values(lib["f_fwd"], pre, seed)
    labels = seeded_labels(seed, pre.N, 4)
    forward = mock_forward(graph)
    loss, expected = torch_step(forward, {"W": values["W"]}, {"h": values["h"]}, labels,
                                optimizer, lr)
    assert len(steps) == 1 and abs(steps[0] - loss) <= 1e-5 * abs(loss)
    after = load_weights(tmp_path / "w", ["W"])
    check_update({"W": values["W"]}, after, expected, 1e-4)
    # The final loss is the inference entry's, at the weights written.
    w = {"W": torch.tensor(after["W"], dtype=torch.float64)}
    x = {"h": torch.tensor(values["h"], dtype=torch.float64)}
    want = float(models_torch.nll_loss(forward(w, x), torch.as_tensor(labels)))
    assert abs(final - want) <= 1e-5 * abs(want)


def test_mock_loss_decreases(mock, tmp_path):
    graph_file = write_graph(tmp_path / "g.txt", mock_graph())
    for optimizer in ("sgd", "adam"):
        steps, final = losses(run(mock, graph_file, "--steps", 10, "--optimizer", optimizer))
        assert len(steps) == 10 and final < steps[-1] < steps[0], (optimizer, steps)


def test_mock_summary_and_run_forward_default_entry(mock, tmp_path):
    graph_file = write_graph(tmp_path / "g.txt", mock_graph())
    out = run(mock, graph_file, "--steps", 0).stdout
    assert "function f, entries f_fwd, f_bwd" in out
    assert re.search(r"saved +saved0 +float32 +\[50, 4\] +written by f_fwd", out)
    assert re.search(r"grad_output +d_result1 +float32 +\[12, 4\] +zeros", out)
    assert "seeded labels in [0, 4)" in out and "weights: W [4, 4]" in out
    # run_forward runs the model function f of a training library by default.
    result = subprocess.run([tool("run_forward"), mock, graph_file], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and "entry f\n" in result.stdout, result.stderr


def edit(entries, name, change):
    entries = json.loads(json.dumps(entries))
    change(next(e for e in entries if e["name"] == name))
    return entries


@pytest.mark.parametrize("entries,message", [
    (TRAINING_ENTRIES[:1], "function 'f' has no training entry points ('f_fwd', 'f_bwd'): "
                           "the library was built without --training"),
    (TRAINING_ENTRIES[:2], "function 'f' has a training_forward entry but no "
                           "training_backward entry"),
    (edit(TRAINING_ENTRIES, "f_bwd", lambda e: e["arguments"].pop()),
     "entry 'f_bwd' computes no gradient 'd_W' of weight 'W'"),
    (edit(TRAINING_ENTRIES, "f_bwd", lambda e: e["arguments"][4].update(name="saved9")),
     "entry 'f_bwd' reads 'saved9' (role saved), which 'f_fwd' neither takes nor produces"),
    (edit(TRAINING_ENTRIES, "f_bwd", lambda e: e["arguments"][4].update(shape=["N", 4])),
     "entry 'f_bwd' argument 'saved0' must be float32 [12, 4], but the buffer for it is "
     "float32 [50, 4]"),
    (edit(TRAINING_ENTRIES, "f_fwd", lambda e: e["arguments"][-1].update(role="grad")),
     "has role 'grad' in an entry of kind training_forward"),
    (edit(TRAINING_ENTRIES, "f", lambda e: e["arguments"].append(
        {"role": "saved", "name": "s", "dtype": "float32", "rank": 1, "shape": ["N"]})),
     "has role 'saved' in an entry of kind inference"),
    (edit(TRAINING_ENTRIES, "f_fwd", lambda e: e.update(kind="training")),
     "entry 'f_fwd' has kind 'training'"),
    (edit(TRAINING_ENTRIES, "f_bwd", lambda e: e.update(symbol="_mlir_ciface_nope")),
     "has no symbol _mlir_ciface_nope (entry 'f_bwd' of its manifest)"),
])
def test_mock_plumbing_errors(mock, tmp_path, entries, message):
    library = with_manifest(mock, entries, name="libedited.so")
    expect_error(run(library, write_graph(tmp_path / "g.txt", mock_graph())), message)


# ---- examples/*.mlir built with hectorc --training ------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """model -> examples/<model>.mlir compiled with --training for the CPU, or
    hectorc's first error line when it cannot build it (yet)."""
    directory = tmp_path_factory.mktemp("cpp_training")
    found = {}
    for model in MODELS:
        out = directory / f"lib{model}_train.so"
        result = subprocess.run([hectorc(), os.path.join(REPO, "examples", f"{model}.mlir"),
                                 "--training", "--target=cpu", "-o", out],
                                capture_output=True, text=True)
        if result.returncode == 0:
            found[model] = str(out)
        else:
            found[model] = next((line for line in result.stderr.splitlines()
                                 if "error:" in line), result.stderr).strip()
    return found


def training_library(built, model):
    """The training library of `model` (hectorc's error when it failed)."""
    assert os.path.exists(built[model]), f"hectorc --training failed on {model}: {built[model]}"
    return built[model]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("model", MODELS)
def test_loss_decreases(built, tmp_path, model, optimizer):
    library = training_library(built, model)
    graph_file = write_graph(tmp_path / "g.txt", graph_case("random", np.random.default_rng(2)))
    steps, final = losses(run(library, graph_file, "--steps", 10, "--seed", 4,
                              "--optimizer", optimizer))
    assert len(steps) == 10 and np.all(np.isfinite(steps))
    if optimizer == "sgd":
        assert final < steps[-1] < steps[0], steps
    else:
        # Adam falls fast but not monotonically: near the minimum a step may
        # overshoot, so it must end far below where it started.
        assert final < 0.5 * steps[0], steps


def test_capped_temporaries_stop_with_a_clear_error(built, tmp_path, monkeypatch):
    """$HECTOR_TEMPORARY_CAP below what a step's temporaries need: the entry
    stops, and train_step ends with the entry, the bytes and the cap."""
    library = training_library(built, "rgat")
    graph_file = write_graph(tmp_path / "g.txt", graph_case("random", np.random.default_rng(2)))
    monkeypatch.setenv("HECTOR_TEMPORARY_CAP", "1K")
    expect_error(run(library, graph_file, "--steps", 1),
                 "running entry 'rgat_fwd': a temporary buffer of ")
    result = run(library, graph_file, "--steps", 1)
    assert "would exceed the cap on this library's temporaries: 1024 bytes" in result.stderr
    assert "[HECTOR_ERROR_OUT_OF_MEMORY]" in result.stderr
    monkeypatch.setenv("HECTOR_TEMPORARY_CAP", "1G")
    steps, _ = losses(run(library, graph_file, "--steps", 1))
    assert len(steps) == 1


# Large enough that each update stands well above the float32 rounding of
# the stored weights (HGT's K, Q, Watt and mu get small gradients), small
# enough that the loss after the step stays well above 0.
STEP_LR = {"rgcn": 5.0, "rgat": 5.0, "hgt": 20.0}


@pytest.mark.parametrize("kind", ["random", "edge_cases"])
@pytest.mark.parametrize("model", MODELS)
def test_sgd_step_matches_torch_reference(built, tmp_path, model, kind):
    library = training_library(built, model)
    seed, lr = 11 + len(kind), STEP_LR[model]
    graph = graph_case(kind, np.random.default_rng(len(model) + len(kind)))
    result = run(library, write_graph(tmp_path / "g.txt", graph), "--steps", 1,
                 "--seed", seed, "--lr", lr, "--dump-weights", tmp_path / "w")
    steps, final = losses(result)

    lib = compiled.load(library)
    pre = preprocess(graph)
    values = seeded_values(lib[f"{model}_fwd"], pre, seed)
    names = params.PARAM_NAMES[model]
    weights = {k: values[k] for k in names}
    width = lib[model].arguments[-1].shape[-1]
    labels = seeded_labels(seed, pre.N, width)
    g = models_torch.TorchGraph(graph)

    def forward(w, x):
        return models_torch.forward(model, g, x["h"], w, heads=1)

    loss, expected = torch_step(forward, weights, {"h": values["h"]}, labels, "sgd", lr)
    assert abs(steps[0] - loss) <= 1e-5 * abs(loss), (steps[0], loss)
    after = load_weights(tmp_path / "w", names)
    check_update(weights, after, expected, 1e-4)
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in after.items()}
    want = float(models_torch.nll_loss(
        forward(w, {"h": torch.tensor(values["h"], dtype=torch.float64)}),
        torch.as_tensor(labels)))
    assert abs(final - want) <= 1e-5 * abs(want), (final, want)


# ---- errors ----------------------------------------------------------------------------

GOOD_GRAPH = "4 3 2 3\n0 1\n1 0\n0 1 2\n1 2 0\n3 3 1\n"


def test_library_without_training_entries(tmp_path):
    with open(os.path.join(REPO, "examples", "rgcn.mlir")) as f:
        library = build(tmp_path, f.read(), "--target=cpu", name="librgcn.so")
    (tmp_path / "g.txt").write_text(GOOD_GRAPH)
    expect_error(run(library, tmp_path / "g.txt"),
                 "function 'rgcn' has no training entry points ('rgcn_fwd', 'rgcn_bwd'): the "
                 "library was built without --training; rebuild it with `hectorc --training`")


@pytest.mark.parametrize("text,message", [
    (None, "g.txt: cannot open the graph file"),
    ("4 3 2\n", "g.txt:1: expected the header line 'N E T R'"),
    (GOOD_GRAPH.replace("1 2 0\n", "1 9 0\n"), "g.txt:5: the destination of edge 1 is 9, "
                                               "outside [0, 3]"),
    ("0 0 1 1\n", "g.txt: the graph has no nodes: nothing to train"),
])
def test_bad_graph_file(mock, tmp_path, text, message):
    if text is not None:
        (tmp_path / "g.txt").write_text(text)
    result = run(mock, "g.txt", cwd=tmp_path)
    expect_error(result, message)
    assert "step" not in result.stdout


@pytest.mark.parametrize("options,message", [
    (["--optimizer", "rmsprop"], "--optimizer must be sgd or adam, got 'rmsprop'"),
    (["--lr", "-1"], "--lr needs a positive number, got '-1'"),
    (["--lr=nan"], "--lr needs a positive number, got 'nan'"),
    (["--steps", "ten"], "--steps needs an unsigned 64-bit integer, got 'ten'"),
    (["--steps"], "--steps needs a value"),
    (["--entry", "f_fwd"], "--entry f_fwd is the training_forward entry of function 'f'; "
                           "give --entry f"),
    (["--entry", "g"], "no entry point named 'g' (entries: f, f_fwd, f_bwd)"),
    (["--arg", "saved0=x.npy"], "'saved0' is an output; only inputs and weights can be read"),
    (["--arg", "nope=x.npy"], "--arg nope: entry 'f_fwd' has no input or weight of that name "
                              "(it has h, W)"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["extra"], "expected <lib.so> and <graph-file>, got 3 arguments"),
])
def test_bad_options(mock, tmp_path, options, message):
    expect_error(run(mock, write_graph(tmp_path / "g.txt", mock_graph()), *options), message)


def test_cuda_library_without_driver_is_an_error(tmp_path):
    require_cuda_toolkit_without_driver()
    result = subprocess.run([hectorc(), os.path.join(REPO, "examples", "rgcn.mlir"),
                             "--training", "--target=cuda", "-o", tmp_path / "lib.so"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    result = run(tmp_path / "lib.so", write_graph(tmp_path / "g.txt", mock_graph()))
    expect_error(result, NO_GPU_MESSAGE)
    assert "driver" in result.stderr and "step" not in result.stdout


def test_dump_directory_not_writable(mock, tmp_path):
    (tmp_path / "file").write_text("")
    expect_error(run(mock, write_graph(tmp_path / "g.txt", mock_graph()), "--steps", 1,
                     "--dump-weights", tmp_path / "file" / "w"), "cannot create the directory")


def test_help():
    result = run("--help")
    assert result.returncode == 0 and "usage: train_step" in result.stdout

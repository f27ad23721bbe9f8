"""examples/cpp/run_forward: the C++ example that runs a compiled model.

examples/{rgcn,rgat,hgt}.mlir are compiled with `hectorc --target=cpu`; small
graphs are written in the example's text format; `run_forward --out` runs
them. The output is compared, to 1e-5 normwise relative error, with
- hector.compiled calling the same library on the same graph and weights,
  the weights made by a NumPy re-implementation of the generator documented
  in examples/cpp/README.md, and
- the float64 NumPy references (test/reference/models_numpy.py), with
  weights given to run_forward as .npy files (--arg).
Every bad input must give exit status 1 and one clear message, never a crash.

run_forward and hectorc are taken from $HECTOR_BUILD_DIR/bin or build/bin.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from hector import compiled, graph as hgraph
from hectorc_support import REPO, build, tool
from model_cases import reference, relative_error
from reference import params

TOLERANCE = 1e-5
WIDTH = 64  # examples/*.mlir are written for width 64, one head


def run(*args, cwd=None):
    return subprocess.run([tool("run_forward"), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """model -> path of examples/<model>.mlir compiled for the CPU."""
    directory = tmp_path_factory.mktemp("cpp_example")
    paths = {}
    for model in ("rgcn", "rgat", "hgt"):
        with open(os.path.join(REPO, "examples", f"{model}.mlir")) as f:
            paths[model] = build(directory, f.read(), "--target=cpu", name=f"lib{model}.so")
    return paths


# ---- the graph file format and the generator, written from the README -------

def write_graph(path, graph, per_line=5):
    """Writes `graph` in the example's text format, with comments and blank lines."""
    node_type = np.asarray(graph["node_type"])
    lines = ["# written by test_cpp_example.py", "",
             f"{len(node_type)} {len(graph['src'])} {graph['num_node_types']} "
             f"{graph['num_edge_types']}   # N E T R", "# node types:"]
    for i in range(0, len(node_type), per_line):
        lines.append(" ".join(str(int(t)) for t in node_type[i:i + per_line]))
    lines.append("")
    for k, (s, d, r) in enumerate(zip(graph["src"], graph["dst"], graph["etype"])):
        lines.append(f"{int(s)} {int(d)} {int(r)}" + ("  # an edge" if k % 7 == 0 else ""))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def seeded(seed, index, shape, scale):
    """The README's generator: element i of the argument at position `index`."""
    with np.errstate(over="ignore"):
        key = mix64(np.array([seed], np.uint64) + GOLDEN * np.uint64(index + 1))
        i = np.arange(1, int(np.prod(shape)) + 1, dtype=np.uint64)
        bits = mix64(key + GOLDEN * i)
    unit = (bits >> np.uint64(40)).astype(np.float64) * 2.0 ** -24
    return ((unit * 2.0 - 1.0) * scale).astype(np.float32).reshape(shape)


def seeded_arguments(entry, pre, seed):
    """Inputs and weights as run_forward makes them, by name."""
    symbols = {"N": pre.N, "E": pre.E, "T": pre.T, "R": pre.R, "P": pre.P}
    values = {}
    for arg in entry.arguments:
        if arg.role not in ("input", "weight"):
            continue
        shape = tuple(symbols[d] if isinstance(d, str) else d for d in arg.shape)
        scale = 1.0 / np.sqrt(float(shape[-1])) if arg.role == "weight" else 1.0
        values[arg.name] = seeded(seed, arg.index, shape, scale)
    return values


def graph_case(kind, rng):
    if kind == "random":
        n, e, t, r = 40, 300, 3, 5
        return {"node_type": rng.integers(0, t, n), "src": rng.integers(0, n, e),
                "dst": rng.integers(0, n, e), "etype": rng.integers(0, r, e),
                "num_node_types": t, "num_edge_types": r}
    if kind == "edge_cases":
        # Nodes 20..29 isolated, edge types 1 and 4 unused, self-loops,
        # duplicates and a hub (node 0).
        n, t, r = 30, 2, 5
        src = np.concatenate([rng.integers(0, 20, 60), np.arange(10), [3, 3, 3]])
        dst = np.concatenate([np.zeros(30, np.int64), rng.integers(0, 20, 30),
                              np.arange(10), [7, 7, 7]])
        etype = np.concatenate([rng.choice([0, 2, 3], 70), [2, 2, 2]])
        return {"node_type": rng.integers(0, t, n), "src": src, "dst": dst, "etype": etype,
                "num_node_types": t, "num_edge_types": r}
    assert kind == "no_edges"
    return {"node_type": np.array([0, 1, 1, 0]), "src": np.zeros(0, np.int64),
            "dst": np.zeros(0, np.int64), "etype": np.zeros(0, np.int64),
            "num_node_types": 2, "num_edge_types": 3}


def preprocess(graph):
    return hgraph.preprocess(graph["node_type"], graph["src"], graph["dst"], graph["etype"],
                             graph["num_node_types"], graph["num_edge_types"])


def read_out(path, n):
    out = np.fromfile(path, dtype="<f4")
    assert out.size == n * WIDTH
    return out.reshape(n, WIDTH)


# ---- results ----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["random", "edge_cases", "no_edges"])
@pytest.mark.parametrize("model", ["rgcn", "rgat", "hgt"])
def test_seeded_run_matches_hector_compiled(libraries, tmp_path, model, kind):
    seed = 12345 + len(kind)
    graph = graph_case(kind, np.random.default_rng(len(kind) + len(model)))
    graph_file = write_graph(tmp_path / "graph.txt", graph)
    result = run(libraries[model], graph_file, "--seed", seed, "--out", tmp_path / "out.bin")
    assert result.returncode == 0, result.stderr
    n = len(graph["node_type"])
    out = read_out(tmp_path / "out.bin", n)

    lib = compiled.load(libraries[model])
    entry = lib[model]
    pre = preprocess(graph)
    expected = np.full((n, WIDTH), np.nan, np.float32)
    values = dict(pre.arrays(), result0=expected, **seeded_arguments(entry, pre, seed))
    entry(**{a.name: values[a.name] for a in entry.arguments})
    assert relative_error(out, expected.astype(np.float64)) < TOLERANCE

    # The summary: the graph's sizes, the output's shape and checksum.
    assert f"N = {pre.N}, E = {pre.E}, T = {pre.T}, R = {pre.R}, P = {pre.P}" in result.stdout
    assert f"output result0: float32 [{n}, {WIDTH}]" in result.stdout
    line = next(x for x in result.stdout.splitlines() if "checksum" in x)
    total = float(line.split("sum = ")[1].split(",")[0])
    assert abs(total - out.astype(np.float64).sum()) <= 1e-6 * (1 + np.abs(out).sum())
    assert "non-finite = 0" in line


@pytest.mark.parametrize("model", ["rgcn", "rgat", "hgt"])
def test_npy_weights_match_numpy_reference(libraries, tmp_path, model):
    rng = np.random.default_rng(99)
    graph = graph_case("edge_cases", rng)
    n = len(graph["node_type"])
    h = rng.standard_normal((n, WIDTH)).astype(np.float32)
    weights = params.make_params(model, graph, WIDTH, WIDTH, 1, seed=5)
    options = []
    for name, value in dict(weights, h=h).items():
        np.save(tmp_path / f"{name}.npy", value)
        options += ["--arg", f"{name}={tmp_path / (name + '.npy')}"]
    result = run(libraries[model], write_graph(tmp_path / "g.txt", graph), *options,
                 "--out", tmp_path / "out.bin")
    assert result.returncode == 0, result.stderr
    expected = reference(model, graph, h, weights, 1)
    assert relative_error(read_out(tmp_path / "out.bin", n), expected) < TOLERANCE


def test_generator_is_deterministic_and_seed_dependent(libraries, tmp_path):
    graph_file = write_graph(tmp_path / "g.txt", graph_case("random", np.random.default_rng(1)))
    outs = []
    for seed, name in ((7, "a"), (7, "b"), (8, "c")):
        assert run(libraries["rgcn"], graph_file, f"--seed={seed}",
                   "--out", tmp_path / name).returncode == 0
        outs.append(np.fromfile(tmp_path / name, "<f4"))
    assert np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[0], outs[2])


def test_entry_choice_in_a_library_with_two_entries(tmp_path, libraries):
    source = "".join(open(os.path.join(REPO, "examples", f"{m}.mlir")).read()
                     for m in ("rgcn", "rgat"))
    both = build(tmp_path, source, "--target=cpu", name="libboth.so")
    graph = graph_case("random", np.random.default_rng(3))
    graph_file = write_graph(tmp_path / "g.txt", graph)
    result = run(both, graph_file)
    assert result.returncode == 1
    assert "2 entry points (rgcn, rgat); choose one with --entry NAME" in result.stderr
    # The same entry, alone or in company, gives the same output (same seed,
    # same argument positions).
    assert run(both, graph_file, "--entry", "rgat", "--out", tmp_path / "x").returncode == 0
    assert run(libraries["rgat"], graph_file, "--out", tmp_path / "y").returncode == 0
    assert np.array_equal(np.fromfile(tmp_path / "x", "<f4"), np.fromfile(tmp_path / "y", "<f4"))


def test_library_path_without_directory(libraries, tmp_path):
    directory = os.path.dirname(libraries["rgcn"])
    write_graph(tmp_path / "g.txt", graph_case("no_edges", None))
    result = run("librgcn.so", tmp_path / "g.txt", cwd=directory)
    assert result.returncode == 0, result.stderr


def test_help():
    result = run("--help")
    assert result.returncode == 0 and "usage: run_forward" in result.stdout


# ---- errors -------------------------------------------------------------------

GOOD_GRAPH = "# N E T R\n4 3 2 3\n0 1\n1 0\n0 1 2\n1 2 0\n3 3 1\n"


def graph_errors():
    """(name, file text, message) of malformed graph files."""
    return [
        ("empty", "# nothing\n\n", "g.txt:2: unexpected end of file: expected the header line"),
        ("short_header", "4 3 2\n", "g.txt:1: expected the header line 'N E T R'"),
        ("word_in_header", "4 three 2 3\n", "g.txt:1: expected an integer for E (edges), "
                                            "got 'three'"),
        ("negative_count", "-4 3 2 3\n", "g.txt:1: N (nodes) is -4, outside [0, 2147483647]"),
        ("huge_count", "99999999999999999999 0 1 1\n", "g.txt:1: N (nodes) is "),
        ("no_node_types", "4 0 0 1\n", "g.txt:1: T (node types) is 0 but the graph has 4"),
        ("edges_no_nodes", "0 2 1 1\n", "g.txt:1: the graph has 2 edges but no nodes"),
        ("too_few_node_types", "4 3 2 3\n0 1 1\n", "unexpected end of file: expected the "
                                                    "types of nodes 3..3"),
        ("node_type_range", "4 3 2 3\n0 1\n1 2\n", "g.txt:3: the type of node 3 is 2, "
                                                   "outside [0, 1]"),
        ("node_types_run_into_edges", "4 1 2 3\n0 1 1 0 0 1 2\n",
         "g.txt:2: the 4 node types end here, but the line goes on with '0'"),
        ("malformed_edge", GOOD_GRAPH.replace("1 2 0\n", "1 2\n"),
         "g.txt:6: expected edge 1 as 'src dst etype', got 2 values"),
        ("edge_with_float", GOOD_GRAPH.replace("1 2 0\n", "1 2.5 0\n"),
         "g.txt:6: expected an integer for the destination of edge 1, got '2.5'"),
        ("src_out_of_range", GOOD_GRAPH.replace("1 2 0\n", "4 2 0\n"),
         "g.txt:6: the source of edge 1 is 4, outside [0, 3]"),
        ("dst_negative", GOOD_GRAPH.replace("1 2 0\n", "1 -1 0\n"),
         "g.txt:6: the destination of edge 1 is -1, outside [0, 3]"),
        ("etype_out_of_range", GOOD_GRAPH.replace("3 3 1\n", "3 3 3\n"),
         "g.txt:7: the type of edge 2 is 3, outside [0, 2]"),
        ("missing_edges", GOOD_GRAPH.replace("3 3 1\n", ""),
         "unexpected end of file: expected 3 edges (lines 'src dst etype'), got 2"),
        ("extra_edges", GOOD_GRAPH + "0 0 0\n",
         "g.txt:8: the header declares 3 edges, but more lines follow"),
    ]


@pytest.mark.parametrize("name,text,message", graph_errors(), ids=[c[0] for c in graph_errors()])
def test_malformed_graph_file(libraries, tmp_path, name, text, message):
    (tmp_path / "g.txt").write_text(text)
    result = run(libraries["rgcn"], "g.txt", cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("run_forward: error: ")
    assert message in result.stderr
    assert result.stdout == ""


def test_good_graph_file_runs(libraries, tmp_path):
    (tmp_path / "g.txt").write_text(GOOD_GRAPH)
    result = run(libraries["rgcn"], tmp_path / "g.txt")
    assert result.returncode == 0, result.stderr
    assert "N = 4, E = 3, T = 2, R = 3" in result.stdout


@pytest.fixture
def good(libraries, tmp_path):
    (tmp_path / "g.txt").write_text(GOOD_GRAPH)
    return libraries["rgcn"], str(tmp_path / "g.txt")


def expect_error(result, message):
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr.startswith("run_forward: error: ")
    assert message in result.stderr, result.stderr


def test_missing_graph_file(good, tmp_path):
    expect_error(run(good[0], tmp_path / "nope.txt"), "nope.txt: cannot open the graph file")
    expect_error(run(good[0], tmp_path), "cannot read the graph file")  # a directory


def test_missing_library(good, tmp_path):
    expect_error(run(tmp_path / "libnope.so", good[1]),
                 "libnope.so.json: cannot open the manifest")


def test_manifest_without_library(good, tmp_path):
    shutil.copy(good[0] + ".json", tmp_path / "libcopy.so.json")
    expect_error(run(tmp_path / "libcopy.so", good[1]), "cannot load the library")


def test_wrong_entry_name(good):
    expect_error(run(*good, "--entry", "rgat"),
                 "no entry point named 'rgat' (entries: rgcn)")


@pytest.mark.parametrize("options,message", [
    (["--seed", "-3"], "--seed needs an unsigned 64-bit integer, got '-3'"),
    (["--seed", "12x"], "--seed needs an unsigned 64-bit integer"),
    (["--seed"], "--seed needs a value"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["extra"], "expected <lib.so> and <graph-file>, got 3 arguments"),
    (["--arg", "W"], "--arg needs NAME=FILE.npy, got 'W'"),
    (["--arg", "W=a.npy", "--arg=W=b.npy"], "--arg W is given twice"),
    (["--arg", "nope=x.npy"], "--arg nope: entry 'rgcn' has no input or weight of that "
                              "name (it has h, W, W0)"),
    (["--arg", "result0=x.npy"], "'result0' is an output"),
    (["--arg", "W0=missing.npy"], "missing.npy (for argument 'W0'): cannot open the file"),
])
def test_bad_options(good, options, message):
    expect_error(run(*good, *options), message)


@pytest.mark.parametrize("value,message", [
    (np.zeros((64, 32), np.float32), "has shape (64, 32), but argument 'W0' needs shape "
                                     "(64, 64)"),
    (np.zeros((64, 64), np.float64), "dtype must be little-endian float32 ('<f4')"),
    (np.asfortranarray(np.zeros((64, 64), np.float32)), "must be in C order"),
])
def test_bad_npy(good, tmp_path, value, message):
    np.save(tmp_path / "w.npy", value)
    expect_error(run(*good, "--arg", f"W0={tmp_path / 'w.npy'}"), message)


def test_truncated_and_non_npy_files(good, tmp_path):
    np.save(tmp_path / "w.npy", np.zeros((64, 64), np.float32))
    data = (tmp_path / "w.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-4])
    expect_error(run(*good, "--arg", f"W0={tmp_path / 'cut.npy'}"),
                 "holds 16380 bytes of data, expected 16384")
    (tmp_path / "text.npy").write_text("hello")
    expect_error(run(*good, "--arg", f"W0={tmp_path / 'text.npy'}"), "not a .npy file")


def edited_manifest(path, tmp_path, edit):
    """A copy of library `path` whose manifest went through `edit`."""
    shutil.copy(path, tmp_path / "libedit.so")
    with open(path + ".json") as f:
        manifest = json.load(f)
    edit(manifest)
    with open(tmp_path / "libedit.so.json", "w") as f:
        json.dump(manifest, f)
    return str(tmp_path / "libedit.so")


def arg_of(manifest, name):
    return next(a for a in manifest["entries"][0]["arguments"] if a["name"] == name)


@pytest.mark.parametrize("edit,message", [
    (lambda m: m.update(format_version=2), "format_version 2, this program reads 1"),
    (lambda m: m.update(format="other"), "format is not 'hector-library-manifest'"),
    (lambda m: m["entries"][0].update(symbol="_mlir_ciface_nope"),
     "has no symbol _mlir_ciface_nope"),
    (lambda m: arg_of(m, "h").update(shape=["Q", 64]), "unknown size symbol 'Q'"),
    (lambda m: arg_of(m, "h").update(shape=[None, 64]), "the manifest gives no size"),
    (lambda m: arg_of(m, "h").update(shape=["N+", 64]), "bad shape entry \"N+\""),
    (lambda m: arg_of(m, "h").update(rank=3), "has rank 3 and shape"),
    (lambda m: arg_of(m, "h").update(dtype="float64"), "this program makes float32"),
    (lambda m: arg_of(m, "h").pop("role"), "lacks \"role\""),
    (lambda m: arg_of(m, "edge_src").update(name="edge_sources"),
     "the runtime builds no array of that name"),
    (lambda m: arg_of(m, "edge_norm").update(dtype="int32"),
     "has dtype int32 in the manifest, but the runtime builds it as float32"),
    (lambda m: arg_of(m, "compact_offsets").update(shape=["R"]),
     "must have shape [R] = [3], but the runtime built 4 elements"),
    (lambda m: arg_of(m, "W0").update(sizes=[64, 32]), "the library requires size 32"),
])
def test_bad_manifest(good, tmp_path, edit, message):
    expect_error(run(edited_manifest(good[0], tmp_path, edit), good[1]), message)


def test_manifest_not_json(good, tmp_path):
    shutil.copy(good[0], tmp_path / "libbad.so")
    (tmp_path / "libbad.so.json").write_text("{ not json")
    expect_error(run(tmp_path / "libbad.so", good[1]), "not a valid hectorc manifest")


def test_output_file_not_writable(good, tmp_path):
    expect_error(run(*good, "--out", tmp_path / "no" / "such" / "dir.bin"),
                 "cannot write the output file")


# ---- a CUDA library on a machine without a GPU ----------------------------------

def require_cuda_toolkit_without_driver():
    """Skips unless this machine can build CUDA libraries but has no driver."""
    build_dir = os.environ.get("HECTOR_BUILD_DIR") or os.path.join(REPO, "build")
    if not os.path.exists(os.path.join(build_dir, "runtime", "libhector_runtime.so")):
        pytest.skip("libhector_runtime.so not built")
    cuda = os.environ.get("CUDA_ROOT") or "/usr/local/cuda"
    if not (os.access(os.path.join(cuda, "bin", "ptxas"), os.X_OK) or shutil.which("ptxas")):
        pytest.skip("ptxas not found (no CUDA toolkit): cannot build a CUDA library")
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has a CUDA driver; this test is about machines without one")
    except OSError:
        pass


NO_GPU_MESSAGE = "the library was built with --target=cuda, but GPU 0 cannot be used: "


def test_cuda_library_without_driver_is_an_error(tmp_path):
    require_cuda_toolkit_without_driver()
    with open(os.path.join(REPO, "examples", "rgcn.mlir")) as f:
        path = build(tmp_path, f.read(), "--target=cuda", name="librgcn_cuda.so")
    (tmp_path / "g.txt").write_text(GOOD_GRAPH)
    result = run(path, tmp_path / "g.txt")
    expect_error(result, NO_GPU_MESSAGE)
    assert "driver" in result.stderr

"""`pip install ./python` gives an importable, typed `hector` (issue 18,
item 5): installed into a fresh directory from a copy of python/ (no index,
no network; numpy and torch are the system's), then imported by a Python
that has only that directory on its path, from elsewhere. The installed
package finds hectorc and the runtime through $HECTOR_BUILD_DIR, as
documented in docs/python.md. And scripts/python-env.sh, which gives the
tests and the main job their Python, installs this checkout's python/ in
editable mode into a venv over the system's Python."""

import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("HECTOR_BUILD_DIR") or os.path.join(REPO, "build")

# The probe runs under the base interpreter when this one is a venv's (the
# checkout's .venv has hector installed in editable mode, whose finder would
# serve what the target directory lacks); it still sees numpy and torch.
BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable

PROBE = """
import importlib.resources, json, os
import hector, hector.nn, hector.compiler, hector._runtime, hector._graph_table
print(json.dumps({
    "file": hector.__file__,
    "version": hector.__version__,
    "typed": importlib.resources.files("hector").joinpath("py.typed").is_file(),
    "layers": sorted(n for n in ("RGCNConv", "RGATConv", "HGTConv") if hasattr(hector.nn, n)),
    "hectorc": hector.compiler.find_compiler(),
    "runtime": hector._runtime.candidate_paths(),
}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The directory `pip install --target` filled."""
    source = tmp_path_factory.mktemp("source")
    shutil.copytree(os.path.join(REPO, "python"), source / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    target = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
         "--no-build-isolation", "--target", str(target), str(source / "python")],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return target


def probe(site, cwd, env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HECTOR_BUILD_DIR")}
    env.update({"PYTHONPATH": str(site)}, **env_extra)
    result = subprocess.run([BASE_PYTHON, "-c", PROBE], cwd=cwd, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_installed_package_is_importable_and_typed(installed, tmp_path):
    found = probe(installed, tmp_path, {"HECTOR_BUILD_DIR": BUILD})
    assert os.path.dirname(found["file"]) == os.path.join(str(installed), "hector")
    assert found["version"] == "0.1.0"
    assert found["typed"]
    assert found["layers"] == ["HGTConv", "RGATConv", "RGCNConv"]


def test_installed_package_finds_the_tools_through_the_build_dir(installed, tmp_path):
    found = probe(installed, tmp_path, {"HECTOR_BUILD_DIR": BUILD})
    assert found["hectorc"] == os.path.join(os.path.abspath(BUILD), "bin", "hectorc")
    assert os.path.join(BUILD, "runtime", "libhector_runtime.so") in found["runtime"]


def test_installed_package_carries_the_typed_marker_and_no_tests(installed):
    names = {p for p in os.listdir(installed)}
    assert "hector" in names
    assert not any(n.startswith(("test", "examples", "bench")) for n in names)
    assert os.path.isfile(os.path.join(installed, "hector", "py.typed"))


def test_python_env_installs_this_checkout_in_editable_mode(tmp_path):
    script = os.path.join(REPO, "scripts", "python-env.sh")
    env = dict(os.environ, HECTOR_VENV=str(tmp_path / "venv"))
    env.pop("PYTHONPATH", None)
    first = subprocess.run([script], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    python = first.stdout.strip()
    assert python == str(tmp_path / "venv" / "bin" / "python")
    assert "installing" in first.stderr
    code = ("import hector, hector.nn, importlib.metadata as m; "
            "print(hector.__file__, m.version('hector'))")
    found = subprocess.run([python, "-c", code], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [os.path.join(REPO, "python", "hector", "__init__.py"), "0.1.0"]
    again = subprocess.run([script], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout.strip() == python and again.stderr == ""

"""test/pyg/run_pyg_tests.py, the runner of PyG's unit tests with hector.nn's
classes swapped in: the import rewriting (only the swapped names move to
hector.nn, every other line stays as written), the counts per file and
device and the final line on a stand-in test folder, and the torch_geometric
stand-in's sparse helpers against dense matrices built edge by edge."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from hectorc_support import REPO  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "test", "pyg"))
import run_pyg_tests  # noqa: E402

# The stand-in's utils on their own: no `torch_geometric` in sys.modules for
# the other tests of the session.
_spec = importlib.util.spec_from_file_location(
    "standin_utils", os.path.join(run_pyg_tests.STANDIN, "torch_geometric", "utils.py"))
standin_utils = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin_utils)


@pytest.mark.parametrize("source, expected", [
    ("from torch_geometric.nn import FastRGCNConv, RGCNConv\n",
     "from hector.nn import FastRGCNConv, RGCNConv\n"),
    ("from torch_geometric.nn import RGATConv\n", "from hector.nn import RGATConv\n"),
    ("from torch_geometric.nn import GCNConv, HGTConv as H\n",
     "from torch_geometric.nn import GCNConv\nfrom hector.nn import HGTConv as H\n"),
    ("from torch_geometric.nn import (\n    RGCNConv,\n    Linear,\n)\n",
     "from torch_geometric.nn import Linear\nfrom hector.nn import RGCNConv\n"),
])
def test_swap_imports_moves_only_the_layers(source, expected):
    head = "import torch\nfrom torch_geometric.nn.conv import RGCNConv as Other\n"
    tail = "\n\ndef test_x():\n    RGCNConv(1, 2, 3)  # from torch_geometric.nn import RGCNConv\n"
    rewritten, swapped = run_pyg_tests.swap_imports(head + source + tail)
    assert rewritten == head + expected + tail
    assert swapped


def test_swap_imports_leaves_other_imports():
    source = "from torch_geometric.nn import GCNConv\n"
    assert run_pyg_tests.swap_imports(source) == (source, [])


FAKE_TESTS = {
    "test_rgcn_conv.py": '''
import pytest
import torch
from torch_geometric.nn import FastRGCNConv, RGCNConv
from torch_geometric.testing import withCUDA

@withCUDA
@pytest.mark.parametrize("cls", [RGCNConv, FastRGCNConv])
def test_repr(cls, device):
    assert str(cls(4, 32, 2)) == f"{cls.__name__}(4, 32, num_relations=2)"

def test_is_hector():
    assert RGCNConv.__module__.startswith("hector.nn")
''',
    "test_rgat_conv.py": '''
from torch_geometric.nn import RGATConv

def test_repr():
    assert str(RGATConv(8, 16, 4, heads=2, edge_dim=3)) == "RGATConv(8, 16, heads=2)"

def test_fails():
    assert str(RGATConv(8, 16, 4)) == "something else"
''',
    "test_hgt_conv.py": '''
import pytest
from torch_geometric.nn import HGTConv

def test_repr():
    assert str(HGTConv(-1, 16, (["a"], [("a", "to", "a")]), heads=2)) == "HGTConv(-1, 16, heads=2)"

@pytest.mark.skip(reason="skipped")
def test_skipped():
    pass
''',
}


def test_runner_counts_per_file(tmp_path):
    for name, text in FAKE_TESTS.items():
        (tmp_path / name).write_text(text)
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "test", "pyg", "run_pyg_tests.py"),
         "--pyg-tests", str(tmp_path), "--device", "cpu", "--standin"],
        capture_output=True, text=True, timeout=600)
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stdout + result.stderr
    assert lines[-1] == "5 passed, 1 failed, 1 skipped"
    counts = {tuple(line.split()[:2]): line.split()[2::2] for line in lines
              if line.startswith("  cpu")}
    assert counts == {("cpu", "test_rgcn_conv.py"): ["3", "0", "0"],
                      ("cpu", "test_rgat_conv.py"): ["1", "1", "0"],
                      ("cpu", "test_hgt_conv.py"): ["1", "0", "1"]}


def test_runner_names_missing_files(tmp_path):
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "test", "pyg", "run_pyg_tests.py"),
         "--pyg-tests", str(tmp_path), "--standin"], capture_output=True, text=True)
    assert result.returncode != 0 and "get-pyg-tests.sh" in result.stderr


def dense(edge_index, values, shape):
    out = torch.zeros(shape + tuple(values.shape[1:]))
    for k in range(edge_index.size(1)):
        out[edge_index[0, k], edge_index[1, k]] += values[k]
    return out


def test_standin_sparse_helpers():
    g = torch.Generator().manual_seed(0)
    edge_index = torch.stack([torch.randint(0, 5, (30,), generator=g),
                              torch.randint(0, 3, (30,), generator=g)])
    attr = torch.randn(30, 2, generator=g)
    merged, merged_attr = standin_utils.coalesce(edge_index, attr)
    keys = merged[0] * 5 + merged[1]
    assert bool((keys[1:] > keys[:-1]).all())  # sorted by row, no duplicates
    assert torch.allclose(dense(merged, merged_attr, (5, 3)), dense(edge_index, attr, (5, 3)))
    coo = standin_utils.to_torch_coo_tensor(edge_index, attr, size=(5, 3))
    assert coo.is_coalesced() and torch.allclose(coo.to_dense(), dense(edge_index, attr, (5, 3)))
    csc = standin_utils.to_torch_csc_tensor(edge_index, size=(5, 3))
    assert csc.layout == torch.sparse_csc
    # without edge_attr, one 1 per distinct edge (duplicates merged first, as PyG)
    assert torch.equal(csc.to_dense(), dense(edge_index, torch.ones(30), (5, 3)).clamp(max=1))
    by_column = standin_utils.coalesce(edge_index, sort_by_row=False)
    keys = by_column[1] * 5 + by_column[0]
    assert bool((keys[1:] > keys[:-1]).all())


def test_runner_counts_a_file_that_does_not_import(tmp_path):
    for name, text in FAKE_TESTS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "test_hgt_conv.py").write_text("from torch_geometric.nn import HGTConv\n"
                                               "import no_such_module\n")
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "test", "pyg", "run_pyg_tests.py"),
         "--pyg-tests", str(tmp_path), "--device", "cpu", "--standin"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 1
    hgt = [line for line in result.stdout.splitlines() if "test_hgt_conv.py" in line
           and line.startswith("  cpu")]
    assert hgt and hgt[0].split()[4] == "1", result.stdout  # 1 failed
    assert "  cpu   test_rgcn_conv.py       3 passed" in result.stdout  # the others still run

"""The graph arrays are defined once, in runtime/include/hector/graph_arrays.def:
the C header's ids, the runtime's names and checks, hectorc's entry point
arguments and Python's table all follow it, and a change there reaches each
of them (issue 19).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hector import _graph_table, compiled, graph as hgraph, models
from hectorc_support import REPO, build

DEF = os.path.join(REPO, "runtime", "include", "hector", "graph_arrays.def")
GENERATOR = os.path.join(REPO, "scripts", "generate-graph-table.py")
EXTRA = "HECTOR_GRAPH_ARRAY(TEST_EXTRA, test_extra, E, INT32, IDS, N)\n"


def generate(table: str) -> str:
    return subprocess.run([sys.executable, GENERATOR, "--def", table, "--out", "-"],
                          check=True, capture_output=True, text=True).stdout


def test_python_table_is_generated_from_the_definition():
    result = subprocess.run([sys.executable, GENERATOR, "--check"], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr


def test_runtime_names_and_ids_follow_the_table():
    lib = hgraph._lib()
    names = [a.name for a in _graph_table.ARRAYS]
    assert [lib.hector_graph_array_name(i).decode() for i in range(len(names))] == names
    assert lib.hector_graph_array_name(len(names)) is None
    assert hgraph.ARRAY_NAMES == tuple(names)


def test_runtime_checks_follow_the_table():
    """hector_graph_check_array applies each array's check and bound as the
    table gives them: an id equal to its bound is rejected, one below it
    passes; an offset table must end at its bound."""
    lib = hgraph._lib()
    sizes = hgraph._GraphSizes(num_nodes=5, num_edges=7, num_node_types=2,
                               num_edge_types=3, num_pairs=4)
    bound_of = {"N": 5, "E": 7, "T": 2, "R": 3, "P": 4}
    import ctypes
    lib.hector_graph_check_array.restype = ctypes.c_int
    lib.hector_graph_check_array.argtypes = [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.POINTER(hgraph._GraphSizes), ctypes.c_int]

    def check(name, values):
        data = np.ascontiguousarray(values, dtype=np.int32)
        return lib.hector_graph_check_array(name.encode(), data.ctypes.data, len(data),
                                            ctypes.byref(sizes), -1)

    for array in _graph_table.ARRAYS:
        if array.check == "values":
            continue
        bound = bound_of[array.bound]
        if array.check == "ids":
            assert check(array.name, [0, bound - 1]) == 0, array
            assert check(array.name, [0, bound]) != 0, array
        else:
            assert check(array.name, [0, bound]) == 0, array
            assert check(array.name, [0, bound + 1]) != 0, array


def test_compiled_entries_take_the_tables_arrays(tmp_path):
    """hectorc names each graph argument and its shape as the table does."""
    library = compiled.load(build(str(tmp_path), models.generate("rgat", 8), "--target=cpu",
                                  "--training", name="librgat.so"))
    lengths = {a.name: a.length for a in _graph_table.ARRAYS}
    seen = set()
    for entry in library.entries.values():
        for arg in entry.arguments:
            if arg.role == "graph":
                assert arg.name in lengths, arg.name
                assert list(arg.shape) == [lengths[arg.name]], arg
                seen.add(arg.name)
    assert "pair_eid" in seen and "compact_map" in seen


def test_a_new_array_reaches_the_header_and_python(tmp_path):
    """One line added to the definition gives the C header a new id (after
    the others, which keep theirs) and Python a new entry."""
    include = tmp_path / "include" / "hector"
    include.mkdir(parents=True)
    with open(DEF) as f:
        table = f.read()
    (include / "graph_arrays.def").write_text(table + EXTRA)

    generated = generate(str(include / "graph_arrays.def"))
    assert "GraphArray('test_extra', 'E', 'int32', 'ids', 'N')," in generated
    assert generated.startswith(generate(DEF).split("ARRAYS = (")[0])

    compiler = shutil.which("cc") or shutil.which("clang-22") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    program = tmp_path / "ids.c"
    program.write_text('#include <stdio.h>\n#include "hector/graph.h"\n'
                       "int main(void) { printf(\"%d %d %d\\n\", HECTOR_GRAPH_PAIR_EID, "
                       "HECTOR_GRAPH_TEST_EXTRA, HECTOR_GRAPH_NUM_ARRAYS); return 0; }\n")
    binary = tmp_path / "ids"
    subprocess.run([compiler, "-std=c99", f"-I{tmp_path / 'include'}",
                    f"-I{os.path.join(REPO, 'runtime', 'include')}", str(program), "-o",
                    str(binary)], check=True)
    count = len(_graph_table.ARRAYS)
    assert subprocess.run([str(binary)], check=True, capture_output=True,
                          text=True).stdout.split() == [str(count - 1), str(count),
                                                        str(count + 1)]

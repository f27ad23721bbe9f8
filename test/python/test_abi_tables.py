"""The ABI's contracts are defined once (issue 19), each in a table under
runtime/include/hector that C and C++ include and Python gets a generated
copy of (scripts/generate-abi-tables.py):

- graph_arrays.def, the graph arrays: the C header's ids, the runtime's
  names and checks, hectorc's entry point arguments, Python's table;
- entry_abi.def, the entry kinds and argument roles: what hectorc accepts
  and writes in manifests, what Python and the C++ example accept, and which
  arguments are outputs.

Each follows its table, and a change there reaches each of them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hector import _entry_abi, _graph_table, compiled, graph as hgraph, models
from hectorc_support import REPO, build

INCLUDE = os.path.join(REPO, "runtime", "include")
DEF = os.path.join(INCLUDE, "hector", "graph_arrays.def")
ENTRY_DEF = os.path.join(INCLUDE, "hector", "entry_abi.def")
GENERATOR = os.path.join(REPO, "scripts", "generate-abi-tables.py")
EXTRA = "HECTOR_GRAPH_ARRAY(TEST_EXTRA, test_extra, E, INT32, IDS, N)\n"


def generate(table: str, definition: str) -> str:
    return subprocess.run([sys.executable, GENERATOR, "--table", table, "--def", definition,
                           "--out", "-"], check=True, capture_output=True, text=True).stdout


def c_compiler():
    return shutil.which("cc") or shutil.which("clang-22") or shutil.which("gcc")


def test_python_tables_are_generated_from_the_definitions():
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

    generated = generate("graph", str(include / "graph_arrays.def"))
    assert "GraphArray('test_extra', 'E', 'int32', 'ids', 'N')," in generated
    assert generated.startswith(generate("graph", DEF).split("ARRAYS = (")[0])

    compiler = c_compiler()
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


# ---- entry kinds and argument roles -------------------------------------------

def test_python_follows_the_entry_table():
    assert compiled.KINDS == ("inference", "training_forward", "training_backward")
    assert compiled.ROLES == tuple(_entry_abi.ACCESS)
    assert compiled.access("saved", "training_forward") == "written"
    assert compiled.access("saved", "training_backward") == "read"
    assert compiled.access("grad", "inference") == "none"


def test_compiled_entries_declare_roles_as_the_table_allows(tmp_path):
    """Every argument of every entry of a training library has a role its
    entry's kind allows, and exactly the WRITTEN ones are outputs."""
    library = compiled.load(build(str(tmp_path), models.generate("hgt", 8, heads=2),
                                  "--target=cpu", "--training", name="libhgt.so"))
    kinds = set()
    for entry in library.entries.values():
        kinds.add(entry.kind)
        for arg in entry.arguments:
            access = compiled.access(arg.role, entry.kind)
            assert access != "none", (entry.name, arg)
            assert arg.is_output == (access == "written"), (entry.name, arg)
    assert kinds == set(compiled.KINDS)


def test_a_changed_role_reaches_python_and_cpp(tmp_path):
    """A role allowed one more kind of entry in the table: the generated
    Python and a C++ program that reads the table both see it."""
    include = tmp_path / "include" / "hector"
    include.mkdir(parents=True)
    with open(ENTRY_DEF) as f:
        table = f.read()
    changed = table.replace("HECTOR_ARG_ROLE(GRAD,        grad,        NONE,    NONE,    WRITTEN)",
                            "HECTOR_ARG_ROLE(GRAD,        grad,        NONE,    WRITTEN, WRITTEN)")
    assert changed != table
    (include / "entry_abi.def").write_text(changed)
    assert "'grad': ('none', 'written', 'written')," in generate("entry",
                                                                  str(include / "entry_abi.def"))
    compiler = shutil.which("c++") or shutil.which("clang++-22") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    program = tmp_path / "roles.cpp"
    program.write_text(
        "#include <cstdio>\n"
        "enum Access { NONE, READ, WRITTEN };\n"
        "struct Role { const char *name; Access access[3]; };\n"
        "const Role roles[] = {\n"
        "#define HECTOR_ARG_ROLE(ID, name, i, f, b) {#name, {i, f, b}},\n"
        "#include \"hector/entry_abi.def\"\n"
        "};\n"
        "int main() { for (const Role &r : roles) std::printf(\"%s %d%d%d\\n\", r.name,"
        " r.access[0], r.access[1], r.access[2]); }\n")
    binary = tmp_path / "roles"
    subprocess.run([compiler, f"-I{tmp_path / 'include'}", f"-I{INCLUDE}", str(program), "-o",
                    str(binary)], check=True)
    lines = subprocess.run([str(binary)], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    assert "grad 022" in lines
    assert len(lines) == len(_entry_abi.ACCESS)

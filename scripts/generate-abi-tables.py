#!/usr/bin/env python3
"""Writes Python's copies of the ABI tables that the C headers, the runtime
and hectorc include directly:

    runtime/include/hector/graph_arrays.def -> python/hector/_graph_table.py
    runtime/include/hector/entry_abi.def    -> python/hector/_entry_abi.py

    scripts/generate-abi-tables.py            # rewrite both modules
    scripts/generate-abi-tables.py --check    # exit 1 if one is out of date
    scripts/generate-abi-tables.py --table graph --def F --out -   # one table, to stdout

test/python/test_abi_tables.py runs the check.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join(ROOT, "runtime", "include", "hector")
PACKAGE = os.path.join(ROOT, "python", "hector")


def _entries(text: str, macro: str, pattern: str) -> list[tuple[str, ...]]:
    """The arguments of every `macro(...)` line of a table, checked against
    `pattern` (one group per argument)."""
    entry = re.compile(r"^%s\(\s*%s\s*\)" % (macro, r"\s*,\s*".join(pattern.split(","))))
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith(macro + "("):
            continue
        match = entry.match(line)
        if not match:
            raise ValueError(f"line {number}: not a {macro} entry: {line!r}")
        rows.append(match.groups())
    if not rows:
        raise ValueError(f"no {macro} entries")
    return rows


def render_graph(text: str) -> str:
    rows = []
    for _, name, length, dtype, check, bound in _entries(
            text, "HECTOR_GRAPH_ARRAY",
            r"(\w+),(\w+),([\w+]+),(INT32|FLOAT32),(IDS|OFFSETS|VALUES),(\w+)"):
        row = (name, length, dtype.lower(), check.lower(), "" if check == "VALUES" else bound)
        rows.append(f"    GraphArray({', '.join(repr(v) for v in row)}),\n")
    return '''# Generated from runtime/include/hector/graph_arrays.def by
# scripts/generate-abi-tables.py: edit the table there, then run the script
# (test/python/test_abi_tables.py checks that this copy is current).
"""The graph arrays of hector_graph_build, in id order."""

from typing import NamedTuple


class GraphArray(NamedTuple):
    name: str
    length: str  # an expression of N, E, T, R and P
    dtype: str  # "int32" or "float32"
    check: str  # "ids": in [0, bound); "offsets": 0 .. bound, never decreasing; "values"
    bound: str  # N, E, T, R or P; "" for "values"


ARRAYS = (
''' + "".join(rows) + ")\n"


def render_entry_abi(text: str) -> str:
    kinds = [name for _, name in _entries(text, "HECTOR_ENTRY_KIND", r"(\w+),(\w+)")]
    roles = []
    for _, name, *access in _entries(text, "HECTOR_ARG_ROLE",
                                     r"(\w+),(\w+),(NONE|READ|WRITTEN),(NONE|READ|WRITTEN),"
                                     r"(NONE|READ|WRITTEN)"):
        if len(access) != len(kinds):
            raise ValueError(f"role {name}: {len(access)} accesses for {len(kinds)} kinds")
        roles.append(f"    {name!r}: ({', '.join(repr(a.lower()) for a in access)}),\n")
    return '''# Generated from runtime/include/hector/entry_abi.def by
# scripts/generate-abi-tables.py: edit the table there, then run the script
# (test/python/test_abi_tables.py checks that this copy is current).
"""The kinds of entry point and, per role of an argument, what an entry of
each kind (in KINDS' order) does with it: "none" (not allowed), "read", or
"written" (the caller allocates it, the entry point fills it)."""

KINDS = (''' + ", ".join(repr(k) for k in kinds) + ''')

ACCESS = {
''' + "".join(roles) + "}\n"


TABLES = {
    "graph": ("graph_arrays.def", "_graph_table.py", render_graph),
    "entry": ("entry_abi.def", "_entry_abi.py", render_entry_abi),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", choices=sorted(TABLES), action="append",
                    help="only this table (default: all)")
    ap.add_argument("--def", dest="definition", help="with one --table: read this file")
    ap.add_argument("--out", help="with one --table: write here ('-': stdout)")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    names = args.table or sorted(TABLES)
    if (args.definition or args.out) and len(names) != 1:
        ap.error("--def and --out need exactly one --table")
    stale = []
    for name in names:
        definition, module, render = TABLES[name]
        with open(args.definition or os.path.join(INCLUDE, definition)) as f:
            text = render(f.read())
        out = args.out or os.path.join(PACKAGE, module)
        if args.check:
            with open(out) as f:
                if f.read() != text:
                    stale.append(out)
        elif out == "-":
            sys.stdout.write(text)
        else:
            with open(out, "w") as f:
                f.write(text)
    for out in stale:
        print(f"{out} is out of date: run {sys.argv[0]}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

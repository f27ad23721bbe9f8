#!/usr/bin/env python3
"""Writes python/hector/_graph_table.py from runtime/include/hector/graph_arrays.def,
the one definition of the graph arrays (the C header, the runtime and hectorc
include it directly; Python gets this generated copy).

    scripts/generate-graph-table.py            # rewrite the module
    scripts/generate-graph-table.py --check    # exit 1 if it is out of date
    scripts/generate-graph-table.py --def F --out -   # another table, to stdout

test/python/test_graph_table.py runs the check.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEF = os.path.join(ROOT, "runtime", "include", "hector", "graph_arrays.def")
OUT = os.path.join(ROOT, "python", "hector", "_graph_table.py")

ENTRY = re.compile(r"^HECTOR_GRAPH_ARRAY\(\s*(\w+)\s*,\s*(\w+)\s*,\s*([\w+]+)\s*,"
                   r"\s*(INT32|FLOAT32)\s*,\s*(IDS|OFFSETS|VALUES)\s*,\s*(\w+)\s*\)")

HEADER = '''# Generated from runtime/include/hector/graph_arrays.def by
# scripts/generate-graph-table.py: edit the table there, then run the script
# (test/python/test_graph_table.py checks that this copy is current).
"""The graph arrays of hector_graph_build, in id order."""

from typing import NamedTuple


class GraphArray(NamedTuple):
    name: str
    length: str  # an expression of N, E, T, R and P
    dtype: str  # "int32" or "float32"
    check: str  # "ids": in [0, bound); "offsets": 0 .. bound, never decreasing; "values"
    bound: str  # N, E, T, R or P; "" for "values"


ARRAYS = (
'''


def parse(text: str) -> list[tuple[str, ...]]:
    """(name, length, dtype, check, range) per array, in id order."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("HECTOR_GRAPH_ARRAY("):
            continue
        match = ENTRY.match(line)
        if not match:
            raise ValueError(f"graph_arrays.def:{number}: not an entry: {line!r}")
        _, name, length, dtype, check, bound = match.groups()
        rows.append((name, length, dtype.lower(), check.lower(),
                     "" if check == "VALUES" else bound))
    if not rows:
        raise ValueError("graph_arrays.def has no entries")
    return rows


def render(rows) -> str:
    body = "".join(f"    GraphArray({', '.join(repr(v) for v in row)}),\n" for row in rows)
    return HEADER + body + ")\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--def", dest="table", default=DEF)
    ap.add_argument("--out", default=OUT, help="'-' for stdout")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with open(args.table) as f:
        text = render(parse(f.read()))
    if args.check:
        with open(args.out) as f:
            current = f.read() == text
        if not current:
            print(f"{args.out} is out of date: run {sys.argv[0]}", file=sys.stderr)
        return 0 if current else 1
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""python3 -m hector.frontend MODEL.py [SIZE=VALUE ...]: prints the model's hgraph IR.

    python3 -m hector.frontend examples/models/rgat.py H=4 | build/bin/hectorc -

The file is parsed, never run. Errors print as `path:line:col: error: ...`
with exit status 1.
"""

from __future__ import annotations

import argparse
import sys

from .api import emit_source
from .errors import FrontendError


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m hector.frontend",
                                     description="Translates a Hector model to hgraph IR.")
    parser.add_argument("model", help="a Python file holding the model")
    parser.add_argument("sizes", nargs="*", metavar="SIZE=VALUE",
                        help="values of the model's size parameters, e.g. D=128 H=4")
    parser.add_argument("--function", help="the model to emit, when the file holds several")
    parser.add_argument("--locations", action="store_true",
                        help="attach the Python source location to every op")
    parser.add_argument("-o", "--output", help="write the IR here instead of stdout")
    args = parser.parse_args(argv)
    sizes = {}
    for item in args.sizes:
        name, _, value = item.partition("=")
        try:
            sizes[name] = int(value)
        except ValueError:
            parser.error(f"sizes are NAME=INTEGER, got {item!r}")
    try:
        with open(args.model, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        parser.error(f"cannot read {args.model}: {err.strerror}")
    try:
        ir = emit_source(text, filename=args.model, function=args.function,
                         locations=args.locations, **sizes)
    except FrontendError as err:
        print(f"{err.filename}:{err.line}:{err.col}: error: {err.message}", file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(ir)
    else:
        sys.stdout.write(ir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

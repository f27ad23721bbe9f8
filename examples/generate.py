#!/usr/bin/env python3
"""Writes the single-layer RGCN, RGAT and HGT models of BRIEF.md §4 in the
hgraph inter-operator IR, for any feature width and head count.

    python3 examples/generate.py rgat --width 64 --heads 4 > rgat-64x4.mlir

The generator itself is hector.models (python/hector/models.py); this is its
command line. The committed examples/{rgcn,rgat,hgt}.mlir are its output with
the defaults (in = out = 64, one head); a lit test checks that they still are.
It needs the hector package installed (docs/python.md, "Installing the package").
"""

import argparse
import sys

from hector import models


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(models.MODELS))
    parser.add_argument("--width", type=int, default=64,
                        help="input feature width (default 64)")
    parser.add_argument("--out-width", type=int, default=None,
                        help="output feature width (default: --width)")
    parser.add_argument("--heads", type=int, default=1,
                        help="attention heads, must divide the widths (default 1)")
    args = parser.parse_args(argv)
    out_width = args.out_width or args.width
    if args.width <= 0 or out_width <= 0 or args.heads <= 0:
        parser.error("widths and heads must be positive")
    if out_width % args.heads or args.width % args.heads:
        parser.error(f"--heads {args.heads} must divide the widths")
    try:
        sys.stdout.write(models.generate(args.model, args.width, out_width, args.heads))
    except ValueError as err:
        parser.error(str(err))


if __name__ == "__main__":
    main()
